package reconciler

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// waitLong waits for cond with a deadline generous enough for a loaded
// machine; nothing here asserts on timing.
func waitLong(t *testing.T, h *harness, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; containers: %s", what, summary(h.engine.Snapshot()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func withGrace(d *manifests.Deployment, secs int64) *manifests.Deployment {
	d.Spec.Template.Spec.TerminationGracePeriodSeconds = &secs
	return d
}

// Item 20 (a): a deployment over the replica cap is refused before any
// planning, so 2^31-1 replicas neither panic nor allocate per replica.
func TestPlanRefusesReplicasOverCap(t *testing.T) {
	tests := []struct {
		name     string
		replicas int32
		cap      int32
		refused  string // substring of the refusal; "" = planned
		noSurge  bool   // maxSurge 0: the path that tried to allocate per replica
	}{
		{"int32 max under the default cap", 2147483647, 0, "cap of 1000", false},
		{"int32 max with no surge under the default cap", 2147483647, 0, "cap of 1000", true},
		{"int32 max under a cap above the hard bound", 2147483647, 2147483647, "cap of 100000", true},
		{"one over an explicit cap", 6, 5, "replicas 6 exceeds the controller's cap of 5 (--max-replicas)", false},
		{"at the cap", 5, 5, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployment(tt.replicas)
			if tt.noSurge {
				d = withStrategy(d, manifests.StrategyRollingUpdate, 0, 1)
			}
			hash := manifests.TemplateHash(&d.Spec.Template)
			old := map[string]int32{hash: 2}
			in := PlanInput{Instance: "i", Name: "web", Desired: d, Hash: hash, Now: t0, MaxReplicas: tt.cap,
				Containers: []dockerx.Container{ctr(hash, 0, dockerx.StateRunning, time.Hour), ctr(hash, 1, dockerx.StateRunning, time.Hour)},
				State:      RolloutState{Sizes: old}}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			plan := ComputePlan(in)
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Fatalf("planning allocated %d bytes", alloc)
			}
			if tt.refused == "" {
				if plan.Refused != "" || len(plan.Creates()) != 3 {
					t.Fatalf("refused %q, %d creates; want 3 creates", plan.Refused, len(plan.Creates()))
				}
				return
			}
			if !strings.Contains(plan.Refused, tt.refused) || len(plan.Ops) != 0 || plan.State.Sizes[hash] != 2 {
				t.Fatalf("plan = %+v; want refused with %q, no op, sizes kept", plan, tt.refused)
			}
		})
	}
}

// Item 20 (a): the controller refuses a deployment over its cap with a
// ReplicaFailure naming the cap and scales nothing.
func TestControllerRefusesReplicasOverCap(t *testing.T) {
	for _, tt := range []struct {
		replicas int32
		want     []string
	}{
		// Over the controller's cap: refused, naming the cap and its flag.
		{5000, []string{"cap of 1000", "--max-replicas"}},
		// Over the hard bound of apply's validation (a record edited by
		// hand): refused as an invalid record, before any planning.
		{2147483647, []string{"spec.replicas"}},
	} {
		t.Run(fmt.Sprint(tt.replicas), func(t *testing.T) {
			h := newHarness(t, Options{})
			h.apply(testDeployment("web", 2, "x"))
			h.start()
			before := h.waitReplicas("web", 2)
			h.engine.ResetCalls()
			h.apply(testDeployment("web", tt.replicas, "x"))
			waitLong(t, h, "a ReplicaFailure naming "+strings.Join(tt.want, " and "), func() bool { return h.failureSays("web", tt.want...) })
			if w := h.engine.WriteCalls(); w != 0 {
				t.Fatalf("%d Docker writes for a refused deployment", w)
			}
			if after := h.ours("web"); len(after) != len(before) {
				t.Fatalf("containers changed: %s", summary(after))
			}
		})
	}
}

// Item 20 (c), test 4: a removed or restarted container is given the grace
// period of its own revision, bounded; a terminating one only what is left
// of it; one being stopped nothing more.
func TestPlanStopUsesOwnRevisionGrace(t *testing.T) {
	oldD := withGrace(deployment(2), 7)
	oldHash := manifests.TemplateHash(&oldD.Spec.Template)
	newD := withGrace(deployment(2), 60)
	newD.Spec.Template.Spec.Containers[0].Image = "img:2"
	newHash := manifests.TemplateHash(&newD.Spec.Template)
	hugeD := withGrace(deployment(1), 1<<62)
	hugeHash := manifests.TemplateHash(&hugeD.Spec.Template)
	revs := []store.Revision{{Number: 1, Hash: oldHash, Template: oldD.Spec.Template}, {Number: 2, Hash: newHash, Template: newD.Spec.Template},
		{Number: 3, Hash: hugeHash, Template: hugeD.Spec.Template}}
	running, exited := dockerx.StateRunning, dockerx.StateExited

	tests := []struct {
		name        string
		desired     *manifests.Deployment
		hash        string
		cs          []dockerx.Container
		sizes       map[string]int32
		liveness    string // container ID whose liveness failed
		terminating map[string]time.Time
		stopping    map[string]bool
		maxGrace    time.Duration
		want        map[string]string // container ID -> "kind grace"
	}{
		{name: "an old replica keeps its own revision's grace, not the new one's",
			desired: newD, hash: newHash,
			cs:    []dockerx.Container{ctr(oldHash, 0, running, time.Hour), ctr(newHash, 0, running, time.Hour), ctr(newHash, 1, running, time.Hour)},
			sizes: map[string]int32{oldHash: 1, newHash: 2},
			want:  map[string]string{"id-" + dockerx.ContainerName("i", "", "web", oldHash, 0): "remove 7s"}},
		{name: "a surplus replica of the current revision gets the current grace",
			desired: newD, hash: newHash,
			cs:    []dockerx.Container{ctr(newHash, 0, running, time.Hour), ctr(newHash, 1, running, time.Hour), ctr(newHash, 2, running, time.Minute)},
			sizes: map[string]int32{newHash: 3},
			want:  map[string]string{"id-" + dockerx.ContainerName("i", "", "web", newHash, 2): "remove 1m0s"}},
		{name: "an absurd grace is bounded by the default maximum",
			desired: deployment(0), hash: manifests.TemplateHash(&deployment(0).Spec.Template),
			cs:   []dockerx.Container{ctr(hugeHash, 0, running, time.Hour)},
			want: map[string]string{"id-" + dockerx.ContainerName("i", "", "web", hugeHash, 0): "remove 5m0s"}},
		{name: "and by --max-grace-period",
			desired: newD, hash: newHash, maxGrace: 20 * time.Second,
			cs:    []dockerx.Container{ctr(newHash, 0, running, time.Hour), ctr(newHash, 1, running, time.Hour), ctr(newHash, 2, running, time.Minute)},
			sizes: map[string]int32{newHash: 3},
			want:  map[string]string{"id-" + dockerx.ContainerName("i", "", "web", newHash, 2): "remove 20s"}},
		{name: "a container that is not running has nothing to stop",
			desired: newD, hash: newHash,
			cs:    []dockerx.Container{ctr(oldHash, 0, exited, time.Hour), ctr(newHash, 0, running, time.Hour), ctr(newHash, 1, running, time.Hour)},
			sizes: map[string]int32{oldHash: 1, newHash: 2},
			want:  map[string]string{"id-" + dockerx.ContainerName("i", "", "web", oldHash, 0): "remove 0s"}},
		{name: "a liveness restart of an old replica uses its own grace",
			desired: newD, hash: newHash, liveness: "id-" + dockerx.ContainerName("i", "", "web", oldHash, 0),
			cs:    []dockerx.Container{ctr(oldHash, 0, running, time.Hour), ctr(newHash, 0, running, time.Hour)},
			sizes: map[string]int32{oldHash: 1, newHash: 1},
			want:  map[string]string{"id-" + dockerx.ContainerName("i", "", "web", oldHash, 0): "restart 7s"}},
		{name: "a terminating replica found after a restart gets what is left of its grace",
			desired: newD, hash: newHash,
			cs:          []dockerx.Container{ctr(oldHash, 0, running, time.Hour), ctr(newHash, 0, running, time.Hour), ctr(newHash, 1, running, time.Hour)},
			sizes:       map[string]int32{newHash: 2},
			terminating: map[string]time.Time{"id-" + dockerx.ContainerName("i", "", "web", oldHash, 0): t0.Add(3 * time.Second)},
			want:        map[string]string{"id-" + dockerx.ContainerName("i", "", "web", oldHash, 0): "remove 3s"}},
		{name: "and is killed once its deadline has passed",
			desired: newD, hash: newHash,
			cs:          []dockerx.Container{ctr(oldHash, 0, running, time.Hour), ctr(newHash, 0, running, time.Hour), ctr(newHash, 1, running, time.Hour)},
			sizes:       map[string]int32{newHash: 2},
			terminating: map[string]time.Time{"id-" + dockerx.ContainerName("i", "", "web", oldHash, 0): t0.Add(-time.Second)},
			want:        map[string]string{"id-" + dockerx.ContainerName("i", "", "web", oldHash, 0): "remove 0s"}},
		{name: "a container whose stop is in flight gets no op",
			desired: newD, hash: newHash,
			cs:          []dockerx.Container{ctr(oldHash, 0, running, time.Hour), ctr(newHash, 0, running, time.Hour), ctr(newHash, 1, running, time.Hour)},
			sizes:       map[string]int32{newHash: 2},
			terminating: map[string]time.Time{"id-" + dockerx.ContainerName("i", "", "web", oldHash, 0): t0.Add(time.Hour)},
			stopping:    map[string]bool{"id-" + dockerx.ContainerName("i", "", "web", oldHash, 0): true},
			want:        map[string]string{}},
		{name: "a deleted deployment's replicas keep their own revisions' grace",
			cs:   []dockerx.Container{ctr(oldHash, 0, running, time.Hour), ctr(newHash, 0, running, time.Hour)},
			want: map[string]string{"id-" + dockerx.ContainerName("i", "", "web", oldHash, 0): "remove 7s", "id-" + dockerx.ContainerName("i", "", "web", newHash, 0): "remove 1m0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := PlanInput{Instance: "i", Name: "web", Desired: tt.desired, Hash: tt.hash, Revisions: revs, Containers: tt.cs,
				Available: availableIfRunning(tt.cs), LivenessFailed: map[string]bool{tt.liveness: true}, Now: t0,
				State: RolloutState{Sizes: tt.sizes}, Terminating: tt.terminating, Stopping: tt.stopping, MaxGracePeriod: tt.maxGrace}
			if tt.desired != nil {
				d := tt.desired.Replicas()
				in.State.DesiredReplicas = &d
			}
			got := map[string]string{}
			for _, op := range ComputePlan(in).Ops {
				if op.Kind == OpCreate {
					continue // the rollout's own business here
				}
				got[op.ContainerID] = fmt.Sprintf("%s %v", op.Kind, op.Grace)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("ops = %v, want %v", got, tt.want)
			}
		})
	}
}

// Item 20 (c), test 2 (planner): a terminating old replica counts toward
// replicas + maxSurge, and never as an available replica of its revision.
func TestPlanCountsTerminatingTowardSurge(t *testing.T) {
	oldD := deployment(3)
	oldHash := manifests.TemplateHash(&oldD.Spec.Template)
	newD := withStrategy(deployment(3), manifests.StrategyRollingUpdate, 1, 0)
	newD.Spec.Template.Spec.Containers[0].Image = "img:2"
	newHash := manifests.TemplateHash(&newD.Spec.Template)
	revs := []store.Revision{{Number: 1, Hash: oldHash, Template: oldD.Spec.Template}, {Number: 2, Hash: newHash, Template: newD.Spec.Template}}
	cs := []dockerx.Container{
		ctr(oldHash, 0, dockerx.StateRunning, time.Hour), ctr(oldHash, 1, dockerx.StateRunning, time.Hour),
		ctr(oldHash, 2, dockerx.StateRunning, time.Hour), ctr(oldHash, 3, dockerx.StateRunning, time.Hour),
	}
	stopping := cs[3].ID
	three := int32(3)
	in := PlanInput{Instance: "i", Name: "web", Desired: newD, Hash: newHash, Revisions: revs, Containers: cs,
		Available: availableIfRunning(cs), Now: t0, State: RolloutState{Sizes: map[string]int32{oldHash: 3}, DesiredReplicas: &three, MaxReplicas: 4},
		Terminating: map[string]time.Time{stopping: t0.Add(time.Hour)}, Stopping: map[string]bool{stopping: true}}
	plan := ComputePlan(in)
	if len(plan.Ops) != 0 {
		t.Fatalf("3 old replicas + 1 terminating = replicas + maxSurge, yet the plan is %v", plan.Ops)
	}
	// The terminating one gone, one new replica fits.
	in.Containers, in.Terminating, in.Stopping = cs[:3], nil, nil
	in.Available = availableIfRunning(in.Containers)
	if c := ComputePlan(in).Creates(); len(c) != 1 {
		t.Fatalf("after the terminating replica is gone: %v, want one create", c)
	}
	// A terminating replica of the current revision is not one of its
	// replicas: a replacement is created within the surge budget.
	cur := []dockerx.Container{ctr(newHash, 0, dockerx.StateRunning, time.Hour), ctr(newHash, 1, dockerx.StateRunning, time.Hour), ctr(newHash, 2, dockerx.StateRunning, time.Hour)}
	in = PlanInput{Instance: "i", Name: "web", Desired: newD, Hash: newHash, Revisions: revs, Containers: cur,
		Available: availableIfRunning(cur), Now: t0, State: RolloutState{Sizes: map[string]int32{newHash: 3}, DesiredReplicas: &three, MaxReplicas: 4},
		Terminating: map[string]time.Time{cur[2].ID: t0.Add(time.Hour)}, Stopping: map[string]bool{cur[2].ID: true}}
	if c := ComputePlan(in).Creates(); len(c) != 1 {
		t.Fatalf("with a terminating replica of the current revision: %v, want one replacement", c)
	}
	// A scale-up from 2 back to 4 while the 2 replicas of the scale-down to
	// 2 still terminate: 4 containers exist, so one create fits, not two.
	four := newD.DeepCopy()
	four.Spec.Replicas = ptrTo(int32(4))
	two := int32(2)
	scaled := []dockerx.Container{ctr(newHash, 0, dockerx.StateRunning, time.Hour), ctr(newHash, 1, dockerx.StateRunning, time.Hour),
		ctr(newHash, 2, dockerx.StateRunning, time.Hour), ctr(newHash, 3, dockerx.StateRunning, time.Hour)}
	in = PlanInput{Instance: "i", Name: "web", Desired: four, Hash: newHash, Revisions: revs, Containers: scaled,
		Available: availableIfRunning(scaled), Now: t0, State: RolloutState{Sizes: map[string]int32{newHash: 2}, DesiredReplicas: &two, MaxReplicas: 3},
		Terminating: map[string]time.Time{scaled[2].ID: t0.Add(time.Hour), scaled[3].ID: t0.Add(time.Hour)},
		Stopping:    map[string]bool{scaled[2].ID: true, scaled[3].ID: true}}
	if c := ComputePlan(in).Creates(); len(c) != 1 {
		t.Fatalf("scale-up while 2 replicas terminate: %v, want one create (replicas + maxSurge = 5)", c)
	}
}

func ptrTo[T any](v T) *T { return &v }

// ignoreStops makes every container of the named deployments ignore its
// stop signal, and returns the grace periods StopContainer was asked for.
type stopRecorder struct {
	mu     sync.Mutex
	graces []time.Duration
}

func (r *stopRecorder) asked() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.graces...)
}

func ignoreStops(h *harness, release func(time.Duration) <-chan time.Time, deployments ...string) *stopRecorder {
	r := &stopRecorder{}
	h.engine.IgnoresStop = func(c dockerx.Container) bool {
		for _, d := range deployments {
			if c.Deployment == d {
				return true
			}
		}
		return false
	}
	h.engine.After = func(d time.Duration) <-chan time.Time {
		r.mu.Lock()
		r.graces = append(r.graces, d)
		r.mu.Unlock()
		return release(d)
	}
	return r
}

func never(time.Duration) <-chan time.Time { return nil }

func terminating(h *harness, name, id string) bool {
	st, err := h.store.ReadStatus("", name)
	rec, _ := h.store.Get("", name)
	if err != nil || st == nil || rec == nil {
		return false
	}
	_, views := View(rec, st, nil, h.ours(name), time.Now())
	return views[id].Terminating
}

// Item 20 (b), (c) test 1: a replica with a grace period of an hour that
// ignores its stop signal holds no worker: with a single worker, another
// deployment is still synced while it terminates, and it shows as
// Terminating. The same for a liveness restart.
func TestGracefulStopDoesNotHoldWorker(t *testing.T) {
	t.Run("scale down", func(t *testing.T) {
		h := newHarness(t, Options{Workers: 1, MaxGracePeriod: 2 * time.Hour})
		rec := ignoreStops(h, never, "slow")
		h.apply(withGrace(testDeployment("slow", 2, "x"), 3600))
		h.start()
		cs := h.waitReplicas("slow", 2)
		h.apply(withGrace(testDeployment("slow", 1, "x"), 3600))
		waitLong(t, h, "a stop with the hour of grace", func() bool { return len(rec.asked()) == 1 })
		h.apply(testDeployment("other", 1, "x"))
		h.waitReplicas("other", 1)
		var victim string
		waitLong(t, h, "the stopped replica recorded as terminating", func() bool {
			for _, c := range cs {
				if terminating(h, "slow", c.ID) {
					victim = c.ID
					return true
				}
			}
			return false
		})
		if g := rec.asked()[0]; g != time.Hour {
			t.Fatalf("stop timeout %v, want its grace of 1h", g)
		}
		if n := len(h.ours("slow")); n != 2 {
			t.Fatalf("the terminating replica was removed before its grace period: %s", summary(h.ours("slow")))
		}
		st, _ := h.store.ReadStatus("", "slow")
		rc, _ := h.store.Get("", "slow")
		counts, _ := View(rc, st, nil, h.ours("slow"), time.Now())
		if counts.Replicas != 1 {
			t.Fatalf("status counts %d replicas, want 1 (the terminating %s excluded)", counts.Replicas, victim)
		}
	})
	t.Run("liveness restart", func(t *testing.T) {
		h := newHarness(t, Options{Workers: 1})
		runner := &switchRunner{fail: map[string]bool{}}
		h.ctrl.prober.SetRunner(runner)
		rec := ignoreStops(h, never, "slow")
		d := withGrace(testDeployment("slow", 1, "x"), 3600)
		d.Spec.Template.Spec.Containers[0].LivenessProbe = fastProbe()
		h.apply(d)
		h.start()
		c := h.waitReplicas("slow", 1)[0]
		runner.set(c.ID, true)
		waitLong(t, h, "a liveness restart", func() bool { return len(rec.asked()) == 1 })
		if g := rec.asked()[0]; g != DefaultMaxGracePeriod {
			t.Fatalf("restart stop timeout %v, want the grace bounded to %v", g, DefaultMaxGracePeriod)
		}
		h.apply(testDeployment("other", 1, "x"))
		h.waitReplicas("other", 1)
	})
	t.Run("delete", func(t *testing.T) {
		h := newHarness(t, Options{Workers: 1})
		rec := ignoreStops(h, func(time.Duration) <-chan time.Time { return time.After(0) }, "slow")
		h.apply(withGrace(testDeployment("slow", 2, "x"), 45))
		h.start()
		h.waitReplicas("slow", 2)
		if err := h.store.Delete("", "slow"); err != nil {
			t.Fatal(err)
		}
		waitLong(t, h, "the deleted deployment's replicas gone", func() bool { return len(h.ours("slow")) == 0 })
		if g := rec.asked(); len(g) != 2 || g[0] != 45*time.Second || g[1] != 45*time.Second {
			t.Fatalf("stops asked %v, want two graceful stops of 45s", g)
		}
	})
}

// Item 20 (c) test 2: a rolling update whose old replicas take their time
// to stop never holds more than replicas + maxSurge containers, counting
// the terminating ones, as counted from Docker's create and destroy events.
func TestRollingUpdateCountsTerminating(t *testing.T) {
	h := newHarness(t, Options{})
	// The kill comes a little later than the stop, whatever the grace:
	// enough for the planner to see terminating replicas, and correctness
	// depends on no timing.
	rec := ignoreStops(h, func(time.Duration) <-chan time.Time { return time.After(20 * time.Millisecond) }, "web")
	h.apply(withStrategy(testDeployment("web", 4, "v1"), manifests.StrategyRollingUpdate, 1, 0))
	h.start()
	h.waitReplicas("web", 4)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := h.engine.Events(ctx, "i")
	<-events // the first message is a gap
	var peak, current, destroys atomic.Int64
	counted := make(chan struct{})
	current.Store(4)
	peak.Store(4)
	go func() {
		defer close(counted)
		for ev := range events {
			if ev.Deployment != "web" {
				continue
			}
			switch ev.Action {
			case "create":
				if n := current.Add(1); n > peak.Load() {
					peak.Store(n)
				}
			case "destroy":
				current.Add(-1)
				destroys.Add(1)
			}
		}
	}()
	h.apply(withStrategy(testDeployment("web", 4, "v2"), manifests.StrategyRollingUpdate, 1, 0))
	waitLong(t, h, "the rollout to finish", func() bool {
		cs := h.ours("web")
		return len(cs) == 4 && h.engine.Calls()["create"] >= 8 && allRunning(cs)
	})
	h.waitReplicas("web", 4)
	// Every event counted before the subscription ends.
	waitLong(t, h, "the events of the rollout", func() bool { return destroys.Load() == 4 && current.Load() == 4 })
	cancel()
	<-counted
	if p := peak.Load(); p > 5 {
		t.Fatalf("%d containers at once, want at most replicas + maxSurge = 5", p)
	}
	if n := len(rec.asked()); n < 4 {
		t.Fatalf("%d graceful stops, want one per old replica", n)
	}
}

func allRunning(cs []dockerx.Container) bool {
	for _, c := range cs {
		if c.State != dockerx.StateRunning {
			return false
		}
	}
	return true
}

// Item 20 (c) test 3: a controller stopped mid-stop leaves the deadline in
// the status file; the next one does not count the container as a replica,
// resumes the stop with what is left of the grace, and kills it once the
// deadline has passed.
func TestStopResumesAfterControllerRestart(t *testing.T) {
	var clock atomic.Int64
	clock.Store(t0.UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	opts := Options{Now: now, MaxGracePeriod: 2 * time.Hour}
	h := newHarness(t, opts)
	rec := ignoreStops(h, never, "web")
	h.apply(withGrace(testDeployment("web", 2, "x"), 3600))
	h.start()
	cs := h.waitReplicas("web", 2)
	h.apply(withGrace(testDeployment("web", 1, "x"), 3600))
	var victim string
	waitLong(t, h, "a replica recorded as terminating", func() bool {
		for _, c := range cs {
			if terminating(h, "web", c.ID) {
				victim = c.ID
				return true
			}
		}
		return false
	})
	h.stop() // abandons the stop: the replica ignored its signal and runs on
	if n := len(h.ours("web")); n != 2 {
		t.Fatalf("after the controller stopped: %s", summary(h.ours("web")))
	}

	restart := func(advance time.Duration, release func(time.Duration) <-chan time.Time) {
		clock.Add(int64(advance))
		o := opts
		o.Instance, o.ResyncPeriod = "i", time.Hour
		o.CrashBackoffBase = 20 * time.Millisecond
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		h.engine.After = func(d time.Duration) <-chan time.Time {
			rec.mu.Lock()
			rec.graces = append(rec.graces, d)
			rec.mu.Unlock()
			return release(d)
		}
		h.ctrl = New(h.engine, h.store, o)
		h.start()
	}

	// 1000 s later: the stop resumes with the 2600 s left; the terminating
	// replica is no replica, so nothing is created or removed for it.
	restart(1000*time.Second, never)
	waitLong(t, h, "the stop resumed", func() bool { return len(rec.asked()) == 2 })
	if g := rec.asked()[1]; g != 2600*time.Second {
		t.Fatalf("resumed stop timeout %v, want the 2600s left", g)
	}
	h.waitFor("status written", func() bool { return terminating(h, "web", victim) })
	if got := h.ours("web"); len(got) != 2 || h.engine.Calls()["create"] != 2 {
		t.Fatalf("the restarted controller acted on the terminating replica as a live one: %s, %v", summary(got), h.engine.Calls())
	}
	h.stop()

	// Past the deadline: killed and removed at once, the other replica kept.
	restart(3*time.Hour, never)
	waitLong(t, h, "the terminating replica killed", func() bool { return len(h.ours("web")) == 1 })
	left := h.ours("web")
	if left[0].ID == victim || left[0].State != dockerx.StateRunning || h.engine.Calls()["create"] != 2 {
		t.Fatalf("left %s after %v", summary(left), h.engine.Calls())
	}
}
