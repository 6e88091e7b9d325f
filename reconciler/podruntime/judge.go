package podruntime

import (
	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// IsReady reports whether a container counts as ready: running, and healthy
// if it has a health check at all.
func IsReady(c dockerx.Container) bool {
	return c.State == dockerx.StateRunning && (c.Health == dockerx.HealthNone || c.Health == dockerx.HealthHealthy)
}

// Probed is the one rule for "is this container readiness-probed by the
// controller": its own template container, in its own revision's template,
// has a readiness probe the controller runs. A container of an unknown
// revision, and a holder, has none.
func Probed(templates func(string) *manifests.PodTemplateSpec) func(c *dockerx.Container) bool {
	return func(c *dockerx.Container) bool {
		return ControllerProbes(TemplateContainer(templates(c.TemplateHash), c)).GatesReadiness()
	}
}

// Readiness decides which containers are ready: running, healthy if they
// have a HEALTHCHECK, and passing the controller-run readiness probe if
// their template container has one (not ready until it has passed once).
func Readiness(cs []dockerx.Container, states map[string]*ContainerState, probed func(c *dockerx.Container) bool) map[string]bool {
	out := map[string]bool{}
	for i := range cs {
		c := cs[i]
		if !IsReady(c) {
			continue
		}
		if probed(&c) {
			cst := states[c.ID]
			if cst == nil || cst.ProbeReady == nil || !*cst.ProbeReady {
				continue
			}
		}
		out[c.ID] = true
	}
	return out
}

// Observed is an owner's containers judged as pods.
type Observed struct {
	Units []dockerx.Container // what the owner's planner counts
	Pods  map[string]*Pod     // holder pods by unit ID
	// All is Units followed by the containers of holder pods: what the
	// per-container memory (restarts, crash backoff) is kept for.
	All []dockerx.Container
	// Ready holds the ready containers (by container ID) and the ready
	// units (a holder pod by its unit ID: PodReady).
	Ready map[string]bool
	// Completed holds the containers whose exit is no crash: init
	// containers (not sidecars) that exited 0, and (filled by the caller)
	// the containers of pods being stopped.
	Completed map[string]bool
}

// Judge groups the observed containers into pods and judges their
// readiness: the one way both the controller and `dockctl get` see them.
func Judge(observed []dockerx.Container, states map[string]*ContainerState, templates func(string) *manifests.PodTemplateSpec, died map[string]bool) Observed {
	units, pods := GroupPods(observed, templates, died)
	o := Observed{Units: units, Pods: pods, All: units, Ready: Readiness(observed, states, Probed(templates))}
	if pods == nil {
		return o
	}
	o.All = make([]dockerx.Container, 0, len(units)+len(observed))
	o.All = append(o.All, units...)
	for _, c := range observed {
		if InHolderPod(&c, templates) {
			o.All = append(o.All, c)
		}
	}
	o.Completed = map[string]bool{}
	for key, p := range pods {
		t := templates(p.Hash)
		if PodReady(p, t, o.Ready) {
			o.Ready[key] = true
		}
		if t == nil {
			continue
		}
		for i := range t.Spec.InitContainers {
			ic := &t.Spec.InitContainers[i]
			if m := p.Members[ic.Name]; m != nil && !ic.IsSidecar() && m.State == dockerx.StateExited && m.ExitCode == 0 {
				o.Completed[m.ID] = true
			}
		}
	}
	return o
}
