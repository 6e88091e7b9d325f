package podruntime_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/internal/podtest"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// scriptRunner answers each probe (by identity) from its script, the last
// answer repeating, and records the order of the calls.
type scriptRunner struct {
	mu      sync.Mutex
	names   map[*manifests.Probe]string
	scripts map[*manifests.Probe][]bool
	calls   []string
	called  chan string
}

func (r *scriptRunner) Run(_ context.Context, _ podruntime.ProbeTarget, p *manifests.Probe) error {
	r.mu.Lock()
	name := r.names[p]
	r.calls = append(r.calls, name)
	sc := r.scripts[p]
	ok := sc[0]
	if len(sc) > 1 {
		r.scripts[p] = sc[1:]
	}
	r.mu.Unlock()
	r.called <- name
	if !ok {
		return errors.New(name + " failed")
	}
	return nil
}

// count is how many times the probe named name ran.
func (r *scriptRunner) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		if c == name {
			n++
		}
	}
	return n
}

// TestStartupProbeStateMachine drives a worker with a fake clock: the
// startup probe runs alone until it succeeds (readiness and liveness wait,
// the container is not ready), then it stops and the others begin; its
// failureThreshold reached marks the container for a restart, and nothing
// else runs.
func TestStartupProbeStateMachine(t *testing.T) {
	type step struct {
		advance   time.Duration // then wait for this probe to be called
		want      string
		ready     *bool // after the call: the worker's readiness (nil: none)
		alive     bool
		checkNone bool
	}
	yes, no := true, false
	tests := []struct {
		name                string
		readiness, liveness bool
		startup             []bool
		readyScript         []bool
		steps               []step
	}{
		{"startup passes on the third try, then readiness and liveness run", true, true,
			[]bool{false, false, true}, []bool{true},
			[]step{
				{0, "startup", nil, true, false},
				{2 * time.Second, "startup", nil, true, false},
				{2 * time.Second, "startup", nil, true, false},
				// The readiness and liveness loops begin once it succeeded.
				{0, "either", nil, true, false},
				{0, "either", &yes, true, false},
			}},
		{"startup fails failureThreshold times: restart, no other probe ran", true, true,
			[]bool{false}, []bool{true},
			[]step{
				{0, "startup", nil, true, false},
				{2 * time.Second, "startup", nil, true, false},
				{2 * time.Second, "startup", nil, false, true},
			}},
		{"startup alone makes the container ready once it passes", false, false,
			[]bool{false, true}, nil,
			[]step{
				{0, "startup", nil, true, false},
				{2 * time.Second, "startup", &yes, true, true},
			}},
		{"started but the readiness probe fails: not ready", true, false,
			[]bool{true}, []bool{false},
			[]step{
				{0, "startup", nil, true, false},
				{0, "readiness", nil, true, false},
				{10 * time.Second, "readiness", nil, true, false},
				{10 * time.Second, "readiness", &no, true, false},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			engine := dockerfake.New(podtest.Image)
			id, _ := engine.Add(dockerx.Container{Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h", Labels: map[string]string{}}, "")
			startup := podtest.TCPProbe(2, 3)
			c := manifests.Container{Name: "web", Image: "img:1", StartupProbe: startup}
			runner := &scriptRunner{names: map[*manifests.Probe]string{startup: "startup"}, scripts: map[*manifests.Probe][]bool{startup: tt.startup}, called: make(chan string, 16)}
			if tt.readiness {
				c.ReadinessProbe = podtest.TCPProbe(10, 3)
				runner.names[c.ReadinessProbe], runner.scripts[c.ReadinessProbe] = "readiness", tt.readyScript
			}
			if tt.liveness {
				c.LivenessProbe = podtest.TCPProbe(10, 3)
				runner.names[c.LivenessProbe], runner.scripts[c.LivenessProbe] = "liveness", []bool{true}
			}
			tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{c}}}
			templates := func(string) *manifests.PodTemplateSpec { return tmpl }
			p, clk := newClockedProber(t, engine, runner)
			ctr := dockerx.Container{ID: id, Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h"}
			// A later worker (again): not ready until judged, rather than
			// "no verdict".
			p.MarkProbedOnce(id, "default/web")
			res := p.Sync(context.Background(), "default/web", []dockerx.Container{ctr}, templates)[id]
			if res.Ready == nil || *res.Ready {
				t.Fatalf("before any probe: ready %v, want false", fmtBool(res.Ready))
			}
			// Not started before its startup probe passed. (A first try
			// that passes may have run already: the worker starts at once.)
			if res.Started && !tt.startup[0] {
				t.Fatal("before any probe: started, want not (a native sidecar's successors wait)")
			}
			for i, s := range tt.steps {
				if s.advance > 0 {
					waitWaiters(t, clk)
					clk.Step(s.advance)
				}
				select {
				case got := <-runner.called:
					if s.want != "either" && got != s.want {
						t.Fatalf("step %d: %s probe ran, want %s (calls %v)", i, got, s.want, runner.calls)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("step %d: no probe ran, want %s", i, s.want)
				}
				podtest.WaitFor(t, func() bool {
					r := p.Results([]dockerx.Container{ctr})[id]
					return r.Alive == s.alive && (s.ready == nil || r.Ready != nil && *r.Ready == *s.ready)
				})
				if s.checkNone {
					// Nothing else runs, however long we wait.
					for range 3 {
						clk.Step(time.Minute)
					}
					select {
					case got := <-runner.called:
						t.Fatalf("step %d: %s probe ran after the startup probe ended", i, got)
					case <-time.After(100 * time.Millisecond):
					}
				}
			}
			// Started once the startup probe passed, never if it failed.
			passed := tt.startup[len(tt.startup)-1]
			if passed {
				podtest.WaitFor(t, func() bool { return p.Results([]dockerx.Container{ctr})[id].Started })
			} else if p.Results([]dockerx.Container{ctr})[id].Started {
				t.Error("started, though its startup probe failed")
			}
		})
	}
}

// newClockedProber is a Prober on engine whose probes runner runs, timed
// by a fake clock; stopped at the test's end.
func newClockedProber(t *testing.T, engine podruntime.ProbeDocker, runner podruntime.ProbeRunner) (*podruntime.Prober, *clocktesting.FakeClock) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	p := podruntime.NewProber(podruntime.ProberConfig{Docker: engine, Runner: runner, Notify: func(string) {}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	p.SetClock(clk)
	t.Cleanup(p.Stop)
	return p, clk
}

func waitWaiters(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	podtest.WaitFor(t, clk.HasWaiters)
}
