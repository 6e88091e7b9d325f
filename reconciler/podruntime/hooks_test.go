package podruntime_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/internal/podtest"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// TestPostStartHook: the hook runs once per run of the container, before
// it is ready; a failing hook marks it for a restart.
func TestPostStartHook(t *testing.T) {
	for _, tc := range []struct {
		name      string
		exit      int
		wantReady bool
		wantAlive bool
	}{
		{"succeeds: ready", 0, true, true},
		{"fails: restarted, never ready", 1, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			engine := dockerfake.New(podtest.Image)
			id, _ := engine.Add(dockerx.Container{Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h", Labels: map[string]string{}}, "")
			var mu sync.Mutex
			runs := 0
			engine.OnExec = func(_ string, cmd []string) (int, error) {
				mu.Lock()
				defer mu.Unlock()
				if cmd[0] == "warm-up" {
					runs++
				}
				return tc.exit, nil
			}
			tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "web", Image: "img:1",
				Lifecycle: &manifests.Lifecycle{PostStart: &manifests.LifecycleHandler{Exec: &manifests.ExecAction{Command: []string{"warm-up"}}}}}}}}
			templates := func(string) *manifests.PodTemplateSpec { return tmpl }
			p := podruntime.NewProber(podruntime.ProberConfig{Docker: engine, Runner: podtest.GateRunner{Open: make(chan struct{})}, Notify: func(string) {}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			defer p.Stop()
			ctr := dockerx.Container{ID: id, Name: "i_web-h-0", State: dockerx.StateRunning, TemplateHash: "h"}
			paused := ctr
			paused.State = dockerx.StatePaused
			p.Sync(context.Background(), "default/web", []dockerx.Container{ctr}, templates)
			podtest.WaitFor(t, func() bool {
				r := p.Results([]dockerx.Container{ctr})[id]
				return r.Alive == tc.wantAlive && (r.Ready != nil && *r.Ready == tc.wantReady)
			})
			// The same run seen again (paused, then running): not run twice.
			p.Sync(context.Background(), "default/web", []dockerx.Container{paused}, templates)
			p.Sync(context.Background(), "default/web", []dockerx.Container{ctr}, templates)
			podtest.WaitFor(t, func() bool {
				r := p.Results([]dockerx.Container{ctr})[id]
				return r.Ready != nil && *r.Ready == tc.wantReady
			})
			mu.Lock()
			defer mu.Unlock()
			if runs != 1 {
				t.Errorf("postStart ran %d times, want 1", runs)
			}
		})
	}
}

// hookStopDocker records stops, with the grace each got.
type hookStopDocker struct {
	*dockerfake.Engine
	log *orderLog
}

type orderLog struct {
	mu     sync.Mutex
	events []string
	grace  time.Duration
}

func (l *orderLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (d hookStopDocker) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	d.log.mu.Lock()
	d.log.grace = grace
	d.log.mu.Unlock()
	d.log.add("stop")
	return d.Engine.StopContainer(ctx, id, grace)
}

type orderDrainer struct{ log *orderLog }

func (d orderDrainer) Drain(context.Context, string, string) error { d.log.add("drain"); return nil }

type orderHooks struct {
	log  *orderLog
	wait time.Duration
	err  error
}

func (h orderHooks) RunHook(ctx context.Context, hk podruntime.Hook) error {
	h.log.add("preStop " + hk.Name)
	select {
	case <-time.After(h.wait):
	case <-ctx.Done():
		return ctx.Err()
	}
	return h.err
}

// TestPreStopRunsAfterDrainBeforeStop: the stopper drains, runs the hook,
// then sends the stop signal with the grace the hook left (at least
// podruntime.MinPodGrace); a failed or overlong hook does not prevent the stop.
func TestPreStopRunsAfterDrainBeforeStop(t *testing.T) {
	for _, tc := range []struct {
		name      string
		hooks     orderHooks
		grace     time.Duration
		maxGrace  time.Duration
		wantGrace time.Duration // at least
	}{
		{"quick hook", orderHooks{wait: 200 * time.Millisecond}, 10 * time.Second, 9900 * time.Millisecond, 9 * time.Second},
		{"failing hook", orderHooks{err: fmt.Errorf("boom")}, 10 * time.Second, 10 * time.Second, 9 * time.Second},
		{"hook longer than the grace: cut, minimum grace left", orderHooks{wait: time.Hour}, 500 * time.Millisecond, podruntime.MinPodGrace, podruntime.MinPodGrace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &orderLog{}
			engine := dockerfake.New(podtest.Image)
			id, _ := engine.Add(dockerx.Container{Name: "c", State: dockerx.StateRunning, Labels: map[string]string{}}, "")
			done := make(chan error, 1)
			s := podruntime.NewStopper(podruntime.StopperConfig{Docker: hookStopDocker{engine, log}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Drainer: orderDrainer{log}, Done: func(_ string, err error) { done <- err }, Restarted: func(string) {}})
			tc.hooks.log = log
			s.SetHooks(tc.hooks)
			events := &podtest.MemRecorder{}
			s.SetRecorder(events)
			defer s.Shutdown()
			s.Submit("web", podruntime.StopRequest{Kind: podruntime.StopRemove, Name: "c", ContainerID: id, Grace: tc.grace, Drain: &podruntime.DrainRef{Namespace: "default", Pod: "web-0"},
				PreStop: &podruntime.Hook{Name: "c", ID: id, Pod: store.InvolvedObject{Kind: "Pod", Name: "web-0"}}}, podtest.T0)
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the stop never ended")
			}
			log.mu.Lock()
			defer log.mu.Unlock()
			if want := []string{"drain", "preStop c", "stop"}; !slices.Equal(log.events, want) {
				t.Fatalf("order %q, want %q", log.events, want)
			}
			if log.grace < tc.wantGrace || log.grace > tc.maxGrace {
				t.Errorf("stop signal with grace %v, want between %v and %v", log.grace, tc.wantGrace, tc.maxGrace)
			}
			if got, want := events.Has("Pod/web-0 Warning FailedPreStopHook", "PreStopHook failed: boom"), tc.hooks.err != nil; got != want {
				t.Errorf("FailedPreStopHook recorded: %v, want %v (%s)", got, want, events.Dump())
			}
		})
	}
}
