//go:build e2e

package e2e

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// rolloutManifest is a deployment with a strategy, a short progress
// deadline, container args and extra container fields.
func rolloutManifest(name string, replicas int, strategy, value string, args []string, extra string) string {
	return testDeployment{name: name, replicas: replicas, strategy: strategy, value: value, args: args, extra: extra,
		spec: "  progressDeadlineSeconds: 8\n"}.manifest()
}

const surge1 = `    type: RollingUpdate
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}`

// sample records, every 100 ms until stopped, how many containers of the
// deployment exist, how many are running and ready, and which template
// hashes are present.
type sampler struct {
	t          testing.TB
	mu         sync.Mutex
	samples    int
	maxTotal   int
	minReady   int
	mixedSeen  int // samples with two or more hashes
	stop, done chan struct{}
}

func startSampler(e *env, name string) *sampler {
	s := &sampler{t: e.t, minReady: 1 << 30, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			cs := e.deploymentContainers(name)
			hashes := map[string]bool{}
			ready := 0
			for _, c := range cs {
				hashes[c.Labels["io.dockctl.template-hash"]] = true
				if c.State == "running" && !strings.Contains(c.Status, "(health: starting)") && !strings.Contains(c.Status, "(unhealthy)") {
					ready++
				}
			}
			s.mu.Lock()
			s.samples++
			s.maxTotal = max(s.maxTotal, len(cs))
			s.minReady = min(s.minReady, ready)
			if len(hashes) > 1 {
				s.mixedSeen++
			}
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// finish stops the sampling; no sample at all fails the test, as the
// bounds judged from the samples were then never measured.
func (s *sampler) finish() *sampler {
	s.t.Helper()
	close(s.stop)
	<-s.done
	if s.samples == 0 {
		s.t.Error("the sampler took no sample: the rollout's bounds were never measured")
	}
	return s
}

func TestRollingUpdateHoldsBounds(t *testing.T) {
	independent(t)
	e := newEnv(t)
	e.startController(settleFast)
	e.apply(rolloutManifest("web", 6, surge1, "one", nil, ""))
	before := e.waitRunning("web", 6, "")
	s := startSampler(e, "web")
	start := time.Now()
	out := e.apply(rolloutManifest("web", 6, surge1, "two", nil, ""))
	if !strings.Contains(out, "configured") {
		t.Fatalf("apply: %s", out)
	}
	status := e.mustDockctl("", "rollout", "status", "deployment/web", "--timeout", "3m")
	took := time.Since(start)
	s.finish()
	if !strings.Contains(status, `deployment "web" successfully rolled out`) {
		t.Fatalf("rollout status:\n%s", status)
	}
	after := e.waitRunning("web", 6, "")
	if after[0].Labels["io.dockctl.template-hash"] == before[0].Labels["io.dockctl.template-hash"] {
		t.Fatal("template hash did not change")
	}
	t.Logf("6-replica rolling update (maxSurge 1, maxUnavailable 0) took %s; %d samples: max %d containers, min %d ready",
		took.Round(time.Millisecond), s.samples, s.maxTotal, s.minReady)
	if s.maxTotal > 7 {
		t.Errorf("%d containers at once; the bound is replicas+maxSurge = 7", s.maxTotal)
	}
	if s.minReady < 6 {
		t.Errorf("%d ready at one sample; the bound is replicas-maxUnavailable = 6", s.minReady)
	}
	if s.mixedSeen == 0 {
		t.Errorf("never saw two revisions at once: that was not a rolling update")
	}
}

func TestRecreateNeverShowsTwoRevisions(t *testing.T) {
	independent(t)
	e := newEnv(t)
	e.startController(settleFast)
	recreate := "    type: Recreate"
	e.apply(rolloutManifest("web", 3, recreate, "one", nil, ""))
	e.waitRunning("web", 3, "")
	s := startSampler(e, "web")
	e.apply(rolloutManifest("web", 3, recreate, "two", nil, ""))
	e.mustDockctl("", "rollout", "status", "deployment/web", "--timeout", "2m")
	s.finish()
	if s.mixedSeen > 0 {
		t.Fatalf("%d of %d samples showed two revisions at once", s.mixedSeen, s.samples)
	}
}

func TestUndoRestoresPreviousTemplate(t *testing.T) {
	independent(t)
	e := newEnv(t)
	e.startController(settleFast)
	e.apply(rolloutManifest("web", 2, surge1, "one", nil, ""))
	first := e.waitRunning("web", 2, "")[0].Labels["io.dockctl.template-hash"]
	e.apply(rolloutManifest("web", 2, surge1, "two", nil, ""))
	e.mustDockctl("", "rollout", "status", "deployment/web", "--timeout", "2m")
	out := e.mustDockctl("", "rollout", "undo", "deployment/web")
	if !strings.Contains(out, "rolled back (to revision 1)") {
		t.Fatalf("undo: %s", out)
	}
	e.mustDockctl("", "rollout", "status", "deployment/web", "--timeout", "2m")
	e.waitRunning("web", 2, first)
	hist := e.mustDockctl("", "rollout", "history", "deployment/web")
	if !regexpMatch(`(?m)^3\s+`+first, hist) {
		t.Fatalf("the restored template should be revision 3:\n%s", hist)
	}
}

// A revision that crashes stalls within the maxUnavailable budget while
// the old replicas keep serving, and `rollout status` fails at the deadline.
func TestCrashingRevisionStalls(t *testing.T) {
	independent(t)
	e := newEnv(t)
	e.startController()
	strategy := `    type: RollingUpdate
    rollingUpdate: {maxSurge: 1, maxUnavailable: 1}`
	e.apply(rolloutManifest("web", 4, strategy, "good", nil, ""))
	good := e.waitRunning("web", 4, "")[0].Labels["io.dockctl.template-hash"]
	// minReadySeconds 2: a replica that crashes after 300 ms never counts
	// as available, so the old revision keeps its maxUnavailable budget.
	bad := strings.Replace(rolloutManifest("web", 4, strategy, "bad", []string{"--crash-after=300ms"}, ""),
		"  progressDeadlineSeconds: 8", "  progressDeadlineSeconds: 8\n  minReadySeconds: 2", 1)
	e.apply(bad)
	out, err := e.dockctl("", "rollout", "status", "deployment/web", "--timeout", "2m")
	if err == nil || !strings.Contains(out, "exceeded its progress deadline") {
		t.Fatalf("rollout status should fail at the progress deadline: %v\n%s", err, out)
	}
	oldRunning := 0
	for _, c := range e.deploymentContainers("web") {
		if c.Labels["io.dockctl.template-hash"] == good && c.State == "running" {
			oldRunning++
		}
	}
	if oldRunning < 3 {
		t.Fatalf("only %d old replicas serve; maxUnavailable 1 keeps 3", oldRunning)
	}
	// The crashing replicas must be reported as crash-looping, not merely
	// as exited. One get may catch a replica in its 300 ms of life, so
	// ask until one is seen backing off.
	eventually(t, 60*time.Second, "get containers showing a crashing replica as CrashLoopBackOff", func() (bool, string) {
		get, err := e.dockctl("", "get", "containers")
		return err == nil && strings.Contains(get, "CrashLoopBackOff"), get
	})
	desc := e.mustDockctl("", "describe", "deployment", "web")
	if !strings.Contains(desc, "ProgressDeadlineExceeded") {
		t.Fatalf("describe should show ProgressDeadlineExceeded:\n%s", desc)
	}
}

// A readiness probe gates the rollout: old replicas go only once new ones
// pass it.
func TestReadinessGatedRollout(t *testing.T) {
	independent(t)
	e := newEnv(t)
	e.startController(settleFast)
	probe := `        readinessProbe:
          exec: {command: ["/workload", "probe", "http://127.0.0.1:8080/readyz"]}
          periodSeconds: 1
`
	e.apply(rolloutManifest("web", 2, surge1, "one", nil, probe))
	eventually(t, 60*time.Second, "2 healthy replicas", func() (bool, string) {
		cs := e.deploymentContainers("web")
		healthy := 0
		for _, c := range cs {
			if strings.Contains(c.Status, "(healthy)") {
				healthy++
			}
		}
		return healthy == 2 && len(cs) == 2, describe(cs)
	})
	s := startSampler(e, "web")
	start := time.Now()
	e.apply(rolloutManifest("web", 2, surge1, "two", []string{"--ready-after=3s"}, probe))
	e.mustDockctl("", "rollout", "status", "deployment/web", "--timeout", "3m")
	took := time.Since(start)
	s.finish()
	t.Logf("readiness-gated rollout of 2 replicas (ready after 3s each) took %s; min ready %d", took.Round(time.Millisecond), s.minReady)
	if s.minReady < 2 {
		t.Fatalf("%d ready at one sample: an old replica went before its replacement was ready", s.minReady)
	}
	if took < 6*time.Second {
		t.Fatalf("rollout took %s: it cannot have waited 3s of readiness for each of 2 replicas in turn", took)
	}
}

// A failing liveness probe gets the container restarted: Docker does not
// restart unhealthy containers by itself.
func TestLivenessFailureRestarts(t *testing.T) {
	independent(t)
	e := newEnv(t)
	e.startController()
	probe := `        livenessProbe:
          httpGet: {path: /healthz, port: 8080}
          periodSeconds: 1
          failureThreshold: 2
`
	e.apply(rolloutManifest("web", 1, surge1, "x", []string{"--unhealthy-after=2s"}, probe))
	id := e.waitRunning("web", 1, "")[0].ID
	eventually(t, 90*time.Second, "a liveness restart", func() (bool, string) {
		out, _ := e.dockctl("", "get", "containers")
		return regexpMatch(`(?m)^\S+\s+\S+\s+Running\s+[1-9]`, out), out
	})
	if after := e.waitRunning("web", 1, ""); after[0].ID != id {
		t.Fatalf("the container was replaced instead of restarted")
	}
}
