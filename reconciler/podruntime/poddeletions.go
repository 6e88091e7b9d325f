package podruntime

import (
	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/store"
)

// Deletions finds the pending `delete pod` requests (store.PodDeletion)
// of an owner by the units they name. A request names the pod's
// containers (and a holder pod's uid) as the CLI observed them, so it
// never hits a newer pod of the same name; once no observed unit of it is
// left — it was removed, or never existed — it is done (Done), as the
// kubelet forgets a pod whose containers are gone (docs/design.md §17).
// A nil *Deletions holds no request.
type Deletions struct {
	reqs        []store.PodDeletion
	pods        map[string]*Pod
	byContainer map[string]int
	byUID       map[string]int
	matched     []bool
}

// NewDeletions indexes reqs, whose units are grouped into pods by unit ID
// (a holder pod's Key); nil when there is no request.
func NewDeletions(reqs []store.PodDeletion, pods map[string]*Pod) *Deletions {
	if len(reqs) == 0 {
		return nil
	}
	d := &Deletions{reqs: reqs, pods: pods, byContainer: map[string]int{}, byUID: map[string]int{}, matched: make([]bool, len(reqs))}
	for i, r := range reqs {
		for _, id := range r.Containers {
			d.byContainer[id] = i
		}
		if r.UID != "" {
			d.byUID[r.UID] = i
		}
	}
	return d
}

// Of returns the request that names unit c (a container, or a holder
// pod's unit: by its uid or any of its containers), or nil, and notes it
// matched: its pod still exists.
func (d *Deletions) Of(c *dockerx.Container) *store.PodDeletion {
	if d == nil {
		return nil
	}
	i, ok := d.byContainer[c.ID]
	if p := d.pods[c.ID]; p != nil && !ok {
		i, ok = d.byUID[p.UID] // "" is never indexed
		for _, m := range p.Containers() {
			if ok {
				break
			}
			i, ok = d.byContainer[m.ID]
		}
	}
	if !ok {
		return nil
	}
	d.matched[i] = true
	return &d.reqs[i]
}

// Done returns the requests whose pod no unit Of was asked about is left
// of.
func (d *Deletions) Done() []store.PodDeletion {
	if d == nil {
		return nil
	}
	var out []store.PodDeletion
	for i, r := range d.reqs {
		if !d.matched[i] {
			out = append(out, r)
		}
	}
	return out
}
