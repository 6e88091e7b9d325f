package reconciler

import (
	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// setDrains marks the graceful stops of running pods with the pod to
// drain: a replica's removal or liveness restart, a pod's removal (any of
// its containers running), and a member's liveness restart (its pod
// drains: a container restarting makes its pod not ready, as in
// Kubernetes).
func (in PlanInput) setDrains(ops []Op) {
	if !in.DrainPods {
		return
	}
	var units map[string]*dockerx.Container
	var podOf map[string]*podruntime.Pod // member or holder ID → pod
	for i := range ops {
		op := &ops[i]
		if op.Grace <= 0 || (op.Kind != OpRemove && op.Kind != OpRestart) {
			continue // not a graceful stop: nothing runs long enough to drain
		}
		if p := in.Pods[op.ContainerID]; p != nil {
			if podServing(p) {
				op.Drain = &podruntime.DrainRef{Namespace: in.namespace(), Pod: p.Name}
			}
			continue
		}
		if units == nil {
			units = make(map[string]*dockerx.Container, len(in.Containers))
			for j := range in.Containers {
				units[in.Containers[j].ID] = &in.Containers[j]
			}
		}
		if c := units[op.ContainerID]; c != nil {
			if c.State == dockerx.StateRunning {
				op.Drain = &podruntime.DrainRef{Namespace: in.namespace(), Pod: podName(c.Deployment, c)}
			}
			continue
		}
		if podOf == nil {
			podOf = map[string]*podruntime.Pod{}
			for _, p := range in.Pods {
				for _, c := range p.Containers() {
					podOf[c.ID] = p
				}
			}
		}
		if p := podOf[op.ContainerID]; p != nil && podServing(p) {
			op.Drain = &podruntime.DrainRef{Namespace: in.namespace(), Pod: p.Name}
		}
	}
}

// podServing reports whether any container of a holder pod runs.
func podServing(p *podruntime.Pod) bool {
	for _, c := range p.Containers() {
		if c.State == dockerx.StateRunning {
			return true
		}
	}
	return false
}
