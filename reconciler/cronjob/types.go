package cronjob

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/workload"
)

// ObservedJob is a Job the CronJob owns, as stored, with the status the
// Job controller gave it.
type ObservedJob struct {
	Name        string
	Annotations map[string]string
	Status      batchv1.JobStatus
}

// Decision is what Sync decided.
type Decision struct {
	// Status is the CronJob's new status, to store whatever else
	// happens.
	Status batchv1.CronJobStatus
	// Create is the Job to create (nil: none), owned by Owner; it is
	// defaulted (manifests.SetJobDefaults) and named for its schedule
	// time.
	Create *manifests.Job
	Owner  podruntime.OwnerRef
	// Delete names Jobs to delete with their pods (Replace, history).
	Delete []string
	// Events are to be recorded on the CronJob once the decision is
	// carried out.
	Events []workload.Event
	// RequeueAt is when to decide again though nothing changes: the
	// next start time plus NextScheduleDelta; zero for never.
	RequeueAt time.Time
}

// NextScheduleDelta pads a requeue at a start time, as Kubernetes pads
// it (nextScheduleDelta): a little late, the time is surely due.
const NextScheduleDelta = 100 * time.Millisecond
