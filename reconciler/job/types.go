package job

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/workload"
)

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
	Events []workload.Event
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

// terminating: being stopped before it finished (Kubernetes counts such
// a pod in status.terminating, not as active).
func terminating(p *workload.ObservedPod) bool { return !p.Finished() && p.Terminating() }

// restarts sums its containers' restarts, init containers included (the
// Job controller's OnFailure count; workload.ObservedPod.MaxRestarts is
// the highest single one, another figure).
func restarts(p *workload.ObservedPod) int32 {
	var n int32
	for _, c := range p.Status.Containers {
		n += int32(c.Restarts)
	}
	return n
}
