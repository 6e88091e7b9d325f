package reconciler

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

func withStrategy(d *manifests.Deployment, typ string, surge, unavailable int) *manifests.Deployment {
	d.Spec.Strategy = manifests.DeploymentStrategy{Type: typ}
	if typ == manifests.StrategyRollingUpdate {
		s, u := intstr.FromInt32(int32(surge)), intstr.FromInt32(int32(unavailable))
		d.Spec.Strategy.RollingUpdate = &manifests.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}
	}
	return d
}

// boundsChecker records the rollout's bounds at every step: the most
// containers that existed at once (counted by the engine under its lock as
// each create lands) and, at every removal the controller makes, how many
// containers are running, so a test checks the bounds at each step rather
// than at a few samples.
type boundsChecker struct {
	h              *harness
	mu             sync.Mutex
	minRunning     int
	removed        map[string]bool
	hashesAtCreate []map[string]int
}

func (b *boundsChecker) install(h *harness) {
	b.h = h
	b.minRunning = 1 << 30
	b.removed = map[string]bool{}
	h.engine.ResetPeak("web")
	h.engine.OnCreate = func(req dockerx.CreateRequest) error {
		hashes := map[string]int{}
		for _, c := range h.ours("web") {
			hashes[c.TemplateHash]++
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		b.hashesAtCreate = append(b.hashesAtCreate, hashes)
		return nil
	}
	h.engine.OnRemove = func(id string) error {
		// The hook runs before the removal lands, and removals run in
		// parallel: every container whose removal was asked for counts as
		// gone already, so that no interleaving hides a low.
		b.mu.Lock()
		defer b.mu.Unlock()
		b.removed[id] = true
		running := 0
		for _, c := range h.ours("web") {
			if c.State == dockerx.StateRunning && !b.removed[c.ID] {
				running++
			}
		}
		b.minRunning = min(b.minRunning, running)
		return nil
	}
}

func (b *boundsChecker) maxTotal() int { return b.h.engine.PeakContainers("web") }

func TestRollingUpdateKeepsBounds(t *testing.T) {
	for _, tc := range []struct{ replicas, surge, unavailable int }{{6, 1, 0}, {6, 0, 1}, {10, 3, 2}, {5, 5, 0}} {
		t.Run(fmt.Sprintf("replicas=%d,surge=%d,unavailable=%d", tc.replicas, tc.surge, tc.unavailable), func(t *testing.T) {
			h := newHarness(t, Options{})
			h.apply(withStrategy(testDeployment("web", int32(tc.replicas), "one"), manifests.StrategyRollingUpdate, tc.surge, tc.unavailable))
			h.start()
			h.waitReplicas("web", tc.replicas)
			var b boundsChecker
			b.install(h)
			h.apply(withStrategy(testDeployment("web", int32(tc.replicas), "two"), manifests.StrategyRollingUpdate, tc.surge, tc.unavailable))
			h.waitReplicas("web", tc.replicas)
			b.mu.Lock()
			defer b.mu.Unlock()
			if n := b.maxTotal(); n > tc.replicas+tc.surge {
				t.Errorf("%d containers at once, bound is %d", n, tc.replicas+tc.surge)
			}
			if b.minRunning < tc.replicas-tc.unavailable {
				t.Errorf("%d running at a removal, bound is %d", b.minRunning, tc.replicas-tc.unavailable)
			}
		})
	}
}

func TestRecreateNeverShowsTwoRevisions(t *testing.T) {
	h := newHarness(t, Options{})
	h.apply(withStrategy(testDeployment("web", 4, "one"), manifests.StrategyRecreate, 0, 0))
	h.start()
	h.waitReplicas("web", 4)
	var b boundsChecker
	b.install(h)
	h.apply(withStrategy(testDeployment("web", 4, "two"), manifests.StrategyRecreate, 0, 0))
	h.waitReplicas("web", 4)
	rec, _ := h.store.Get("", "web")
	newHash := manifests.TemplateHash(&rec.Deployment.Spec.Template)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, hashes := range b.hashesAtCreate {
		for hash := range hashes {
			if hash != newHash {
				t.Fatalf("a new container was created while %d of revision %s existed", hashes[hash], hash)
			}
		}
	}
}

// A revision whose containers exit right after starting never becomes
// available: the rollout stalls within maxUnavailable, the old revision
// keeps serving, and Progressing turns False at the deadline.
func TestBrokenRevisionStalls(t *testing.T) {
	h := newHarness(t, Options{CrashBackoffBase: 50 * time.Millisecond})
	good := withStrategy(testDeployment("web", 4, "good"), manifests.StrategyRollingUpdate, 1, 1)
	h.apply(good)
	h.start()
	h.waitReplicas("web", 4)
	goodHash := manifests.TemplateHash(&good.Spec.Template)

	broken := withStrategy(testDeployment("web", 4, "broken"), manifests.StrategyRollingUpdate, 1, 1)
	deadline := int32(1)
	broken.Spec.ProgressDeadlineSeconds = &deadline
	brokenHash := manifests.TemplateHash(&broken.Spec.Template)
	// Exits as it starts, atomically: no sync ever sees it running.
	h.engine.StartFault = func(c dockerx.Container) (string, string) {
		if c.TemplateHash == brokenHash {
			return dockerx.StateExited, ""
		}
		return "", ""
	}
	h.engine.ResetPeak("web")
	h.apply(broken)
	h.waitFor("Progressing=False ProgressDeadlineExceeded", func() bool {
		st, err := h.store.ReadStatus("", "web")
		if err != nil || st == nil {
			return false
		}
		c := find(st.Conditions, manifests.ConditionProgressing)
		return c != nil && c.Status == "False" && c.Reason == ReasonProgressDeadlineExceeded
	})
	var old, total int
	for _, c := range h.ours("web") {
		total++
		if c.TemplateHash == goodHash && c.State == dockerx.StateRunning {
			old++
		}
	}
	if old < 3 || total > 5 || h.engine.PeakContainers("web") > 5 {
		t.Fatalf("stalled rollout: %d old running (want >= 3), %d total, %d at most (want <= 5): %s",
			old, total, h.engine.PeakContainers("web"), summary(h.engine.Snapshot()))
	}
}

// Undo: going back to the previous template rolls back to it and the old
// revision comes back with a new, higher number.
func TestRollbackToPreviousTemplate(t *testing.T) {
	h := newHarness(t, Options{})
	one := testDeployment("web", 3, "one")
	h.apply(one)
	h.start()
	h.waitReplicas("web", 3)
	h.apply(testDeployment("web", 3, "two"))
	h.waitReplicas("web", 3)
	h.apply(testDeployment("web", 3, "one"))
	cs := h.waitReplicas("web", 3)
	if want := manifests.TemplateHash(&one.Spec.Template); cs[0].TemplateHash != want {
		t.Fatalf("hash %s, want %s", cs[0].TemplateHash, want)
	}
	rec, _ := h.store.Get("", "web")
	if cur := rec.CurrentRevision(); cur.Number != 3 || cur.Hash != cs[0].TemplateHash {
		t.Fatalf("current revision %+v", cur)
	}
}

// Scaling in the middle of a stalled rollout is proportional.
func TestScaleDuringRolloutIsProportional(t *testing.T) {
	h := newHarness(t, Options{CrashBackoffBase: time.Hour})
	good := withStrategy(testDeployment("web", 10, "good"), manifests.StrategyRollingUpdate, 3, 2)
	h.apply(good)
	h.start()
	h.waitReplicas("web", 10)
	broken := withStrategy(testDeployment("web", 10, "broken"), manifests.StrategyRollingUpdate, 3, 2)
	brokenHash := manifests.TemplateHash(&broken.Spec.Template)
	// The new revision starts unhealthy, atomically, and stays unready.
	h.engine.StartFault = func(c dockerx.Container) (string, string) {
		if c.TemplateHash == brokenHash {
			return "", dockerx.HealthUnhealthy
		}
		return "", ""
	}
	h.apply(broken)
	counts := func() (old, new int) {
		for _, c := range h.ours("web") {
			if c.TemplateHash == brokenHash {
				new++
			} else {
				old++
			}
		}
		return
	}
	h.waitFor("the rollout to stall at 8 old + 5 new", func() bool { o, n := counts(); return o == 8 && n == 5 })
	scaled := withStrategy(testDeployment("web", 30, "broken"), manifests.StrategyRollingUpdate, 3, 2)
	h.apply(scaled)
	h.waitFor("20 old + 13 new", func() bool { o, n := counts(); return o == 20 && n == 13 })
}

// recordOf wraps a deployment with no revision history, for View.
func recordOf(d *manifests.Deployment) *store.Record {
	return &store.Record{Name: d.Metadata.Name, Deployment: *d}
}

// testClock is a clock the test moves by hand.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Issue 8 item 1: a release whose containers run for about a second and
// then exit (no readiness probe, minReadySeconds 0, maxSurge 1,
// maxUnavailable 1, 4 replicas) keeps 3 of 4 old replicas running: a new
// container counts as available only once it has been ready for the settle
// time (5s by default). Status shows the new replicas crash-looping. The
// controller's clock is driven by the test, so the outcome does not depend
// on how fast the machine is.
func TestCrashingReleaseKeepsOldReplicas(t *testing.T) {
	clock := &testClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	h := newHarness(t, Options{SettleTime: DefaultSettleTime, Now: clock.Now,
		CrashBackoffBase: 100 * time.Millisecond, CrashBackoffMax: 200 * time.Millisecond})
	h.engine.SetNow(clock.Now)
	good := withStrategy(testDeployment("web", 4, "good"), manifests.StrategyRollingUpdate, 1, 1)
	goodHash := manifests.TemplateHash(&good.Spec.Template)
	h.apply(good)
	h.start()
	h.waitReplicas("web", 4)
	clock.Advance(time.Minute) // the old replicas have long settled

	var mu sync.Mutex
	oldRemoved := 0
	h.engine.OnRemove = func(id string) error {
		for _, c := range h.ours("web") {
			if c.ID == id && c.TemplateHash == goodHash {
				mu.Lock()
				oldRemoved++
				mu.Unlock()
			}
		}
		return nil
	}
	h.engine.ResetPeak("web")
	broken := withStrategy(testDeployment("web", 4, "broken"), manifests.StrategyRollingUpdate, 1, 1)
	brokenHash := manifests.TemplateHash(&broken.Spec.Template)
	h.apply(broken)
	rec, err := h.store.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	newOnes := func(state string) int {
		n := 0
		for _, c := range h.ours("web") {
			if c.TemplateHash == brokenHash && c.State == state {
				n++
			}
		}
		return n
	}
	view := func() (manifests.DeploymentStatus, map[string]podruntime.ContainerView) {
		st, _ := h.store.ReadStatus("", "web")
		return View(rec, st, nil, h.ours("web"), clock.Now())
	}
	crashLooping := func() bool {
		_, views := view()
		n := 0
		for _, c := range h.ours("web") {
			if c.TemplateHash == brokenHash && views[c.ID].CrashLoopBackOff {
				n++
			}
		}
		return n == 2
	}
	for round := 0; round < 3; round++ {
		h.waitFor("two new replicas running", func() bool { return newOnes(dockerx.StateRunning) == 2 })
		clock.Advance(time.Second) // they run for a second…
		for _, c := range h.ours("web") {
			if c.TemplateHash == brokenHash {
				if err := h.engine.Kill(c.ID); err != nil { // …and exit
					t.Fatal(err)
				}
			}
		}
		h.waitFor("the new replicas to show CrashLoopBackOff", crashLooping)
		clock.Advance(time.Second) // past the crash backoff: started again
	}
	h.waitFor("two new replicas running", func() bool { return newOnes(dockerx.StateRunning) == 2 })
	clock.Advance(time.Second)
	for _, c := range h.ours("web") {
		if c.TemplateHash == brokenHash {
			_ = h.engine.Kill(c.ID)
		}
	}
	h.waitFor("the new replicas to show CrashLoopBackOff", crashLooping)

	mu.Lock()
	removed := oldRemoved
	mu.Unlock()
	old := 0
	for _, c := range h.ours("web") {
		if c.TemplateHash == goodHash && c.State == dockerx.StateRunning {
			old++
		}
	}
	if old < 3 || removed > 1 || h.engine.PeakContainers("web") > 5 {
		t.Fatalf("%d old running (want >= 3), %d old removed (want <= 1), %d containers at most (want <= 5): %s",
			old, removed, h.engine.PeakContainers("web"), summary(h.engine.Snapshot()))
	}
	s, _ := view()
	if s.AvailableReplicas != 3 || RolloutComplete(&rec.Deployment, s) {
		t.Fatalf("status %+v: want 3 available and the rollout incomplete", s)
	}
}
