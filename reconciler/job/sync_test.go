package job

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/workload"
)

func TestNewJobStartsParallelismPodsBoundedByCompletions(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mods       []func(*manifests.Job)
		pods       []workload.ObservedPod
		prev       batchv1.JobStatus
		wantCreate int
		wantActive int32
	}{
		{"defaults run one pod", nil, nil, batchv1.JobStatus{}, 1, 1},
		{"parallelism below completions", []func(*manifests.Job){completionsOf(5), parallel(2)}, nil, batchv1.JobStatus{}, 2, 2},
		{"completions left below parallelism", []func(*manifests.Job){completionsOf(3), parallel(5)},
			[]workload.ObservedPod{succeeded("pi-a", t0.Add(-time.Minute))}, started(), 2, 2},
		{"running pods are kept", []func(*manifests.Job){completionsOf(5), parallel(3)},
			[]workload.ObservedPod{running("pi-a"), pending("pi-b")}, started(), 1, 3},
		{"work queue runs parallelism", []func(*manifests.Job){parallel(3)}, nil, batchv1.JobStatus{}, 3, 3},
		{"work queue starts none once one succeeded", []func(*manifests.Job){parallel(3)},
			[]workload.ObservedPod{succeeded("pi-a", t0.Add(-time.Minute)), running("pi-b")}, started(), 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Sync(newJob(tc.mods...), tc.prev, tc.pods, t0)
			if len(d.Create) != tc.wantCreate || d.Status.Active != tc.wantActive {
				t.Fatalf("created %d (active %d), want %d (active %d)", len(d.Create), d.Status.Active, tc.wantCreate, tc.wantActive)
			}
			if d.Status.StartTime == nil {
				t.Fatal("startTime not set")
			}
			for _, p := range d.Create {
				if !strings.HasPrefix(p.Name, "pi-") || len(p.Name) != len("pi-")+5 {
					t.Errorf("pod name %q, want pi-<5 characters>", p.Name)
				}
				if p.Owner.Kind != manifests.KindJob || p.Owner.Name != "pi" || p.Namespace != "batch" {
					t.Errorf("owner %+v in %q", p.Owner, p.Namespace)
				}
				if p.EffectiveRestartPolicy() != manifests.RestartNever {
					t.Errorf("restart policy %q", p.EffectiveRestartPolicy())
				}
				if p.Template.Metadata.Labels[batchv1.JobNameLabel] != "pi" || p.Template.Metadata.Labels["app"] != "pi" {
					t.Errorf("labels %v", p.Template.Metadata.Labels)
				}
				if p.TemplateHash != manifests.TemplateHash(p.Template) {
					t.Error("template hash is not the pod template's")
				}
			}
			if n := strings.Count(strings.Join(reasons(d), " "), "SuccessfulCreate"); n != tc.wantCreate {
				t.Errorf("%d SuccessfulCreate events, want %d", n, tc.wantCreate)
			}
		})
	}
}

func TestExcessActivePodsAreDeletedLeastAlongFirst(t *testing.T) {
	j := newJob(completionsOf(10), parallel(1))
	old := running("pi-old")
	old.Created = t0.Add(-time.Hour)
	old.Status.ReadySince = old.Created
	d := Sync(j, started(), []workload.ObservedPod{running("pi-new"), old, pending("pi-pending"), succeeded("pi-done", t0.Add(-time.Minute))}, t0)
	if want := []string{"pi-pending", "pi-new"}; !reflect.DeepEqual(d.Delete, want) {
		t.Fatalf("deleted %v, want %v", d.Delete, want)
	}
	if len(d.Create) != 0 {
		t.Fatalf("created %v in a sync that deletes", createdNames(d))
	}
	if d.Status.Active != 1 || *d.Status.Terminating != 2 || *d.Status.Ready != 1 {
		t.Fatalf("active %d terminating %d ready %d", d.Status.Active, *d.Status.Terminating, *d.Status.Ready)
	}
}

func TestJobCompletesWhenCompletionsSucceed(t *testing.T) {
	j := newJob(completionsOf(2), parallel(2))
	pods := []workload.ObservedPod{succeeded("pi-a", t0.Add(-2*time.Second)), succeeded("pi-b", t0.Add(-time.Second))}
	d := Sync(j, started(), pods, t0)
	if want := []string{"SuccessCriteriaMet=True/CompletionsReached", "Complete=True/CompletionsReached"}; !reflect.DeepEqual(conditionTypes(d.Status), want) {
		t.Fatalf("conditions %v, want %v", conditionTypes(d.Status), want)
	}
	if d.Status.CompletionTime == nil || !d.Status.CompletionTime.Time.Equal(t0) || d.Status.Succeeded != 2 {
		t.Fatalf("completionTime %v succeeded %d", d.Status.CompletionTime, d.Status.Succeeded)
	}
	if !reflect.DeepEqual(reasons(d), []string{"Completed"}) || len(d.Delete) != 0 || len(d.Create) != 0 {
		t.Fatalf("events %v delete %v create %v", reasons(d), d.Delete, createdNames(d))
	}
	if !Succeeded(d.Status) {
		t.Fatal("Succeeded(status) = false")
	}
	// Finished: a later sync changes nothing.
	again := Sync(j, d.Status, pods, t0.Add(time.Hour))
	if !reflect.DeepEqual(again.Status, d.Status) || len(again.Events) != 0 || !again.RequeueAt.IsZero() {
		t.Fatalf("a finished Job changed: %+v", again)
	}
}

func TestWorkQueueJobCompletesOnceAPodSucceededAndNoneRuns(t *testing.T) {
	j := newJob(parallel(2))
	d := Sync(j, started(), []workload.ObservedPod{succeeded("pi-a", t0), running("pi-b")}, t0)
	if finishedCondition(d.Status) != nil || len(d.Create) != 0 {
		t.Fatalf("finished or created while a pod runs: %v %v", conditionTypes(d.Status), createdNames(d))
	}
	d = Sync(j, d.Status, []workload.ObservedPod{succeeded("pi-a", t0), failedAt("pi-b", t0)}, t0)
	if !Succeeded(d.Status) {
		t.Fatalf("conditions %v, want Complete", conditionTypes(d.Status))
	}
}

func TestCompletionWaitsForTerminatingPods(t *testing.T) {
	j := newJob(completionsOf(1))
	pods := []workload.ObservedPod{succeeded("pi-a", t0), terminatingPod(running("pi-b"))}
	d := Sync(j, started(), pods, t0)
	if want := []string{"SuccessCriteriaMet=True/CompletionsReached"}; !reflect.DeepEqual(conditionTypes(d.Status), want) || len(d.Events) != 0 {
		t.Fatalf("conditions %v events %v, want only the interim condition", conditionTypes(d.Status), reasons(d))
	}
	d = Sync(j, d.Status, pods[:1], t0.Add(time.Second))
	if !Succeeded(d.Status) || !reflect.DeepEqual(reasons(d), []string{"Completed"}) {
		t.Fatalf("conditions %v events %v", conditionTypes(d.Status), reasons(d))
	}
}

func TestIndexedJobCreatesOnePodPerMissingIndex(t *testing.T) {
	j := newJob(indexedJob, completionsOf(5), parallel(3))
	pods := []workload.ObservedPod{withIndex("1", succeeded("pi-1-aaaaa", t0)), withIndex("2", running("pi-2-aaaaa"))}
	d := Sync(j, started(), pods, t0)
	if len(d.Create) != 2 {
		t.Fatalf("created %v, want indexes 0 and 3", createdNames(d))
	}
	for i, ix := range []int{0, 3} {
		p := d.Create[i]
		sx := fmt.Sprint(ix)
		if !strings.HasPrefix(p.Name, "pi-"+sx+"-") {
			t.Errorf("pod %q does not name index %d", p.Name, ix)
		}
		if p.Identity.Hostname != "pi-"+sx || !p.Identity.HasOrdinal || p.Identity.Ordinal != ix {
			t.Errorf("identity %+v", p.Identity)
		}
		if p.Template.Metadata.Annotations[batchv1.JobCompletionIndexAnnotation] != sx || p.Template.Metadata.Labels[batchv1.JobCompletionIndexAnnotation] != sx {
			t.Errorf("index annotation/label %v %v", p.Template.Metadata.Annotations, p.Template.Metadata.Labels)
		}
		env := p.Template.Spec.Containers[0].Env
		if len(env) != 1 || env[0].Name != CompletionIndexEnv || env[0].ValueFrom.FieldRef.FieldPath != "metadata.labels['batch.kubernetes.io/job-completion-index']" {
			t.Errorf("env %+v", env)
		}
	}
	if len(j.Spec.Template.Spec.Containers[0].Env) != 0 || j.Spec.Template.Metadata.Annotations != nil {
		t.Fatal("the Job's own template was changed")
	}
	if d.Status.CompletedIndexes != "1" || d.Status.Succeeded != 1 {
		t.Fatalf("completedIndexes %q succeeded %d", d.Status.CompletedIndexes, d.Status.Succeeded)
	}
}

func TestIndexedJobKeepsOnePodPerIndex(t *testing.T) {
	j := newJob(indexedJob, completionsOf(3), parallel(3))
	older := withIndex("0", running("pi-0-old"))
	older.Created = t0.Add(-time.Hour)
	older.Status.ReadySince = older.Created
	pods := []workload.ObservedPod{older, withIndex("0", running("pi-0-new")), withIndex("7", running("pi-7-x")), running("pi-noindex"), withIndex("1", running("pi-1-x"))}
	d := Sync(j, started(), pods, t0)
	slices.Sort(d.Delete)
	if want := []string{"pi-0-new", "pi-7-x", "pi-noindex"}; !reflect.DeepEqual(d.Delete, want) {
		t.Fatalf("deleted %v, want %v", d.Delete, want)
	}
	if len(d.Create) != 0 {
		t.Fatal("created in a sync that deletes")
	}
	d = Sync(j, started(), []workload.ObservedPod{older, withIndex("1", running("pi-1-x"))}, t0)
	if got := createdNames(d); len(got) != 1 || !strings.HasPrefix(got[0], "pi-2-") {
		t.Fatalf("created %v, want index 2", got)
	}
}

func TestIndexedJobCompletesWhenEveryIndexSucceeded(t *testing.T) {
	j := newJob(indexedJob, completionsOf(3), parallel(3))
	prev := started()
	prev.CompletedIndexes = "0,1"
	// Index 0's pod is gone; its completion is remembered.
	d := Sync(j, prev, []workload.ObservedPod{withIndex("1", succeeded("pi-1-a", t0)), withIndex("2", succeeded("pi-2-a", t0))}, t0)
	if !Succeeded(d.Status) || d.Status.CompletedIndexes != "0-2" || d.Status.Succeeded != 3 {
		t.Fatalf("conditions %v completedIndexes %q succeeded %d", conditionTypes(d.Status), d.Status.CompletedIndexes, d.Status.Succeeded)
	}
}

func TestBackoffLimitExceededFailsTheJob(t *testing.T) {
	j := newJob(completionsOf(3), parallel(2), backoff(1))
	pods := []workload.ObservedPod{failedAt("pi-a", t0.Add(-time.Minute)), failedAt("pi-b", t0.Add(-time.Second)), running("pi-c")}
	d := Sync(j, started(), pods, t0)
	if want := []string{"FailureTarget=True/BackoffLimitExceeded"}; !reflect.DeepEqual(conditionTypes(d.Status), want) {
		t.Fatalf("conditions %v, want %v", conditionTypes(d.Status), want)
	}
	if !reflect.DeepEqual(d.Delete, []string{"pi-c"}) || len(d.Create) != 0 {
		t.Fatalf("deleted %v created %v: want the active pod deleted, the failed ones kept", d.Delete, createdNames(d))
	}
	if d.Status.Failed != 3 || d.Status.Active != 0 || *d.Status.Terminating != 1 {
		t.Fatalf("failed %d active %d terminating %d", d.Status.Failed, d.Status.Active, *d.Status.Terminating)
	}
	// The stopped pod is gone: the Job fails, its counts kept.
	d = Sync(j, d.Status, pods[:2], t0.Add(5*time.Second))
	if want := []string{"FailureTarget=True/BackoffLimitExceeded", "Failed=True/BackoffLimitExceeded"}; !reflect.DeepEqual(conditionTypes(d.Status), want) {
		t.Fatalf("conditions %v, want %v", conditionTypes(d.Status), want)
	}
	if len(d.Events) != 1 || d.Events[0].Type != corev1.EventTypeWarning || d.Events[0].Reason != "BackoffLimitExceeded" || d.Events[0].Message != "Job has reached the specified backoff limit" {
		t.Fatalf("events %+v", d.Events)
	}
	if d.Status.Failed != 3 || d.Status.CompletionTime != nil {
		t.Fatalf("failed %d completionTime %v", d.Status.Failed, d.Status.CompletionTime)
	}
}

func TestBackoffLimitZeroFailsOnFirstFailure(t *testing.T) {
	d := Sync(newJob(backoff(0)), started(), []workload.ObservedPod{failedAt("pi-a", t0)}, t0)
	if want := []string{"FailureTarget=True/BackoffLimitExceeded", "Failed=True/BackoffLimitExceeded"}; !reflect.DeepEqual(conditionTypes(d.Status), want) {
		t.Fatalf("conditions %v, want %v", conditionTypes(d.Status), want)
	}
}

func TestFailedPodIsKeptAndReplacedAfterTheBackoff(t *testing.T) {
	j := newJob(completionsOf(1))
	pods := []workload.ObservedPod{failedAt("pi-a", t0.Add(-4*time.Second))}
	d := Sync(j, started(), pods, t0)
	if len(d.Create) != 0 || len(d.Delete) != 0 || !d.RequeueAt.Equal(t0.Add(6*time.Second)) {
		t.Fatalf("create %v delete %v requeue %v: want nothing until the 10 s backoff ends", createdNames(d), d.Delete, d.RequeueAt)
	}
	if d.Status.Failed != 1 || d.Status.Active != 0 {
		t.Fatalf("failed %d active %d", d.Status.Failed, d.Status.Active)
	}
	d = Sync(j, d.Status, pods, t0.Add(6*time.Second))
	if len(d.Create) != 1 || d.Create[0].Name == "pi-a" {
		t.Fatalf("created %v, want one new pod", createdNames(d))
	}
}

func TestPodFailureBackoffDoublesAndIsCapped(t *testing.T) {
	for _, tc := range []struct {
		failures int
		want     time.Duration
	}{{0, 0}, {1, 10 * time.Second}, {2, 20 * time.Second}, {3, 40 * time.Second}, {6, 320 * time.Second}, {7, 6 * time.Minute}, {40, 6 * time.Minute}} {
		if got := backoffDelay(tc.failures); got != tc.want {
			t.Errorf("backoffDelay(%d) = %v, want %v", tc.failures, got, tc.want)
		}
	}
}

func TestPodFailureBackoffCountsFailuresSinceTheLastSuccess(t *testing.T) {
	j := newJob(completionsOf(5), parallel(1), backoff(10))
	for _, tc := range []struct {
		name string
		pods []workload.ObservedPod
		want time.Time // requeue; zero: create now
	}{
		{"three failures wait 40 s from the last", []workload.ObservedPod{failedAt("pi-a", t0.Add(-30*time.Second)), failedAt("pi-b", t0.Add(-20*time.Second)), failedAt("pi-c", t0.Add(-10*time.Second))}, t0.Add(30 * time.Second)},
		{"a success resets the count", []workload.ObservedPod{failedAt("pi-a", t0.Add(-30*time.Second)), failedAt("pi-b", t0.Add(-20*time.Second)), succeeded("pi-s", t0.Add(-15*time.Second)), failedAt("pi-c", t0.Add(-5*time.Second))}, t0.Add(5 * time.Second)},
		{"the backoff is over", []workload.ObservedPod{failedAt("pi-a", t0.Add(-11*time.Second))}, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Sync(j, started(), tc.pods, t0)
			if !d.RequeueAt.Equal(tc.want) || (tc.want.IsZero() != (len(d.Create) == 1)) {
				t.Fatalf("requeue %v created %v, want requeue %v", d.RequeueAt, createdNames(d), tc.want)
			}
		})
	}
}

func TestOnFailureRestartsCountTowardsBackoffLimit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		limit    int32
		restarts int
		wantFail bool
	}{
		{"below the limit", 3, 2, false},
		{"at the limit", 3, 3, true},
		{"limit zero, one restart", 0, 1, true},
		{"limit zero, no restart", 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := running("pi-a")
			p.Status.Containers[0].Restarts = tc.restarts
			p.Status.Restarts = tc.restarts
			d := Sync(newJob(onFailure, backoff(tc.limit)), started(), []workload.ObservedPod{p}, t0)
			failing := findCondition(d.Status, batchv1.JobFailureTarget) != nil
			if failing != tc.wantFail {
				t.Fatalf("failing = %v, want %v (conditions %v)", failing, tc.wantFail, conditionTypes(d.Status))
			}
			if tc.wantFail && !reflect.DeepEqual(d.Delete, []string{"pi-a"}) {
				t.Fatalf("deleted %v, want the restarting pod", d.Delete)
			}
			if !tc.wantFail && (len(d.Delete) != 0 || len(d.Create) != 0) {
				t.Fatalf("a pod restarting in place was replaced: delete %v create %v", d.Delete, createdNames(d))
			}
		})
	}
}

func TestActiveDeadlineFailsTheJob(t *testing.T) {
	j := newJob(func(j *manifests.Job) { j.Spec.ActiveDeadlineSeconds = i64(60) })
	start := metav1.NewTime(t0.Add(-30 * time.Second))
	d := Sync(j, batchv1.JobStatus{StartTime: &start}, []workload.ObservedPod{running("pi-a")}, t0)
	if !d.RequeueAt.Equal(t0.Add(30*time.Second)) || finishedCondition(d.Status) != nil {
		t.Fatalf("requeue %v, want the deadline", d.RequeueAt)
	}
	d = Sync(j, d.Status, []workload.ObservedPod{running("pi-a")}, t0.Add(30*time.Second))
	if want := []string{"FailureTarget=True/DeadlineExceeded"}; !reflect.DeepEqual(conditionTypes(d.Status), want) || !reflect.DeepEqual(d.Delete, []string{"pi-a"}) {
		t.Fatalf("conditions %v delete %v", conditionTypes(d.Status), d.Delete)
	}
	d = Sync(j, d.Status, nil, t0.Add(40*time.Second))
	if c := finishedCondition(d.Status); c == nil || c.Type != batchv1.JobFailed || c.Reason != "DeadlineExceeded" || !reflect.DeepEqual(reasons(d), []string{"DeadlineExceeded"}) {
		t.Fatalf("conditions %v events %v", conditionTypes(d.Status), reasons(d))
	}
}

func TestSuspendDeletesActivePodsAndResumeRestartsTheClock(t *testing.T) {
	ads := func(j *manifests.Job) { j.Spec.ActiveDeadlineSeconds = i64(100) }
	pods := []workload.ObservedPod{running("pi-a"), failedAt("pi-f", t0.Add(-time.Hour)), succeeded("pi-s", t0.Add(-time.Hour))}
	d := Sync(newJob(completionsOf(4), parallel(2), suspend(true), ads), started(), pods, t0)
	if !reflect.DeepEqual(d.Delete, []string{"pi-a"}) || len(d.Create) != 0 {
		t.Fatalf("deleted %v created %v: want the running pod only", d.Delete, createdNames(d))
	}
	if want := []string{"Suspended=True/JobSuspended"}; !reflect.DeepEqual(conditionTypes(d.Status), want) || !slices.Contains(reasons(d), "Suspended") {
		t.Fatalf("conditions %v events %v", conditionTypes(d.Status), reasons(d))
	}
	if !d.RequeueAt.IsZero() {
		t.Fatalf("a suspended Job requeues at %v: its deadline does not run", d.RequeueAt)
	}
	d = Sync(newJob(completionsOf(4), parallel(2), suspend(false), ads), d.Status, pods[1:], t0.Add(time.Hour))
	if want := []string{"Suspended=False/JobResumed"}; !reflect.DeepEqual(conditionTypes(d.Status), want) || !slices.Contains(reasons(d), "Resumed") {
		t.Fatalf("conditions %v events %v", conditionTypes(d.Status), reasons(d))
	}
	if !d.Status.StartTime.Time.Equal(t0.Add(time.Hour)) || !d.RequeueAt.Equal(t0.Add(time.Hour+100*time.Second)) {
		t.Fatalf("startTime %v requeue %v: want both from the resume", d.Status.StartTime, d.RequeueAt)
	}
	if len(d.Create) == 0 {
		t.Fatal("a resumed Job created no pod")
	}
}

func TestJobCreatedSuspendedHasNoStartTime(t *testing.T) {
	d := Sync(newJob(suspend(true)), batchv1.JobStatus{}, nil, t0)
	if d.Status.StartTime != nil || len(d.Create) != 0 {
		t.Fatalf("startTime %v created %v", d.Status.StartTime, createdNames(d))
	}
}

func TestTTLAfterFinishedDeletesTheJob(t *testing.T) {
	j := newJob(func(j *manifests.Job) { j.Spec.TTLSecondsAfterFinished = i32(100) })
	d := Sync(j, started(), []workload.ObservedPod{succeeded("pi-a", t0)}, t0)
	if !Succeeded(d.Status) || d.DeleteJob || !d.RequeueAt.Equal(t0.Add(100*time.Second)) {
		t.Fatalf("deleteJob %v requeue %v", d.DeleteJob, d.RequeueAt)
	}
	for _, tc := range []struct {
		at     time.Time
		delete bool
	}{{t0.Add(99 * time.Second), false}, {t0.Add(100 * time.Second), true}} {
		again := Sync(j, d.Status, []workload.ObservedPod{succeeded("pi-a", t0)}, tc.at)
		if again.DeleteJob != tc.delete || len(again.Delete) != 0 {
			t.Fatalf("at %v: deleteJob %v delete %v, want %v and no pod deleted", tc.at, again.DeleteJob, again.Delete, tc.delete)
		}
	}
	zero := newJob(func(j *manifests.Job) { j.Spec.TTLSecondsAfterFinished = i32(0) })
	if d := Sync(zero, started(), []workload.ObservedPod{succeeded("pi-a", t0)}, t0); !d.DeleteJob {
		t.Fatal("ttlSecondsAfterFinished 0 does not delete the Job as it finishes")
	}
}

func TestFinishedPodsAreNeverDeleted(t *testing.T) {
	finished := []workload.ObservedPod{succeeded("pi-s", t0.Add(-time.Minute)), failedAt("pi-f", t0.Add(-time.Hour))}
	for _, tc := range []struct {
		name string
		job  *manifests.Job
	}{
		{"suspended", newJob(completionsOf(3), suspend(true))},
		{"failing", newJob(completionsOf(3), backoff(0))},
		{"parallelism lowered", newJob(completionsOf(3), parallel(0))},
		{"complete", newJob(completionsOf(1))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Sync(tc.job, started(), finished, t0)
			if len(d.Delete) != 0 {
				t.Fatalf("deleted finished pods %v", d.Delete)
			}
		})
	}
}

func TestPodNamesAreDeterministicAndNeverTaken(t *testing.T) {
	j := newJob(completionsOf(4), parallel(4))
	a := Sync(j, started(), nil, t0)
	b := Sync(j, started(), nil, t0)
	if !reflect.DeepEqual(createdNames(a), createdNames(b)) {
		t.Fatalf("two syncs of one state named pods %v and %v", createdNames(a), createdNames(b))
	}
	taken := failedAt(createdNames(a)[0], t0.Add(-time.Hour))
	c := Sync(j, started(), []workload.ObservedPod{taken}, t0)
	if slices.Contains(createdNames(c), taken.Name) || len(c.Create) != 4 {
		t.Fatalf("created %v next to %q", createdNames(c), taken.Name)
	}
	seen := map[string]bool{}
	for _, n := range createdNames(c) {
		if seen[n] {
			t.Fatalf("name %q given twice", n)
		}
		seen[n] = true
	}
}

func TestLongJobNamesGiveDNSLabelPodNames(t *testing.T) {
	long := strings.Repeat("a", 63)
	for _, tc := range []struct {
		mods   []func(*manifests.Job)
		prefix string
	}{
		{nil, strings.Repeat("a", 58)},
		{[]func(*manifests.Job){indexedJob, completionsOf(12), parallel(12)}, strings.Repeat("a", 54) + "-11-"},
	} {
		j := newJob(append(tc.mods, func(j *manifests.Job) { j.Metadata.Name = long })...)
		d := Sync(j, started(), nil, t0)
		last := d.Create[len(d.Create)-1].Name
		if len(last) != 63 || !strings.HasPrefix(last, tc.prefix) {
			t.Errorf("pod name %q (%d characters), want prefix %q and 63", last, len(last), tc.prefix)
		}
	}
}

func TestCountsNeverGoDown(t *testing.T) {
	prev := started()
	prev.Succeeded, prev.Failed = 2, 1
	d := Sync(newJob(completionsOf(5), backoff(6)), prev, nil, t0)
	if d.Status.Succeeded != 2 || d.Status.Failed != 1 {
		t.Fatalf("succeeded %d failed %d after the pods went", d.Status.Succeeded, d.Status.Failed)
	}
}

func TestPodsStoppedAsTheJobFailsCountOnce(t *testing.T) {
	j := newJob(completionsOf(3), parallel(2), backoff(0))
	pods := []workload.ObservedPod{failedAt("pi-a", t0), running("pi-b")}
	d := Sync(j, started(), pods, t0)
	// The stop was not carried out: the pod is still active next time.
	d = Sync(j, d.Status, pods, t0.Add(time.Second))
	if d.Status.Failed != 2 || !reflect.DeepEqual(d.Delete, []string{"pi-b"}) {
		t.Fatalf("failed %d delete %v, want 2 and the pod asked again", d.Status.Failed, d.Delete)
	}
}

func TestAPodNotObservedYetIsAskedForUnderTheSameName(t *testing.T) {
	for _, mods := range [][]func(*manifests.Job){
		{completionsOf(3), parallel(2)},
		{indexedJob, completionsOf(3), parallel(2)},
	} {
		j := newJob(mods...)
		first := Sync(j, started(), nil, t0)
		// The first pod shows up, the second not yet: the second is asked
		// for again, under its name.
		seen := running(first.Create[0].Name)
		seen.Annotations = first.Create[0].Template.Metadata.Annotations
		again := Sync(j, first.Status, []workload.ObservedPod{seen}, t0.Add(time.Second))
		if !reflect.DeepEqual(createdNames(again), createdNames(first)[1:]) {
			t.Fatalf("asked for %v after %v", createdNames(again), createdNames(first))
		}
	}
}

func TestPodsRunTheTemplatesRestartPolicy(t *testing.T) {
	d := Sync(newJob(onFailure), batchv1.JobStatus{}, nil, t0)
	if p := d.Create[0]; p.RestartPolicy != manifests.RestartOnFailure || p.EffectiveRestartPolicy() != manifests.RestartOnFailure {
		t.Fatalf("restart policy %q", p.RestartPolicy)
	}
}
