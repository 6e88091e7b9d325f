package reconciler

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
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

// boundsChecker records, at every create and remove the controller makes,
// how many containers exist and how many are running, so a test can check
// the rollout's bounds at each step rather than at a few samples.
type boundsChecker struct {
	mu                   sync.Mutex
	maxTotal, minRunning int
	hashesAtCreate       []map[string]int
}

func (b *boundsChecker) install(h *harness) {
	b.minRunning = 1 << 30
	count := func() (total, running int, hashes map[string]int) {
		hashes = map[string]int{}
		for _, c := range h.ours("web") {
			total++
			hashes[c.TemplateHash]++
			if c.State == dockerx.StateRunning {
				running++
			}
		}
		return
	}
	h.engine.OnCreate = func(req dockerx.CreateRequest) error {
		total, _, hashes := count()
		b.mu.Lock()
		defer b.mu.Unlock()
		b.maxTotal = max(b.maxTotal, total+1)
		b.hashesAtCreate = append(b.hashesAtCreate, hashes)
		return nil
	}
	h.engine.OnRemove = func(id string) error {
		_, running, _ := count()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, c := range h.ours("web") {
			if c.ID == id && c.State == dockerx.StateRunning {
				running--
			}
		}
		b.minRunning = min(b.minRunning, running)
		return nil
	}
}

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
			if b.maxTotal > tc.replicas+tc.surge {
				t.Errorf("%d containers at once, bound is %d", b.maxTotal, tc.replicas+tc.surge)
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
	rec, _ := h.store.Get("web")
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
	h.engine.OnStart = func(id string) error {
		go func() {
			time.Sleep(time.Millisecond)
			for _, c := range h.ours("web") {
				if c.ID == id && c.TemplateHash == brokenHash {
					_ = h.engine.Kill(id)
				}
			}
		}()
		return nil
	}
	h.apply(broken)
	h.waitFor("Progressing=False ProgressDeadlineExceeded", func() bool {
		st, err := h.store.ReadStatus("web")
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
	if old < 3 || total > 5 {
		t.Fatalf("stalled rollout: %d old running (want >= 3), %d total (want <= 5): %s", old, total, summary(h.engine.Snapshot()))
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
	rec, _ := h.store.Get("web")
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
	// The new revision starts but never turns healthy: it stays unready.
	h.engine.OnStart = func(id string) error {
		go func() {
			for _, c := range h.ours("web") {
				if c.ID == id && c.TemplateHash == brokenHash {
					_ = h.engine.SetHealth(id, dockerx.HealthUnhealthy)
				}
			}
		}()
		return nil
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
