package cronjob

import (
	"encoding/json"
	"fmt"
	"maps"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/dockctl/dockctl/internal/cronschedule"
	"github.com/dockctl/dockctl/manifests"
)

// newJob is the Job of cj for the schedule time t, as Kubernetes'
// getJobFromTemplate2 makes it: named for t, the jobTemplate's labels,
// annotations and spec, the schedule time in its annotation (RFC 3339 in
// the CronJob's time zone, UTC without one), then the Job defaults (a
// jobTemplate is stored with its pod template's defaults only).
func newJob(cj *manifests.CronJob, t time.Time, loc *time.Location) *manifests.Job {
	tmpl := &cj.Spec.JobTemplate
	j := &manifests.Job{
		APIVersion: manifests.BatchAPIVersion,
		Kind:       manifests.KindJob,
		Metadata: manifests.ObjectMeta{
			Name:        cronschedule.JobName(cj.Metadata.Name, t),
			Namespace:   cj.Metadata.Namespace,
			Labels:      maps.Clone(tmpl.Metadata.Labels),
			Annotations: maps.Clone(tmpl.Metadata.Annotations),
		},
	}
	if j.Metadata.Annotations == nil {
		j.Metadata.Annotations = map[string]string{}
	}
	j.Metadata.Annotations[batchv1.CronJobScheduledTimestampAnnotation] = t.In(loc).Format(time.RFC3339)
	b, err := json.Marshal(tmpl.Spec)
	if err == nil {
		err = json.Unmarshal(b, &j.Spec)
	}
	if err != nil {
		// Every field of the manifests types is exported and tagged:
		// the round trip cannot fail but by a bug.
		panic(fmt.Sprintf("cronjob %q: copying the jobTemplate: %v", cj.Metadata.Name, err))
	}
	manifests.SetJobDefaults(j)
	return j
}
