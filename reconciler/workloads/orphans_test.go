package workloads

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/testio"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/services"
	"github.com/dockctl/dockctl/reconciler/workload"
	"github.com/dockctl/dockctl/store"
)

// orphanOf runs yaml's owner kind/name until it has n pods, deletes it
// with --cascade=orphan, syncs its key (which leaves the orphans) and
// its orphan keeper's a few times; it returns the orphans' containers by
// ID and the keeper's key.
func (f *frame) orphanOf(yaml, kind, name string, n int) (map[string]dockerx.Container, string) {
	f.t.Helper()
	f.apply(yaml)
	pods := f.runPods(kind, name, n)
	f.sync(f.orphanDelete(kind, name))
	key := OrphansKey(kind, "default", name)
	f.settle(key)
	f.untouched(kind, name, pods, "kept by the orphan keeper")
	return pods, key
}

// rounds syncs keys, in order, n times, the clock moving by step after
// each round (past a crash backoff: a minute).
func (f *frame) rounds(n int, step time.Duration, keys ...string) {
	f.t.Helper()
	for range n {
		for _, k := range keys {
			f.sync(k)
		}
		f.advance(step)
	}
}

// first is the container of pods of the smallest ID.
func first(pods map[string]dockerx.Container) dockerx.Container {
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range pods {
			if !yield(id) {
				return
			}
		}
	})
	return pods[ids[0]]
}

// state is the state of container id ("" once it is gone).
func (f *frame) state(kind, name, id string) string {
	for _, c := range f.owned(kind, name) {
		if c.ID == id {
			return c.State
		}
	}
	return ""
}

// An orphan is still a pod: the kubelet restarts its container as its
// restartPolicy says, with its crash backoff, whatever owns it.
func TestOrphanIsRestartedUnderItsRestartPolicy(t *testing.T) {
	onFailure := strings.Replace(jobYAML("batch", "  parallelism: 2\n  completions: 4"), "restartPolicy: Never", "restartPolicy: OnFailure", 1)
	tests := []struct {
		name, kind, owner, yaml string
		pods, exit              int
		restarted               bool
	}{
		{"statefulset Always after exit 0", store.KindStatefulSet, "db", setYAML("2", "Parallel", ""), 2, 0, true},
		{"replicaset Always after exit 1", store.KindReplicaSet, "web", replicaSetWeb(2), 2, 1, true},
		{"daemonset Always after exit 1", store.KindDaemonSet, "agent", agentYAML("1"), 1, 1, true},
		{"job OnFailure after exit 1", store.KindJob, "batch", onFailure, 2, 1, true},
		{"job OnFailure after exit 0", store.KindJob, "batch", onFailure, 2, 0, false},
		{"job Never after exit 1", store.KindJob, "batch", jobYAML("batch", "  parallelism: 2\n  completions: 4"), 2, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFrame(t)
			pods, key := f.orphanOf(tt.yaml, tt.kind, tt.owner, tt.pods)
			ct := first(pods)
			if err := f.d.Exit(ct.ID, tt.exit); err != nil {
				t.Fatal(err)
			}
			owner := Key(tt.kind, "default", tt.owner)
			f.rounds(5, time.Minute, owner, key)
			want := dockerx.StateExited
			if tt.restarted {
				want = dockerx.StateRunning
			}
			if got := f.state(tt.kind, tt.owner, ct.ID); got != want {
				t.Errorf("orphan %s is %q after its exit %d, want %q", ct.Name, got, tt.exit, want)
			}
			if n := len(f.owned(tt.kind, tt.owner)); n != tt.pods {
				t.Errorf("%d containers, want the %d orphans and no other", n, tt.pods)
			}
		})
	}
}

// probeRunner passes or fails every probe attempt, as fail says.
type probeRunner struct{ fail atomic.Bool }

func (r *probeRunner) Run(context.Context, podruntime.ProbeTarget, *manifests.Probe) error {
	if r.fail.Load() {
		return errors.New("connection refused")
	}
	return nil
}

// An orphan's readiness probe runs, and the Services' endpoints follow
// it: the endpoints controller routes to any ready pod the selector
// matches, owned or not; a failing probe takes it out.
func TestOrphanReadinessProbeFeedsTheServicesEndpoints(t *testing.T) {
	probe := "        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1, failureThreshold: 1}\n"
	tests := []struct {
		kind   string
		orphan func(f *frame) string
	}{
		{store.KindReplicaSet, func(f *frame) string {
			probed := strings.Replace(replicaSetWeb(1), "        image: busybox\n", "        image: busybox\n"+probe, 1)
			_, key := f.orphanOf(probed, store.KindReplicaSet, "web", 1)
			return key
		}},
		// A Deployment's, made by its controller, kept by the frame.
		{store.KindDeployment, func(f *frame) string {
			_, key := f.deploymentOrphans(webDeployment("default", 1, probe), "default", 1)
			return key
		}},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			runner := &probeRunner{}
			var rec endpointsRecorder
			f := newFrameWith(t, func(c *Config) { c.ProbeRunner, c.Endpoints = runner, &rec })
			key := tt.orphan(f)
			if eps, ok := rec.of(services.OwnerKey(tt.kind, "default", "web")); ok {
				t.Errorf("the deleted %s still feeds %+v", tt.kind, eps)
			}
			ready := func(want bool) {
				t.Helper()
				deadline := time.Now().Add(30 * time.Second)
				for {
					f.sync(key)
					eps, _ := rec.of(key)
					if len(eps) == 1 && eps[0].Ready == want && eps[0].Labels["app"] == "web" {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("endpoints of the orphan %+v, want one, ready %v", eps, want)
					}
					time.Sleep(10 * time.Millisecond) // the prober's next attempt
				}
			}
			ready(true)
			runner.fail.Store(true)
			ready(false)
		})
	}
}

// `delete pod` of an orphan (the CLI stops and removes its containers)
// removes it for good: its keeper creates none, nor does the deleted
// owner's key.
func TestDeletedOrphanIsNotMadeAgain(t *testing.T) {
	for _, tc := range orphanKinds {
		t.Run(tc.name, func(t *testing.T) {
			f := newFrame(t)
			pods, key := f.orphanOf(tc.yaml, tc.kind, tc.owner, tc.pods)
			if err := f.d.RemoveContainer(context.Background(), first(pods).ID); err != nil {
				t.Fatal(err)
			}
			for len(f.owned(tc.kind, tc.owner)) != tc.pods-1 {
				time.Sleep(time.Millisecond) // the fake removes in the background
			}
			f.d.ResetCalls()
			f.settle(key)
			f.settle(Key(tc.kind, "default", tc.owner))
			if n, w := len(f.owned(tc.kind, tc.owner)), f.d.WriteCalls(); n != tc.pods-1 || w != 0 {
				t.Errorf("after an orphan's removal: %d containers, %d Docker writes (%v); want %d, none", n, w, f.d.Calls(), tc.pods-1)
			}
		})
	}
}

// The object applied again adopts the orphans its selector matches, as
// they run (no container restarted or made again): from then on they are
// its own, and its orphan keeper has none.
func TestOrphansAdoptedLeaveTheirKeeperUntouched(t *testing.T) {
	for _, tc := range orphanKinds {
		if !tc.adopts {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			var rec endpointsRecorder
			f := newFrameWith(t, func(c *Config) { c.Endpoints = &rec })
			pods, key := f.orphanOf(tc.yaml, tc.kind, tc.owner, tc.pods)
			if eps, _ := rec.of(key); len(eps) != tc.pods {
				t.Fatalf("orphan endpoints %+v, want the %d orphans", eps, tc.pods)
			}
			f.d.ResetCalls()
			f.apply(tc.yaml)
			owner := Key(tc.kind, "default", tc.owner)
			f.rounds(3, time.Second, owner, key)
			f.untouched(tc.kind, tc.owner, pods, "after the adoption")
			if n := f.d.WriteCalls(); n != 0 {
				t.Errorf("%d Docker writes (%v) adopting the orphans, want none", n, f.d.Calls())
			}
			if eps, _ := rec.of(key); len(eps) != 0 {
				t.Errorf("the keeper still feeds %+v after the adoption", eps)
			}
			if eps, _ := rec.of(services.OwnerKey(tc.kind, "default", tc.owner)); len(eps) != tc.pods {
				t.Errorf("owner endpoints %+v, want its %d adopted pods", eps, tc.pods)
			}
		})
	}
}

// Deleting the namespace removes its orphans, as the namespace
// controller deletes every pod in it, and their keeper lets them go.
func TestNamespaceDeletionRemovesItsOrphans(t *testing.T) {
	var rec endpointsRecorder
	f := newFrameWith(t, func(c *Config) { c.Endpoints = &rec })
	f.apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\n" +
		strings.Replace(replicaSetWeb(2), "  name: web\n", "  name: web\n  namespace: team\n", 1))
	owner := Key(store.KindReplicaSet, "team", "web")
	for i := 0; len(f.running(store.KindReplicaSet, "web")) != 2; i++ {
		if i > 50 {
			t.Fatalf("pods %+v, want 2", f.owned(store.KindReplicaSet, "web"))
		}
		f.sync(owner)
	}
	ref := store.ObjectRef{Kind: store.KindReplicaSet, Namespace: "team", Name: "web"}
	if _, err := f.st.DeleteObjectsWith([]store.ObjectRef{ref}, store.DeleteOptions{Orphan: true}); err != nil {
		t.Fatal(err)
	}
	key := OrphansKey(store.KindReplicaSet, "team", "web")
	f.sync(owner)
	f.sync(key)
	if eps, _ := rec.of(key); len(eps) != 2 || len(f.running(store.KindReplicaSet, "web")) != 2 {
		t.Fatalf("orphans %+v fed %+v, want 2 running and fed", f.owned(store.KindReplicaSet, "web"), eps)
	}
	if _, err := f.st.DeleteObjects([]store.ObjectRef{{Kind: store.KindNamespace, Name: "team"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; len(f.owned(store.KindReplicaSet, "web")) != 0; i++ {
		if i > 50 {
			t.Fatalf("containers left after the namespace's deletion: %+v", f.owned(store.KindReplicaSet, "web"))
		}
		f.sync(key)
		f.sync(owner)
		f.advance(time.Minute)
		time.Sleep(time.Millisecond) // the fake removes in the background
	}
	f.sync(key)
	if eps, ok := rec.of(key); ok {
		t.Errorf("the keeper still feeds %+v after the namespace's deletion", eps)
	}
}

// An orphan's template is judged like any pod spec handed to the runtime
// (docs/design.md §13): one needing --allow-privileged is not restarted
// by a controller started without it, and is by one started with it.
func TestOrphanNeedingAFlagIsNotRestartedWithoutIt(t *testing.T) {
	for _, allowed := range []bool{false, true} {
		t.Run(map[bool]string{false: "without the flag", true: "with the flag"}[allowed], func(t *testing.T) {
			f := newFrameWith(t, func(c *Config) { c.Allow.Privileged = true })
			privileged := strings.Replace(replicaSetWeb(1), "        image: busybox\n",
				"        image: busybox\n        securityContext: {privileged: true}\n", 1)
			pods, key := f.orphanOf(privileged, store.KindReplicaSet, "web", 1)
			f.c.runtime.Stop()
			var logs testio.Buffer
			cfg := Config{Instance: instance, Docker: f.d, Store: f.st, Kinds: Kinds(), Now: f.clock,
				Log: slog.New(slog.NewTextHandler(&logs, nil))}
			cfg.Allow.Privileged = allowed
			f.c = New(cfg)
			t.Cleanup(f.c.runtime.Stop)
			ct := first(pods)
			if err := f.d.Exit(ct.ID, 1); err != nil {
				t.Fatal(err)
			}
			f.rounds(5, time.Minute, key)
			want := dockerx.StateExited
			if allowed {
				want = dockerx.StateRunning
			}
			if got := f.state(store.KindReplicaSet, "web", ct.ID); got != want {
				t.Errorf("privileged orphan is %q, want %q", got, want)
			}
			// The refusal persists while the flags do: it is logged
			// once, not at each of the keeper's syncs.
			wantLogs := 1
			if allowed {
				wantLogs = 0
			}
			if n := strings.Count(logs.String(), `msg="orphan pods"`); n != wantLogs {
				t.Errorf("the keeper logged its failure %d times over 5 syncs, want %d:\n%s", n, wantLogs, logs.String())
			}
		})
	}
}

// An orphan whose template is not recorded — the object applied again
// over it with another template and a selector that does not match it (a
// Job's never does): a new object, whose record and status know nothing
// of the deleted one's — is left as Docker runs it, as before: not
// restarted, not removed, not replaced, and never run from the new
// template.
func TestOrphanOfAnUnrecordedTemplateIsLeftAsDockerRunsIt(t *testing.T) {
	withEnv := func(yaml, image string) string {
		return strings.Replace(yaml, image, image+"        env: [{name: V, value: \"2\"}]\n", 1)
	}
	onFailure := strings.Replace(jobYAML("batch", "  parallelism: 1\n  completions: 1"), "restartPolicy: Never", "restartPolicy: OnFailure", 1)
	tests := []struct {
		name, kind, owner, yaml, again string
	}{
		{"replicaset", store.KindReplicaSet, "web", replicaSetWeb(1),
			strings.ReplaceAll(withEnv(replicaSetWeb(1), "        image: busybox\n"), "{app: web}", "{app: web2}")},
		{"job", store.KindJob, "batch", onFailure, withEnv(onFailure, "        image: busybox\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFrame(t)
			pods, key := f.orphanOf(tt.yaml, tt.kind, tt.owner, 1)
			f.apply(tt.again)
			owner := Key(tt.kind, "default", tt.owner)
			f.rounds(3, time.Second, owner, key)
			ct := first(pods)
			if err := f.d.Exit(ct.ID, 1); err != nil {
				t.Fatal(err)
			}
			f.rounds(5, time.Minute, owner, key)
			if got := f.state(tt.kind, tt.owner, ct.ID); got != dockerx.StateExited {
				t.Errorf("orphan of an unrecorded template is %q, want exited and left as it is", got)
			}
			if n := len(f.owned(tt.kind, tt.owner)); n != 2 {
				t.Errorf("%d containers, want the orphan and the new object's pod", n)
			}
		})
	}
}

func TestOrphansKeyNamesItsKindAndName(t *testing.T) {
	tests := []struct {
		key            string
		kind, ns, name string
		ok             bool
	}{
		{OrphansKey(store.KindStatefulSet, "team", "db"), store.KindStatefulSet, "team", "db", true},
		{OrphansKey(store.KindJob, "", "batch"), store.KindJob, "default", "batch", true},
		// A Deployment's store key has no kind in it; its keeper's has.
		{OrphansKey(store.KindDeployment, "team", "web"), store.KindDeployment, "team", "web", true},
		{"orphans:job:team/web:x", "", "", "", false},
		{Key(store.KindJob, "default", "batch"), "", "", "", false},
		{"orphans:nothing", "", "", "", false},
	}
	for _, tt := range tests {
		kind, ns, name, ok := parseOrphansKey(tt.key)
		if kind != tt.kind || ns != tt.ns || name != tt.name || ok != tt.ok {
			t.Errorf("parseOrphansKey(%q) = %q %q %q %v, want %q %q %q %v", tt.key, kind, ns, name, ok, tt.kind, tt.ns, tt.name, tt.ok)
		}
	}
}

// An orphan keeper is queued by the store watch of its kind and name
// (an orphaning deletion, an adoption, its namespace's deletion), and,
// while it keeps orphans, by their containers' Docker events and the
// resync; an owner without orphans queues no keeper on its events.
func TestOrphanKeeperIsQueuedByTheStoreAndItsPodsEvents(t *testing.T) {
	f := newFrame(t)
	f.apply(jobYAML("batch", "  parallelism: 1\n  completions: 1"))
	pods := f.runPods(store.KindJob, "batch", 1)
	ct := first(pods)
	key := OrphansKey(store.KindJob, "default", "batch")
	owner := Key(store.KindJob, "default", "batch")
	f.queuedKeys() // drain
	f.c.Event(die("batch", ct, 0, false))
	if got := f.queuedKeys(); slices.Contains(got, key) {
		t.Errorf("an owned pod's die queued %v, want no orphan keeper", got)
	}
	f.orphanDelete(store.KindJob, "batch")
	f.c.StoreChanged(owner)
	if got := f.queuedKeys(); !slices.Contains(got, key) || !slices.Contains(got, owner) {
		t.Errorf("the store watch of the orphaning delete queued %v, want %s and %s", got, owner, key)
	}
	f.sync(key)
	f.c.Event(die("batch", ct, 0, true))
	if got := f.queuedKeys(); slices.Contains(got, key) {
		t.Errorf("an unsettled die queued %v, want the settled one to", got)
	}
	f.c.Event(die("batch", ct, 0, false))
	if got := f.queuedKeys(); !slices.Contains(got, key) {
		t.Errorf("an orphan's die queued %v, want %s", got, key)
	}
	f.c.Resync()
	if got := f.queuedKeys(); !slices.Contains(got, key) {
		t.Errorf("the resync queued %v, want %s", got, key)
	}
}

// A StatefulSet's orphan below its partition runs its own revision's
// template (the one its revision label and hash name, recorded with the
// set), as the kubelet runs the spec a pod was made with: restarted in
// place after its exit, never made again at the set's update revision.
func TestStatefulSetOrphanOfAnEarlierRevisionIsKeptAtIt(t *testing.T) {
	f := newFrame(t)
	f.apply(partitionedSetYAML("1"))
	owner := Key(store.KindStatefulSet, "default", "db")
	f.sync(owner)
	f.sync(owner)
	old := f.setStatus().UpdateRevision
	f.apply(partitionedSetYAML("2"))
	f.replaceDB1(owner, old)
	f.sync(f.orphanDelete(store.KindStatefulSet, "db"))
	key := OrphansKey(store.KindStatefulSet, "default", "db")
	f.settle(key)
	var db0 dockerx.Container
	for _, c := range f.running(store.KindStatefulSet, "db") {
		if p, _ := dockerx.PodOfContainerName(instance, "", c.Name); p == "db-0" {
			db0 = c
		}
	}
	if db0.Labels[workload.RevisionLabel] != old {
		t.Fatalf("db-0 %+v, want it running at %s", db0, old)
	}
	if err := f.d.Exit(db0.ID, 1); err != nil {
		t.Fatal(err)
	}
	f.rounds(5, time.Minute, owner, key)
	if got := f.state(store.KindStatefulSet, "db", db0.ID); got != dockerx.StateRunning {
		t.Errorf("db-0 is %q after its exit, want restarted in place", got)
	}
	if got := f.podRevision("db-0"); got != old {
		t.Errorf("db-0 at %q, want kept at its revision %s", got, old)
	}
	if n := len(f.owned(store.KindStatefulSet, "db")); n != 2 {
		t.Errorf("%d containers, want the 2 orphans", n)
	}
}

// memberOf syncs key until kind/name has a container of container name
// (a holder pod's member), and returns it.
func (f *frame) memberOf(key, kind, name, container string) dockerx.Container {
	f.t.Helper()
	for range 50 {
		f.sync(key)
		for _, c := range f.owned(kind, name) {
			if c.ContainerName == container {
				return c
			}
		}
		f.advance(time.Second)
	}
	f.t.Fatalf("no container %s of %s %s after syncing %s: %+v", container, kind, name, key, f.owned(kind, name))
	return dockerx.Container{}
}

// A container the orphan keeper creates for an orphan (a holder pod's
// app container once its init container exited) is the orphan's, as the
// kubelet's containers are their pod's: labelled with the deleted
// incarnation's uid, like the pod's holder. Unlabelled, it would read as
// the own pod of whatever object of the name is applied next (a Job
// adopts none), which would count its exit and split the pod between
// two controllers.
func TestOrphanKeepersNewContainerIsTheOrphans(t *testing.T) {
	f := newFrame(t)
	initJob := strings.Replace(jobYAML("batch", "  parallelism: 1\n  completions: 1"),
		"      containers:\n", "      initContainers:\n      - {name: setup, image: busybox}\n      containers:\n", 1)
	f.apply(initJob)
	owner := Key(store.KindJob, "default", "batch")
	setup := f.memberOf(owner, store.KindJob, "batch", "setup")
	uid := setup.Labels[dockerx.LabelOwnerUID]
	f.sync(f.orphanDelete(store.KindJob, "batch"))
	key := OrphansKey(store.KindJob, "default", "batch")
	f.sync(key)
	if err := f.d.Exit(setup.ID, 0); err != nil {
		t.Fatal(err)
	}
	work := f.memberOf(key, store.KindJob, "batch", "work")
	if got := work.Labels[dockerx.LabelOwnerUID]; got != uid {
		t.Errorf("the orphan's app container has owner uid %q, want its pod's %q", got, uid)
	}
	// The Job applied again adopts none of it: the orphan's completion
	// is not its.
	f.apply(initJob)
	if err := f.d.Exit(work.ID, 0); err != nil {
		t.Fatal(err)
	}
	f.rounds(3, time.Second, owner, key)
	if st := f.jobStatus("batch"); st.Succeeded != 0 || hasCondition(st, batchv1.JobComplete) {
		t.Errorf("the new Job's status %+v counts the orphan's completion", st)
	}
}

// A pod its owner is removing when it is deleted with --cascade=orphan
// (a scale-down's, within its grace period) is a pod being deleted:
// orphaning its owner does not undo that, as Kubernetes' garbage
// collector only drops the ownerReference of a pod whose
// deletionTimestamp stays set. Its keeper neither starts it again once
// it exits nor routes a Service to it (terminating), and it goes.
func TestOrphanTheOwnerIsRemovingIsNotKept(t *testing.T) {
	var rec endpointsRecorder
	f := newFrameWith(t, func(c *Config) { c.Endpoints = &rec })
	f.apply(replicaSetWeb(2))
	owner := Key(store.KindReplicaSet, "default", "web")
	f.runPods(store.KindReplicaSet, "web", 2)
	// Its process traps SIGTERM: the stop lasts until the test lets the
	// kill come.
	kill := make(chan time.Time)
	f.d.IgnoresStop = func(dockerx.Container) bool { return true }
	f.d.After = func(time.Duration) <-chan time.Time { return kill }
	f.apply(replicaSetWeb(1))
	f.sync(owner)
	busy, _ := f.c.runtime.Stopper().InFlight(owner)
	if len(busy) != 1 {
		t.Fatalf("the scale-down stops %v, want one pod", busy)
	}
	var victim dockerx.Container
	for _, c := range f.owned(store.KindReplicaSet, "web") {
		if busy[c.ID] {
			victim = c
		}
	}
	f.sync(f.orphanDelete(store.KindReplicaSet, "web"))
	key := OrphansKey(store.KindReplicaSet, "default", "web")
	f.sync(key)
	eps, _ := rec.of(key)
	for _, ep := range eps {
		if victim.Name == instance+"_"+ep.Pod+".default_pod" && ep.Ready && !ep.Terminating {
			t.Errorf("the keeper routes to the pod being removed: %+v", ep)
		}
	}
	close(kill)
	for i := 0; f.state(store.KindReplicaSet, "web", victim.ID) != ""; i++ {
		if i > 200 {
			t.Fatalf("the pod the scale-down stopped is %q, want removed", f.state(store.KindReplicaSet, "web", victim.ID))
		}
		f.sync(key)
		f.advance(time.Minute)
		time.Sleep(time.Millisecond) // the stopper removes in the background
	}
	if n := len(f.running(store.KindReplicaSet, "web")); n != 1 {
		t.Errorf("%d pods run, want the one orphan", n)
	}
}

// What a keeper remembers of its orphans goes with them: once the orphan
// of an unrecorded template (logged once) is removed, its keeper keeps
// nothing of it, as owners and their pods come and go over a
// controller's life.
func TestOrphanKeeperForgetsTheOrphansThatAreGone(t *testing.T) {
	f := newFrame(t)
	pods, key := f.orphanOf(replicaSetWeb(1), store.KindReplicaSet, "web", 1)
	f.apply(strings.ReplaceAll(strings.Replace(replicaSetWeb(1), "        image: busybox\n",
		"        image: busybox\n        env: [{name: V, value: \"2\"}]\n", 1), "{app: web}", "{app: web2}"))
	owner := Key(store.KindReplicaSet, "default", "web")
	f.rounds(3, time.Second, owner, key)
	if !f.c.orphans.isKept(key) || len(f.c.orphans.unknown) == 0 {
		t.Fatalf("keeper memory %+v, want the orphan of an unrecorded template remembered", &f.c.orphans)
	}
	if err := f.d.RemoveContainer(context.Background(), first(pods).ID); err != nil {
		t.Fatal(err)
	}
	for f.state(store.KindReplicaSet, "web", first(pods).ID) != "" {
		time.Sleep(time.Millisecond) // the fake removes in the background
	}
	f.rounds(2, time.Second, owner, key)
	if f.c.orphans.isKept(key) || len(f.c.orphans.unknown) != 0 {
		t.Errorf("keeper memory kept %v, unknown %v once its orphan is gone, want nothing", f.c.orphans.kept, f.c.orphans.unknown)
	}
}

// webDeployment is deployment web of n replicas of namespace ns, its
// container's lines extra added.
func webDeployment(ns string, n int, extra string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: " + ns + "}\nspec:\n  replicas: " + strconv.Itoa(n) +
		"\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: web\n        image: busybox\n" + extra
}

// deploymentOrphans applies yaml (deployment web of namespace ns), makes
// its n replicas as the Deployment controller makes them (package
// reconciler: dockerx.ContainerName, labelled with its incarnation),
// deletes it with --cascade=orphan and settles its orphan keeper; it
// returns the orphans by ID and the keeper's key.
func (f *frame) deploymentOrphans(yaml, ns string, n int) (map[string]dockerx.Container, string) {
	f.t.Helper()
	f.apply(yaml)
	rec, err := f.st.Get(ns, "web")
	if err != nil {
		f.t.Fatal(err)
	}
	hash := manifests.TemplateHash(&rec.Deployment.Spec.Template)
	from := dockerx.TemplateOf(&rec.Deployment)
	from.OwnerUID = store.OwnerUID(rec.CreatedAt)
	ctx := context.Background()
	for i := range n {
		id, err := f.d.CreateContainer(ctx, dockerx.CreateRequest{Instance: instance, Namespace: ns, TemplateHash: hash, From: from,
			Name: dockerx.ContainerName(instance, ns, "web", hash, i)})
		if err != nil {
			f.t.Fatal(err)
		}
		if err := f.d.StartContainer(ctx, id); err != nil {
			f.t.Fatal(err)
		}
	}
	pods := map[string]dockerx.Container{}
	for _, c := range f.deployed() {
		pods[c.ID] = c
	}
	if len(pods) != n {
		f.t.Fatalf("replicas %+v, want %d", pods, n)
	}
	ref := store.ObjectRef{Kind: store.KindDeployment, Namespace: ns, Name: "web"}
	if _, err := f.st.DeleteObjectsWith([]store.ObjectRef{ref}, store.DeleteOptions{Orphan: true}); err != nil {
		f.t.Fatal(err)
	}
	key := OrphansKey(store.KindDeployment, ns, "web")
	f.settle(key)
	f.untouchedDeployed(pods, "kept by the orphan keeper")
	return pods, key
}

// deployed are deployment web's containers, of any namespace.
func (f *frame) deployed() []dockerx.Container {
	f.t.Helper()
	all, err := f.d.ListContainers(context.Background(), instance)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []dockerx.Container
	for _, c := range all {
		if c.Labels[dockerx.LabelDeployment] == "web" {
			out = append(out, c)
		}
	}
	return out
}

// untouchedDeployed fails unless every container of want still runs as
// it was.
func (f *frame) untouchedDeployed(want map[string]dockerx.Container, when string) {
	f.t.Helper()
	got := map[string]dockerx.Container{}
	for _, c := range f.deployed() {
		got[c.ID] = c
	}
	for id, w := range want {
		if c, ok := got[id]; !ok || c.State != dockerx.StateRunning || !c.Created.Equal(w.Created) {
			f.t.Errorf("%s: container %s was touched: %+v, was %+v", when, w.Name, c, w)
		}
	}
}

// deployedState is the state of deployment web's container id ("" once
// it is gone).
func (f *frame) deployedState(id string) string {
	for _, c := range f.deployed() {
		if c.ID == id {
			return c.State
		}
	}
	return ""
}

// exitFirst makes the first of a Deployment's pods exit with code, syncs
// key n times a minute apart, and returns that container and its state
// then.
func (f *frame) exitFirst(pods map[string]dockerx.Container, key string, code, n int) (dockerx.Container, string) {
	f.t.Helper()
	ct := first(pods)
	if err := f.d.Exit(ct.ID, code); err != nil {
		f.t.Fatal(err)
	}
	f.rounds(n, time.Minute, key)
	return ct, f.deployedState(ct.ID)
}

// A Deployment's orphans are kept as any kind's (docs/design.md §17.1):
// the replica the Deployment controller made is restarted in place,
// under its own name, after its exit (its template's restartPolicy is
// Always), with no other container made.
func TestDeploymentOrphanIsRestartedAfterItsExit(t *testing.T) {
	for _, exit := range []int{0, 1} {
		t.Run("exit "+strconv.Itoa(exit), func(t *testing.T) {
			f := newFrame(t)
			pods, key := f.deploymentOrphans(webDeployment("default", 2, ""), "default", 2)
			ct, got := f.exitFirst(pods, key, exit, 5)
			if got != dockerx.StateRunning {
				t.Errorf("orphan %s is %q after its exit %d, want restarted", ct.Name, got, exit)
			}
			if n := len(f.deployed()); n != 2 {
				t.Errorf("%d containers, want the 2 orphans and no other", n)
			}
		})
	}
}

// `delete pod` of a Deployment's orphan removes it for good: its keeper
// makes nothing again.
func TestDeletedDeploymentOrphanIsNotMadeAgain(t *testing.T) {
	f := newFrame(t)
	pods, key := f.deploymentOrphans(webDeployment("default", 2, ""), "default", 2)
	if err := f.d.RemoveContainer(context.Background(), first(pods).ID); err != nil {
		t.Fatal(err)
	}
	for len(f.deployed()) != 1 {
		time.Sleep(time.Millisecond) // the fake removes in the background
	}
	f.d.ResetCalls()
	f.settle(key)
	if n, w := len(f.deployed()), f.d.WriteCalls(); n != 1 || w != 0 {
		t.Errorf("after an orphan's removal: %d containers, %d Docker writes (%v); want 1, none", n, w, f.d.Calls())
	}
}

// The Deployment applied again adopts the orphans its selector matches:
// its controller's from then on, they leave the keeper as they run (no
// Docker write, out of the keeper's endpoints).
func TestDeploymentOrphansAdoptedLeaveTheKeeper(t *testing.T) {
	var rec endpointsRecorder
	f := newFrameWith(t, func(c *Config) { c.Endpoints = &rec })
	yaml := webDeployment("default", 2, "")
	pods, key := f.deploymentOrphans(yaml, "default", 2)
	if eps, _ := rec.of(key); len(eps) != 2 {
		t.Fatalf("orphan endpoints %+v, want the 2 orphans", eps)
	}
	f.d.ResetCalls()
	f.apply(yaml)
	f.c.StoreChanged(store.Key("default", "web"))
	if got := f.queuedKeys(); !slices.Equal(got, []string{key}) {
		t.Errorf("the adopting apply queued %v, want the keeper only (the Deployment is its controller's)", got)
	}
	f.rounds(3, time.Minute, key)
	f.untouchedDeployed(pods, "after the adoption")
	if n := f.d.WriteCalls(); n != 0 {
		t.Errorf("%d Docker writes (%v) releasing the adopted orphans, want none", n, f.d.Calls())
	}
	if eps, _ := rec.of(key); len(eps) != 0 {
		t.Errorf("the keeper still feeds %+v after the adoption", eps)
	}
	// Their exit is the adopter's to repair now: the keeper leaves it.
	if _, got := f.exitFirst(pods, key, 1, 3); got != dockerx.StateExited {
		t.Errorf("an adopted pod is %q after its exit, want it left to its Deployment", got)
	}
}

// Deleting the namespace lets a Deployment's orphans go (the Deployment
// controller removes them with it, store.PodOwner): their keeper keeps
// nothing of them and drops their endpoints.
func TestNamespaceDeletionReleasesDeploymentOrphans(t *testing.T) {
	var rec endpointsRecorder
	f := newFrameWith(t, func(c *Config) { c.Endpoints = &rec })
	f.apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n")
	pods, key := f.deploymentOrphans(webDeployment("team", 2, ""), "team", 2)
	if eps, _ := rec.of(key); len(eps) != 2 {
		t.Fatalf("orphan endpoints %+v, want the 2 orphans", eps)
	}
	if _, err := f.st.DeleteObjects([]store.ObjectRef{{Kind: store.KindNamespace, Name: "team"}}); err != nil {
		t.Fatal(err)
	}
	f.d.ResetCalls()
	f.sync(key)
	if eps, ok := rec.of(key); ok {
		t.Errorf("the keeper still feeds %+v after the namespace's deletion", eps)
	}
	if _, got := f.exitFirst(pods, key, 1, 3); got != dockerx.StateExited {
		t.Errorf("a pod of the deleted namespace is %q after its exit, want it left to its removal", got)
	}
}

// A Deployment orphan's template is judged like any pod spec handed to
// the runtime (docs/design.md §13): one needing --allow-privileged is
// not restarted by a controller started without it, and is by one
// started with it.
func TestDeploymentOrphanNeedingAFlagIsNotRestartedWithoutIt(t *testing.T) {
	for _, allowed := range []bool{false, true} {
		t.Run(map[bool]string{false: "without the flag", true: "with the flag"}[allowed], func(t *testing.T) {
			f := newFrameWith(t, func(c *Config) { c.Allow.Privileged = allowed })
			pods, key := f.deploymentOrphans(webDeployment("default", 1, "        securityContext: {privileged: true}\n"), "default", 1)
			_, got := f.exitFirst(pods, key, 1, 5)
			want := dockerx.StateExited
			if allowed {
				want = dockerx.StateRunning
			}
			if got != want {
				t.Errorf("privileged orphan is %q, want %q", got, want)
			}
		})
	}
}

// TestOrphanKeeperFailureIsLoggedOncePerFailure: the keeper logs a
// lasting failure once, but a failure that changes, or that comes back
// after a sync that succeeded, is news and is logged again.
func TestOrphanKeeperFailureIsLoggedOncePerFailure(t *testing.T) {
	var m orphanMemory
	for i, step := range []struct {
		key, msg string
		log      bool
	}{
		{"a", "refused: privileged", true},
		{"a", "refused: privileged", false},
		{"b", "refused: privileged", true}, // another keeper's is its own
		{"a", "refused: hostNetwork", true},
		{"a", "", false}, // recovered: no log, but remembered
		{"a", "", false},
		{"a", "refused: hostNetwork", true},
	} {
		if got := m.failed(step.key, step.msg) && step.msg != ""; got != step.log {
			t.Errorf("step %d (%s %q): logged %v, want %v", i, step.key, step.msg, got, step.log)
		}
	}
}
