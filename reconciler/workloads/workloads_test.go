package workloads

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/job"
	"github.com/dockctl/dockctl/reconciler/podruntime"
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

func newFrame(t *testing.T) *frame { t.Helper(); return newFrameWith(t, nil) }

// newFrameWith is newFrame with cfg changed by change.
func newFrameWith(t *testing.T, change func(*Config)) *frame {
	t.Helper()
	st, err := store.Open(t.TempDir(), instance)
	if err != nil {
		t.Fatal(err)
	}
	f := &frame{t: t, d: dockerfake.New("busybox"), st: st, now: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)}
	f.d.SetNow(f.clock)
	cfg := Config{Instance: instance, Docker: f.d, Store: st, Kinds: Kinds(), Now: f.clock}
	if change != nil {
		change(&cfg)
	}
	f.c = New(cfg)
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
		case d.Namespace != nil:
			b.Namespaces = append(b.Namespaces, d.Namespace)
		case d.Deployment != nil:
			b.Deployments = append(b.Deployments, d.Deployment)
		case d.Job != nil:
			b.Jobs = append(b.Jobs, d.Job)
		case d.Pod != nil:
			b.Pods = append(b.Pods, d.Pod)
		case d.ReplicaSet != nil:
			b.ReplicaSets = append(b.ReplicaSets, d.ReplicaSet)
		case d.DaemonSet != nil:
			b.DaemonSets = append(b.DaemonSets, d.DaemonSet)
		case d.CronJob != nil:
			b.CronJobs = append(b.CronJobs, d.CronJob)
		case d.StatefulSet != nil:
			b.StatefulSets = append(b.StatefulSets, d.StatefulSet)
		case d.ConfigMap != nil:
			b.ConfigMaps = append(b.ConfigMaps, d.ConfigMap)
		case d.PVC != nil:
			b.Claims = append(b.Claims, d.PVC)
		}
	}
	if _, err := f.st.Apply(b, store.ApplyOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// sync syncs key and waits for the pods it created in the background
// (a Job's) to be made: the next list shows them.
func (f *frame) sync(key string) reconcile.Result {
	f.t.Helper()
	res := f.syncOnly(key)
	f.c.runtime.WaitCreates()
	return res
}

// syncOnly syncs key without waiting for its background creates.
func (f *frame) syncOnly(key string) reconcile.Result {
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

// An Indexed Job's pod with an init container gets its app container in
// a later sync than its holder: it is created once, with the pod's index
// (JOB_COMPLETION_INDEX from the index label, hostname NAME-INDEX) as
// the Job controller made the pod, not from the bare template; the Job
// then completes.
func TestIndexedJobHolderPodsAppContainerHasItsIndex(t *testing.T) {
	f := newFrame(t)
	created := f.recordCreates()
	f.apply(`apiVersion: batch/v1
kind: Job
metadata: {name: idx}
spec:
  completions: 2
  parallelism: 2
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      initContainers:
      - {name: setup, image: busybox}
      containers:
      - {name: work, image: busybox}
`)
	key := Key(store.KindJob, "default", "idx")
	for range 50 {
		if hasCondition(f.jobStatus("idx"), batchv1.JobComplete) {
			break
		}
		f.sync(key)
		for _, c := range f.running(store.KindJob, "idx") {
			if c.ContainerName == "setup" || c.ContainerName == "work" {
				if err := f.d.Exit(c.ID, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		f.advance(time.Second)
	}
	if st := f.jobStatus("idx"); !hasCondition(st, batchv1.JobComplete) || st.Succeeded != 2 {
		t.Fatalf("status %d succeeded, conditions %+v; want Complete with 2", st.Succeeded, st.Conditions)
	}
	works := map[string]bool{}
	for name, reqs := range created() {
		if n := len(reqs); n != 1 {
			t.Errorf("container %s created %d times, want once", name, n)
		}
		req := reqs[len(reqs)-1]
		if req.Container == "" {
			continue
		}
		ix := req.From.Template.Metadata.Labels[batchv1.JobCompletionIndexAnnotation]
		if ix == "" {
			t.Errorf("member %s created without its index label: %v", name, req.From.Template.Metadata.Labels)
			continue
		}
		if !slices.Contains(req.Env, job.CompletionIndexEnv+"="+ix) {
			t.Errorf("member %s of index %s created with env %v, want %s=%s", name, ix, req.Env, job.CompletionIndexEnv, ix)
		}
		if want := "idx-" + ix; req.From.Hostname != want && req.From.Template.Spec.Hostname != want {
			t.Errorf("member %s created with hostname %q, want %s", name, req.From.Template.Spec.Hostname, want)
		}
		if req.Container == "work" {
			works[ix] = true
		}
	}
	if !works["0"] || !works["1"] {
		t.Errorf("app containers created for indexes %v, want 0 and 1", works)
	}
}

// A holder pod's member a sync creates is listed by a second list before
// the sync's second pass (or that pass would create it again); a sync
// that creates none lists containers once, as for pods without a holder.
func TestHolderPodOwnerSyncListsContainersAgainOnlyAfterCreatingAMember(t *testing.T) {
	f := newFrame(t)
	f.apply(`apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: init}
spec:
  replicas: 1
  selector:
    matchLabels: {app: init}
  template:
    metadata:
      labels: {app: init}
    spec:
      initContainers:
      - {name: setup, image: busybox}
      containers:
      - {name: main, image: busybox}
`)
	key := Key(store.KindReplicaSet, "default", "init")
	mainRuns := func() bool {
		return slices.ContainsFunc(f.running(store.KindReplicaSet, "init"), func(c dockerx.Container) bool { return c.ContainerName == "main" })
	}
	for range 50 {
		if mainRuns() {
			break
		}
		f.sync(key)
		for _, c := range f.running(store.KindReplicaSet, "init") {
			if c.ContainerName == "setup" {
				// The next sync creates main: it lists twice.
				if err := f.d.Exit(c.ID, 0); err != nil {
					t.Fatal(err)
				}
				f.d.ResetCalls()
				f.sync(key)
				if n := f.d.Calls()["list"]; n != 2 {
					t.Errorf("the sync creating the pod's app container listed containers %d times, want 2", n)
				}
			}
		}
		f.advance(time.Second)
	}
	if !mainRuns() {
		t.Fatal("the pod's app container never ran")
	}
	f.d.ResetCalls()
	f.sync(key)
	if n := f.d.Calls()["list"]; n != 1 {
		t.Errorf("a steady sync listed containers %d times, want once", n)
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
	f.apply(replicaSetWeb(2))
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

// A name deleted and applied again is another object (Kubernetes tells
// them apart by uid): the new one adopts none of the old one's pods, even
// when the controller saw no sync between the delete and the apply.
func TestObjectAppliedAgainAfterDeleteAdoptsNoOldPod(t *testing.T) {
	for _, tc := range []struct {
		name, kind, yaml string
	}{
		{"job", store.KindJob, jobYAML("again", "  completions: 1")},
		{"pod", store.KindPod, `apiVersion: v1
kind: Pod
metadata:
  name: again
spec:
  restartPolicy: Never
  containers:
  - name: t
    image: busybox
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFrame(t)
			f.apply(tc.yaml)
			key := Key(tc.kind, "default", "again")
			f.sync(key)
			if n := f.exitAll(tc.kind, "again", 0); n != 1 {
				t.Fatalf("%d containers ran, want 1", n)
			}
			f.advance(time.Second)
			f.sync(key)
			old := f.owned(tc.kind, "again")
			if len(old) != 1 {
				t.Fatalf("containers after the first run: %+v", old)
			}
			// Deleted and applied again between two syncs.
			if _, err := f.st.DeleteObjects([]store.ObjectRef{{Kind: tc.kind, Namespace: "default", Name: "again"}}); err != nil {
				t.Fatal(err)
			}
			f.advance(time.Second)
			f.apply(tc.yaml)
			// The old container goes in the background (the stopper):
			// sync until the new object runs a pod of its own.
			for round := 0; round < 10000 && len(f.running(tc.kind, "again")) == 0; round++ {
				f.advance(time.Second)
				f.sync(key)
				time.Sleep(time.Millisecond)
			}
			for _, c := range f.owned(tc.kind, "again") {
				if c.ID == old[0].ID {
					t.Errorf("the deleted object's container %s is still there, adopted by the new one", c.Name)
				}
			}
			if n := len(f.running(tc.kind, "again")); n != 1 {
				t.Errorf("%d containers of the new object run, want 1: it must run again", n)
			}
			if tc.kind == store.KindJob {
				if st := f.jobStatus("again"); hasCondition(st, batchv1.JobComplete) || st.Succeeded != 0 {
					t.Errorf("the new Job's status = %d succeeded, %+v: the old Job's pods counted", st.Succeeded, st.Conditions)
				}
			}
		})
	}
}

// Every gate of docs/design.md §13 refuses every kind's template as it
// refuses a Deployment's: no container is created.
func TestEveryPrivilegeGateRefusesEveryKind(t *testing.T) {
	gates := map[string]struct{ pod, container string }{
		"hostNetwork":  {pod: "hostNetwork: true"},
		"hostPID":      {pod: "hostPID: true"},
		"hostPath":     {pod: "volumes: [{name: h, hostPath: {path: /tmp}}]", container: "volumeMounts: [{name: h, mountPath: /h}]"},
		"privileged":   {container: "securityContext: {privileged: true}"},
		"capabilities": {container: "securityContext: {capabilities: {add: [SYS_ADMIN]}}"},
		"hostPort":     {container: "ports: [{containerPort: 80, hostPort: 8080}]"},
		"unconfined":   {pod: "securityContext: {seccompProfile: {type: Unconfined}}"},
		"sysctl":       {pod: "securityContext: {sysctls: [{name: kernel.msgmax, value: '1'}]}"},
		"network":      {},
		"none":         {}, // the control: runs
	}
	kinds := map[string]func(podExtra, containerExtra, annotations string) string{
		store.KindJob: func(p, c, a string) string {
			return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec:\n  template:\n    metadata: {annotations: {" + a + "}}\n    spec:\n      restartPolicy: Never\n      " + p + "\n      containers:\n      - name: t\n        image: busybox\n        " + c + "\n"
		},
		store.KindReplicaSet: func(p, c, a string) string {
			return "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: x}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: x}, annotations: {" + a + "}}\n    spec:\n      " + p + "\n      containers:\n      - name: t\n        image: busybox\n        " + c + "\n"
		},
		store.KindDaemonSet: func(p, c, a string) string {
			return "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\nspec:\n  selector: {matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: x}, annotations: {" + a + "}}\n    spec:\n      " + p + "\n      containers:\n      - name: t\n        image: busybox\n        " + c + "\n"
		},
		store.KindPod: func(p, c, a string) string {
			return "apiVersion: v1\nkind: Pod\nmetadata: {name: x, annotations: {" + a + "}}\nspec:\n  " + p + "\n  containers:\n  - name: t\n    image: busybox\n    " + c + "\n"
		},
	}
	for kind, yaml := range kinds {
		for gate, g := range gates {
			t.Run(kind+"/"+gate, func(t *testing.T) {
				f := newFrame(t)
				ann := ""
				if gate == "network" {
					ann = "dockctl.io/network: other"
				}
				f.apply(yaml(g.pod, g.container, ann))
				f.sync(Key(kind, "default", "x"))
				cs := f.owned(kind, "x")
				if gate == "none" {
					if len(cs) == 0 {
						t.Errorf("a %s template needing no flag runs no pod", kind)
					}
					return
				}
				if len(cs) != 0 {
					t.Errorf("a %s template with %s runs without its allow flag: %+v", kind, gate, cs)
				}
			})
		}
	}
}

// The controller's replica cap (--max-replicas) bounds every kind's pods
// as it bounds a Deployment's replicas: a ReplicaSet of more replicas, or
// a Job of more parallelism, is refused with a Warning naming the cap, and
// scales nothing (one host runs out of memory and PIDs long before).
func TestReplicaCapRefusesEveryKind(t *testing.T) {
	rs := func(n string) string {
		return "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: x}\nspec:\n  replicas: " + n + "\n  selector: {matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: x}}\n    spec:\n      containers:\n      - name: t\n        image: busybox\n"
	}
	// A Parallel set creates all its pods in one sync, with their claims.
	ss := func(n string) string {
		return "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec:\n  replicas: " + n + "\n  podManagementPolicy: Parallel\n  serviceName: x\n  selector: {matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: x}}\n    spec:\n      containers:\n      - name: t\n        image: busybox\n"
	}
	for _, tc := range []struct {
		name, kind, yaml string
		want             int
	}{
		{"statefulset over the cap", store.KindStatefulSet, ss("5"), 0},
		{"statefulset at the cap", store.KindStatefulSet, ss("3"), 3},
		{"replicaset over the cap", store.KindReplicaSet, rs("5"), 0},
		{"replicaset at the cap", store.KindReplicaSet, rs("3"), 3},
		{"job over the cap", store.KindJob, jobYAML("x", "  parallelism: 1000000"), 0},
		{"job at the cap", store.KindJob, jobYAML("x", "  parallelism: 3\n  completions: 10"), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFrameWith(t, func(c *Config) { c.MaxPods = 3 })
			f.now = time.Now() // the store hides events older than its TTL on read
			f.apply(tc.yaml)
			f.sync(Key(tc.kind, "default", "x"))
			if n := len(f.owned(tc.kind, "x")); n != tc.want {
				t.Errorf("%d pods, want %d (cap 3)", n, tc.want)
			}
			if tc.want > 0 {
				return
			}
			if !f.hasEvent("FailedCreate", "--max-replicas") {
				t.Error("no FailedCreate event names the cap")
			}
		})
	}
}

// A finished pod's container removed by hand (`docker container prune`)
// keeps its share of the Job's succeeded or failed count, and the pods
// that finish after it add to it: Kubernetes counts every pod once (its
// uncountedTerminatedPods and finalizers), never runs more than
// completions pods to success, reaches backoffLimit, and a count never
// goes down.
func TestJobCountsAFinishedPodOnceAfterItsContainerIsRemoved(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		exit       int
		done       batchv1.JobConditionType
		count      func(batchv1.JobStatus) int32
		want       int
	}{
		{"succeeded", "  completions: 3\n  parallelism: 1", 0, batchv1.JobComplete, func(s batchv1.JobStatus) int32 { return s.Succeeded }, 3},
		{"failed", "  backoffLimit: 1", 1, batchv1.JobFailed, func(s batchv1.JobStatus) int32 { return s.Failed }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFrame(t)
			f.apply(jobYAML("prune", tc.spec))
			key := Key(store.KindJob, "default", "prune")
			f.sync(key)
			runs := 0
			for round := 0; round < 8 && !hasCondition(f.jobStatus("prune"), tc.done); round++ {
				runs += f.exitAll(store.KindJob, "prune", tc.exit)
				f.advance(time.Hour) // past the pod failure backoff
				f.sync(key)
				before := tc.count(f.jobStatus("prune"))
				for _, c := range f.owned(store.KindJob, "prune") {
					if c.State != dockerx.StateRunning {
						if err := f.d.RemoveContainer(context.Background(), c.ID); err != nil {
							t.Fatal(err)
						}
					}
				}
				for len(f.owned(store.KindJob, "prune")) != len(f.running(store.KindJob, "prune")) {
					time.Sleep(time.Millisecond)
				}
				f.advance(time.Hour)
				f.sync(key)
				if after := tc.count(f.jobStatus("prune")); after < before {
					t.Fatalf("the count went down from %d to %d", before, after)
				}
			}
			st := f.jobStatus("prune")
			if !hasCondition(st, tc.done) || tc.count(st) != int32(tc.want) || runs != tc.want {
				t.Errorf("%d pods ran, status count %d, %+v; want %d, %s", runs, tc.count(st), st.Conditions, tc.want, tc.done)
			}
		})
	}
}

func TestPodOfSeveralContainersIsObservedWhole(t *testing.T) {
	f := newFrame(t)
	f.apply(`apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      initContainers:
      - name: proxy
        image: busybox
        restartPolicy: Always
      containers:
      - name: app
        image: busybox
      - name: log
        image: busybox
`)
	key := Key(store.KindReplicaSet, "default", "web")
	for range 4 { // the holder, the sidecar, the app containers
		f.sync(key)
		f.advance(time.Second)
	}
	// The holder and its three members, made once each.
	if n := len(f.owned(store.KindReplicaSet, "web")); n != 4 {
		t.Errorf("%d containers, want the holder and its 3 members", n)
	}
	read := func() appsv1.ReplicaSetStatus {
		t.Helper()
		ref := store.ObjectRef{Kind: store.KindReplicaSet, Namespace: "default", Name: "web"}
		obj, err := f.st.LookupObject(ref)
		if err != nil {
			t.Fatal(err)
		}
		var st appsv1.ReplicaSetStatus
		if _, err := f.st.ReadWorkloadStatus(ref, obj.Created, &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := read(); st.Replicas != 1 || st.ReadyReplicas != 1 {
		t.Errorf("status replicas %d ready %d, want 1 pod of 4 containers, ready", st.Replicas, st.ReadyReplicas)
	}
	// One container of the pod exits: the pod is not ready, whichever
	// container the list shows first.
	for _, c := range f.running(store.KindReplicaSet, "web") {
		if strings.HasSuffix(c.Name, ".log") {
			if err := f.d.Exit(c.ID, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.sync(key)
	if st := read(); st.Replicas != 1 || st.ReadyReplicas != 0 {
		t.Errorf("status replicas %d ready %d after a member exited, want 1 pod, not ready", st.Replicas, st.ReadyReplicas)
	}
}

// The frame's pods are created on Config.PodNetwork of their namespace,
// with its resolver, as a Deployment's pods are (docs/design.md §10, §17):
// a StatefulSet's pods resolve each other's names through dockctl's DNS
// server.
func TestPodsAreCreatedOnThePodNetwork(t *testing.T) {
	pn := &dockerx.PodNetwork{Name: "dockctl_wl", DNS: []string{"10.1.0.2"}, DNSSearch: []string{"default.svc.cluster.local"}}
	var asked []string
	f := newFrameWith(t, func(c *Config) {
		c.PodNetwork = func(_ context.Context, ns string) (*dockerx.PodNetwork, error) {
			asked = append(asked, ns)
			return pn, nil
		}
	})
	if err := f.d.AddNetwork(dockerx.Network{ID: "n1", Name: pn.Name, Subnet: "10.1.0.0/24"}); err != nil {
		t.Fatal(err)
	}
	var got []*dockerx.PodNetwork
	f.d.OnCreate = func(req dockerx.CreateRequest) error {
		got = append(got, req.Network)
		return nil
	}
	f.apply(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: t, image: busybox}
`)
	f.sync(Key(store.KindPod, "default", "p"))
	if len(got) != 1 || got[0] != pn {
		t.Errorf("created on networks %+v, want one create on %+v", got, pn)
	}
	if len(asked) == 0 || podruntime.OrDefaultNamespace(asked[0]) != "default" {
		t.Errorf("PodNetwork asked for namespaces %v, want default", asked)
	}
}

// A Job pod's exit is answered by one sync of the Job: the die event
// queues the Job's key, and that one sync counts the finished pod and
// creates and starts its replacement (Kubernetes' Job controller creates
// replacements as soon as it observes a finished pod), with no requeue or
// second pass in between.
func TestJobPodExitIsReplacedInTheSyncItsDieEventQueues(t *testing.T) {
	f := newFrame(t)
	f.apply(jobYAML("steady", "  completions: 6\n  parallelism: 2"))
	key := Key(store.KindJob, "default", "steady")
	f.sync(key)
	for step := 0; step < 4; step++ {
		run := f.running(store.KindJob, "steady")
		if len(run) != 2 {
			t.Fatalf("step %d: %d pods running, want parallelism 2", step, len(run))
		}
		f.advance(time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		events := f.d.Events(ctx, instance)
		if ev := <-events; !ev.Gap {
			t.Fatalf("first event %+v, want the subscription's gap", ev)
		}
		if err := f.d.Exit(run[0].ID, 0); err != nil {
			t.Fatal(err)
		}
		f.c.Event(<-events)
		cancel()
		queued := f.c.Loop().Queued()
		if len(queued) != 1 || queued[0].Key != key {
			t.Fatalf("step %d: the die event queued %+v, want the Job's key %s", step, queued, key)
		}
		f.d.ResetCalls()
		f.sync(key)
		calls := f.d.Calls()
		if n := len(f.running(store.KindJob, "steady")); n != 2 {
			t.Fatalf("step %d: %d pods running after the sync the exit queued, want its replacement running (2)", step, n)
		}
		if calls["create"] != 1 || calls["start"] != 1 {
			t.Errorf("step %d: the sync made %d creates and %d starts, want the replacement's 1 and 1", step, calls["create"], calls["start"])
		}
		if got := f.jobStatus("steady").Succeeded; got != int32(step+1) {
			t.Errorf("step %d: status says %d succeeded, want %d", step, got, step+1)
		}
	}
}

// gatedCreates is the fake Engine whose creates, once armed, each wait
// until want of them are in flight at once: a sync that creates pods one
// after the other never gets past its first.
type gatedCreates struct {
	*dockerfake.Engine
	mu       sync.Mutex
	want     int
	inFlight int
	peak     int
	all      chan struct{}
	// watchdog ends a wait that can never end (creates made one at a
	// time) so that the test fails on peak instead of hanging.
	watchdog <-chan struct{}
}

func (g *gatedCreates) arm(want int, watchdog <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.want, g.inFlight, g.peak, g.all, g.watchdog = want, 0, 0, make(chan struct{}), watchdog
}

func (g *gatedCreates) CreateContainer(ctx context.Context, req dockerx.CreateRequest) (string, error) {
	g.mu.Lock()
	if g.want > 0 {
		g.inFlight++
		g.peak = max(g.peak, g.inFlight)
		all, watchdog := g.all, g.watchdog
		if g.inFlight == g.want {
			close(all)
		}
		g.mu.Unlock()
		select {
		case <-all:
		case <-watchdog:
		}
		g.mu.Lock()
		g.inFlight--
	}
	g.mu.Unlock()
	return g.Engine.CreateContainer(ctx, req)
}

// The replacements of pods that finished together are created at once,
// not one after the other: the pod runtime's creates of one sync run with
// slow start (podruntime.SlowStart), and an owner whose creates succeeded
// keeps the window it reached for its next sync, as the direct API run
// keeps every slot busy.
func TestJobReplacesPodsThatFinishedTogetherWithCreatesInFlightAtOnce(t *testing.T) {
	var g *gatedCreates
	f := newFrameWith(t, func(c *Config) {
		g = &gatedCreates{Engine: c.Docker.(*dockerfake.Engine)}
		c.Docker = g
	})
	f.apply(jobYAML("wave", "  completions: 6\n  parallelism: 3"))
	key := Key(store.KindJob, "default", "wave")
	f.sync(key)
	if n := len(f.running(store.KindJob, "wave")); n != 3 {
		t.Fatalf("%d pods running after the first sync, want parallelism 3", n)
	}
	f.advance(time.Second)
	if n := f.exitAll(store.KindJob, "wave", 0); n != 3 {
		t.Fatalf("%d pods exited, want 3", n)
	}
	// Not a timed assertion: the watchdog only turns creates made one at
	// a time (which would wait for ever) into a failure on peak.
	watchdog := make(chan struct{})
	stop := time.AfterFunc(30*time.Second, func() { close(watchdog) })
	defer stop.Stop()
	g.arm(3, watchdog)
	f.d.ResetCalls()
	f.sync(key)
	g.mu.Lock()
	peak := g.peak
	g.mu.Unlock()
	if peak != 3 {
		t.Errorf("%d creates in flight at once at most, want the 3 replacements together", peak)
	}
	if calls := f.d.Calls(); calls["create"] != 3 || calls["start"] != 3 {
		t.Errorf("the sync made %d creates and %d starts, want 3 and 3", calls["create"], calls["start"])
	}
	if n := len(f.running(store.KindJob, "wave")); n != 3 {
		t.Errorf("%d pods running after the sync, want the 3 replacements", n)
	}
}

// recordCreates records the frame's container creates, each name's
// requests in order; it is the fixture of the tests that a pod's members
// are created once, from the pod's own spec.
func (f *frame) recordCreates() (created func() map[string][]dockerx.CreateRequest) {
	var mu sync.Mutex
	reqs := map[string][]dockerx.CreateRequest{}
	f.d.OnCreate = func(req dockerx.CreateRequest) error {
		mu.Lock()
		defer mu.Unlock()
		reqs[req.Name] = append(reqs[req.Name], req)
		return nil
	}
	return func() map[string][]dockerx.CreateRequest {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string][]dockerx.CreateRequest, len(reqs))
		for name, rs := range reqs {
			out[name] = slices.Clone(rs)
		}
		return out
	}
}

// replicaSetWeb is ReplicaSet web (app=web) of replicas one-container
// pods, the fixture of the frame's tests of pod life.
func replicaSetWeb(replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web
spec:
  replicas: %d
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: w
        image: busybox
`, replicas)
}

// orphanKinds are the kinds whose pods a deletion with --cascade=orphan
// leaves: each fixture runs pods pods; adopts says whether the object
// applied again takes them back (a Job does not: its selector is
// generated from its uid).
var orphanKinds = []struct {
	name, kind, owner, yaml string
	pods                    int
	adopts                  bool
}{
	{"statefulset", store.KindStatefulSet, "db", setYAML("2", "Parallel", ""), 2, true},
	{"replicaset", store.KindReplicaSet, "web", replicaSetWeb(2), 2, true},
	{"daemonset", store.KindDaemonSet, "agent", agentYAML("1"), 1, true},
	{"job", store.KindJob, "batch", jobYAML("batch", "  parallelism: 2\n  completions: 4"), 2, false},
}

// runPods syncs the owner until it runs n pods, and returns their
// containers, by ID.
func (f *frame) runPods(kind, name string, n int) map[string]dockerx.Container {
	f.t.Helper()
	key := Key(kind, "default", name)
	for range 50 {
		f.sync(key)
		if run := f.running(kind, name); len(run) == n {
			out := map[string]dockerx.Container{}
			for _, c := range run {
				out[c.ID] = c
			}
			return out
		}
		f.advance(time.Second)
	}
	f.t.Fatalf("%s %s never ran %d pods: %+v", kind, name, n, f.owned(kind, name))
	return nil
}

// untouched fails unless every container of want still runs as it was:
// same ID, running, created when it was.
func (f *frame) untouched(kind, name string, want map[string]dockerx.Container, when string) {
	f.t.Helper()
	got := map[string]dockerx.Container{}
	for _, c := range f.owned(kind, name) {
		got[c.ID] = c
	}
	for id, w := range want {
		c, ok := got[id]
		switch {
		case !ok:
			f.t.Errorf("%s: container %s of %s %s is gone", when, w.Name, kind, name)
		case c.State != dockerx.StateRunning || !c.Created.Equal(w.Created):
			f.t.Errorf("%s: container %s was touched: %+v, was %+v", when, w.Name, c, w)
		}
	}
}

// orphanDelete deletes kind/name of the default namespace with
// --cascade=orphan, and returns its key.
func (f *frame) orphanDelete(kind, name string) string {
	f.t.Helper()
	ref := store.ObjectRef{Kind: kind, Namespace: "default", Name: name}
	if _, err := f.st.DeleteObjectsWith([]store.ObjectRef{ref}, store.DeleteOptions{Orphan: true}); err != nil {
		f.t.Fatal(err)
	}
	return Key(kind, "default", name)
}

// restart replaces the controller by a new one on the same store and
// Docker, as a controller process started again: it remembers nothing.
func (f *frame) restart() {
	f.c.runtime.Stop()
	f.c = New(Config{Instance: instance, Docker: f.d, Store: f.st, Kinds: Kinds(), Now: f.clock})
	f.t.Cleanup(f.c.runtime.Stop)
}

// settle syncs key a few times, the clock moving, failing if any sync
// hands a container of it to the stopper.
func (f *frame) settle(key string) {
	f.t.Helper()
	for range 5 {
		f.sync(key)
		if busy, _ := f.c.runtime.Stopper().InFlight(key); len(busy) > 0 {
			f.t.Errorf("sync of %s stops %v", key, busy)
		}
		f.advance(time.Minute)
	}
}

// Deleting an owner with --cascade=orphan leaves its pods running,
// untouched, through any number of syncs and a controller restart, as
// the garbage collector's orphan propagation leaves the dependents;
// a StatefulSet's claims stay too (docs/design.md §17.1).
func TestOrphaningDeletionLeavesThePodsRunningUntouched(t *testing.T) {
	for _, tc := range orphanKinds {
		t.Run(tc.name, func(t *testing.T) {
			f := newFrame(t)
			f.apply(tc.yaml)
			pods := f.runPods(tc.kind, tc.owner, tc.pods)
			claims := f.claims()
			key := f.orphanDelete(tc.kind, tc.owner)
			f.d.ResetCalls()
			f.settle(key)
			f.untouched(tc.kind, tc.owner, pods, "after the orphaning delete")
			f.restart()
			f.settle(key)
			f.untouched(tc.kind, tc.owner, pods, "after a controller restart")
			if n := f.d.WriteCalls(); n != 0 {
				t.Errorf("%d Docker writes (%v) after the orphaning delete, want none", n, f.d.Calls())
			}
			if got := f.claims(); !slices.Equal(got, claims) {
				t.Errorf("claims %v after the orphaning delete, want %v kept", got, claims)
			}
			// delete pod of an orphan (the CLI stops and removes its
			// container): nothing replaces it.
			for id := range pods {
				if err := f.d.RemoveContainer(context.Background(), id); err != nil {
					t.Fatal(err)
				}
				for len(f.owned(tc.kind, tc.owner)) != tc.pods-1 {
					time.Sleep(time.Millisecond) // the fake removes in the background
				}
				break
			}
			f.d.ResetCalls()
			f.settle(key)
			if n, w := len(f.owned(tc.kind, tc.owner)), f.d.WriteCalls(); n != tc.pods-1 || w != 0 {
				t.Errorf("after an orphan's removal: %d containers, %d Docker writes; want %d, none (not replaced)", n, w, tc.pods-1)
			}
		})
	}
}

// An object applied again over an orphaning deletion adopts the orphans
// its selector matches, as Kubernetes' ControllerRefManager does: they
// are its pods (kept as they run, not created again, counted in its
// status), across a controller restart, and go with it when it is deleted
// in the background. A Job adopts none: its orphans keep running beside
// its own pods, and stay when it goes.
func TestObjectAppliedAgainAdoptsTheOrphansItsSelectorMatches(t *testing.T) {
	for _, tc := range orphanKinds {
		t.Run(tc.name, func(t *testing.T) {
			f := newFrame(t)
			f.apply(tc.yaml)
			pods := f.runPods(tc.kind, tc.owner, tc.pods)
			key := f.orphanDelete(tc.kind, tc.owner)
			f.sync(key)
			f.advance(time.Second)
			f.d.ResetCalls()
			f.apply(tc.yaml)
			want := tc.pods
			if !tc.adopts {
				want = 2 * tc.pods // the orphans, and the new Job's own
			}
			f.runPods(tc.kind, tc.owner, want)
			f.settle(key)
			f.untouched(tc.kind, tc.owner, pods, "after the apply")
			f.restart()
			f.settle(key)
			f.untouched(tc.kind, tc.owner, pods, "after a controller restart")
			if n := len(f.running(tc.kind, tc.owner)); n != want {
				t.Errorf("%d pods run, want %d", n, want)
			}
			if n := f.d.WriteCalls(); tc.adopts && n != 0 {
				t.Errorf("%d Docker writes (%v) adopting the pods, want none: nothing is created again", n, f.d.Calls())
			}
			if tc.kind == store.KindStatefulSet {
				if st := f.setStatus(); st.Replicas != 2 || st.ReadyReplicas != 2 {
					t.Errorf("status replicas %d ready %d, want the 2 adopted pods counted", st.Replicas, st.ReadyReplicas)
				}
			}
			// The background cascade takes what the object owns.
			if _, err := f.st.DeleteObjects([]store.ObjectRef{{Kind: tc.kind, Namespace: "default", Name: tc.owner}}); err != nil {
				t.Fatal(err)
			}
			for range 50 {
				if len(f.owned(tc.kind, tc.owner)) == len(pods)*boolInt(!tc.adopts) {
					break
				}
				f.sync(key)
				f.advance(time.Minute)
				time.Sleep(time.Millisecond)
			}
			if tc.adopts {
				if left := f.owned(tc.kind, tc.owner); len(left) != 0 {
					t.Errorf("containers left after the background delete: %+v", left)
				}
				return
			}
			if n := len(f.owned(tc.kind, tc.owner)); n != tc.pods {
				t.Errorf("%d containers left after the background delete, want the %d orphans", n, tc.pods)
			}
			f.untouched(tc.kind, tc.owner, pods, "after the new Job's background delete")
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A Job applied again over its orphans names its pods as they were named,
// and a name an orphan holds gives way to a generated one (orphanNames):
// never to the name of a pod still being created, which a list does not
// show yet. The Job's pod being created under the name that replaced an
// orphan's, its parallelism raised: the second pod is created at once,
// under a name of its own, as Kubernetes' generated names never meet.
func TestJobOverItsOrphansNamesNoPodAfterOneBeingCreated(t *testing.T) {
	tests := []struct {
		name         string
		before, then string
		want         int
	}{
		{"NonIndexed: its next name is the orphan's", "  parallelism: 1\n  completions: 4", "  parallelism: 2\n  completions: 4", 2},
		{"Indexed: its next index's name is no orphan's", "  parallelism: 1\n  completions: 4\n  completionMode: Indexed",
			"  parallelism: 2\n  completions: 4\n  completionMode: Indexed", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFrame(t)
			f.apply(jobYAML("batch", tt.before))
			orphans := f.runPods(store.KindJob, "batch", 1)
			key := f.orphanDelete(store.KindJob, "batch")
			f.sync(key)
			f.advance(time.Second)
			h := newHeldCreatesFrom(t, f, 1)
			f.apply(jobYAML("batch", tt.before))
			f.syncOnly(key)
			h.waitHeld(t, 1)
			f.apply(jobYAML("batch", tt.then))
			f.advance(time.Second)
			f.syncOnly(key)
			// Each create the sync asked for is held: wait for them.
			h.waitHeld(t, tt.want)
			h.open()
			f.c.runtime.WaitCreates()
			if n := len(f.owned(store.KindJob, "batch")); n != len(orphans)+tt.want {
				t.Errorf("%d containers, want the orphan and %d pods of the Job", n, tt.want)
			}
		})
	}
}

// A ReplicaSet applied again over its orphans with another template adopts
// those its selector matches and keeps them as they run: Kubernetes'
// ReplicaSet controller never changes nor replaces a pod it has for its
// template (a Deployment rolls by ReplicaSets), so no pod is created,
// restarted or removed.
func TestReplicaSetAdoptsOrphansOfAnotherTemplateUntouched(t *testing.T) {
	tests := []struct {
		name  string
		again string
	}{
		{"same template", replicaSetWeb(2)},
		{"an env var added", strings.Replace(replicaSetWeb(2), "        image: busybox\n", "        image: busybox\n        env: [{name: V, value: \"2\"}]\n", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFrame(t)
			f.apply(replicaSetWeb(2))
			pods := f.runPods(store.KindReplicaSet, "web", 2)
			key := f.orphanDelete(store.KindReplicaSet, "web")
			f.sync(key)
			f.advance(time.Second)
			f.d.ResetCalls()
			f.apply(tt.again)
			f.settle(key)
			f.untouched(store.KindReplicaSet, "web", pods, "after the apply")
			if n := f.d.WriteCalls(); n != 0 {
				t.Errorf("%d Docker writes (%v) adopting the pods, want none", n, f.d.Calls())
			}
		})
	}
}

// Pod names are unique in a namespace, object names per kind: a
// ReplicaSet and a DaemonSet of one name (Kubernetes allows them) each
// run their pods, as Kubernetes' random suffixes never meet. The derived
// names here must not either, or the second create fails on the name
// forever.
func TestOwnersOfOneNameAndTwoKindsBothRunTheirPods(t *testing.T) {
	ds := strings.ReplaceAll(agentYAML("1"), "agent", "web")
	tests := []struct {
		name  string
		first string
	}{
		{"the ReplicaSet first", "rs"},
		{"the DaemonSet first", "ds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFrame(t)
			order := []string{store.KindReplicaSet, store.KindDaemonSet}
			if tt.first == "ds" {
				order = []string{store.KindDaemonSet, store.KindReplicaSet}
			}
			f.apply(replicaSetWeb(1))
			f.apply(ds)
			for range 5 {
				for _, k := range order {
					f.sync(Key(k, "default", "web"))
				}
				f.advance(time.Second)
			}
			for _, k := range order {
				if n := len(f.running(k, "web")); n != 1 {
					t.Errorf("%s web runs %d pods, want 1", k, n)
				}
			}
		})
	}
}

// A standalone Pod's name is its identity: one another owner's pod holds
// is not created under another name (it would be no pod of it, deleted
// and made again at each sync) but fails with FailedCreate, as the API
// server refuses a pod of a name that exists.
func TestStandalonePodOfANameAnotherPodHoldsIsNotCreated(t *testing.T) {
	tests := []struct {
		name  string
		syncs int
	}{
		{"one sync", 1},
		{"five syncs", 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFrame(t)
			f.mu.Lock()
			f.now = time.Now() // the store hides events older than its TTL on read
			f.mu.Unlock()
			f.apply(replicaSetWeb(1))
			f.sync(Key(store.KindReplicaSet, "default", "web"))
			rs := f.running(store.KindReplicaSet, "web")
			if len(rs) != 1 {
				t.Fatalf("the ReplicaSet runs %d pods, want 1", len(rs))
			}
			pod, _ := dockerx.PodOfContainerName(instance, "default", rs[0].Name)
			f.apply("apiVersion: v1\nkind: Pod\nmetadata: {name: " + pod + "}\nspec:\n  containers: [{name: c, image: busybox}]\n")
			f.d.ResetCalls()
			for range tt.syncs {
				f.sync(Key(store.KindPod, "default", pod))
				f.advance(time.Second)
			}
			if n := len(f.owned(store.KindPod, pod)); n != 0 {
				t.Errorf("the Pod has %d containers, want none: its name is held", n)
			}
			if n := f.d.WriteCalls(); n != 0 {
				t.Errorf("%d Docker writes (%v), want none", n, f.d.Calls())
			}
			if !f.hasEvent("FailedCreate", "pod "+pod+" exists") {
				t.Error("no FailedCreate event says the name is held")
			}
		})
	}
}
