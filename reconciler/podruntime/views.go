package podruntime

import (
	"sort"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// Views presents an owner's judged pods (Judge) as the read commands and
// the owner's status see them, sorted by name: per pod its containers in
// template order with their facts (containers, by container ID; units,
// by unit ID: what the owner judged of each, its availability and
// termination included), kubectl's READY, RESTARTS and STATUS, and the
// pod's restartPolicy (its template's). singleName names a pod of one
// container, whose name its owner's naming scheme gives.
func Views(o Observed, templates func(string) *manifests.PodTemplateSpec, units, containers map[string]ContainerView, namespace string, owner OwnerRef, singleName func(*dockerx.Container) string) []PodView {
	var out []PodView
	for i := range o.Units {
		u := &o.Units[i]
		t := templates(u.TemplateHash)
		policy := ""
		if t != nil {
			policy = t.Spec.RestartPolicy
		}
		pv := PodView{Namespace: namespace, Owner: owner, RestartPolicy: policy, Hash: u.TemplateHash, Created: u.Created,
			Available: units[u.ID].Available, Terminating: units[u.ID].Terminating, StopDeadline: units[u.ID].StopDeadline,
			ReadySince: units[u.ID].ReadySince}
		if p := o.Pods[u.ID]; p != nil {
			pv.Name, pv.Holder = p.Name, p.Holder
			pv.Containers = podContainers(t, p, containers)
		} else {
			pv.Name = singleName(u)
			name := ""
			if tc := TemplateContainer(t, u); tc != nil {
				name = tc.Name
			}
			pv.Containers = []PodContainer{{Name: name, Container: u, View: containers[u.ID]}}
		}
		pv.tally()
		if h := pv.Holder; h != nil && (h.State != dockerx.StateRunning || u.State == dockerx.StateDead) || pv.Holder == nil && u.State == dockerx.StateDead {
			pv.Ready = 0 // its namespaces are gone: nothing in it serves
		}
		pv.Status = StatusWord(pv, t, u.State)
		out = append(out, pv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// podContainers lists a holder pod's containers in template order; members
// the template does not know (an unknown revision) follow by name.
func podContainers(t *manifests.PodTemplateSpec, p *Pod, views map[string]ContainerView) []PodContainer {
	var out []PodContainer
	seen := map[string]bool{}
	if t != nil {
		for i := range t.Spec.InitContainers {
			ic := &t.Spec.InitContainers[i]
			m := p.Members[ic.Name]
			pc := PodContainer{Name: ic.Name, Init: true, Sidecar: ic.IsSidecar(), Container: m}
			if m != nil {
				pc.View = views[m.ID]
			}
			out = append(out, pc)
			seen[ic.Name] = true
		}
		for i := range t.Spec.Containers {
			c := &t.Spec.Containers[i]
			m := p.Members[c.Name]
			pc := PodContainer{Name: c.Name, Container: m}
			if m != nil {
				pc.View = views[m.ID]
			}
			out = append(out, pc)
			seen[c.Name] = true
		}
	}
	for _, c := range p.Containers() {
		if c != p.Holder && !seen[c.ContainerName] {
			out = append(out, PodContainer{Name: c.ContainerName, Container: c, View: views[c.ID]})
		}
	}
	return out
}

// tally counts the pod's kubectl RESTARTS and READY from its containers'
// views: RESTARTS while initializing the init containers', afterwards
// the app containers' and sidecars'; READY the ready app containers and
// sidecars of them all.
func (pv *PodView) tally() {
	initializing := !pv.Initialized()
	for _, pc := range pv.Containers {
		if initializing && pc.Init || !initializing && (!pc.Init || pc.Sidecar) {
			pv.Restarts += pc.View.Restarts
		}
		if !pc.Init || pc.Sidecar {
			pv.Total++
			if pc.View.Ready {
				pv.Ready++
			}
		}
	}
}
