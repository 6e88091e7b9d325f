package job

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/workload"
)

func policy(rules ...manifests.PodFailurePolicyRule) func(*manifests.Job) {
	return func(j *manifests.Job) { j.Spec.PodFailurePolicy = &manifests.PodFailurePolicy{Rules: rules} }
}

func onExit(action, op string, codes ...int32) manifests.PodFailurePolicyRule {
	return manifests.PodFailurePolicyRule{Action: action, OnExitCodes: &manifests.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: codes}}
}

func onCondition(action, cond string) manifests.PodFailurePolicyRule {
	return manifests.PodFailurePolicyRule{Action: action, OnPodConditions: []manifests.PodFailurePolicyOnPodConditionsPattern{{Type: cond}}}
}

func disrupted(p workload.ObservedPod) workload.ObservedPod {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: "DisruptionTarget", Status: corev1.ConditionTrue})
	return p
}

func TestPodFailurePolicyIgnoreDoesNotCount(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule manifests.PodFailurePolicyRule
		pod  workload.ObservedPod
	}{
		{"pod condition", onCondition(manifests.PodFailureIgnore, "DisruptionTarget"), disrupted(failedAt("pi-a", t0.Add(-time.Minute)))},
		{"exit code", onExit(manifests.PodFailureIgnore, manifests.ExitCodesIn, 137), exited("pi-a", corev1.PodFailed, 137, t0.Add(-time.Minute))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Sync(newJob(backoff(0), policy(tc.rule)), started(), []workload.ObservedPod{tc.pod}, t0)
			if len(d.Status.Conditions) != 0 || d.Status.Failed != 0 {
				t.Fatalf("an ignored failure counted: conditions %v failed %d", conditionTypes(d.Status), d.Status.Failed)
			}
			if len(d.Create) != 1 {
				t.Fatalf("created %v, want a replacement", createdNames(d))
			}
		})
	}
}

func TestPodFailurePolicyFailJobFailsAtOnce(t *testing.T) {
	j := newJob(completionsOf(2), parallel(2), policy(
		onCondition(manifests.PodFailureIgnore, "DisruptionTarget"),
		onExit(manifests.PodFailureFailJob, manifests.ExitCodesIn, 42)))
	pods := []workload.ObservedPod{exited("pi-a", corev1.PodFailed, 42, t0), running("pi-b")}
	d := Sync(j, started(), pods, t0)
	if want := []string{"FailureTarget=True/PodFailurePolicy"}; !reflect.DeepEqual(conditionTypes(d.Status), want) {
		t.Fatalf("conditions %v, want %v", conditionTypes(d.Status), want)
	}
	if msg := d.Status.Conditions[0].Message; msg != "Container main for pod batch/pi-a failed with exit code 42 matching FailJob rule at index 1" {
		t.Fatalf("message %q", msg)
	}
	if !reflect.DeepEqual(d.Delete, []string{"pi-b"}) {
		t.Fatalf("deleted %v", d.Delete)
	}
	// The deleted pod is gone; the Job fails with the rule's reason and message.
	d = Sync(j, d.Status, pods[:1], t0.Add(time.Second))
	if c := finishedCondition(d.Status); c == nil || c.Type != batchv1.JobFailed || c.Reason != batchv1.JobReasonPodFailurePolicy || !strings.Contains(c.Message, "exit code 42") {
		t.Fatalf("conditions %v", conditionTypes(d.Status))
	}
}

func TestPodFailurePolicyRulesMatchInOrder(t *testing.T) {
	sidecarName := "helper"
	for _, tc := range []struct {
		name  string
		rules []manifests.PodFailurePolicyRule
		pod   workload.ObservedPod
		want  verdict
	}{
		{"no rule matches: counted", []manifests.PodFailurePolicyRule{onExit(manifests.PodFailureFailJob, manifests.ExitCodesIn, 3)},
			exited("p", corev1.PodFailed, 1, t0), verdict{count: true}},
		{"NotIn matches another code", []manifests.PodFailurePolicyRule{onExit(manifests.PodFailureCount, manifests.ExitCodesNotIn, 3)},
			exited("p", corev1.PodFailed, 1, t0), verdict{action: manifests.PodFailureCount, count: true}},
		{"NotIn skips its codes", []manifests.PodFailurePolicyRule{onExit(manifests.PodFailureIgnore, manifests.ExitCodesNotIn, 1)},
			exited("p", corev1.PodFailed, 1, t0), verdict{count: true}},
		{"first match wins", []manifests.PodFailurePolicyRule{onExit(manifests.PodFailureIgnore, manifests.ExitCodesIn, 1), onExit(manifests.PodFailureFailJob, manifests.ExitCodesIn, 1)},
			exited("p", corev1.PodFailed, 1, t0), verdict{action: manifests.PodFailureIgnore}},
		{"exit 0 never matches NotIn", []manifests.PodFailurePolicyRule{onExit(manifests.PodFailureFailJob, manifests.ExitCodesNotIn, 5)},
			exited("p", corev1.PodFailed, 0, t0), verdict{count: true}},
		{"containerName restricts", []manifests.PodFailurePolicyRule{{Action: manifests.PodFailureIgnore,
			OnExitCodes: &manifests.PodFailurePolicyOnExitCodesRequirement{ContainerName: &sidecarName, Operator: manifests.ExitCodesIn, Values: []int32{1}}}},
			exited("p", corev1.PodFailed, 1, t0), verdict{count: true}},
		{"condition False does not match True", []manifests.PodFailurePolicyRule{onCondition(manifests.PodFailureIgnore, "DisruptionTarget")},
			func() workload.ObservedPod {
				p := failedAt("p", t0)
				p.Status.Conditions = []corev1.PodCondition{{Type: "DisruptionTarget", Status: corev1.ConditionFalse}}
				return p
			}(), verdict{count: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJob(policy(tc.rules...))
			got := judge(j, &tc.pod)
			got.failJob = ""
			if got != tc.want {
				t.Fatalf("verdict %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestPodFailurePolicyMatchesInitContainersAfterAppContainers(t *testing.T) {
	p := failedAt("p", t0)
	p.Status.Containers = []podruntime.ContainerStatus{
		{Name: "setup", Init: true, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 7, FinishedAt: metav1.NewTime(t0)}}},
		{Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 9, FinishedAt: metav1.NewTime(t0)}}},
	}
	v := judge(newJob(policy(onExit(manifests.PodFailureFailJob, manifests.ExitCodesIn, 7, 9))), &p)
	if !strings.Contains(v.failJob, "Container main ") {
		t.Fatalf("message %q, want the app container's", v.failJob)
	}
}

func TestPodFailurePolicyWaitsForTerminatingPodsBeforeReplacing(t *testing.T) {
	j := newJob(completionsOf(2), parallel(2), policy(onExit(manifests.PodFailureFailJob, manifests.ExitCodesIn, 42)))
	d := Sync(j, started(), []workload.ObservedPod{running("pi-a"), terminatingPod(running("pi-b"))}, t0)
	if len(d.Create) != 0 {
		t.Fatalf("created %v while a pod still stops", createdNames(d))
	}
	// Without a podFailurePolicy the stopping pod holds no place.
	d = Sync(newJob(completionsOf(2), parallel(2)), started(), []workload.ObservedPod{running("pi-a"), terminatingPod(running("pi-b"))}, t0)
	if len(d.Create) != 1 || *d.Status.Terminating != 1 {
		t.Fatalf("created %v terminating %d", createdNames(d), *d.Status.Terminating)
	}
}

func perIndex(limit int32) func(*manifests.Job) {
	return func(j *manifests.Job) { j.Spec.BackoffLimitPerIndex = i32(limit) }
}

func TestBackoffLimitPerIndexFailsOnlyThatIndex(t *testing.T) {
	j := newJob(indexedJob, completionsOf(3), parallel(3), perIndex(1))
	pods := []workload.ObservedPod{
		withIndex("0", failedAt("pi-0-a", t0.Add(-time.Hour))), withIndex("0", failedAt("pi-0-b", t0.Add(-30*time.Minute))),
		withIndex("1", failedAt("pi-1-a", t0.Add(-time.Hour))),
		withIndex("2", running("pi-2-a")),
	}
	d := Sync(j, started(), pods, t0)
	if d.Status.FailedIndexes == nil || *d.Status.FailedIndexes != "0" || d.Status.Failed != 3 {
		t.Fatalf("failedIndexes %v failed %d", d.Status.FailedIndexes, d.Status.Failed)
	}
	if len(d.Status.Conditions) != 0 {
		t.Fatalf("conditions %v while index 2 runs", conditionTypes(d.Status))
	}
	got := createdNames(d)
	if len(got) != 1 || !strings.HasPrefix(got[0], "pi-1-") {
		t.Fatalf("created %v, want index 1 retried and index 0 not", got)
	}
	if a := d.Create[0].Template.Metadata.Annotations[batchv1.JobIndexFailureCountAnnotation]; a != "1" {
		t.Fatalf("failure count annotation %q, want 1", a)
	}
	// Index 2 succeeds, index 1 fails again: every index is done, one or
	// more failed.
	pods = append(pods[:3], withIndex("1", succeeded("pi-1-b", t0)), withIndex("2", succeeded("pi-2-a", t0)))
	d = Sync(j, d.Status, pods, t0.Add(time.Minute))
	if c := finishedCondition(d.Status); c == nil || c.Type != batchv1.JobFailed || c.Reason != batchv1.JobReasonFailedIndexes {
		t.Fatalf("conditions %v, want Failed/FailedIndexes", conditionTypes(d.Status))
	}
	if d.Status.CompletedIndexes != "1,2" {
		t.Fatalf("completedIndexes %q", d.Status.CompletedIndexes)
	}
}

func TestMaxFailedIndexesExceededFailsTheJob(t *testing.T) {
	j := newJob(indexedJob, completionsOf(4), parallel(4), perIndex(0), func(j *manifests.Job) { j.Spec.MaxFailedIndexes = i32(1) })
	pods := []workload.ObservedPod{withIndex("0", failedAt("pi-0-a", t0)), withIndex("3", failedAt("pi-3-a", t0)), withIndex("1", running("pi-1-a"))}
	d := Sync(j, started(), pods, t0)
	if want := []string{"FailureTarget=True/MaxFailedIndexesExceeded"}; !reflect.DeepEqual(conditionTypes(d.Status), want) || !reflect.DeepEqual(d.Delete, []string{"pi-1-a"}) {
		t.Fatalf("conditions %v delete %v", conditionTypes(d.Status), d.Delete)
	}
	if *d.Status.FailedIndexes != "0,3" {
		t.Fatalf("failedIndexes %q", *d.Status.FailedIndexes)
	}
}

func TestPodFailurePolicyFailIndexFailsTheIndexAtOnce(t *testing.T) {
	j := newJob(indexedJob, completionsOf(3), parallel(3), perIndex(5), policy(onExit(manifests.PodFailureFailIndex, manifests.ExitCodesIn, 3)))
	d := Sync(j, started(), []workload.ObservedPod{withIndex("1", exited("pi-1-a", corev1.PodFailed, 3, t0))}, t0)
	if *d.Status.FailedIndexes != "1" {
		t.Fatalf("failedIndexes %q", *d.Status.FailedIndexes)
	}
	for _, p := range d.Create {
		if strings.HasPrefix(p.Name, "pi-1-") {
			t.Fatalf("index 1 retried: %v", createdNames(d))
		}
	}
	if len(d.Create) != 2 {
		t.Fatalf("created %v, want indexes 0 and 2", createdNames(d))
	}
}

func TestBackoffLimitPerIndexBacksOffEachIndex(t *testing.T) {
	j := newJob(indexedJob, completionsOf(2), parallel(2), perIndex(5))
	pods := []workload.ObservedPod{
		withIndex("0", failedAt("pi-0-a", t0.Add(-25*time.Second))), withIndex("0", failedAt("pi-0-b", t0.Add(-5*time.Second))),
		withIndex("1", failedAt("pi-1-a", t0.Add(-11*time.Second))),
	}
	d := Sync(j, started(), pods, t0)
	got := createdNames(d)
	if len(got) != 1 || !strings.HasPrefix(got[0], "pi-1-") {
		t.Fatalf("created %v, want index 1 only (index 0 waits 20 s from its last failure)", got)
	}
	if !d.RequeueAt.Equal(t0.Add(15 * time.Second)) {
		t.Fatalf("requeue %v, want index 0's backoff end", d.RequeueAt)
	}
	d = Sync(j, started(), append(pods, withIndex("1", running("pi-1-b"))), t0)
	if len(d.Create) != 0 || !d.RequeueAt.Equal(t0.Add(15*time.Second)) {
		t.Fatalf("created %v requeue %v, want index 0 at +15 s", createdNames(d), d.RequeueAt)
	}
	if slices.Contains(reasons(d), "SuccessfulCreate") {
		t.Fatal("event for a pod not created")
	}
}
