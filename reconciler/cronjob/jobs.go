package cronjob

import (
	"cmp"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/dockctl/dockctl/internal/cronschedule"
	"github.com/dockctl/dockctl/reconciler/job"
)

// scheduledTime is the schedule time a Job was made for, when it is one
// this CronJob made for it: its annotation reads as a time and its name
// is the one that time gives.
func scheduledTime(cronJob string, j *ObservedJob) (time.Time, bool) {
	v, ok := j.Annotations[batchv1.CronJobScheduledTimestampAnnotation]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil || cronschedule.JobName(cronJob, t) != j.Name {
		return time.Time{}, false
	}
	return t, true
}

// historyToDelete returns the finished Jobs beyond the limits, oldest
// first (by start time, a Job never started last, then by name, as
// Kubernetes' byJobStartTime orders them). A nil limit keeps all.
func historyToDelete(jobs []ObservedJob, successLimit, failedLimit *int32) []string {
	var ok, failed []*ObservedJob
	for i := range jobs {
		j := &jobs[i]
		if _, finished := job.Finished(j.Status); !finished {
			continue
		}
		if job.Succeeded(j.Status) {
			ok = append(ok, j)
		} else {
			failed = append(failed, j)
		}
	}
	var out []string
	for _, g := range []struct {
		jobs  []*ObservedJob
		limit *int32
	}{{ok, successLimit}, {failed, failedLimit}} {
		if g.limit == nil || len(g.jobs) <= int(*g.limit) {
			continue
		}
		slices.SortFunc(g.jobs, byStartTimeOrName)
		for _, j := range g.jobs[:len(g.jobs)-int(*g.limit)] {
			out = append(out, j.Name)
		}
	}
	return out
}

func byStartTimeOrName(a, b *ObservedJob) int {
	sa, sb := a.Status.StartTime, b.Status.StartTime
	switch {
	case sa == nil && sb != nil:
		return 1
	case sa != nil && sb == nil:
		return -1
	case sa != nil && !sa.Equal(sb):
		return sa.Time.Compare(sb.Time)
	}
	return cmp.Compare(a.Name, b.Name)
}
