package podruntime_test

import (
	"context"
	"github.com/dockctl/dockctl/reconciler/internal/podtest"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
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
