package workload

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// ObservedPod is one pod of a workload as its controller sees it: the
// pod's name, labels and annotations (as created from the PodSpec the
// controller asked for, and as `label`/`annotate` changed them), when it
// was created, and its status from the pod runtime.
type ObservedPod struct {
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	Created     time.Time
	Status      podruntime.PodStatus
	// FinishedAt is when the pod's last container ended, when the runtime
	// recorded it (zero: running, or unknown — then FinishTime reads the
	// containers' own finish times). Only the Job controller reads it.
	FinishedAt time.Time
}

// Exists is whether the pod has been created: a pod the runtime reports
// has a phase (the StatefulSet controller's isCreated).
func (p *ObservedPod) Exists() bool { return p != nil && p.Status.Phase != "" }

// Terminating is whether the pod is being stopped to be removed (a
// deletionTimestamp in Kubernetes).
func (p *ObservedPod) Terminating() bool { return p != nil && p.Status.Terminating }

// Finished is whether the pod's phase is Failed or Succeeded: it will not
// run again by itself.
func (p *ObservedPod) Finished() bool {
	return p != nil && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded)
}

// Active is Kubernetes' IsPodActive (FilterActivePods): neither finished
// nor being stopped.
func (p *ObservedPod) Active() bool { return p != nil && !p.Finished() && !p.Terminating() }

// FinishTime is when a finished pod finished, as Kubernetes' Job
// controller estimates it (getFinishedTime): the recorded FinishedAt,
// else the latest container exit, else the pod's creation.
func (p *ObservedPod) FinishTime() time.Time {
	if !p.FinishedAt.IsZero() {
		return p.FinishedAt
	}
	var last time.Time
	for _, c := range p.Status.Containers {
		if t := c.State.Terminated; t != nil && t.FinishedAt.After(last) {
			last = t.FinishedAt.Time
		}
	}
	if !last.IsZero() {
		return last
	}
	return p.Created
}

// Ready is the pod's Ready condition (podutil.IsPodReady).
func (p *ObservedPod) Ready() bool {
	if p == nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// RunningAndReady is the StatefulSet controller's isRunningAndReady: phase
// Running and Ready.
func (p *ObservedPod) RunningAndReady() bool {
	return p != nil && p.Status.Phase == corev1.PodRunning && p.Ready()
}

// Healthy is running and ready and not terminating (isHealthy).
func (p *ObservedPod) Healthy() bool { return p.RunningAndReady() && !p.Terminating() }

// Available is podutil.IsPodAvailable: ready, and with minReadySeconds
// ready since at least that long. The instant AvailableAt returns counts
// as available, so a requeue at that time finds the pod available.
func (p *ObservedPod) Available(minReadySeconds int32, now time.Time) bool {
	at, ok := p.AvailableAt(minReadySeconds)
	return ok && !now.Before(at)
}

// AvailableAt is when a ready pod becomes available (ok false when it is
// not ready).
func (p *ObservedPod) AvailableAt(minReadySeconds int32) (time.Time, bool) {
	if !p.Ready() {
		return time.Time{}, false
	}
	if minReadySeconds <= 0 {
		return time.Time{}, true
	}
	if p.Status.ReadySince.IsZero() {
		return time.Time{}, false
	}
	return p.Status.ReadySince.Add(time.Duration(minReadySeconds) * time.Second), true
}

// Revision is the pod's controller-revision-hash label.
func (p *ObservedPod) Revision() string { return p.Labels[RevisionLabel] }

// MaxRestarts is the highest restart count of the pod's containers.
func (p *ObservedPod) MaxRestarts() int {
	n := 0
	for _, c := range p.Status.Containers {
		n = max(n, c.Restarts)
	}
	return n
}

// Labels Kubernetes' workload controllers put on the pods they create.
const (
	// RevisionLabel is apps/v1's controller-revision-hash: the revision a
	// StatefulSet's or DaemonSet's pod runs.
	RevisionLabel = "controller-revision-hash"
)

// Requeue keeps the earliest non-zero time: when a decision wants to be
// taken again (a pod becoming available after minReadySeconds).
type Requeue struct{ At time.Time }

// Before asks for a sync no later than t.
func (r *Requeue) Before(t time.Time) {
	if !t.IsZero() && (r.At.IsZero() || t.Before(r.At)) {
		r.At = t
	}
}

// NotAvailableYet asks for a sync when a ready pod that is not yet
// available becomes so.
func (r *Requeue) NotAvailableYet(p *ObservedPod, minReadySeconds int32, now time.Time) {
	if at, ok := p.AvailableAt(minReadySeconds); ok && now.Before(at) {
		r.Before(at)
	}
}
