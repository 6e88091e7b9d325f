package reconciler

import (
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// The steps inside one holder pod (its holder, files, init order,
// sidecars, app containers) are the pod runtime's (podruntime.PlanPodSteps,
// docs/design.md §17): the Deployment planner decides which pods exist and
// of which revision, and asks the runtime for each pod's ops.

// podPlan is what planPod needs besides the pod.
type podPlan struct {
	t    *manifests.PodTemplateSpec
	from *dockerx.PodTemplate // what members are created from (Op.From)
	// refused: the revision may not be started or created (PlanInput.Refused).
	refused bool
}

// planPod returns the ops that move one holder pod on. blocked reports a
// refused revision that needed a start or create.
func (in PlanInput) planPod(p *podruntime.Pod, pp podPlan, plan *Plan) (ops []Op, blocked bool) {
	steps := podruntime.PodSteps{Blocked: plan.Blocked, RequeueAfter: plan.RequeueAfter}
	podruntime.PlanPodSteps(p, podruntime.PodStepsInput{
		Now: in.Now, Template: pp.t, From: pp.from, Refused: pp.refused, Files: in.Files[p.Key],
		LivenessGrace: boundGrace(pp.t, in.MaxGracePeriod), Stopping: in.Stopping, StartNotBefore: in.StartNotBefore,
		Unstarted: in.Unstarted, LivenessFailed: in.LivenessFailed, NeverStarts: in.NeverStarts,
	}, &steps)
	plan.Blocked, plan.RequeueAfter = steps.Blocked, steps.RequeueAfter
	return steps.Ops, steps.Refused
}

// podUID derives the uid of a pod created now (podruntime.NewPodUID).
func podUID(base string, now time.Time) string { return podruntime.NewPodUID(base, now) }

// expandPods turns the unit ops of holder pods into container ops, after
// the revision planner has capped its creates (podruntime.ExpandPodOps).
func (in PlanInput) expandPods(ops []Op) []Op {
	return podruntime.ExpandPodOps(ops, podruntime.ExpandInput{Instance: in.Instance, Pods: in.Pods, Stopping: in.Stopping, Template: in.templateOf})
}

// memberNameBlocked reports whether a container the pod still has to make
// cannot get its name (held by a container this deployment does not own):
// the pod can never be completed under its name, so it is replaced by one
// under the next free ordinal, as a replica's create would move on.
func (in PlanInput) memberNameBlocked(p *podruntime.Pod) bool {
	if len(in.BlockedNames) == 0 {
		return false
	}
	t := in.templateOf(p.Hash)
	if t == nil {
		return false
	}
	for _, c := range t.Spec.AllContainers() {
		if p.Members[c.Name] == nil && in.BlockedNames[dockerx.MemberName(p.Base, c.Name)] {
			return true
		}
	}
	return false
}

// memberNames lists the container names of a template that needs a holder
// (nil otherwise): a new pod's ordinal must leave all of them free.
func memberNames(t *manifests.PodTemplateSpec) []string {
	if !manifests.NeedsHolder(&t.Spec) {
		return nil
	}
	var out []string
	for _, c := range t.Spec.AllContainers() {
		out = append(out, c.Name)
	}
	return out
}
