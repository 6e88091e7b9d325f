package reconciler

import (
	"sort"
	"strings"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// A replica is a pod (DESIGN §9). A pod of one container is that container
// alone, as every replica was before pods: it is its own unit. A pod whose
// template needs a holder (manifests.NeedsHolder) is several containers —
// the holder, which owns the shared namespaces, and one member per template
// container — tied together by the io.dockctl.pod and io.dockctl.pod-uid
// labels. The revision planner (rollout sizes, surge, ranking, status)
// counts pods, never containers: each holder pod is presented to it as one
// synthetic container, its unit, whose ID is the pod's key and whose state
// sums the pod up. What happens inside a pod — init containers in order,
// a crashed sidecar restarted in place — is planPod's.

// pod is one replica of a template that needs a holder, as observed.
type pod struct {
	key     string // the unit's ID: podKeyPrefix + base + "/" + uid
	base    string // the holder's container name (ContainerName)
	name    string // the pod's name: its hostname
	uid     string
	hash    string
	holder  *dockerx.Container
	members map[string]*dockerx.Container // by template container name
	// extra are members that no template container claims: a second
	// container under one name, or one with no container label.
	extra []*dockerx.Container
}

// podKeyPrefix starts a holder pod's unit ID. Docker container IDs are
// hexadecimal, so no unit ID of a pod without holder can start with it.
const podKeyPrefix = "pod:"

// isPodKey reports whether a unit ID names a holder pod.
func isPodKey(id string) bool { return strings.HasPrefix(id, podKeyPrefix) }

// containers returns the pod's containers, holder last, members by name.
func (p *pod) containers() []*dockerx.Container {
	out := make([]*dockerx.Container, 0, len(p.members)+len(p.extra)+1)
	for _, m := range p.members {
		out = append(out, m)
	}
	out = append(out, p.extra...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if p.holder != nil {
		out = append(out, p.holder)
	}
	return out
}

// groupPods splits a deployment's observed containers into units for the
// revision planner: a container without pod labels is a unit by itself
// (its ID and name unchanged); the containers of one holder pod become one
// synthetic unit (see podUnit). pods maps a unit ID to its pod.
//
// A container is part of a holder pod only if its own revision's template
// needs a holder (templates; an unknown revision is judged by its labels
// alone): a replica made by an earlier release, whose template may have
// carried any io.dockctl.* label, stays the single container it is.
func groupPods(cs []dockerx.Container, templates func(hash string) *manifests.PodTemplateSpec) (units []dockerx.Container, pods map[string]*pod) {
	if !hasPods(cs) {
		return cs, nil // pods of one container: units are the containers, uncopied
	}
	for i := range cs {
		c := &cs[i]
		if !inHolderPod(c, templates) {
			units = append(units, *c)
			continue
		}
		base := c.Name
		if c.Role != dockerx.RoleHolder {
			base = strings.TrimSuffix(c.Name, "."+c.ContainerName)
		}
		key := podKeyPrefix + base + "/" + c.PodUID
		if pods == nil {
			pods = map[string]*pod{}
		}
		p := pods[key]
		if p == nil {
			p = &pod{key: key, base: base, name: c.Pod, uid: c.PodUID, hash: c.TemplateHash, members: map[string]*dockerx.Container{}}
			pods[key] = p
		}
		switch {
		case c.Role == dockerx.RoleHolder && p.holder == nil:
			p.holder = c
		case c.Role != dockerx.RoleHolder && c.ContainerName != "" && p.members[c.ContainerName] == nil:
			p.members[c.ContainerName] = c
		default:
			p.extra = append(p.extra, c)
		}
	}
	keys := make([]string, 0, len(pods))
	for k := range pods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		units = append(units, pods[k].unit())
	}
	return units, pods
}

// unit presents the pod to the revision planner as one container. Its
// state sums the pod up:
//   - removing while its holder is being removed;
//   - dead when its holder is gone or stopped: the shared network namespace
//     is gone with it, so the pod is replaced as a whole (as Kubernetes
//     re-creates a pod whose sandbox died);
//   - running when its holder and every app container run;
//   - created otherwise: starting (init containers), or a member to repair,
//     which planPod does in place.
func (p *pod) unit() dockerx.Container {
	u := dockerx.Container{ID: p.key, Name: p.base, TemplateHash: p.hash, Role: dockerx.RoleHolder, Pod: p.name, PodUID: p.uid}
	first := true
	for _, c := range p.containers() {
		if first || c.Created.Before(u.Created) {
			u.Created = c.Created
			u.Instance, u.Deployment, u.Labels, u.Image = c.Instance, c.Deployment, c.Labels, c.Image
			first = false
		}
	}
	h := p.holder
	switch {
	case h != nil && h.State == dockerx.StateRemoving:
		u.State = dockerx.StateRemoving
	case h == nil || h.State == dockerx.StateExited || h.State == dockerx.StateDead:
		u.State = dockerx.StateDead
	case h.State == dockerx.StateRunning && p.appsRunning():
		u.State = dockerx.StateRunning
	default:
		u.State = dockerx.StateCreated
	}
	return u
}

// appsRunning reports whether every member that is not an init container
// runs. The template is not at hand here, so an init container is told by
// its exit: a member that is not running and exited 0 before any app
// container ran could be one; the unit is then "created", which only makes
// planPod look at it.
func (p *pod) appsRunning() bool {
	if len(p.members) == 0 {
		return false
	}
	for _, m := range p.members {
		if m.State != dockerx.StateRunning && !(m.State == dockerx.StateExited && m.ExitCode == 0) {
			return false
		}
	}
	return true
}

// initDone reports whether the pod is initialized: an app container exists
// (Kubernetes does not run init containers again once the pod has run its
// app containers, even if one is removed), or every regular init container
// exited 0.
func (p *pod) initDone(t *manifests.PodTemplateSpec) bool {
	for i := range t.Spec.Containers {
		if p.members[t.Spec.Containers[i].Name] != nil {
			return true
		}
	}
	for i := range t.Spec.InitContainers {
		ic := &t.Spec.InitContainers[i]
		if ic.IsSidecar() {
			continue
		}
		m := p.members[ic.Name]
		if m == nil || m.State != dockerx.StateExited || m.ExitCode != 0 {
			return false
		}
	}
	return true
}

// podReady decides a holder pod's readiness as Kubernetes' PodReady: its
// holder runs, it is initialized, and every app container and every
// sidecar is ready (memberReady: running, healthy, passing its readiness
// probe). A pod of an unknown revision is never ready.
func podReady(p *pod, t *manifests.PodTemplateSpec, memberReady map[string]bool) bool {
	if t == nil || p.holder == nil || p.holder.State != dockerx.StateRunning || !p.initDone(t) {
		return false
	}
	for i := range t.Spec.InitContainers {
		if ic := &t.Spec.InitContainers[i]; ic.IsSidecar() {
			if m := p.members[ic.Name]; m == nil || !memberReady[m.ID] {
				return false
			}
		}
	}
	for i := range t.Spec.Containers {
		if m := p.members[t.Spec.Containers[i].Name]; m == nil || !memberReady[m.ID] {
			return false
		}
	}
	return true
}

// templateContainer returns the template container a container runs: a
// member's by its name, a pod without holder's only one. Nil for a holder,
// or when the template does not have it.
func templateContainer(t *manifests.PodTemplateSpec, c *dockerx.Container) *manifests.Container {
	if t == nil || c.Role == dockerx.RoleHolder {
		return nil
	}
	if c.ContainerName == "" {
		if len(t.Spec.Containers) == 0 {
			return nil
		}
		return &t.Spec.Containers[0]
	}
	return t.Spec.FindContainer(c.ContainerName)
}

// inHolderPod reports whether c is the holder or a member of a holder pod.
func inHolderPod(c *dockerx.Container, templates func(hash string) *manifests.PodTemplateSpec) bool {
	if c.PodUID == "" {
		return false
	}
	if t := templates(c.TemplateHash); t != nil {
		return manifests.NeedsHolder(&t.Spec)
	}
	return true
}

func hasPods(cs []dockerx.Container) bool {
	for i := range cs {
		if cs[i].PodUID != "" {
			return true
		}
	}
	return false
}

// observedPods is a deployment's containers judged as pods.
type observedPods struct {
	units []dockerx.Container // what the revision planner counts
	pods  map[string]*pod     // holder pods by unit ID
	// all is units followed by the containers of holder pods: what the
	// per-container memory (restarts, crash backoff) is kept for.
	all []dockerx.Container
	// ready holds the ready containers (by container ID) and the ready
	// units (a holder pod by its unit ID: podReady).
	ready map[string]bool
	// completed holds the init containers (not sidecars) that exited 0.
	completed map[string]bool
}

// judgePods groups the observed containers into pods and judges their
// readiness: the one way both the controller and `dockctl get` see them.
func judgePods(observed []dockerx.Container, states map[string]*containerState, templates func(string) *manifests.PodTemplateSpec) observedPods {
	units, pods := groupPods(observed, templates)
	o := observedPods{units: units, pods: pods, all: units, ready: readiness(observed, states, probed(templates))}
	if pods == nil {
		return o
	}
	o.all = make([]dockerx.Container, 0, len(units)+len(observed))
	o.all = append(o.all, units...)
	for _, c := range observed {
		if inHolderPod(&c, templates) {
			o.all = append(o.all, c)
		}
	}
	o.completed = map[string]bool{}
	for key, p := range pods {
		t := templates(p.hash)
		if podReady(p, t, o.ready) {
			o.ready[key] = true
		}
		if t == nil {
			continue
		}
		for i := range t.Spec.InitContainers {
			ic := &t.Spec.InitContainers[i]
			if m := p.members[ic.Name]; m != nil && !ic.IsSidecar() && m.State == dockerx.StateExited && m.ExitCode == 0 {
				o.completed[m.ID] = true
			}
		}
	}
	return o
}
