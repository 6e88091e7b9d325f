package job

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// ObservedPod is one pod of the Job as the pod runtime shows it.
type ObservedPod struct {
	Name string
	// Labels and Annotations are the pod's; an Indexed Job's pod carries
	// its index in both (batchv1.JobCompletionIndexAnnotation).
	Labels, Annotations map[string]string
	Status              podruntime.PodStatus
	Created             time.Time
	// Finished is when the pod's last container ended (zero: running, or
	// unknown — then the containers' own finish times are read).
	Finished time.Time
}

// Event is one event to record on the Job (or the CronJob), as a v1
// Event has it.
type Event struct {
	Type    string // corev1.EventTypeNormal or EventTypeWarning
	Reason  string
	Message string
}

// Decision is what Sync decided.
type Decision struct {
	// Status is the Job's new status, to store whatever else happens.
	Status batchv1.JobStatus
	// Create are the pods to create, Delete the names of pods to stop
	// and remove (never a finished pod).
	Create []podruntime.PodSpec
	Delete []string
	// Events are to be recorded on the Job once the decision is carried
	// out.
	Events []Event
	// RequeueAt is when to decide again though nothing changes (a
	// backoff, activeDeadlineSeconds, the time to live); zero for never.
	RequeueAt time.Time
	// DeleteJob: the Job's ttlSecondsAfterFinished has run out; delete
	// it with its pods.
	DeleteJob bool
}

// Kubernetes' figures (pkg/controller/job).
const (
	// PodFailureBackoff is the wait after the first failure before a
	// new pod; it doubles with each failure since the last success.
	PodFailureBackoff = 10 * time.Second
	// MaxPodFailureBackoff caps it. Kubernetes capped it at 6 minutes
	// until 1.28 and at 10 since; dockctl keeps the 6 its contract names.
	MaxPodFailureBackoff = 6 * time.Minute
	// MaxPodCreateDeletePerSync bounds the pods one sync creates or
	// deletes.
	MaxPodCreateDeletePerSync = 500
	// CompletionIndexEnv is the variable an Indexed Job's containers read
	// their index from.
	CompletionIndexEnv = "JOB_COMPLETION_INDEX"
	// LegacyJobNameLabel is the label Kubernetes still sets beside
	// batchv1.JobNameLabel.
	LegacyJobNameLabel = "job-name"
)

func (p *ObservedPod) terminal() bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// active: neither finished nor being stopped (Kubernetes'
// FilterActivePods).
func (p *ObservedPod) active() bool { return !p.terminal() && !p.Status.Terminating }

// terminating: being stopped before it finished.
func (p *ObservedPod) terminating() bool { return !p.terminal() && p.Status.Terminating }

func (p *ObservedPod) ready() bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// finishedAt is when the pod finished, as Kubernetes' getFinishedTime
// estimates it: the recorded time, else the latest container exit, else
// its creation.
func (p *ObservedPod) finishedAt() time.Time {
	if !p.Finished.IsZero() {
		return p.Finished
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

// restarts sums its containers' restarts, init containers included.
func (p *ObservedPod) restarts() int32 {
	var n int32
	for _, c := range p.Status.Containers {
		n += int32(c.Restarts)
	}
	return n
}
