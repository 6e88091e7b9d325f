package reconciler

import (
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// stopInputs fills the planner's view of stopping containers: those whose
// stop deadline the status file holds (a stop begun by this or an earlier
// controller) and those with a job in flight here (addTerminating).
func (c *Controller) stopInputs(in *PlanInput, s deploymentState, ready map[string]bool) {
	busy, removing := c.stopper.InFlight(in.key())
	in.Stopping = busy
	in.Terminating = removing
	s.addTerminating(in.Terminating, ready)
	in.unready(ready)
	in.MaxReplicas = c.opts.MaxReplicas
	in.MaxGracePeriod = c.opts.MaxGracePeriod
	in.DrainPods = c.stopper.Drains()
}

// recordStops notes the kill deadline of every container a plan began to
// stop, so that a restarted controller resumes the stop instead of counting
// the container as a live replica again. A resumed stop keeps its deadline;
// a shortened one (Op.Deadline) records the earlier one.
func recordStops(s *deploymentState, plan Plan, now time.Time) {
	for _, op := range plan.Ops {
		if op.Kind != OpRemove || op.Grace <= 0 && op.Deadline.IsZero() {
			continue
		}
		cst := s.container(op.ContainerID)
		if d := podruntime.StopDeadline(op.stopRequest(), now); cst.StopDeadline.IsZero() || d.Before(cst.StopDeadline) {
			cst.StopDeadline = d
		}
	}
}

// recordInFlight notes the kill deadline of every observed container whose
// stop is in flight here but not recorded: one begun while the deployment
// was deleted, which was then applied again with a fresh status file. A
// restarted controller must resume it, not take the container for a live
// replica of the revived deployment.
func recordInFlight(s *deploymentState, in PlanInput) {
	for _, c := range in.Containers {
		deadline, ok := in.Terminating[c.ID]
		if !ok || c.State == dockerx.StateRemoving {
			continue
		}
		if cst := s.container(c.ID); cst.StopDeadline.IsZero() {
			cst.StopDeadline = deadline
		}
	}
}

// liveContainers leaves out the terminating containers, those whose stop
// has begun and those a user deleted: like Kubernetes' status.replicas,
// status counts only replicas that are not terminating.
func liveContainers(in PlanInput) []dockerx.Container {
	deleted := in.deleted()
	if len(in.Terminating) == 0 && len(deleted) == 0 {
		return in.Containers
	}
	out := make([]dockerx.Container, 0, len(in.Containers))
	for _, ct := range in.Containers {
		if _, ok := in.Terminating[ct.ID]; !ok && !deleted[ct.ID] {
			out = append(out, ct)
		}
	}
	return out
}

// stopRequest is a graceful stop op (OpRemove, OpRestart) as the pod
// runtime's stopper takes it.
func (o Op) stopRequest() podruntime.StopRequest {
	kind := podruntime.StopRemove
	if o.Kind == OpRestart {
		kind = podruntime.StopRestart
	}
	return podruntime.StopRequest{Kind: kind, ContainerID: o.ContainerID, Name: o.Name, Grace: o.Grace,
		Phases: o.Phases, Drain: o.Drain, PreStop: o.PreStop, Deadline: o.Deadline}
}
