package workloads

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/reconcile"
	"github.com/dockctl/dockctl/store"
)

const instance = "wl"

// frame is a Controller on the fake Docker with a fake clock, synced by
// hand.
type frame struct {
	t   *testing.T
	c   *Controller
	d   *dockerfake.Engine
	st  *store.Store
	mu  sync.Mutex
	now time.Time
}

func (f *frame) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *frame) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

func newFrame(t *testing.T) *frame {
	t.Helper()
	st, err := store.Open(t.TempDir(), instance)
	if err != nil {
		t.Fatal(err)
	}
	f := &frame{t: t, d: dockerfake.New("busybox"), st: st, now: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)}
	f.d.SetNow(f.clock)
	f.c = New(Config{Instance: instance, Docker: f.d, Store: st, Kinds: Kinds(), Now: f.clock})
	t.Cleanup(f.c.runtime.Stop)
	return f
}

func (f *frame) apply(yaml string) {
	f.t.Helper()
	docs, err := manifests.Decode("t.yaml", []byte(yaml))
	if err != nil {
		f.t.Fatal(err)
	}
	var b store.Bundle
	for _, d := range docs {
		switch {
		case d.Job != nil:
			b.Jobs = append(b.Jobs, d.Job)
		case d.Pod != nil:
			b.Pods = append(b.Pods, d.Pod)
		case d.ReplicaSet != nil:
			b.ReplicaSets = append(b.ReplicaSets, d.ReplicaSet)
		case d.CronJob != nil:
			b.CronJobs = append(b.CronJobs, d.CronJob)
		case d.StatefulSet != nil:
			b.StatefulSets = append(b.StatefulSets, d.StatefulSet)
		}
	}
	if _, err := f.st.Apply(b, store.ApplyOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *frame) sync(key string) reconcile.Result {
	f.t.Helper()
	res, err := f.c.Reconcile(context.Background(), reconcile.Request{Key: key})
	if err != nil {
		f.t.Fatalf("sync %s: %v", key, err)
	}
	return res
}

// owned are the containers of the owner, by state.
func (f *frame) owned(kind, name string) []dockerx.Container {
	all, err := f.d.ListContainers(context.Background(), instance)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []dockerx.Container
	for _, c := range all {
		if c.Labels[dockerx.LabelOwnerKind] == kind && c.Labels[dockerx.LabelOwner] == name {
			out = append(out, c)
		}
	}
	return out
}

func (f *frame) running(kind, name string) []dockerx.Container {
	var out []dockerx.Container
	for _, c := range f.owned(kind, name) {
		if c.State == dockerx.StateRunning {
			out = append(out, c)
		}
	}
	return out
}

func (f *frame) exitAll(kind, name string, code int) int {
	n := 0
	for _, c := range f.running(kind, name) {
		if err := f.d.Exit(c.ID, code); err != nil {
			f.t.Fatal(err)
		}
		n++
	}
	return n
}

func (f *frame) jobStatus(name string) batchv1.JobStatus {
	f.t.Helper()
	ref := store.ObjectRef{Kind: store.KindJob, Namespace: "default", Name: name}
	obj, err := f.st.LookupObject(ref)
	if err != nil {
		f.t.Fatal(err)
	}
	var st batchv1.JobStatus
	if _, err := f.st.ReadWorkloadStatus(ref, obj.Created, &st); err != nil {
		f.t.Fatal(err)
	}
	return st
}

func hasCondition(st batchv1.JobStatus, typ batchv1.JobConditionType) bool {
	for _, c := range st.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func jobYAML(name, extra string) string {
	return `apiVersion: batch/v1
kind: Job
metadata:
  name: ` + name + `
spec:
` + extra + `
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox
`
}

func TestJobWithCompletions3Parallelism2Completes(t *testing.T) {
	f := newFrame(t)
	f.apply(jobYAML("batch", "  completions: 3\n  parallelism: 2"))
	key := Key(store.KindJob, "default", "batch")
	f.sync(key)
	if n := len(f.running(store.KindJob, "batch")); n != 2 {
		t.Fatalf("%d pods running after the first sync, want parallelism 2", n)
	}
	for round := 0; round < 4 && !hasCondition(f.jobStatus("batch"), batchv1.JobComplete); round++ {
		f.advance(time.Second)
		f.exitAll(store.KindJob, "batch", 0)
		f.sync(key)
		if n := len(f.running(store.KindJob, "batch")); n > 2 {
			t.Fatalf("%d pods running, more than parallelism 2", n)
		}
	}
	st := f.jobStatus("batch")
	if !hasCondition(st, batchv1.JobComplete) || st.Succeeded != 3 {
		t.Errorf("status = %d succeeded, conditions %+v; want Complete with 3", st.Succeeded, st.Conditions)
	}
	if n := len(f.owned(store.KindJob, "batch")); n != 3 {
		t.Errorf("%d pods kept, want the 3 finished ones (for logs)", n)
	}
}

func TestFailingJobReachesBackoffLimitWithFailedCondition(t *testing.T) {
	f := newFrame(t)
	f.apply(jobYAML("fails", "  backoffLimit: 1"))
	key := Key(store.KindJob, "default", "fails")
	f.sync(key)
	for round := 0; round < 6 && !hasCondition(f.jobStatus("fails"), batchv1.JobFailed); round++ {
		f.exitAll(store.KindJob, "fails", 1)
		// Past the Job controller's backoff before the next pod.
		f.advance(job10s * time.Duration(round+1) * 2)
		f.sync(key)
	}
	st := f.jobStatus("fails")
	if !hasCondition(st, batchv1.JobFailed) || st.Failed != 2 {
		t.Errorf("status = %d failed, conditions %+v; want Failed after 2 failures (backoffLimit 1)", st.Failed, st.Conditions)
	}
	if n := len(f.running(store.KindJob, "fails")); n != 0 {
		t.Errorf("%d pods still running after the Job failed", n)
	}
}

const job10s = 10 * time.Second

func TestIndexedJobSetsCompletionIndexEnv(t *testing.T) {
	f := newFrame(t)
	f.apply(jobYAML("idx", "  completions: 2\n  parallelism: 2\n  completionMode: Indexed"))
	f.sync(Key(store.KindJob, "default", "idx"))
	got := map[string]bool{}
	for _, c := range f.owned(store.KindJob, "idx") {
		got[c.Labels[batchv1.JobCompletionIndexAnnotation]] = true
		if !strings.Contains(c.Name, "idx-") {
			t.Errorf("pod container %q is not named after the job", c.Name)
		}
	}
	if !got["0"] || !got["1"] {
		t.Errorf("completion indexes %v, want 0 and 1", got)
	}
}

func TestStandalonePodRunsOnceUnderNever(t *testing.T) {
	f := newFrame(t)
	f.apply(`apiVersion: v1
kind: Pod
metadata:
  name: hook
spec:
  restartPolicy: Never
  containers:
  - name: t
    image: busybox
`)
	key := Key(store.KindPod, "default", "hook")
	f.sync(key)
	if n := f.exitAll(store.KindPod, "hook", 0); n != 1 {
		t.Fatalf("%d containers ran, want 1", n)
	}
	f.advance(time.Minute)
	f.sync(key)
	f.sync(key)
	if cs := f.owned(store.KindPod, "hook"); len(cs) != 1 || cs[0].State == dockerx.StateRunning {
		t.Errorf("containers after the pod finished = %+v, want the one exited", cs)
	}
	if _, err := f.st.DeleteObjects([]store.ObjectRef{{Kind: store.KindPod, Namespace: "default", Name: "hook"}}); err != nil {
		t.Fatal(err)
	}
	f.sync(key)
	f.c.runtime.Stopper().Shutdown()
	if cs := f.running(store.KindPod, "hook"); len(cs) != 0 {
		t.Errorf("a deleted pod still runs: %+v", cs)
	}
}

func TestReplicaSetKeepsReplicasAfterAContainerIsRemoved(t *testing.T) {
	f := newFrame(t)
	f.apply(`apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: w
        image: busybox
`)
	key := Key(store.KindReplicaSet, "default", "web")
	f.sync(key)
	cs := f.running(store.KindReplicaSet, "web")
	if len(cs) != 2 {
		t.Fatalf("%d replicas, want 2", len(cs))
	}
	if err := f.d.RemoveContainer(context.Background(), cs[0].ID); err != nil {
		t.Fatal(err)
	}
	// The fake removes in the background, as Docker may: wait until the
	// list no longer shows it.
	for len(f.owned(store.KindReplicaSet, "web")) != 1 {
		time.Sleep(time.Millisecond)
	}
	f.advance(time.Second)
	f.sync(key)
	if n := len(f.running(store.KindReplicaSet, "web")); n != 2 {
		t.Errorf("%d replicas after a container was removed, want 2 again", n)
	}
}

func TestPrivilegedTemplateRunsNoPod(t *testing.T) {
	f := newFrame(t)
	f.apply(`apiVersion: v1
kind: Pod
metadata:
  name: root
spec:
  hostNetwork: true
  containers:
  - name: t
    image: busybox
`)
	f.sync(Key(store.KindPod, "default", "root"))
	if cs := f.owned(store.KindPod, "root"); len(cs) != 0 {
		t.Errorf("a pod needing host namespaces runs without --allow-host-namespaces: %+v", cs)
	}
}
