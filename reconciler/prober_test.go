package reconciler

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

func TestDockerProbeRunner(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
		case "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	host, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	engine := dockerfake.New(testImage)
	id, _ := engine.Add(dockerx.Container{Name: "c", State: dockerx.StateRunning, Labels: map[string]string{}}, "")
	engine.OnExec = func(_ string, cmd []string) (int, error) {
		if cmd[0] == "fail" {
			return 3, nil
		}
		return 0, nil
	}
	runner := newDockerProbeRunner(engine, nil, nil)
	target := probeTarget{ContainerID: id, Address: host, Ports: []manifests.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	httpProbe := func(path string, p intstr.IntOrString) *manifests.Probe {
		return &manifests.Probe{HTTPGet: &manifests.HTTPGetAction{Path: path, Port: p}, TimeoutSeconds: 1}
	}
	tests := []struct {
		name  string
		probe *manifests.Probe
		ok    bool
	}{
		{"http 200", httpProbe("/ok", intstr.FromInt32(int32(port))), true},
		{"http by port name", httpProbe("/ok", intstr.FromString("http")), true},
		{"http 503", httpProbe("/fail", intstr.FromInt32(int32(port))), false},
		{"http 302 counts as success, not followed", httpProbe("/redirect", intstr.FromInt32(int32(port))), true},
		{"http unknown port name", httpProbe("/ok", intstr.FromString("nope")), false},
		{"tcp open", &manifests.Probe{TCPSocket: &manifests.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}, true},
		{"tcp closed", &manifests.Probe{TCPSocket: &manifests.TCPSocketAction{Port: intstr.FromInt32(int32(closedPort))}}, false},
		{"exec exit 0", &manifests.Probe{Exec: &manifests.ExecAction{Command: []string{"true"}}}, true},
		{"exec exit 3", &manifests.Probe{Exec: &manifests.ExecAction{Command: []string{"fail"}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := runner.Run(context.Background(), target, tt.probe)
			if (err == nil) != tt.ok {
				t.Fatalf("Run = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// switchRunner answers probes from a per-container switch a test flips.
type switchRunner struct {
	mu       sync.Mutex
	fail     map[string]bool // by container ID
	failNext map[string]int  // by container ID: fail this many more probes
	calls    int
	per      map[string]int // probes run, by container ID
}

func (r *switchRunner) Run(_ context.Context, t probeTarget, _ *manifests.Probe) error {
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

func fastProbe() *manifests.Probe {
	return &manifests.Probe{HTTPGet: &manifests.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)},
		PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1}
}

// startWithLiveness starts h with one replica c of web (d) whose liveness
// probe the returned runner answers.
func startWithLiveness(h *harness) (_ *switchRunner, d *manifests.Deployment, c dockerx.Container) {
	runner := &switchRunner{fail: map[string]bool{}}
	h.ctrl.prober.runner = runner
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
	h.ctrl.prober.runner = runner
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

// TestProberHoldsOnlyAFirstWorker: a container's first worker in this
// controller's life reports no readiness before its probe judges (the
// recorded verdict stands); a later one — after the container stopped
// running, or its worker was forgotten for a restart — reports not ready
// at once, as nothing vouches for the container's new run.
func TestProberHoldsOnlyAFirstWorker(t *testing.T) {
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "web", Image: "img:1", ReadinessProbe: fastProbe()}}}}
	templates := func(string) *manifests.PodTemplateSpec { return tmpl }
	running := dockerx.Container{ID: "c1", Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h"}
	paused := running
	paused.State = dockerx.StatePaused
	notReady := false
	for _, tc := range []struct {
		name   string
		before func(p *prober)
		want   *bool
	}{
		{"first worker", func(*prober) {}, nil},
		{"after a pause", func(p *prober) {
			p.sync(context.Background(), "default/web", []dockerx.Container{running}, templates)
			p.sync(context.Background(), "default/web", []dockerx.Container{paused}, templates)
		}, &notReady},
		{"after a restart", func(p *prober) {
			p.sync(context.Background(), "default/web", []dockerx.Container{running}, templates)
			p.forget(running.ID)
		}, &notReady},
		{"forgotten once gone from the list (its ID never returns)", func(p *prober) {
			p.sync(context.Background(), "default/web", []dockerx.Container{running}, templates)
			p.sync(context.Background(), "default/web", nil, templates)
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate := gateRunner{open: make(chan struct{})} // no verdict
			p := newProber(dockerfake.New(testImage), gate, nil, func(string) {}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			defer p.stop()
			tc.before(p)
			got := p.sync(context.Background(), "default/web", []dockerx.Container{running}, templates)[running.ID].Ready
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("readiness %v, want %v", fmtBool(got), fmtBool(tc.want))
			}
		})
	}
}

func fmtBool(b *bool) string {
	if b == nil {
		return "none"
	}
	return strconv.FormatBool(*b)
}

// A replica that fails its liveness probe again soon after each restart
// is crash-looping, as a pod killed by its liveness probe is
// (CrashLoopBackOff in the kubelet): its restarts back off (here by an
// hour) instead of following one another without end every few seconds.
func TestLivenessRestartsBackOff(t *testing.T) {
	h := newHarness(t, Options{CrashBackoffBase: time.Hour, CrashBackoffMax: time.Hour})
	runner := &switchRunner{fail: map[string]bool{}}
	h.ctrl.prober.runner = runner
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

// blockExecDocker blocks the postStart exec until released, noting that
// it began.
type blockExecDocker struct {
	*dockerfake.Engine
	began   chan struct{}
	release chan struct{}
	mu      sync.Mutex
	runs    int
	ended   int
}

func (d *blockExecDocker) Exec(ctx context.Context, id string, cmd []string, timeout time.Duration) (int, error) {
	d.mu.Lock()
	d.runs++
	d.mu.Unlock()
	d.began <- struct{}{}
	select {
	case <-d.release:
	case <-ctx.Done():
		return -1, ctx.Err()
	}
	d.mu.Lock()
	d.ended++
	d.mu.Unlock()
	return 0, nil
}

// TestPostStartInterruptedIsNotTakenAsRun: a container paused while its
// postStart hook runs (the worker is cancelled) and then unpaused (the
// planner unpauses it: OpUnpause) gets a new worker for the same run. The
// hook never completed, so the new worker must not take it as run and
// report the container ready: the container is not ready until its
// postStart hook has run (Kubernetes: the container is not Running until
// the hook completes).
func TestPostStartInterruptedIsNotTakenAsRun(t *testing.T) {
	engine := dockerfake.New(testImage)
	id, _ := engine.Add(dockerx.Container{Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h", Labels: map[string]string{}}, "")
	d := &blockExecDocker{Engine: engine, began: make(chan struct{}, 4), release: make(chan struct{})}
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "web", Image: "img:1",
		Lifecycle: &manifests.Lifecycle{PostStart: &manifests.LifecycleHandler{Exec: &manifests.ExecAction{Command: []string{"warm-up"}}}}}}}}
	templates := func(string) *manifests.PodTemplateSpec { return tmpl }
	p := newProber(d, gateRunner{open: make(chan struct{})}, nil, func(string) {}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer p.stop()
	c := dockerx.Container{ID: id, Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h"}
	paused := c
	paused.State = dockerx.StatePaused
	p.sync(context.Background(), "default/web", []dockerx.Container{c}, templates)
	<-d.began // the hook is running
	p.sync(context.Background(), "default/web", []dockerx.Container{paused}, templates)
	p.sync(context.Background(), "default/web", []dockerx.Container{c}, templates)
	// Give the new worker time to run the hook again (it blocks) or skip it.
	time.Sleep(300 * time.Millisecond)
	r := p.results([]dockerx.Container{c})[id]
	d.mu.Lock()
	runs, ended := d.runs, d.ended
	d.mu.Unlock()
	if r.Ready != nil && *r.Ready && ended == 0 {
		t.Fatalf("ready although the postStart hook never completed (runs %d, completed %d)", runs, ended)
	}
}

// TestPostStartFailureSurvivesNewWorker: a postStart hook failed (the
// container is to be restarted, as the kubelet kills a container whose
// postStart hook fails); a new worker for the same run (pause/unpause
// before the restart) must not take the hook as run and make the
// container alive and ready, never to be restarted.
func TestPostStartFailureSurvivesNewWorker(t *testing.T) {
	engine := dockerfake.New(testImage)
	id, _ := engine.Add(dockerx.Container{Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h", Labels: map[string]string{}}, "")
	engine.OnExec = func(string, []string) (int, error) { return 1, nil }
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "web", Image: "img:1",
		Lifecycle: &manifests.Lifecycle{PostStart: &manifests.LifecycleHandler{Exec: &manifests.ExecAction{Command: []string{"warm-up"}}}}}}}}
	templates := func(string) *manifests.PodTemplateSpec { return tmpl }
	p := newProber(engine, gateRunner{open: make(chan struct{})}, nil, func(string) {}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer p.stop()
	c := dockerx.Container{ID: id, Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h"}
	paused := c
	paused.State = dockerx.StatePaused
	p.sync(context.Background(), "default/web", []dockerx.Container{c}, templates)
	waitFor(t, func() bool { return !p.results([]dockerx.Container{c})[id].Alive })
	p.sync(context.Background(), "default/web", []dockerx.Container{paused}, templates)
	p.sync(context.Background(), "default/web", []dockerx.Container{c}, templates)
	time.Sleep(300 * time.Millisecond)
	r := p.results([]dockerx.Container{c})[id]
	if r.Alive || r.Ready != nil && *r.Ready {
		t.Fatalf("after a failed postStart hook and a new worker for the same run: alive %v ready %v, want not alive, not ready", r.Alive, fmtBool(r.Ready))
	}
}

// flakyInspectDocker fails the first n inspections (a transient Docker
// API error), then answers.
type flakyInspectDocker struct {
	*dockerfake.Engine
	mu   sync.Mutex
	left int
}

func (d *flakyInspectDocker) InspectContainer(ctx context.Context, id string) (dockerx.ContainerDetails, error) {
	d.mu.Lock()
	fail := d.left > 0
	d.left--
	d.mu.Unlock()
	if fail {
		return dockerx.ContainerDetails{}, errors.New("transient: connection reset")
	}
	return d.Engine.InspectContainer(ctx, id)
}

// TestSidecarStartedAfterTransientInspectError: a native sidecar with only
// a startup probe whose worker's first inspection (locate) fails once. A
// worker goroutine that returned must not stay in p.workers, or no later
// sync starts another: Started would stay false forever, the sidecar
// Unstarted at every sync and the pod's next init container (and every
// app container) never created.
func TestSidecarStartedAfterTransientInspectError(t *testing.T) {
	engine := dockerfake.New(testImage)
	id, _ := engine.Add(dockerx.Container{Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h", Labels: map[string]string{}}, "")
	d := &flakyInspectDocker{Engine: engine, left: 1}
	open := make(chan struct{})
	close(open) // every probe succeeds
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "proxy", Image: "img:1",
		StartupProbe: tcpProbe(1, 3)}}}}
	templates := func(string) *manifests.PodTemplateSpec { return tmpl }
	p := newProber(d, gateRunner{open: open}, nil, func(string) {}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer p.stop()
	c := dockerx.Container{ID: id, Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h"}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if p.sync(context.Background(), "default/web", []dockerx.Container{c}, templates)[id].Started {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("sidecar still not Started after 3s of syncs (one transient inspect error): its successors wait forever")
}

// TestPostStartStartedAfterTransientInspectError: the same through
// postStart's own inspection (the worker's second): a sidecar with a
// postStart hook and nothing else.
func TestPostStartStartedAfterTransientInspectError(t *testing.T) {
	engine := dockerfake.New(testImage)
	id, _ := engine.Add(dockerx.Container{Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h", Labels: map[string]string{}}, "")
	engine.OnExec = func(string, []string) (int, error) { return 0, nil }
	d := &flakyInspectDocker{Engine: engine}
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "proxy", Image: "img:1",
		Lifecycle: &manifests.Lifecycle{PostStart: &manifests.LifecycleHandler{Exec: &manifests.ExecAction{Command: []string{"warm-up"}}}}}}}}
	templates := func(string) *manifests.PodTemplateSpec { return tmpl }
	p := newProber(d, gateRunner{open: make(chan struct{})}, nil, func(string) {}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer p.stop()
	c := dockerx.Container{ID: id, Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h"}
	// locate's inspection succeeds; postStart's fails once.
	calls := 0
	d2 := &countingInspect{flakyInspectDocker: d, failAt: 2, calls: &calls}
	p.docker = d2
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if p.sync(context.Background(), "default/web", []dockerx.Container{c}, templates)[id].Started {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("sidecar with a postStart hook still not Started after 3s (postStart's inspect failed once): successors wedge")
}

type countingInspect struct {
	*flakyInspectDocker
	mu     sync.Mutex
	failAt int
	calls  *int
}

func (d *countingInspect) InspectContainer(ctx context.Context, id string) (dockerx.ContainerDetails, error) {
	d.mu.Lock()
	*d.calls++
	n := *d.calls
	d.mu.Unlock()
	if n == d.failAt {
		return dockerx.ContainerDetails{}, errors.New("transient: connection reset")
	}
	return d.Engine.InspectContainer(ctx, id)
}

// TestDropForgetsHooked: a deployment deleted (prober.drop) must forget
// hooked as well as probedOnce: sync, the only other cleanup, never runs
// for it again (and matches hooked through probedOnce, by then empty), so
// the entries of its containers would stay for the controller's life.
func TestDropForgetsHooked(t *testing.T) {
	engine := dockerfake.New(testImage)
	id, _ := engine.Add(dockerx.Container{Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h", Labels: map[string]string{}}, "")
	engine.OnExec = func(string, []string) (int, error) { return 0, nil }
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "web", Image: "img:1",
		Lifecycle: &manifests.Lifecycle{PostStart: &manifests.LifecycleHandler{Exec: &manifests.ExecAction{Command: []string{"warm-up"}}}}}}}}
	templates := func(string) *manifests.PodTemplateSpec { return tmpl }
	p := newProber(engine, gateRunner{open: make(chan struct{})}, nil, func(string) {}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer p.stop()
	c := dockerx.Container{ID: id, Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h"}
	p.sync(context.Background(), "default/web", []dockerx.Container{c}, templates)
	waitFor(t, func() bool { return p.results([]dockerx.Container{c})[id].Started })
	p.drop("default/web")
	p.sync(context.Background(), "default/web", nil, templates) // even a later sync of the name
	p.mu.Lock()
	n := len(p.hooked)
	p.mu.Unlock()
	if n != 0 {
		t.Fatalf("after drop and a sync listing nothing, hooked still holds %d entries (leak)", n)
	}
}
