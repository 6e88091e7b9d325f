package reconciler

import (
	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// observedPods is a deployment's containers judged as pods.
type observedPods struct {
	units []dockerx.Container        // what the revision planner counts
	pods  map[string]*podruntime.Pod // holder pods by unit ID
	// all is units followed by the containers of holder pods: what the
	// per-container memory (restarts, crash backoff) is kept for.
	all []dockerx.Container
	// ready holds the ready containers (by container ID) and the ready
	// units (a holder pod by its unit ID: podruntime.PodReady).
	ready map[string]bool
	// completed holds the containers whose exit is no crash: init
	// containers (not sidecars) that exited 0, and (filled by the caller)
	// the containers of pods being stopped.
	completed map[string]bool
}

// judgePods groups the observed containers into pods and judges their
// readiness: the one way both the controller and `dockctl get` see them.
func judgePods(observed []dockerx.Container, states map[string]*podruntime.ContainerState, templates func(string) *manifests.PodTemplateSpec, died map[string]bool) observedPods {
	units, pods := podruntime.GroupPods(observed, templates, died)
	o := observedPods{units: units, pods: pods, all: units, ready: readiness(observed, states, probed(templates))}
	if pods == nil {
		return o
	}
	o.all = make([]dockerx.Container, 0, len(units)+len(observed))
	o.all = append(o.all, units...)
	for _, c := range observed {
		if podruntime.InHolderPod(&c, templates) {
			o.all = append(o.all, c)
		}
	}
	o.completed = map[string]bool{}
	for key, p := range pods {
		t := templates(p.Hash)
		if podruntime.PodReady(p, t, o.ready) {
			o.ready[key] = true
		}
		if t == nil {
			continue
		}
		for i := range t.Spec.InitContainers {
			ic := &t.Spec.InitContainers[i]
			if m := p.Members[ic.Name]; m != nil && !ic.IsSidecar() && m.State == dockerx.StateExited && m.ExitCode == 0 {
				o.completed[m.ID] = true
			}
		}
	}
	return o
}
