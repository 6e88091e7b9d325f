package podruntime

import (
	"sort"
	"strings"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// A replica is a pod (docs/design.md §9). A pod of one container is that
// container alone, as every replica was before pods: it is its own unit. A
// pod whose template needs a holder (manifests.NeedsHolder) is several
// containers — the holder, which owns the shared namespaces, and one member
// per template container — tied together by the io.dockctl.pod and
// io.dockctl.pod-uid labels. A workload controller's planner (a
// Deployment's rollout sizes, surge, ranking, status) counts pods, never
// containers: each holder pod is presented to it as one synthetic
// container, its unit, whose ID is the pod's key and whose state sums the
// pod up. What happens inside a pod — init containers in order, a crashed
// sidecar restarted in place — is the pod planner's (PlanPodSteps).

// Pod is one replica of a template that needs a holder, as observed.
type Pod struct {
	Key     string // the unit's ID: PodKeyPrefix + base + "/" + uid
	Base    string // the holder's container name (ContainerName)
	Name    string // the pod's name: its hostname
	UID     string
	Hash    string
	Holder  *dockerx.Container
	Members map[string]*dockerx.Container // by template container name
	// Extra are members that no template container claims: a second
	// container under one name, or one with no container label.
	Extra []*dockerx.Container
	// HolderDied: a die event of the holder was seen (it may run again).
	HolderDied bool
}

// PodKeyPrefix starts a holder pod's unit ID. Docker container IDs are
// hexadecimal, so no unit ID of a pod without holder can start with it.
const PodKeyPrefix = "pod:"

// IsPodKey reports whether a unit ID names a holder pod.
func IsPodKey(id string) bool { return strings.HasPrefix(id, PodKeyPrefix) }

// containers returns the pod's containers, holder last, members by name.
func (p *Pod) Containers() []*dockerx.Container {
	out := make([]*dockerx.Container, 0, len(p.Members)+len(p.Extra)+1)
	for _, m := range p.Members {
		out = append(out, m)
	}
	out = append(out, p.Extra...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if p.Holder != nil {
		out = append(out, p.Holder)
	}
	return out
}

// GroupPods splits an owner's observed containers into units for the
// revision planner: a container without pod labels is a unit by itself
// (its ID and name unchanged); the containers of one holder pod become one
// synthetic unit (see podUnit). pods maps a unit ID to its pod.
//
// A container is part of a holder pod only if its own revision's template
// needs a holder (templates; an unknown revision is judged by its labels
// alone): a replica made by an earlier release, whose template may have
// carried any io.dockctl.* label, stays the single container it is.
//
// died holds holders known to have died since they started (nil: none
// known): their pods are dead whatever the list shows.
func GroupPods(cs []dockerx.Container, templates func(hash string) *manifests.PodTemplateSpec, died map[string]bool) (units []dockerx.Container, pods map[string]*Pod) {
	if !HasPods(cs) {
		return cs, nil // pods of one container: units are the containers, uncopied
	}
	for i := range cs {
		c := &cs[i]
		if !InHolderPod(c, templates) {
			units = append(units, *c)
			continue
		}
		base := c.Name
		if c.Role != dockerx.RoleHolder {
			base = strings.TrimSuffix(c.Name, "."+c.ContainerName)
		}
		key := PodKeyPrefix + base + "/" + c.PodUID
		if pods == nil {
			pods = map[string]*Pod{}
		}
		p := pods[key]
		if p == nil {
			p = &Pod{Key: key, Base: base, Name: c.Pod, UID: c.PodUID, Hash: c.TemplateHash, Members: map[string]*dockerx.Container{}}
			pods[key] = p
		}
		switch {
		case c.Role == dockerx.RoleHolder && p.Holder == nil:
			p.Holder = c
		case c.Role != dockerx.RoleHolder && c.ContainerName != "" && p.Members[c.ContainerName] == nil:
			p.Members[c.ContainerName] = c
		default:
			p.Extra = append(p.Extra, c)
		}
	}
	keys := make([]string, 0, len(pods))
	for k := range pods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := pods[k]
		p.HolderDied = p.Holder != nil && died[p.Holder.ID]
		units = append(units, p.Unit(templates(p.Hash)))
	}
	return units, pods
}

// unit presents the pod to the revision planner as one container. Its
// state sums the pod up:
//   - removing while its holder is being removed;
//   - dead when its holder is gone or stopped, or was started again after
//     a member that still runs (stranded): the shared network namespace that
//     member joined is gone, so the pod is replaced as a whole (as
//     Kubernetes re-creates a pod whose sandbox died or changed);
//   - running when its holder and every app container and sidecar run
//     (t nil, an unknown revision: every member runs or completed);
//   - created otherwise: initializing, or a member to repair, which
//     PlanPodSteps does in place — and which ranks it before running pods on a
//     scale-down, as Kubernetes ranks a pending pod.
func (p *Pod) Unit(t *manifests.PodTemplateSpec) dockerx.Container {
	u := dockerx.Container{ID: p.Key, Name: p.Base, TemplateHash: p.Hash, Role: dockerx.RoleHolder, Pod: p.Name, PodUID: p.UID}
	first := true
	for _, c := range p.Containers() {
		if first || c.Created.Before(u.Created) {
			u.Created = c.Created
			u.Instance, u.Deployment, u.Labels, u.Image = c.Instance, c.Deployment, c.Labels, c.Image
			first = false
		}
	}
	h := p.Holder
	switch {
	case h != nil && h.State == dockerx.StateRemoving:
		u.State = dockerx.StateRemoving
	case h == nil || h.State == dockerx.StateExited || h.State == dockerx.StateDead || p.Stranded():
		u.State = dockerx.StateDead
	case h.State == dockerx.StateRunning && p.Running(t):
		u.State = dockerx.StateRunning
	default:
		u.State = dockerx.StateCreated
	}
	return u
}

// anyRunning reports whether any of the pod's containers runs (or is
// paused): something of it is still serving or holding resources.
func (p *Pod) AnyRunning() bool {
	for _, c := range p.Containers() {
		if c.State == dockerx.StateRunning || c.State == dockerx.StatePaused || c.State == dockerx.StateRestarting {
			return true
		}
	}
	return false
}

// running reports whether every container that should run does: the app
// containers and sidecars of t, or, with no template, every member that
// did not complete.
func (p *Pod) Running(t *manifests.PodTemplateSpec) bool {
	if t == nil {
		if len(p.Members) == 0 {
			return false
		}
		for _, m := range p.Members {
			if m.State != dockerx.StateRunning && !(m.State == dockerx.StateExited && m.ExitCode == 0) {
				return false
			}
		}
		return true
	}
	for i := range t.Spec.InitContainers {
		if ic := &t.Spec.InitContainers[i]; ic.IsSidecar() {
			if m := p.Members[ic.Name]; m == nil || m.State != dockerx.StateRunning {
				return false
			}
		}
	}
	for i := range t.Spec.Containers {
		if m := p.Members[t.Spec.Containers[i].Name]; m == nil || m.State != dockerx.StateRunning {
			return false
		}
	}
	return true
}

// stranded reports whether its running holder died since it started (a die
// event was seen), or a running member was started before the holder's
// current run: Docker joined it to the namespaces of the
// holder's previous run, which died with it (a `docker restart` of the
// holder). The list API has no start times, only Docker's "Up …" status;
// its wording is monotonic in the uptime, so a holder whose uptime is
// certainly shorter than a member's was started after it.
func (p *Pod) Stranded() bool {
	h := p.Holder
	if h == nil || h.State != dockerx.StateRunning {
		return false
	}
	if p.HolderDied {
		return true
	}
	_, holderMax, ok := uptimeBounds(h.Status)
	if !ok {
		return false
	}
	for _, m := range p.Members {
		if m.State != dockerx.StateRunning {
			continue
		}
		if memberMin, _, ok := uptimeBounds(m.Status); ok && holderMax <= memberMin {
			return true
		}
	}
	return false
}

// initDone reports whether the pod is initialized, as the kubelet judges
// it: an app container exists (init containers never run again once the
// pod has run its app containers, even if one is removed), or every
// sidecar runs and the last regular init container that exists is the
// template's last one and exited 0 — earlier ones that were removed since
// had done their job.
func (p *Pod) InitDone(t *manifests.PodTemplateSpec) bool {
	for i := range t.Spec.Containers {
		if p.Members[t.Spec.Containers[i].Name] != nil {
			return true
		}
	}
	from := p.LastInit(t)
	for i := range t.Spec.InitContainers {
		ic := &t.Spec.InitContainers[i]
		m := p.Members[ic.Name]
		if ic.IsSidecar() {
			if m == nil || m.State != dockerx.StateRunning {
				return false
			}
			continue
		}
		if i < from {
			continue
		}
		if m == nil || m.State != dockerx.StateExited || m.ExitCode != 0 {
			return false
		}
	}
	return true
}

// lastInit is the index of the last regular init container of t that
// exists (0 when none does): where initialization stands. Those before it
// ran to completion, as the kubelet's findNextInitContainerToRun assumes.
func (p *Pod) LastInit(t *manifests.PodTemplateSpec) int {
	for i := len(t.Spec.InitContainers) - 1; i >= 0; i-- {
		ic := &t.Spec.InitContainers[i]
		if !ic.IsSidecar() && p.Members[ic.Name] != nil {
			return i
		}
	}
	return 0
}

// PodReady decides a holder pod's readiness as Kubernetes' PodReady: its
// holder runs, it is initialized, and every app container and every
// sidecar is ready (memberReady: running, healthy, passing its readiness
// probe). A pod of an unknown revision is never ready.
func PodReady(p *Pod, t *manifests.PodTemplateSpec, memberReady map[string]bool) bool {
	if p.Holder == nil || p.Holder.State != dockerx.StateRunning || p.Stranded() {
		return false
	}
	if t == nil {
		// An unknown revision (a state directory that lost it) is judged
		// by its containers alone, as Kubernetes judges a pod: every
		// member ready, or completed.
		for _, m := range p.Members {
			if !memberReady[m.ID] && !(m.State == dockerx.StateExited && m.ExitCode == 0) {
				return false
			}
		}
		return len(p.Members) > 0
	}
	if !p.InitDone(t) {
		return false
	}
	for i := range t.Spec.InitContainers {
		if ic := &t.Spec.InitContainers[i]; ic.IsSidecar() {
			if m := p.Members[ic.Name]; m == nil || !memberReady[m.ID] {
				return false
			}
		}
	}
	for i := range t.Spec.Containers {
		if m := p.Members[t.Spec.Containers[i].Name]; m == nil || !memberReady[m.ID] {
			return false
		}
	}
	return true
}

// TemplateContainer returns the template container a container runs: a
// member's by its name, a pod without holder's only one. Nil for a holder,
// or when the template does not have it.
func TemplateContainer(t *manifests.PodTemplateSpec, c *dockerx.Container) *manifests.Container {
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

// InHolderPod reports whether c is the holder or a member of a holder pod.
func InHolderPod(c *dockerx.Container, templates func(hash string) *manifests.PodTemplateSpec) bool {
	if c.PodUID == "" {
		return false
	}
	if t := templates(c.TemplateHash); t != nil {
		return manifests.NeedsHolder(&t.Spec)
	}
	return true
}

// HasPods reports whether any of cs belongs to a holder pod.
func HasPods(cs []dockerx.Container) bool {
	for i := range cs {
		if cs[i].PodUID != "" {
			return true
		}
	}
	return false
}
