package job

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/workload"
	"github.com/dockctl/dockctl/reconciler/workload/workloadtest"
)

// t0 is the fake clock's now: every test decides at a fixed time.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func i32(v int32) *int32   { return &v }
func i64(v int64) *int64   { return &v }
func str(v string) *string { return &v }

// newJob is a defaulted Job "pi" of one container, restartPolicy Never,
// changed by mods before the defaults.
func newJob(mods ...func(*manifests.Job)) *manifests.Job {
	j := &manifests.Job{APIVersion: manifests.BatchAPIVersion, Kind: manifests.KindJob,
		Metadata: manifests.ObjectMeta{Name: "pi", Namespace: "batch"},
		Spec: manifests.JobSpec{Template: manifests.PodTemplateSpec{
			Metadata: manifests.TemplateMeta{Labels: map[string]string{"app": "pi"}},
			Spec: manifests.PodSpec{RestartPolicy: manifests.RestartNever,
				Containers: []manifests.Container{{Name: "main", Image: "busybox"}}},
		}}}
	for _, m := range mods {
		m(j)
	}
	manifests.SetJobDefaults(j)
	return j
}

func completionsOf(n int32) func(*manifests.Job) {
	return func(j *manifests.Job) { j.Spec.Completions = i32(n) }
}

func parallel(n int32) func(*manifests.Job) {
	return func(j *manifests.Job) { j.Spec.Parallelism = i32(n) }
}

func indexedJob(j *manifests.Job) { j.Spec.CompletionMode = str(manifests.CompletionIndexed) }

func backoff(n int32) func(*manifests.Job) {
	return func(j *manifests.Job) { j.Spec.BackoffLimit = i32(n) }
}

func onFailure(j *manifests.Job) { j.Spec.Template.Spec.RestartPolicy = manifests.RestartOnFailure }

func suspend(v bool) func(*manifests.Job) {
	return func(j *manifests.Job) { j.Spec.Suspend = &v }
}

// pod builders: a pod of the Job in a phase, created a minute before t0.
func pod(name string, phase corev1.PodPhase) workload.ObservedPod {
	return workload.ObservedPod{Name: name, Created: t0.Add(-time.Minute),
		Status: podruntime.PodStatus{Phase: phase, Containers: []podruntime.ContainerStatus{{Name: "main"}}}}
}

func running(name string) workload.ObservedPod { return ready(pod(name, corev1.PodRunning)) }

func pending(name string) workload.ObservedPod { return pod(name, corev1.PodPending) }

func ready(p workload.ObservedPod) workload.ObservedPod {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	p.Status.ReadySince = p.Created
	return p
}

func exited(name string, phase corev1.PodPhase, code int32, at time.Time) workload.ObservedPod {
	p := pod(name, phase)
	p.FinishedAt = at
	p.Status.Containers[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(at)}}
	return p
}

func succeeded(name string, at time.Time) workload.ObservedPod {
	return exited(name, corev1.PodSucceeded, 0, at)
}

func failedAt(name string, at time.Time) workload.ObservedPod {
	return exited(name, corev1.PodFailed, 1, at)
}

func withIndex(ix string, p workload.ObservedPod) workload.ObservedPod {
	p.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: ix}
	p.Labels = map[string]string{batchv1.JobCompletionIndexAnnotation: ix}
	return p
}

var terminatingPod = workloadtest.Terminating

func started() batchv1.JobStatus {
	st := metav1.NewTime(t0.Add(-time.Hour))
	return batchv1.JobStatus{StartTime: &st}
}

func conditionTypes(st batchv1.JobStatus) []string {
	var out []string
	for _, c := range st.Conditions {
		out = append(out, string(c.Type)+"="+string(c.Status)+"/"+c.Reason)
	}
	return out
}

func reasons(d Decision) []string { return workloadtest.Reasons(d.Events) }

func createdNames(d Decision) []string { return workloadtest.PodNames(d.Create) }
