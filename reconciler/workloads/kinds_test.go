package workloads

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

func agentYAML(v string) string {
	return `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers:
      - name: a
        image: busybox
        env: [{name: V, value: "` + v + `"}]
`
}

// converge syncs the owner until its one pod runs the template of hash
// want and no other container of it is left, advancing the fake clock
// between syncs (graceful stops, backoffs); the fake Engine removes in the
// background, so a bounded number of rounds is given.
func (f *frame) converge(kind, name, want string) {
	f.t.Helper()
	key := Key(kind, "default", name)
	for range 500 {
		f.sync(key)
		run := f.running(kind, name)
		if len(run) == 1 && run[0].TemplateHash == want && len(f.owned(kind, name)) == 1 {
			return
		}
		f.advance(time.Second)
		time.Sleep(time.Millisecond)
	}
	f.t.Fatalf("%s %s never ran only template %s: %+v", kind, name, want, f.owned(kind, name))
}

// rollout undo of a DaemonSet (the CLI writes the previous revision's
// template back into the stored object, an update by rollout) brings its
// pod back to the earlier template through the controller, as the
// ControllerRevision's rollback does; the restored template is the newest
// revision of the record.
func TestDaemonSetUndoRollsItsPodBackToTheEarlierTemplate(t *testing.T) {
	f := newFrame(t)
	ref := store.ObjectRef{Kind: store.KindDaemonSet, Namespace: "default", Name: "agent"}
	f.apply(agentYAML("1"))
	o, err := f.st.LookupObject(ref)
	if err != nil {
		t.Fatal(err)
	}
	first := o.Object.(*manifests.DaemonSet).TemplateHash()
	f.converge(store.KindDaemonSet, "agent", first)

	f.apply(agentYAML("2"))
	if o, err = f.st.LookupObject(ref); err != nil {
		t.Fatal(err)
	}
	second := o.Object.(*manifests.DaemonSet).TemplateHash()
	f.converge(store.KindDaemonSet, "agent", second)

	// What `rollout undo daemonset/agent` stores.
	if len(o.Revisions) != 2 || o.Revisions[0].Hash != first {
		t.Fatalf("revisions %+v, want the two templates", o.Revisions)
	}
	ds := o.Object.(*manifests.DaemonSet)
	ds.Metadata.Generation, ds.Metadata.CreationTimestamp = 0, nil
	ds.Spec.Template = o.Revisions[0].Template
	if _, err := f.st.Apply(store.Bundle{DaemonSets: []*manifests.DaemonSet{ds}}, store.ApplyOptions{Updater: "rollout"}); err != nil {
		t.Fatal(err)
	}
	f.converge(store.KindDaemonSet, "agent", first)
	if o, err = f.st.LookupObject(ref); err != nil {
		t.Fatal(err)
	}
	if n := len(o.Revisions); n != 2 || o.Revisions[1].Hash != first || o.Revisions[1].Number != 3 {
		t.Errorf("revisions after undo %+v, want the first template as revision 3", o.Revisions)
	}
}

// onDeleteAgentYAML is DaemonSet agent under OnDelete whose pod runs
// containers (busybox each).
func onDeleteAgentYAML(containers ...string) string {
	y := `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  updateStrategy: {type: OnDelete}
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers:
`
	for _, c := range containers {
		y += "      - {name: " + c + ", image: busybox}\n"
	}
	return y
}

// A DaemonSet's pod of an earlier revision is kept from its own
// revision's template (the record's revisions, as Kubernetes' pod keeps
// the spec it was made from): under OnDelete a template change replaces
// nothing, and no container of the new template is added to the old pod
// nor is the old pod made again.
func TestDaemonSetPodOfAnEarlierRevisionIsKeptAtItsOwnTemplate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		before     []string
		after      []string
		containers int
	}{
		{"one container, then two", []string{"a"}, []string{"a", "b"}, 1},
		{"two containers, then three", []string{"a", "b"}, []string{"a", "b", "c"}, 3}, // a holder and its two members
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFrame(t)
			key := Key(store.KindDaemonSet, "default", "agent")
			f.apply(onDeleteAgentYAML(tc.before...))
			for range 5 {
				f.sync(key)
				f.advance(time.Second)
			}
			before := f.owned(store.KindDaemonSet, "agent")
			if len(before) != tc.containers {
				t.Fatalf("%d containers before the change, want %d: %+v", len(before), tc.containers, before)
			}
			f.apply(onDeleteAgentYAML(tc.after...))
			for range 10 {
				f.sync(key)
				f.advance(time.Second)
				time.Sleep(time.Millisecond) // the fake removes in the background
			}
			after := f.owned(store.KindDaemonSet, "agent")
			ids := func(cs []dockerx.Container) []string {
				var out []string
				for _, c := range cs {
					out = append(out, c.ID+"@"+c.TemplateHash+"/"+string(c.State))
				}
				slices.Sort(out)
				return out
			}
			if got, want := ids(after), ids(before); !slices.Equal(got, want) {
				t.Errorf("containers after the template change %q, want the old pod's untouched %q", got, want)
			}
		})
	}
}

// holdRemoves makes every container removal fail while hold is set
// (the stopper retries it): the container stays, exited; release lets
// removals succeed again.
func (f *frame) holdRemoves(hold bool) (release func()) {
	var mu sync.Mutex
	f.d.OnRemove = func(string) error {
		mu.Lock()
		defer mu.Unlock()
		if hold {
			return errors.New("held by the test")
		}
		return nil
	}
	return func() {
		mu.Lock()
		defer mu.Unlock()
		hold = false
	}
}

// A Job that fails counts the pods it stops then as failed (Kubernetes
// counts every pod not finished when a Job fails), once: the stopped pod
// showing up exited afterwards — its removal not done yet, or failed —
// adds nothing to it.
func TestFailedJobCountsThePodsItStopsOnce(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		removes    bool // the stopped pod's removal succeeds
		// code is the stopped pod's exit code, as its process answered
		// SIGTERM (-1: the fake's own, 0).
		code int
	}{
		{"removal held, the stopped pod exits 0", "", false, 0},
		{"removal held, the stopped pod exits 143", "", false, 143},
		{"removal done", "", true, -1},
		{"indexed, removal held, the stopped pod exits 0", "  completions: 2\n  completionMode: Indexed\n", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFrame(t)
			f.holdRemoves(!tc.removes)
			f.apply(jobYAML("pair", tc.spec+"  parallelism: 2\n  backoffLimit: 0"))
			key := Key(store.KindJob, "default", "pair")
			f.sync(key)
			run := f.running(store.KindJob, "pair")
			if len(run) != 2 {
				t.Fatalf("%d pods running, want 2", len(run))
			}
			if err := f.d.Exit(run[0].ID, 1); err != nil {
				t.Fatal(err)
			}
			for i := 0; ; i++ {
				if i > 200 {
					t.Fatalf("the Job's other pod never stopped: %+v", f.owned(store.KindJob, "pair"))
				}
				f.sync(key)
				if len(f.running(store.KindJob, "pair")) == 0 {
					if tc.code >= 0 {
						if err := f.d.Exit(run[1].ID, tc.code); err != nil {
							t.Fatal(err)
						}
					}
					break
				}
				f.advance(time.Second)
				time.Sleep(time.Millisecond)
			}
			for range 5 {
				f.advance(time.Minute)
				f.sync(key)
				time.Sleep(time.Millisecond)
			}
			st := f.jobStatus("pair")
			if !hasCondition(st, batchv1.JobFailed) || st.Failed != 2 || st.Succeeded != 0 || st.CompletedIndexes != "" {
				t.Errorf("status %d failed, %d succeeded, %+v; want Failed with 2 failed: the failed pod and the one it stopped", st.Failed, st.Succeeded, st.Conditions)
			}
		})
	}
}

// A standalone Pod whose container is removed out of band while it runs
// (docker rm -f, a prune) is not finished: under restartPolicy Always or
// OnFailure it runs again, as the kubelet starts a pod's missing
// container again; under Never it is Failed (the kubelet's
// ContainerStatusUnknown), never reported Running without a container. A
// pod that finished stays finished whatever becomes of its container.
func TestStandalonePodWhoseContainerIsRemovedFollowsItsRestartPolicy(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		exit         int // -1: removed while running
		wantRunning  bool
		wantPhase    corev1.PodPhase
	}{
		{"Always, removed while running", "Always", -1, true, corev1.PodRunning},
		{"OnFailure, removed while running", "OnFailure", -1, true, corev1.PodRunning},
		{"Never, removed while running", "Never", -1, false, corev1.PodFailed},
		{"OnFailure, removed once succeeded", "OnFailure", 0, false, corev1.PodSucceeded},
		{"Never, removed once failed", "Never", 1, false, corev1.PodFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFrame(t)
			f.apply("apiVersion: v1\nkind: Pod\nmetadata: {name: solo}\nspec:\n  restartPolicy: " + tc.policy + "\n  containers:\n  - {name: t, image: busybox}\n")
			key := Key(store.KindPod, "default", "solo")
			f.sync(key)
			f.advance(time.Second)
			f.sync(key) // the running pod observed
			cs := f.running(store.KindPod, "solo")
			if len(cs) != 1 {
				t.Fatalf("%d containers running, want 1", len(cs))
			}
			if tc.exit >= 0 {
				if err := f.d.Exit(cs[0].ID, tc.exit); err != nil {
					t.Fatal(err)
				}
				f.advance(time.Second)
				f.sync(key)
			}
			// Docker's removal takes a moment, the container `removing`
			// meanwhile: syncs see it so first.
			f.d.HoldRemovals(true)
			if err := f.d.Remove(cs[0].ID); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				f.advance(time.Second)
				f.sync(key)
			}
			f.d.HoldRemovals(false)
			f.d.FinishRemovals()
			for range 20 {
				f.advance(time.Minute)
				f.sync(key)
				time.Sleep(time.Millisecond)
			}
			if got := len(f.running(store.KindPod, "solo")) == 1; got != tc.wantRunning {
				t.Errorf("running again: %v, want %v", got, tc.wantRunning)
			}
			ref := store.ObjectRef{Kind: store.KindPod, Namespace: "default", Name: "solo"}
			obj, err := f.st.LookupObject(ref)
			if err != nil {
				t.Fatal(err)
			}
			var st PodStatus
			if _, err := f.st.ReadWorkloadStatus(ref, obj.Created, &st); err != nil {
				t.Fatal(err)
			}
			if st.Phase != tc.wantPhase {
				t.Errorf("phase %s, want %s", st.Phase, tc.wantPhase)
			}
			for _, c := range st.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && !tc.wantRunning {
					t.Errorf("condition Ready true without a running container: %+v", st.Conditions)
				}
			}
		})
	}
}

// The pods a Job removes while it does not fail — all of them when it is
// suspended, the excess when its parallelism goes down — count neither as
// failed nor as succeeded, whatever their exit: Kubernetes' Job
// controller takes their tracking finalizer off before it deletes them
// (deleteJobPods), so they are never counted.
func TestPodsAJobRemovesCountNeitherFailedNorSucceeded(t *testing.T) {
	for _, tc := range []struct {
		name, spec, change string
		code               int
		wantSuspended      bool
	}{
		{"suspended, the stopped pods exit 143", "  parallelism: 2\n  completions: 4\n  backoffLimit: 0\n", "  suspend: true\n  parallelism: 2\n  completions: 4\n  backoffLimit: 0\n", 143, true},
		{"suspended, the stopped pods exit 0", "  parallelism: 2\n  completions: 2\n  backoffLimit: 0\n", "  suspend: true\n  parallelism: 2\n  completions: 2\n  backoffLimit: 0\n", 0, true},
		{"parallelism lowered, the stopped pod exits 143", "  parallelism: 2\n  completions: 4\n  backoffLimit: 0\n", "  parallelism: 1\n  completions: 4\n  backoffLimit: 0\n", 143, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFrame(t)
			release := f.holdRemoves(true)
			f.apply(jobYAML("q", tc.spec))
			key := Key(store.KindJob, "default", "q")
			f.sync(key)
			before := f.running(store.KindJob, "q")
			if len(before) != 2 {
				t.Fatalf("%d pods running, want 2", len(before))
			}
			f.apply(jobYAML("q", tc.change))
			want := 0
			if !tc.wantSuspended {
				want = 1
			}
			for i := 0; len(f.running(store.KindJob, "q")) != want; i++ {
				if i > 200 {
					t.Fatalf("%d pods still running, want %d", len(f.running(store.KindJob, "q")), want)
				}
				f.sync(key)
				f.advance(time.Second)
				time.Sleep(time.Millisecond)
			}
			for _, c := range f.owned(store.KindJob, "q") {
				if c.State != dockerx.StateRunning {
					if err := f.d.Exit(c.ID, tc.code); err != nil {
						t.Fatal(err)
					}
				}
			}
			for range 3 {
				f.advance(time.Second)
				f.sync(key)
			}
			release()
			for range 5 {
				f.advance(time.Minute)
				f.sync(key)
				time.Sleep(time.Millisecond)
			}
			st := f.jobStatus("q")
			if st.Failed != 0 || st.Succeeded != 0 || hasCondition(st, batchv1.JobFailed) || hasCondition(st, batchv1.JobComplete) {
				t.Errorf("status %d failed, %d succeeded, %+v; want neither counted, the Job neither failed nor complete", st.Failed, st.Succeeded, st.Conditions)
			}
			if got := hasCondition(st, batchv1.JobSuspended); got != tc.wantSuspended {
				t.Errorf("suspended %v, want %v: %+v", got, tc.wantSuspended, st.Conditions)
			}
		})
	}
}

// rsInit is ReplicaSet web of one pod with an init container (a holder
// pod), its app container's env V=v.
func rsInit(v string) string {
	return `apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      initContainers:
      - {name: setup, image: busybox}
      containers:
      - name: w
        image: busybox
        env: [{name: V, value: "` + v + `"}]
`
}

// A ReplicaSet never changes the pods it has when its template changes
// (Kubernetes' ReplicaSet controller only creates pods from its template
// and deletes pods): a pod made from the earlier template keeps running
// it — a member of it made again is made from that template, never from
// the new one under the old template's hash, and its probes and hooks
// are that template's.
func TestReplicaSetPodKeepsItsOwnTemplateAfterTheTemplateChanges(t *testing.T) {
	f := newFrame(t)
	var mu sync.Mutex
	var reqs []dockerx.CreateRequest
	f.d.OnCreate = func(r dockerx.CreateRequest) error {
		mu.Lock()
		defer mu.Unlock()
		reqs = append(reqs, r)
		return nil
	}
	f.apply(rsInit("1"))
	key := Key(store.KindReplicaSet, "default", "web")
	for i := 0; ; i++ {
		if i > 50 {
			t.Fatalf("the pod never ran its app container: %+v", f.owned(store.KindReplicaSet, "web"))
		}
		f.sync(key)
		done := false
		for _, c := range f.running(store.KindReplicaSet, "web") {
			if c.ContainerName == "setup" {
				if err := f.d.Exit(c.ID, 0); err != nil {
					t.Fatal(err)
				}
			}
			done = done || c.ContainerName == "w"
		}
		if done {
			break
		}
		f.advance(time.Second)
		time.Sleep(time.Millisecond)
	}
	f.sync(key)
	f.apply(rsInit("2"))
	mu.Lock()
	reqs = nil
	mu.Unlock()
	for _, c := range f.running(store.KindReplicaSet, "web") {
		if c.ContainerName == "w" {
			if err := f.d.Remove(c.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 10 {
		f.sync(key)
		f.advance(time.Minute)
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reqs) == 0 {
		t.Fatal("the removed member was never made again")
	}
	for _, r := range reqs {
		env := ""
		for _, c := range r.From.Template.Spec.Containers {
			for _, e := range c.Env {
				env += e.Name + "=" + e.Value
			}
		}
		if r.Container == "w" && env != "V=1" {
			t.Errorf("member %s of the pod of the earlier template made with %s, want its own template's V=1", r.Name, env)
		}
	}
}
