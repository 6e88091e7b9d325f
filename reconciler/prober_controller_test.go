package reconciler

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/internal/podtest"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// switchRunner answers probes from a per-container switch a test flips.
type switchRunner struct {
	mu       sync.Mutex
	fail     map[string]bool // by container ID
	failNext map[string]int  // by container ID: fail this many more probes
	calls    int
	per      map[string]int // probes run, by container ID
}

func (r *switchRunner) Run(_ context.Context, t podruntime.ProbeTarget, _ *manifests.Probe) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.per == nil {
		r.per = map[string]int{}
	}
	r.per[t.ContainerID]++
	if r.failNext[t.ContainerID] > 0 {
		r.failNext[t.ContainerID]--
		return errors.New("probe failed")
	}
	if r.fail[t.ContainerID] {
		return errors.New("probe failed")
	}
	return nil
}

// probes returns how many probes of container id have run (started).
func (r *switchRunner) probes(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.per[id]
}

// failTimes makes the next n probes of container id fail, whatever the
// timing: a test need not race the prober to stop failing.
func (r *switchRunner) failTimes(id string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failNext == nil {
		r.failNext = map[string]int{}
	}
	r.failNext[id] = n
}

func (r *switchRunner) set(id string, fail bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail[id] = fail
}

var fastProbe = podtest.FastProbe

// startWithLiveness starts h with one replica c of web (d) whose liveness
// probe the returned runner answers.
func startWithLiveness(h *harness) (_ *switchRunner, d *manifests.Deployment, c dockerx.Container) {
	runner := &switchRunner{fail: map[string]bool{}}
	h.ctrl.prober.SetRunner(runner)
	d = testDeployment("web", 1, "x")
	d.Spec.Template.Spec.Containers[0].LivenessProbe = fastProbe()
	h.apply(d)
	h.start()
	return runner, d, h.waitReplicas("web", 1)[0]
}

func TestLivenessFailureRestartsContainer(t *testing.T) {
	h := newHarness(t, Options{})
	runner, d, c := startWithLiveness(h)
	// Exactly one failure (FailureThreshold 1), armed atomically in the
	// runner: a test that flipped the probe back after seeing the stop
	// could be too slow on a loaded machine and see a second restart.
	runner.failTimes(c.ID, 1)
	h.waitFor("a liveness restart counted in status", func() bool {
		st, err := h.store.ReadStatus("", "web")
		if err != nil || st == nil {
			return false
		}
		_, views := View(recordOf(d), st, nil, h.ours("web"), time.Now())
		return views[c.ID].Restarts == 1
	})
	if n := h.engine.Calls()["stop"]; n != 1 {
		t.Fatalf("%d stops, want exactly 1 for one liveness failure", n)
	}
	after := h.waitReplicas("web", 1)
	if after[0].ID != c.ID {
		t.Fatalf("the container was replaced, not restarted")
	}
}

func TestHTTPReadinessGatesReadyReplicas(t *testing.T) {
	h := newHarness(t, Options{})
	runner := &switchRunner{fail: map[string]bool{}}
	h.ctrl.prober.SetRunner(runner)
	d := testDeployment("web", 1, "x")
	d.Spec.Template.Spec.Containers[0].ReadinessProbe = fastProbe()
	h.apply(d)
	readyReplicas := func() int32 {
		st, _ := h.store.ReadStatus("", "web")
		s, _ := View(recordOf(d), st, nil, h.ours("web"), time.Now())
		return s.ReadyReplicas
	}
	var failing sync.Once
	h.engine.OnStart = func(id string) error {
		failing.Do(func() { runner.set(id, true) })
		return nil
	}
	h.start()
	c := h.waitReplicas("web", 1)[0]
	// A second probe starts only once the first has failed and been
	// recorded: "not ready" then means the probe ran, not that it never did.
	h.waitFor("two readiness probes of the replica", func() bool { return runner.probes(c.ID) >= 2 })
	if n := readyReplicas(); n != 0 {
		t.Fatalf("%d ready while the readiness probe fails", n)
	}
	runner.set(c.ID, false)
	h.waitFor("the replica to turn ready", func() bool { return readyReplicas() == 1 })
}

// A replica that fails its liveness probe again soon after each restart
// is crash-looping, as a pod killed by its liveness probe is
// (CrashLoopBackOff in the kubelet): its restarts back off (here by an
// hour) instead of following one another without end every few seconds.
func TestLivenessRestartsBackOff(t *testing.T) {
	h := newHarness(t, Options{CrashBackoffBase: time.Hour, CrashBackoffMax: time.Hour})
	runner := &switchRunner{fail: map[string]bool{}}
	h.ctrl.prober.SetRunner(runner)
	h.engine.OnStart = func(id string) error {
		runner.set(id, true) // every run of it fails its liveness probe
		return nil
	}
	d := testDeployment("web", 1, "x")
	d.Spec.Template.Spec.Containers[0].LivenessProbe = fastProbe()
	h.apply(d)
	h.start()
	// Not waitReplicas: the liveness probe may stop the replica before a
	// poll sees it running, and the hour-long backoff then keeps it down.
	h.waitFor("the replica to be created", func() bool { return len(h.ours("web")) == 1 })
	c := h.ours("web")[0]
	var v podruntime.ContainerView
	h.waitFor("a backoff, or a third liveness restart", func() bool {
		st, err := h.store.ReadStatus("", "web")
		if err != nil || st == nil {
			return false
		}
		_, views := View(recordOf(d), st, nil, h.ours("web"), time.Now())
		v = views[c.ID]
		return v.CrashLoopBackOff || v.Restarts >= 3
	})
	if !v.CrashLoopBackOff {
		t.Fatalf("%d liveness restarts within seconds and no CrashLoopBackOff (%+v): restarts do not back off", v.Restarts, v)
	}
}
