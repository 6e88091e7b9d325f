package reconciler

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
// io.dockctl.pod-uid labels. The revision planner (rollout sizes, surge,
// ranking, status) counts pods, never containers: each holder pod is
// presented to it as one synthetic container, its unit, whose ID is the
// pod's key and whose state sums the pod up. What happens inside a pod —
// init containers in order, a crashed sidecar restarted in place — is
// planPod's.

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
	// holderDied: a die event of the holder was seen (it may run again).
	holderDied bool
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
//
// died holds holders known to have died since they started (nil: none
// known): their pods are dead whatever the list shows.
func groupPods(cs []dockerx.Container, templates func(hash string) *manifests.PodTemplateSpec, died map[string]bool) (units []dockerx.Container, pods map[string]*pod) {
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
		p := pods[k]
		p.holderDied = p.holder != nil && died[p.holder.ID]
		units = append(units, p.unit(templates(p.hash)))
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
//     planPod does in place — and which ranks it before running pods on a
//     scale-down, as Kubernetes ranks a pending pod.
func (p *pod) unit(t *manifests.PodTemplateSpec) dockerx.Container {
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
	case h == nil || h.State == dockerx.StateExited || h.State == dockerx.StateDead || p.stranded():
		u.State = dockerx.StateDead
	case h.State == dockerx.StateRunning && p.running(t):
		u.State = dockerx.StateRunning
	default:
		u.State = dockerx.StateCreated
	}
	return u
}

// anyRunning reports whether any of the pod's containers runs (or is
// paused): something of it is still serving or holding resources.
func (p *pod) anyRunning() bool {
	for _, c := range p.containers() {
		if c.State == dockerx.StateRunning || c.State == dockerx.StatePaused || c.State == dockerx.StateRestarting {
			return true
		}
	}
	return false
}

// running reports whether every container that should run does: the app
// containers and sidecars of t, or, with no template, every member that
// did not complete.
func (p *pod) running(t *manifests.PodTemplateSpec) bool {
	if t == nil {
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
	for i := range t.Spec.InitContainers {
		if ic := &t.Spec.InitContainers[i]; ic.IsSidecar() {
			if m := p.members[ic.Name]; m == nil || m.State != dockerx.StateRunning {
				return false
			}
		}
	}
	for i := range t.Spec.Containers {
		if m := p.members[t.Spec.Containers[i].Name]; m == nil || m.State != dockerx.StateRunning {
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
func (p *pod) stranded() bool {
	h := p.holder
	if h == nil || h.State != dockerx.StateRunning {
		return false
	}
	if p.holderDied {
		return true
	}
	_, holderMax, ok := uptimeBounds(h.Status)
	if !ok {
		return false
	}
	for _, m := range p.members {
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
func (p *pod) initDone(t *manifests.PodTemplateSpec) bool {
	for i := range t.Spec.Containers {
		if p.members[t.Spec.Containers[i].Name] != nil {
			return true
		}
	}
	from := p.lastInit(t)
	for i := range t.Spec.InitContainers {
		ic := &t.Spec.InitContainers[i]
		m := p.members[ic.Name]
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
func (p *pod) lastInit(t *manifests.PodTemplateSpec) int {
	for i := len(t.Spec.InitContainers) - 1; i >= 0; i-- {
		ic := &t.Spec.InitContainers[i]
		if !ic.IsSidecar() && p.members[ic.Name] != nil {
			return i
		}
	}
	return 0
}

// podReady decides a holder pod's readiness as Kubernetes' PodReady: its
// holder runs, it is initialized, and every app container and every
// sidecar is ready (memberReady: running, healthy, passing its readiness
// probe). A pod of an unknown revision is never ready.
func podReady(p *pod, t *manifests.PodTemplateSpec, memberReady map[string]bool) bool {
	if p.holder == nil || p.holder.State != dockerx.StateRunning || p.stranded() {
		return false
	}
	if t == nil {
		// An unknown revision (a state directory that lost it) is judged
		// by its containers alone, as Kubernetes judges a pod: every
		// member ready, or completed.
		for _, m := range p.members {
			if !memberReady[m.ID] && !(m.State == dockerx.StateExited && m.ExitCode == 0) {
				return false
			}
		}
		return len(p.members) > 0
	}
	if !p.initDone(t) {
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
	// completed holds the containers whose exit is no crash: init
	// containers (not sidecars) that exited 0, and (filled by the caller)
	// the containers of pods being stopped.
	completed map[string]bool
}

// judgePods groups the observed containers into pods and judges their
// readiness: the one way both the controller and `dockctl get` see them.
func judgePods(observed []dockerx.Container, states map[string]*containerState, templates func(string) *manifests.PodTemplateSpec, died map[string]bool) observedPods {
	units, pods := groupPods(observed, templates, died)
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
