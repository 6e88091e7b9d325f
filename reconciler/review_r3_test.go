package reconciler

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
)

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

// TestReviewR3SidecarWorkerDeadOnTransientInspectWedges: a native
// sidecar with only a startup probe. Its worker's first inspection (locate)
// fails once; the worker goroutine returns, but stays in p.workers, so no
// later sync starts another. Started stays false forever: the sidecar is
// Unstarted at every sync and the pod's next init container (and every app
// container) is never created.
func TestReviewR3SidecarWorkerDeadOnTransientInspectWedges(t *testing.T) {
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

// TestReviewR3PostStartTransientInspectWedges: the same through postStart's
// own inspection (the worker's second): a sidecar with a postStart hook and
// nothing else.
func TestReviewR3PostStartTransientInspectWedges(t *testing.T) {
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

// TestReviewR3DropLeaksHooked: a deployment deleted (prober.drop) forgets
// probedOnce but not hooked: the entries of its containers stay for the
// controller's life (sync, the only cleanup, never runs for it again, and
// matches hooked through probedOnce, now empty).
func TestReviewR3DropLeaksHooked(t *testing.T) {
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

// blockDrainer blocks every drain until ctx ends, noting that one began.
type blockDrainer struct{ began chan struct{} }

func (b blockDrainer) Drain(ctx context.Context, _, _ string) error {
	b.began <- struct{}{}
	<-ctx.Done()
	return ctx.Err()
}

type countHooks struct {
	mu sync.Mutex
	n  int
}

func (h *countHooks) runHook(context.Context, Hook) error {
	h.mu.Lock()
	h.n++
	h.mu.Unlock()
	return nil
}

// TestReviewR3ResumedStopSkipsHookThatNeverRan: the status records a stop's
// deadline as soon as the plan is executed (recordStops, after submit),
// while the stopper still drains (up to maxDrain) before the preStop hook.
// A controller shut down during the drain abandons the job (run: "shutting
// down: the next controller resumes the stop"): the hook never ran. The
// next controller sees the recorded deadline (Terminating) and, by
// setPreStops' resumed rule, plans the stop without the hook: it is never
// run at all.
func TestReviewR3ResumedStopSkipsHookThatNeverRan(t *testing.T) {
	d := withPreStop(deployment(1))
	hash := manifests.TemplateHash(&d.Spec.Template)
	keep := ctr(hash, 0, dockerx.StateRunning, time.Hour)
	extra := ctr(hash, 1, dockerx.StateRunning, time.Hour)
	mk := func() PlanInput {
		in := PlanInput{Instance: "i", Name: "web", Desired: d, Hash: hash, Now: t0,
			Containers: []dockerx.Container{keep, extra}, DrainPods: true, Terminating: map[string]time.Time{}, Stopping: map[string]bool{}}
		in.Containers, in.Pods = groupPods(in.Containers, templateLookup(in.Desired, in.Hash, nil), nil)
		return in
	}
	// First controller: the scale-down is planned, submitted, recorded.
	plan := ComputePlan(mk())
	var op *Op
	for i := range plan.Ops {
		if plan.Ops[i].Kind == OpRemove && plan.Ops[i].PreStop != nil {
			op = &plan.Ops[i]
		}
	}
	if op == nil || op.Drain == nil {
		t.Fatalf("no drained stop with a preStop hook planned:\n%s", plan)
	}
	hooks := &countHooks{}
	drainer := blockDrainer{began: make(chan struct{}, 1)}
	s := newStopper(dockerfake.New(testImage), slog.New(slog.NewTextHandler(io.Discard, nil)), drainer, func(string, error) {}, func(string) {})
	s.hooks = hooks
	s.submit("default/web", *op, t0)
	state := deploymentState{Containers: map[string]*containerState{}}
	recordStops(&state, plan, t0) // as sync does, right after execute
	<-drainer.began
	s.shutdown() // controller restarted mid-drain
	hooks.mu.Lock()
	ran := hooks.n
	hooks.mu.Unlock()
	// Second controller: resumes from the recorded deadline.
	in := mk()
	state.addTerminating(in.Terminating, map[string]bool{})
	resumed := ComputePlan(in)
	for _, o := range resumed.Ops {
		if o.ContainerID == op.ContainerID && o.Kind == OpRemove {
			if ran == 0 && o.PreStop == nil {
				t.Fatalf("preStop hook never ran (first controller shut down mid-drain; hook runs %d), and the resumed stop (%s) skips it", ran, o.Cause)
			}
			return
		}
	}
	t.Fatalf("no resumed stop:\n%s", resumed)
}
