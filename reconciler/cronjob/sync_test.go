package cronjob

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dockctl/dockctl/internal/cronschedule"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/workload/workloadtest"
)

// t0 is the fake clock's reference: a whole hour.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func i32(v int32) *int32 { return &v }
func i64(v int64) *int64 { return &v }

// newCronJob is a defaulted hourly CronJob "report" created at 11:30,
// changed by mods before the defaults.
func newCronJob(mods ...func(*manifests.CronJob)) *manifests.CronJob {
	created := t0.Add(-30 * time.Minute)
	c := &manifests.CronJob{APIVersion: manifests.BatchAPIVersion, Kind: manifests.KindCronJob,
		Metadata: manifests.ObjectMeta{Name: "report", Namespace: "ops", CreationTimestamp: &created},
		Spec: manifests.CronJobSpec{Schedule: "0 * * * *", JobTemplate: manifests.JobTemplateSpec{
			Metadata: manifests.TemplateMeta{Labels: map[string]string{"team": "ops"}, Annotations: map[string]string{"note": "x"}},
			Spec: manifests.JobSpec{Template: manifests.PodTemplateSpec{Spec: manifests.PodSpec{RestartPolicy: manifests.RestartOnFailure,
				Containers: []manifests.Container{{Name: "main", Image: "busybox"}}}}},
		}}}
	for _, m := range mods {
		m(c)
	}
	manifests.SetCronJobDefaults(c)
	return c
}

func policy(p string) func(*manifests.CronJob) {
	return func(c *manifests.CronJob) { c.Spec.ConcurrencyPolicy = p }
}

func deadline(s int64) func(*manifests.CronJob) {
	return func(c *manifests.CronJob) { c.Spec.StartingDeadlineSeconds = i64(s) }
}

// runOf is the Job of the run at t, as this controller made it.
func runOf(t time.Time, st batchv1.JobStatus) ObservedJob {
	return ObservedJob{Name: cronschedule.JobName("report", t),
		Annotations: map[string]string{batchv1.CronJobScheduledTimestampAnnotation: t.Format(time.RFC3339)}, Status: st}
}

func runningSince(t time.Time) batchv1.JobStatus {
	mt := metav1.NewTime(t)
	return batchv1.JobStatus{StartTime: &mt, Active: 1}
}

func finishedAt(t time.Time, ok bool) batchv1.JobStatus {
	st := runningSince(t.Add(-time.Minute))
	st.Active = 0
	ct := metav1.NewTime(t)
	typ := batchv1.JobFailed
	if ok {
		typ = batchv1.JobComplete
		st.CompletionTime = &ct
	}
	st.Conditions = []batchv1.JobCondition{{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: ct}}
	return st
}

func activeOf(names ...string) batchv1.CronJobStatus {
	var st batchv1.CronJobStatus
	for _, n := range names {
		st.Active = append(st.Active, corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: "ops", Name: n})
	}
	return st
}

func scheduledAt(st batchv1.CronJobStatus, t time.Time) batchv1.CronJobStatus {
	mt := metav1.NewTime(t)
	st.LastScheduleTime = &mt
	return st
}

func activeNames(st batchv1.CronJobStatus) []string {
	var out []string
	for _, r := range st.Active {
		out = append(out, r.Name)
	}
	return out
}

func reasons(d Decision) []string { return workloadtest.Reasons(d.Events) }

func TestDueScheduleCreatesTheJobNamedForItsTime(t *testing.T) {
	now := t0.Add(30 * time.Second)
	d := Sync(newCronJob(), batchv1.CronJobStatus{}, nil, now)
	j := d.Create
	if j == nil {
		t.Fatal("no Job created at the start time")
	}
	name := cronschedule.JobName("report", t0)
	if j.Metadata.Name != name || j.Metadata.Namespace != "ops" {
		t.Fatalf("Job %s/%s, want ops/%s", j.Metadata.Namespace, j.Metadata.Name, name)
	}
	if got := j.Metadata.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; got != "2026-03-01T12:00:00Z" {
		t.Fatalf("scheduled-timestamp annotation %q", got)
	}
	if j.Metadata.Labels["team"] != "ops" || j.Metadata.Annotations["note"] != "x" {
		t.Fatalf("template metadata not carried: %v %v", j.Metadata.Labels, j.Metadata.Annotations)
	}
	if j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit != manifests.DefaultBackoffLimit || *j.Spec.Completions != 1 {
		t.Fatal("the Job defaults were not applied")
	}
	if err := manifests.ValidateWorkload(j); err != nil {
		t.Fatalf("the Job made is not valid: %v", err)
	}
	if d.Owner.Kind != manifests.KindCronJob || d.Owner.Name != "report" {
		t.Fatalf("owner %+v", d.Owner)
	}
	if !reflect.DeepEqual(activeNames(d.Status), []string{name}) || !d.Status.LastScheduleTime.Time.Equal(t0) {
		t.Fatalf("active %v lastScheduleTime %v", activeNames(d.Status), d.Status.LastScheduleTime)
	}
	if !d.RequeueAt.Equal(t0.Add(time.Hour + NextScheduleDelta)) {
		t.Fatalf("requeue %v, want the next start time padded", d.RequeueAt)
	}
	if !reflect.DeepEqual(reasons(d), []string{"SuccessfulCreate"}) || d.Events[0].Message != "Created job "+name {
		t.Fatalf("events %+v", d.Events)
	}
	// The template is not shared with the Job made from it.
	j.Spec.Template.Spec.Containers[0].Image = "changed"
	if newCronJob().Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image != "busybox" {
		t.Fatal("shared")
	}
}

func TestTimeZoneWritesTheScheduledTimestampInIt(t *testing.T) {
	tz := "Europe/Paris"
	c := newCronJob(func(c *manifests.CronJob) { c.Spec.TimeZone = &tz; c.Spec.Schedule = "0 13 * * *" })
	d := Sync(c, batchv1.CronJobStatus{}, nil, t0.Add(time.Second)) // 13:00 in Paris is 12:00 UTC
	if d.Create == nil || d.Create.Metadata.Annotations[batchv1.CronJobScheduledTimestampAnnotation] != "2026-03-01T13:00:00+01:00" {
		t.Fatalf("created %+v", d.Create)
	}
}

func TestNothingDueRequeuesAtTheNextStartTime(t *testing.T) {
	d := Sync(newCronJob(), batchv1.CronJobStatus{}, nil, t0.Add(-10*time.Minute))
	if d.Create != nil || len(d.Events) != 0 || !d.RequeueAt.Equal(t0.Add(NextScheduleDelta)) {
		t.Fatalf("create %v events %v requeue %v", d.Create, reasons(d), d.RequeueAt)
	}
}

func TestJobOfTheSameScheduledTimeIsNeverCreatedTwice(t *testing.T) {
	c := newCronJob()
	now := t0.Add(30 * time.Second)
	first := Sync(c, batchv1.CronJobStatus{}, nil, now)
	existing := runOf(t0, runningSince(now))
	for _, tc := range []struct {
		name string
		prev batchv1.CronJobStatus
	}{
		{"status saved", first.Status},
		{"status lost after the create", batchv1.CronJobStatus{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Sync(c, tc.prev, []ObservedJob{existing}, now.Add(time.Second))
			if d.Create != nil {
				t.Fatalf("created %s again", d.Create.Metadata.Name)
			}
			if !reflect.DeepEqual(activeNames(d.Status), []string{existing.Name}) || !d.Status.LastScheduleTime.Time.Equal(t0) {
				t.Fatalf("active %v lastScheduleTime %v", activeNames(d.Status), d.Status.LastScheduleTime)
			}
			if len(d.Events) != 0 {
				t.Fatalf("events %v", reasons(d))
			}
		})
	}
}

func TestConcurrencyPolicy(t *testing.T) {
	prevRun := runOf(t0.Add(-time.Hour), runningSince(t0.Add(-time.Hour)))
	prev := scheduledAt(activeOf(prevRun.Name), t0.Add(-time.Hour))
	now := t0.Add(time.Second)
	for _, tc := range []struct {
		name       string
		policy     string
		wantCreate bool
		wantDelete []string
		wantActive []string
		wantEvents []string
	}{
		{"Allow runs both", manifests.ConcurrencyAllow, true, nil, []string{prevRun.Name, cronschedule.JobName("report", t0)}, []string{"SuccessfulCreate"}},
		{"Forbid skips while active", manifests.ConcurrencyForbid, false, nil, []string{prevRun.Name}, []string{"JobAlreadyActive"}},
		{"Replace deletes the active Job", manifests.ConcurrencyReplace, true, []string{prevRun.Name}, []string{cronschedule.JobName("report", t0)}, []string{"SuccessfulDelete", "SuccessfulCreate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Sync(newCronJob(policy(tc.policy)), prev, []ObservedJob{prevRun}, now)
			if (d.Create != nil) != tc.wantCreate || !reflect.DeepEqual(d.Delete, tc.wantDelete) {
				t.Fatalf("create %v delete %v", d.Create != nil, d.Delete)
			}
			if !reflect.DeepEqual(activeNames(d.Status), tc.wantActive) || !reflect.DeepEqual(reasons(d), tc.wantEvents) {
				t.Fatalf("active %v events %v", activeNames(d.Status), reasons(d))
			}
			if !tc.wantCreate && !d.Status.LastScheduleTime.Time.Equal(t0.Add(-time.Hour)) {
				t.Fatalf("lastScheduleTime moved to %v without a run", d.Status.LastScheduleTime)
			}
			if !d.RequeueAt.Equal(t0.Add(time.Hour + NextScheduleDelta)) {
				t.Fatalf("requeue %v", d.RequeueAt)
			}
		})
	}
}

func TestForbidSkipsWhileActiveAndRunsOnceItFinished(t *testing.T) {
	c := newCronJob(policy(manifests.ConcurrencyForbid))
	prevRun := runOf(t0.Add(-time.Hour), runningSince(t0.Add(-time.Hour)))
	prev := scheduledAt(activeOf(prevRun.Name), t0.Add(-time.Hour))
	d := Sync(c, prev, []ObservedJob{prevRun}, t0.Add(time.Second))
	if d.Create != nil {
		t.Fatal("Forbid started a run beside an active one")
	}
	prevRun.Status = finishedAt(t0.Add(10*time.Minute), true)
	d = Sync(c, d.Status, []ObservedJob{prevRun}, t0.Add(10*time.Minute))
	if d.Create == nil || d.Create.Metadata.Name != cronschedule.JobName("report", t0) {
		t.Fatal("the run due at 12:00 did not start once the previous finished")
	}
	if !reflect.DeepEqual(reasons(d), []string{"SawCompletedJob", "SuccessfulCreate"}) {
		t.Fatalf("events %v", reasons(d))
	}
	if !d.Status.LastSuccessfulTime.Time.Equal(t0.Add(10 * time.Minute)) {
		t.Fatalf("lastSuccessfulTime %v", d.Status.LastSuccessfulTime)
	}
}

func TestSuspendStartsNothingButTrimsHistory(t *testing.T) {
	c := newCronJob(func(c *manifests.CronJob) { v := true; c.Spec.Suspend = &v })
	var jobs []ObservedJob
	for h := 1; h <= 5; h++ {
		at := t0.Add(-time.Duration(h) * time.Hour)
		jobs = append(jobs, runOf(at, finishedAt(at.Add(time.Minute), true)))
	}
	d := Sync(c, batchv1.CronJobStatus{}, jobs, t0.Add(time.Second))
	if d.Create != nil || !d.RequeueAt.IsZero() {
		t.Fatalf("create %v requeue %v", d.Create, d.RequeueAt)
	}
	want := []string{jobs[4].Name, jobs[3].Name} // the two oldest of five, three kept
	if !reflect.DeepEqual(d.Delete, want) {
		t.Fatalf("deleted %v, want %v", d.Delete, want)
	}
}

func TestHistoryLimitsDeleteOldestFinishedJobs(t *testing.T) {
	var jobs []ObservedJob
	for h := 1; h <= 4; h++ {
		at := t0.Add(-time.Duration(h) * time.Hour)
		jobs = append(jobs, runOf(at, finishedAt(at.Add(time.Minute), h%2 == 0)))
	}
	running := runOf(t0.Add(-5*time.Hour), runningSince(t0.Add(-5*time.Hour)))
	jobs = append(jobs, running)
	for _, tc := range []struct {
		name         string
		success, bad *int32
		want         []string
	}{
		{"defaults keep 3 succeeded and 1 failed", nil, nil, []string{jobs[2].Name}},
		{"zero keeps none", i32(0), i32(0), []string{jobs[3].Name, jobs[1].Name, jobs[2].Name, jobs[0].Name}},
		{"large keeps all", i32(10), i32(10), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCronJob(func(c *manifests.CronJob) {
				c.Spec.SuccessfulJobsHistoryLimit, c.Spec.FailedJobsHistoryLimit = tc.success, tc.bad
			}, func(c *manifests.CronJob) { v := true; c.Spec.Suspend = &v })
			d := Sync(c, activeOf(running.Name), jobs, t0.Add(time.Second))
			if !reflect.DeepEqual(d.Delete, tc.want) {
				t.Fatalf("deleted %v, want %v", d.Delete, tc.want)
			}
			if slices.Contains(d.Delete, running.Name) {
				t.Fatal("an active Job was deleted for history")
			}
			if n := strings.Count(strings.Join(reasons(d), " "), "SuccessfulDelete"); n != len(tc.want) {
				t.Fatalf("%d SuccessfulDelete events", n)
			}
		})
	}
}

func TestMissedSchedulesWhileDownRunOnceWithinDeadline(t *testing.T) {
	c := newCronJob(deadline(120))
	prev := scheduledAt(batchv1.CronJobStatus{}, t0.Add(-4*time.Hour))
	d := Sync(c, prev, nil, t0.Add(90*time.Second))
	if d.Create == nil || d.Create.Metadata.Name != cronschedule.JobName("report", t0) {
		t.Fatalf("created %v, want only the run of 12:00", d.Create)
	}
	if slices.Contains(reasons(d), "MissSchedule") || slices.Contains(reasons(d), "TooManyMissedTimes") {
		t.Fatalf("events %v", reasons(d))
	}
}

func TestStartTimePastTheStartingDeadlineIsMissed(t *testing.T) {
	c := newCronJob(deadline(120))
	prev := scheduledAt(batchv1.CronJobStatus{}, t0.Add(-time.Hour))
	d := Sync(c, prev, nil, t0.Add(5*time.Minute))
	if d.Create != nil {
		t.Fatalf("started %s 5 minutes late with a 2-minute deadline", d.Create.Metadata.Name)
	}
	if len(d.Events) != 1 || d.Events[0].Reason != "MissSchedule" || d.Events[0].Type != corev1.EventTypeWarning ||
		d.Events[0].Message != "Missed scheduled time to start a job: Sun, 01 Mar 2026 12:00:00 +0000" {
		t.Fatalf("events %+v", d.Events)
	}
	if !d.Status.LastScheduleTime.Time.Equal(t0.Add(-time.Hour)) || !d.RequeueAt.Equal(t0.Add(time.Hour+NextScheduleDelta)) {
		t.Fatalf("lastScheduleTime %v requeue %v", d.Status.LastScheduleTime, d.RequeueAt)
	}
}

func TestTooManyMissedStartTimesWarnAndRunOnlyTheLatest(t *testing.T) {
	c := newCronJob(func(c *manifests.CronJob) { c.Spec.Schedule = "* * * * *" })
	prev := scheduledAt(batchv1.CronJobStatus{}, t0.Add(-3*time.Hour))
	d := Sync(c, prev, nil, t0.Add(30*time.Second))
	if d.Create == nil || d.Create.Metadata.Name != cronschedule.JobName("report", t0) {
		t.Fatalf("created %v, want the run of 12:00 only", d.Create)
	}
	if !reflect.DeepEqual(reasons(d), []string{"TooManyMissedTimes", "SuccessfulCreate"}) {
		t.Fatalf("events %v", reasons(d))
	}
	if !strings.HasPrefix(d.Events[0].Message, "too many missed start times: 180.") {
		t.Fatalf("message %q", d.Events[0].Message)
	}
}

func TestActiveStatusFollowsTheJobs(t *testing.T) {
	c := newCronJob(func(c *manifests.CronJob) { v := true; c.Spec.Suspend = &v })
	done := runOf(t0.Add(-2*time.Hour), finishedAt(t0.Add(-time.Hour), false))
	manual := ObservedJob{Name: "report-manual-x", Status: runningSince(t0)}
	forged := ObservedJob{Name: "report-1", Annotations: map[string]string{batchv1.CronJobScheduledTimestampAnnotation: t0.Format(time.RFC3339)}, Status: runningSince(t0)}
	d := Sync(c, activeOf(done.Name, "report-gone"), []ObservedJob{done, manual, forged}, t0)
	if len(d.Status.Active) != 0 {
		t.Fatalf("active %v", activeNames(d.Status))
	}
	want := []string{"SawCompletedJob", "UnexpectedJob", "UnexpectedJob", "MissingJob"}
	got := reasons(d)
	slices.Sort(got)
	slices.Sort(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", reasons(d), want)
	}
	if d.Status.LastSuccessfulTime != nil {
		t.Fatal("a failed Job set lastSuccessfulTime")
	}
}

func TestInvalidSchedulesStartNothing(t *testing.T) {
	bad := "Mars/Olympus"
	for _, tc := range []struct {
		name   string
		mod    func(*manifests.CronJob)
		reason string
	}{
		{"unparseable", func(c *manifests.CronJob) { c.Spec.Schedule = "61 * * * *" }, "UnparseableSchedule"},
		{"unknown time zone", func(c *manifests.CronJob) { c.Spec.TimeZone = &bad }, "UnknownTimeZone"},
		{"never matches", func(c *manifests.CronJob) { c.Spec.Schedule = "0 0 30 2 *" }, "InvalidSchedule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Sync(newCronJob(tc.mod), batchv1.CronJobStatus{}, nil, t0.Add(time.Second))
			if d.Create != nil || !d.RequeueAt.IsZero() || !reflect.DeepEqual(reasons(d), []string{tc.reason}) {
				t.Fatalf("create %v requeue %v events %v", d.Create, d.RequeueAt, reasons(d))
			}
		})
	}
}
