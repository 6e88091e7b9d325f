package podruntime_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/internal/podtest"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// TestProberHoldsOnlyAFirstWorker: a container's first worker in this
// controller's life reports no readiness before its probe judges (the
// recorded verdict stands); a later one — after the container stopped
// running, or its worker was forgotten for a restart — reports not ready
// at once, as nothing vouches for the container's new run.
func TestProberHoldsOnlyAFirstWorker(t *testing.T) {
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "web", Image: "img:1", ReadinessProbe: podtest.FastProbe()}}}}
	templates := func(string) *manifests.PodTemplateSpec { return tmpl }
	running := dockerx.Container{ID: "c1", Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h"}
	paused := running
	paused.State = dockerx.StatePaused
	notReady := false
	for _, tc := range []struct {
		name   string
		before func(p *podruntime.Prober)
		want   *bool
	}{
		{"first worker", func(*podruntime.Prober) {}, nil},
		{"after a pause", func(p *podruntime.Prober) {
			p.Sync(context.Background(), "default/web", []dockerx.Container{running}, templates)
			p.Sync(context.Background(), "default/web", []dockerx.Container{paused}, templates)
		}, &notReady},
		{"after a restart", func(p *podruntime.Prober) {
			p.Sync(context.Background(), "default/web", []dockerx.Container{running}, templates)
			p.Forget(running.ID)
		}, &notReady},
		{"forgotten once gone from the list (its ID never returns)", func(p *podruntime.Prober) {
			p.Sync(context.Background(), "default/web", []dockerx.Container{running}, templates)
			p.Sync(context.Background(), "default/web", nil, templates)
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate := podtest.GateRunner{Open: make(chan struct{})} // no verdict
			p := podruntime.NewProber(podruntime.ProberConfig{Docker: dockerfake.New(podtest.Image), Runner: gate, Notify: func(string) {}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			defer p.Stop()
			tc.before(p)
			got := p.Sync(context.Background(), "default/web", []dockerx.Container{running}, templates)[running.ID].Ready
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
	engine := dockerfake.New(podtest.Image)
	id, _ := engine.Add(dockerx.Container{Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h", Labels: map[string]string{}}, "")
	d := &blockExecDocker{Engine: engine, began: make(chan struct{}, 4), release: make(chan struct{})}
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "web", Image: "img:1",
		Lifecycle: &manifests.Lifecycle{PostStart: &manifests.LifecycleHandler{Exec: &manifests.ExecAction{Command: []string{"warm-up"}}}}}}}}
	templates := func(string) *manifests.PodTemplateSpec { return tmpl }
	p := podruntime.NewProber(podruntime.ProberConfig{Docker: d, Runner: podtest.GateRunner{Open: make(chan struct{})}, Notify: func(string) {}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Stop()
	c := dockerx.Container{ID: id, Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h"}
	paused := c
	paused.State = dockerx.StatePaused
	p.Sync(context.Background(), "default/web", []dockerx.Container{c}, templates)
	<-d.began // the hook is running
	p.Sync(context.Background(), "default/web", []dockerx.Container{paused}, templates)
	p.Sync(context.Background(), "default/web", []dockerx.Container{c}, templates)
	// Give the new worker time to run the hook again (it blocks) or skip it.
	time.Sleep(300 * time.Millisecond)
	r := p.Results([]dockerx.Container{c})[id]
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
	engine := dockerfake.New(podtest.Image)
	id, _ := engine.Add(dockerx.Container{Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h", Labels: map[string]string{}}, "")
	engine.OnExec = func(string, []string) (int, error) { return 1, nil }
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "web", Image: "img:1",
		Lifecycle: &manifests.Lifecycle{PostStart: &manifests.LifecycleHandler{Exec: &manifests.ExecAction{Command: []string{"warm-up"}}}}}}}}
	templates := func(string) *manifests.PodTemplateSpec { return tmpl }
	p := podruntime.NewProber(podruntime.ProberConfig{Docker: engine, Runner: podtest.GateRunner{Open: make(chan struct{})}, Notify: func(string) {}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Stop()
	c := dockerx.Container{ID: id, Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h"}
	paused := c
	paused.State = dockerx.StatePaused
	p.Sync(context.Background(), "default/web", []dockerx.Container{c}, templates)
	podtest.WaitFor(t, func() bool { return !p.Results([]dockerx.Container{c})[id].Alive })
	p.Sync(context.Background(), "default/web", []dockerx.Container{paused}, templates)
	p.Sync(context.Background(), "default/web", []dockerx.Container{c}, templates)
	time.Sleep(300 * time.Millisecond)
	r := p.Results([]dockerx.Container{c})[id]
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
	engine := dockerfake.New(podtest.Image)
	id, _ := engine.Add(dockerx.Container{Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h", Labels: map[string]string{}}, "")
	d := &flakyInspectDocker{Engine: engine, left: 1}
	open := make(chan struct{})
	close(open) // every probe succeeds
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "proxy", Image: "img:1",
		StartupProbe: podtest.TCPProbe(1, 3)}}}}
	templates := func(string) *manifests.PodTemplateSpec { return tmpl }
	p := podruntime.NewProber(podruntime.ProberConfig{Docker: d, Runner: podtest.GateRunner{Open: open}, Notify: func(string) {}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Stop()
	c := dockerx.Container{ID: id, Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h"}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if p.Sync(context.Background(), "default/web", []dockerx.Container{c}, templates)[id].Started {
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
	engine := dockerfake.New(podtest.Image)
	id, _ := engine.Add(dockerx.Container{Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h", Labels: map[string]string{}}, "")
	engine.OnExec = func(string, []string) (int, error) { return 0, nil }
	d := &flakyInspectDocker{Engine: engine}
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "proxy", Image: "img:1",
		Lifecycle: &manifests.Lifecycle{PostStart: &manifests.LifecycleHandler{Exec: &manifests.ExecAction{Command: []string{"warm-up"}}}}}}}}
	templates := func(string) *manifests.PodTemplateSpec { return tmpl }
	p := podruntime.NewProber(podruntime.ProberConfig{Docker: d, Runner: podtest.GateRunner{Open: make(chan struct{})}, Notify: func(string) {}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Stop()
	c := dockerx.Container{ID: id, Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h"}
	// locate's inspection succeeds; postStart's fails once.
	calls := 0
	d2 := &countingInspect{flakyInspectDocker: d, failAt: 2, calls: &calls}
	p.SetDocker(d2)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if p.Sync(context.Background(), "default/web", []dockerx.Container{c}, templates)[id].Started {
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
	engine := dockerfake.New(podtest.Image)
	id, _ := engine.Add(dockerx.Container{Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h", Labels: map[string]string{}}, "")
	engine.OnExec = func(string, []string) (int, error) { return 0, nil }
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "web", Image: "img:1",
		Lifecycle: &manifests.Lifecycle{PostStart: &manifests.LifecycleHandler{Exec: &manifests.ExecAction{Command: []string{"warm-up"}}}}}}}}
	templates := func(string) *manifests.PodTemplateSpec { return tmpl }
	p := podruntime.NewProber(podruntime.ProberConfig{Docker: engine, Runner: podtest.GateRunner{Open: make(chan struct{})}, Notify: func(string) {}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Stop()
	c := dockerx.Container{ID: id, Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h"}
	p.Sync(context.Background(), "default/web", []dockerx.Container{c}, templates)
	podtest.WaitFor(t, func() bool { return p.Results([]dockerx.Container{c})[id].Started })
	p.Drop("default/web")
	p.Sync(context.Background(), "default/web", nil, templates) // even a later sync of the name
	n := p.HookedLen()
	if n != 0 {
		t.Fatalf("after drop and a sync listing nothing, hooked still holds %d entries (leak)", n)
	}
}

// TestReadinessRunsSoonUntilFirstReady: a readiness probe that failed
// before its container was ever ready (its process did not listen yet)
// runs again after 100 ms, 200 ms, … up to 1 s — as the kubelet triggers
// a readiness run at each status update of a pod whose container is not
// ready — rather than a whole periodSeconds later, past failureThreshold
// too, for the first period; once ready, or after that period, it runs
// every period. A liveness probe is never triggered early.
func TestReadinessRunsSoonUntilFirstReady(t *testing.T) {
	type step struct {
		advance time.Duration // the fake clock's step before the run
		ready   *bool         // the verdict after the run (nil: none yet)
	}
	yes, no := true, false
	tests := []struct {
		name   string
		period int32
		script []bool
		steps  []step
	}{
		{"ready at the second run, 100 ms after a first failure", 10, []bool{false, true, false},
			[]step{{0, nil}, {100 * time.Millisecond, &yes}, {10 * time.Second, &yes}}},
		{"past failureThreshold: not ready, and still soon", 10, []bool{false, false, false, false, true},
			[]step{{0, nil}, {100 * time.Millisecond, nil}, {200 * time.Millisecond, &no}, {400 * time.Millisecond, &no},
				{800 * time.Millisecond, &yes}, {10 * time.Second, &yes}}},
		{"never ready in its first period: every period after it", 2, []bool{false},
			[]step{{0, nil}, {100 * time.Millisecond, nil}, {200 * time.Millisecond, &no}, {400 * time.Millisecond, &no},
				{800 * time.Millisecond, &no}, {time.Second, &no}, {2 * time.Second, &no}, {10 * time.Second, &no}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			engine := dockerfake.New(podtest.Image)
			id, _ := engine.Add(dockerx.Container{Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h", Labels: map[string]string{}}, "")
			readiness, liveness := podtest.TCPProbe(tt.period, 3), podtest.TCPProbe(10, 3)
			runner := &scriptRunner{names: map[*manifests.Probe]string{readiness: "readiness", liveness: "liveness"},
				scripts: map[*manifests.Probe][]bool{readiness: tt.script, liveness: {false, true}}, called: make(chan string, 16)}
			tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "web", Image: "img:1", ReadinessProbe: readiness, LivenessProbe: liveness}}}}
			templates := func(string) *manifests.PodTemplateSpec { return tmpl }
			p, clk := newClockedProber(t, engine, runner)
			ctr := dockerx.Container{ID: id, Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h"}
			p.Sync(context.Background(), "default/web", []dockerx.Container{ctr}, templates)
			for i, s := range tt.steps {
				if s.advance > 0 {
					// Both workers wait on the clock before it moves.
					podtest.WaitFor(t, func() bool { return clk.Waiters() == 2 })
					clk.Step(s.advance)
				}
				for ran := false; !ran; {
					select {
					case got := <-runner.called:
						ran = got == "readiness"
					case <-time.After(10 * time.Second):
						t.Fatalf("step %d: the readiness probe did not run after %v", i, s.advance)
					}
				}
				podtest.WaitFor(t, func() bool {
					r := p.Results([]dockerx.Container{ctr})[id]
					return s.ready == nil && r.Ready == nil || s.ready != nil && r.Ready != nil && *r.Ready == *s.ready
				})
			}
			// The steps last over a period of the liveness probe (10 s)
			// and under two: it ran at the start and once a period later,
			// never sooner although its first run failed.
			podtest.WaitFor(t, func() bool { return runner.count("liveness") >= 2 })
			if n := runner.count("liveness"); n != 2 {
				t.Errorf("liveness ran %d times, want 2 (at the start and a period later)", n)
			}
		})
	}
}
