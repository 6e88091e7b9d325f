package reconciler

import (
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// ComputeStatus derives a deployment's replica counts from what Docker
// reports and which containers are available (see availability). It needs
// no controller, which is why `dockctl get` is right even when none runs.
func ComputeStatus(d *manifests.Deployment, hash string, cs []dockerx.Container, ready, available map[string]bool) manifests.DeploymentStatus {
	var st manifests.DeploymentStatus
	for _, c := range cs {
		if c.State == dockerx.StateRemoving || c.State == dockerx.StateDead {
			// Being removed, or left dead by a failed removal: no replica
			// (Kubernetes counts active pods only), or a rollout whose new
			// replicas are all available would never be complete.
			continue
		}
		st.Replicas++
		if c.TemplateHash == hash {
			st.UpdatedReplicas++
		}
		if ready[c.ID] {
			st.ReadyReplicas++
		}
		if available[c.ID] {
			st.AvailableReplicas++
		}
	}
	if un := d.Replicas() - st.AvailableReplicas; un > 0 {
		st.UnavailableReplicas = un
	}
	return st
}

// RolloutComplete reports whether every replica runs the current template,
// is available, and nothing else is left, as `kubectl rollout status`
// requires.
func RolloutComplete(d *manifests.Deployment, st manifests.DeploymentStatus) bool {
	want := d.Replicas()
	return st.UpdatedReplicas == want && st.Replicas == want && st.AvailableReplicas >= want
}

// Condition reasons, as Kubernetes names them.
const (
	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
	ReasonNewReplicaSetAvailable     = "NewReplicaSetAvailable"
	ReasonReplicaSetUpdated          = "ReplicaSetUpdated"
	ReasonProgressDeadlineExceeded   = "ProgressDeadlineExceeded"
	ReasonDeploymentPaused           = "DeploymentPaused"
	ReasonFailedCreate               = podruntime.ReasonFailedCreate
	ReasonErrImagePull               = podruntime.ReasonErrImagePull
	ReasonImagePullBackOff           = "ImagePullBackOff"
	// ReasonRunContainerError: a replica exists but Docker cannot start
	// it (a wrong command, say); it is retried with the crash backoff.
	ReasonRunContainerError = "RunContainerError"
	// ReasonFailedDelete: Docker refused to remove a container.
	ReasonFailedDelete = "FailedDelete"
)

// failure is why replicas could not be created, for the ReplicaFailure
// condition; the zero value is no failure.
type failure struct {
	reason  string // ReasonFailedCreate, ReasonErrImagePull or ReasonImagePullBackOff
	message string
}

// backOffImagePull turns a repeated ErrImagePull into ImagePullBackOff, as a
// pod's status does while the retries back off.
func backOffImagePull(f failure, prev []manifests.DeploymentCondition) failure {
	if f.reason != ReasonErrImagePull {
		return f
	}
	if p := find(prev, manifests.ConditionReplicaFailure); p != nil && (p.Reason == ReasonErrImagePull || p.Reason == ReasonImagePullBackOff) {
		f.reason = ReasonImagePullBackOff
	}
	return f
}

// Conditions computes Available, Progressing and ReplicaFailure as
// Kubernetes does. Progressing's LastUpdateTime moves whenever the rollout
// makes progress (a new generation, more updated, ready or available
// replicas, fewer old ones); when it has not moved for
// progressDeadlineSeconds, Progressing turns False with
// ProgressDeadlineExceeded — the controller keeps trying all the same. It
// returns how long until that deadline, for a requeue. Transition and update
// times carry over while nothing changes, so an idle controller rewrites
// nothing.
func Conditions(d *manifests.Deployment, st, prevCounts manifests.DeploymentStatus, newGeneration bool, fail failure, prev []manifests.DeploymentCondition, now time.Time) ([]manifests.DeploymentCondition, time.Duration) {
	p := resolveParams(d)
	var out []manifests.DeploymentCondition
	// The user's maxUnavailable, as Kubernetes' MaxUnavailable resolves it:
	// not the one a host port or host network forces on the rollout.
	if st.AvailableReplicas >= p.replicas-p.availableBudget {
		out = append(out, cond(manifests.ConditionAvailable, "True", ReasonMinimumReplicasAvailable, "Deployment has minimum availability."))
	} else {
		out = append(out, cond(manifests.ConditionAvailable, "False", ReasonMinimumReplicasUnavailable, "Deployment does not have minimum availability."))
	}

	var deadlineIn time.Duration
	prevProgressing := find(prev, manifests.ConditionProgressing)
	// Kubernetes stops judging progress once the latest rollout completed
	// (NewReplicaSetAvailable) while every replica still runs the current
	// template: a replica that crash-loops afterwards makes the deployment
	// unavailable, not its rollout late.
	completed := !newGeneration && prevProgressing != nil && prevProgressing.Reason == ReasonNewReplicaSetAvailable &&
		st.Replicas == st.UpdatedReplicas
	progressed := newGeneration || st.UpdatedReplicas > prevCounts.UpdatedReplicas ||
		st.ReadyReplicas > prevCounts.ReadyReplicas || st.AvailableReplicas > prevCounts.AvailableReplicas ||
		st.Replicas-st.UpdatedReplicas < prevCounts.Replicas-prevCounts.UpdatedReplicas
	var progressing manifests.DeploymentCondition
	switch {
	case d.Spec.Paused:
		progressing = cond(manifests.ConditionProgressing, "Unknown", ReasonDeploymentPaused, "Deployment is paused.")
	case RolloutComplete(d, st) || completed:
		progressing = cond(manifests.ConditionProgressing, "True", ReasonNewReplicaSetAvailable, "Deployment has successfully progressed.")
	case progressed || prevProgressing == nil || prevProgressing.Reason == ReasonNewReplicaSetAvailable || prevProgressing.Reason == ReasonDeploymentPaused:
		progressing = cond(manifests.ConditionProgressing, "True", ReasonReplicaSetUpdated, "Deployment is progressing.")
		progressing.LastUpdateTime = now
	default:
		progressing = *prevProgressing
		deadline := time.Duration(progressDeadline(d)) * time.Second
		if progressing.Status == "True" {
			if left := progressing.LastUpdateTime.Add(deadline).Sub(now); left > 0 {
				deadlineIn = left
			} else {
				progressing = cond(manifests.ConditionProgressing, "False", ReasonProgressDeadlineExceeded,
					"Deployment has timed out progressing: no progress for "+deadline.String()+".")
				progressing.LastUpdateTime = now
			}
		}
	}
	out = append(out, progressing)
	if fail.reason != "" {
		out = append(out, cond(manifests.ConditionReplicaFailure, "True", fail.reason, fail.message))
	}
	for i := range out {
		c := &out[i]
		p := find(prev, c.Type)
		if p == nil {
			c.LastTransitionTime = now
			if c.LastUpdateTime.IsZero() {
				c.LastUpdateTime = now
			}
			continue
		}
		if p.Status == c.Status {
			c.LastTransitionTime = p.LastTransitionTime
		} else {
			c.LastTransitionTime = now
		}
		if c.LastUpdateTime.IsZero() {
			// Not a progress update: keep the old time while nothing
			// about the condition changed.
			c.LastUpdateTime = now
			if p.Status == c.Status && p.Reason == c.Reason && p.Message == c.Message {
				c.LastUpdateTime = p.LastUpdateTime
			}
		}
	}
	return out, deadlineIn
}

func progressDeadline(d *manifests.Deployment) int32 {
	if d.Spec.ProgressDeadlineSeconds == nil {
		return manifests.DefaultProgressDeadlineSeconds
	}
	return *d.Spec.ProgressDeadlineSeconds
}

func find(conds []manifests.DeploymentCondition, typ string) *manifests.DeploymentCondition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

func cond(typ, status, reason, msg string) manifests.DeploymentCondition {
	return manifests.DeploymentCondition{Type: typ, Status: status, Reason: reason, Message: msg}
}

// nextStatus computes the status to record: observed generation,
// conditions and the controller's memory. The caller writes it only when it
// differs from the previous one, so that an idle controller writes nothing.
// It also returns when the progress deadline would expire, for a requeue.
func (c *Controller) nextStatus(a *assessment, fail failure, now time.Time) (*store.Status, time.Duration, error) {
	counts := ComputeStatus(a.d, a.in.Hash, liveContainers(a.in), a.ready, a.in.Available)
	c.opts.Observer.DeploymentObserved(a.rec.NamespaceOrDefault(), a.rec.Name, int(a.d.Replicas()), int(counts.Replicas), int(counts.ReadyReplicas), int(counts.AvailableReplicas))
	next := *a.prev
	next.ObservedGeneration = a.rec.Generation
	var deadlineIn time.Duration
	newGeneration := a.rec.Generation != a.prev.ObservedGeneration
	next.Conditions, deadlineIn = Conditions(a.d, counts, a.state.Counts, newGeneration, fail, a.prev.Conditions, now)
	next.Message = fail.message
	state := a.state // a.state.Counts still holds the previous marks
	state.Counts = progressMarks(a.state.Counts, counts, newGeneration)
	if err := writeState(&next, state); err != nil {
		return nil, deadlineIn, err
	}
	return &next, deadlineIn, nil
}

// progressMarks are the counts the next sync's progress is judged against:
// the current ones after a change of the rollout itself (a new generation,
// more updated replicas, fewer old ones), else the most ready and available
// replicas seen since. A crash-looping replica that is seen running now and
// then is ready again, not more ready: were it judged against the previous
// sync alone, every crash cycle would count as progress and a broken
// rollout would never exceed its progress deadline.
func progressMarks(marks, st manifests.DeploymentStatus, newGeneration bool) manifests.DeploymentStatus {
	if newGeneration || st.UpdatedReplicas > marks.UpdatedReplicas ||
		st.Replicas-st.UpdatedReplicas < marks.Replicas-marks.UpdatedReplicas {
		return st
	}
	out := marks
	out.ReadyReplicas = max(marks.ReadyReplicas, st.ReadyReplicas)
	out.AvailableReplicas = max(marks.AvailableReplicas, st.AvailableReplicas)
	return out
}
