package reconciler

import (
	"context"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// Lifecycle hooks (package podruntime's hooks.go states how kubelet runs
// them): the prober runs postStart; preStop runs here, in the stopper,
// after the pod left its Services (stopdrain.go) and before the stop
// signal, and the planner decides which stop runs which (setPreStops).

// hookRunner runs a hook within ctx; the stopper's is the prober
// (podruntime.Prober.RunHook).
type hookRunner interface {
	RunHook(ctx context.Context, h podruntime.Hook) error
}

var _ hookRunner = (*podruntime.Prober)(nil)

// setPreStops gives the graceful stops of running containers their
// template container's preStop hook: a replica's removal or restart, each
// running member of a pod's removal, a member's restart.
//
// A stop that an earlier run of the controller began (ReasonTerminating)
// runs its hook again: the controller cannot tell whether the hook ran
// (it may have stopped before, during or after it), and Kubernetes
// delivers hooks at least once, as a restarted kubelet kills a pod again.
// The resumed stop's grace is what the recorded deadline leaves.
func (in PlanInput) setPreStops(ops []Op) {
	var units map[string]*dockerx.Container
	var podOf map[string]*podruntime.Pod
	hook := func(c *dockerx.Container, netOwner string) *podruntime.Hook {
		if c == nil || c.State != dockerx.StateRunning {
			return nil
		}
		tc := podruntime.TemplateContainer(in.templateOf(c.TemplateHash), c)
		if tc == nil || tc.Lifecycle == nil || tc.Lifecycle.PreStop == nil {
			return nil
		}
		return &podruntime.Hook{Handler: tc.Lifecycle.PreStop, ID: c.ID, Name: c.Name, NetOwner: netOwner, Ports: tc.Ports,
			Pod: containerPodRef(in.namespace(), in.Name, c)}
	}
	holderOf := func(p *podruntime.Pod, c *dockerx.Container) string {
		if p.Holder != nil {
			return p.Holder.ID
		}
		return c.ID
	}
	for i := range ops {
		op := &ops[i]
		if op.Grace <= 0 || (op.Kind != OpRemove && op.Kind != OpRestart) {
			continue
		}
		if p := in.Pods[op.ContainerID]; p != nil {
			for _, ph := range op.Phases {
				for j := range ph {
					t := &ph[j]
					if t.Holder {
						continue
					}
					for _, c := range p.Containers() {
						if c.ID == t.ID {
							t.PreStop = hook(c, holderOf(p, c))
						}
					}
				}
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
			op.PreStop = hook(c, c.ID)
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
		if p := podOf[op.ContainerID]; p != nil {
			for _, c := range p.Containers() {
				if c.ID == op.ContainerID {
					op.PreStop = hook(c, holderOf(p, c))
				}
			}
		}
	}
}
