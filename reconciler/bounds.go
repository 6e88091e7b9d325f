package reconciler

import (
	"fmt"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// DefaultMaxReplicas is the controller's default replica cap
// (--max-replicas). One Docker host creates about 11 containers a second
// at best (BENCHMARKS.md, Results: 2.4 on the engine measured there), so
// 1000 replicas take a minute and a half to create and a machine of ordinary
// size runs out of memory or PIDs long before; a higher count is far more
// likely a typo (an extra zero) than a wish, and an operator who means it
// raises the cap.
const DefaultMaxReplicas = 1000

// DefaultMaxGracePeriod bounds terminationGracePeriodSeconds
// (--max-grace-period). A terminating replica still counts toward
// replicas + maxSurge, so a rollout waits for its old replicas' grace
// periods: five minutes is ten times Kubernetes' default of 30 s, ample
// for draining connections, and keeps one stuck replica from stalling a
// rollout for hours.
const DefaultMaxGracePeriod = 5 * time.Minute

// replicaRefusal says why a deployment asks for more replicas than the
// controller runs, or "" when it does not. limit 0 means the default cap;
// a limit above the hard bound of manifests is lowered to it.
func replicaRefusal(d *manifests.Deployment, limit int32) string {
	if d == nil {
		return ""
	}
	if limit <= 0 {
		limit = DefaultMaxReplicas
	}
	limit = min(limit, manifests.MaxReplicasLimit)
	if r := d.Replicas(); r > limit {
		return fmt.Sprintf("replicas %d exceeds the controller's cap of %d (--max-replicas); nothing was scaled", r, limit)
	}
	return ""
}

// graceFor is how long a container is given to stop before it is killed:
// the terminationGracePeriodSeconds of its OWN revision's template (an old
// replica keeps the grace it was created with, whatever the new template
// says), bounded by maxGrace. A container that is not running has nothing
// to stop, and gets zero.
func (in PlanInput) graceFor(c *dockerx.Container) time.Duration { return in.stopGrace(c, nil) }

// stopGrace is graceFor with seconds, when not nil, in place of the
// template's grace period: a user's `delete pod --grace-period`, which
// Kubernetes lets replace the pod's own.
func (in PlanInput) stopGrace(c *dockerx.Container, seconds *int64) time.Duration {
	running := false
	if p := in.Pods[c.ID]; p != nil {
		// A holder pod has something to stop while any of its containers
		// runs — its members even when the holder is gone, as the kubelet
		// stops the containers of a dead sandbox with the pod's grace.
		for _, m := range p.Containers() {
			running = running || m.State == dockerx.StateRunning || m.State == dockerx.StatePaused || m.State == dockerx.StateRestarting
		}
	} else {
		running = c.State == dockerx.StateRunning || c.State == dockerx.StatePaused || c.State == dockerx.StateRestarting
	}
	switch {
	case !running:
		return 0
	case seconds != nil:
		return boundSeconds(*seconds, in.MaxGracePeriod)
	}
	return boundGrace(in.templateOf(c.TemplateHash), in.MaxGracePeriod)
}

// templateOf returns the pod template of a revision, or nil when it is
// unknown (made by hand, or trimmed from the history).
func (in PlanInput) templateOf(hash string) *manifests.PodTemplateSpec {
	return templateLookup(in.Desired, in.Hash, in.Revisions)(hash)
}

// boundGrace converts a template's grace period, bounded by maxGrace
// (0: DefaultMaxGracePeriod). It compares seconds before converting, so
// that an absurd value cannot overflow a Duration; an unknown template gets
// Kubernetes' default.
func boundGrace(t *manifests.PodTemplateSpec, maxGrace time.Duration) time.Duration {
	secs := int64(manifests.DefaultTerminationGracePeriodSeconds)
	if t != nil && t.Spec.TerminationGracePeriodSeconds != nil {
		secs = *t.Spec.TerminationGracePeriodSeconds
	}
	return boundSeconds(secs, maxGrace)
}

// boundSeconds converts a grace period in seconds, bounded by maxGrace
// (0: DefaultMaxGracePeriod); a negative one is none.
func boundSeconds(secs int64, maxGrace time.Duration) time.Duration {
	if maxGrace <= 0 {
		maxGrace = DefaultMaxGracePeriod
	}
	secs = max(secs, 0)
	if secs >= int64(maxGrace/time.Second) {
		return maxGrace
	}
	return time.Duration(secs) * time.Second
}

// removeOp plans the removal of c with its own grace period. A container
// already terminating (a restarted controller finds its deadline in the
// status file) gets only what is left of its grace, and none once the
// deadline has passed: it is killed. One whose stop is in flight here
// needs nothing.
func (in PlanInput) removeOp(c *dockerx.Container, reason OpReason, cause string) (Op, bool) {
	return in.removeOpWith(c, reason, cause, in.graceFor(c))
}

// removeOpWith is removeOp with grace in place of the container's own.
func (in PlanInput) removeOpWith(c *dockerx.Container, reason OpReason, cause string, grace time.Duration) (Op, bool) {
	if in.Stopping[c.ID] {
		return Op{}, false
	}
	op := Op{Kind: OpRemove, Name: c.Name, ContainerID: c.ID, Reason: reason, Cause: cause, Grace: grace}
	if deadline, ok := in.Terminating[c.ID]; ok {
		op.Grace = min(op.Grace, max(deadline.Sub(in.Now), 0))
		op.Cause = fmt.Sprintf("%s: resuming its stop (kill at %s)", cause, deadline.UTC().Format(time.RFC3339))
	}
	return op, true
}

// capCreates drops the creates that would take the number of containers
// beyond replicas + maxSurge (replicas for Recreate). The rollout already
// stays within it; this also holds a plain scale-up to it while replicas
// removed by an earlier scale-down are still terminating, since a
// terminating replica keeps its place until it is gone (docs/design.md §8).
// The stopper queues the deployment again when one is gone.
func capCreates(ops []Op, p rolloutParams, total int32) []Op {
	limit := int64(p.replicas) + int64(p.maxSurge)
	if p.recreate {
		limit = int64(p.replicas)
	}
	budget := limit - int64(total)
	out := ops[:0]
	for _, op := range ops {
		if op.Kind == OpCreate && op.Container == "" { // a pod's create, not a member's
			if budget <= 0 {
				continue
			}
			budget--
		}
		out = append(out, op)
	}
	return out
}
