package reconciler

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
)

// TestReviewR2bResumedStopRunsPreStopWithinDeadline: a controller that
// restarts mid-stop resumes it with the time left before the recorded
// deadline. It cannot tell whether the first controller ran the preStop
// hook (it may have stopped during the drain, before the hook), so the
// hook runs again — Kubernetes delivers hooks at least once, as a
// restarted kubelet kills a pod again — within what the deadline leaves.
func TestReviewR2bResumedStopRunsPreStopWithinDeadline(t *testing.T) {
	d := withPreStop(deployment(1))
	hash := manifests.TemplateHash(&d.Spec.Template)
	keep := ctr(hash, 0, dockerx.StateRunning, time.Hour)
	stopping := ctr(hash, 1, dockerx.StateRunning, time.Hour)
	recorded := t0.Add(time.Second) // 1 s of the grace left
	in := PlanInput{Instance: "i", Name: "web", Desired: d, Hash: hash, Now: t0,
		Containers: []dockerx.Container{keep, stopping}, DrainPods: true,
		Terminating: map[string]time.Time{stopping.ID: recorded}, Stopping: map[string]bool{}}
	in.Containers, in.Pods = groupPods(in.Containers, templateLookup(in.Desired, in.Hash, nil), nil)
	plan := ComputePlan(in)
	var op *Op
	for i := range plan.Ops {
		if plan.Ops[i].ContainerID == stopping.ID {
			op = &plan.Ops[i]
		}
	}
	if op == nil {
		t.Fatalf("no resumed stop planned:\n%s", plan)
	}
	if op.PreStop == nil {
		t.Errorf("resumed stop (%s) runs no preStop hook: one that never ran (the first controller stopped mid-drain) would never run", op.Cause)
	}
	if op.Grace > recorded.Sub(t0) {
		t.Errorf("resumed stop's grace %v, past what the recorded deadline leaves (%v)", op.Grace, recorded.Sub(t0))
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

// TestReviewR2bPostStartInterruptedIsSkipped: a container paused while its
// postStart hook runs (the worker is cancelled) and then unpaused (the
// planner unpauses it: OpUnpause) gets a new worker for the same run. The
// hook never completed, yet the new worker takes it as run and reports the
// container ready: "the container is not ready until it has run" is
// broken.
func TestReviewR2bPostStartInterruptedIsSkipped(t *testing.T) {
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

// TestReviewR2bPostStartFailedThenRecreatedWorker: a postStart hook
// failed (the container is to be restarted); a new worker for the same
// run (pause/unpause before the restart) takes the hook as run: the
// container becomes alive and ready, and is never restarted.
func TestReviewR2bPostStartFailedThenRecreatedWorker(t *testing.T) {
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

// TestReviewR2bSidecarStartupProbeDoesNotGateNext: Kubernetes starts the
// container after a native sidecar only once the sidecar has started —
// its startupProbe succeeded (and its postStart hook completed). A
// sidecar that runs but whose startup probe has not succeeded yet (the
// prober gives it no Ready verdict; it is not ready) does not hold back
// the next init container here.
func TestReviewR2bSidecarStartupProbeDoesNotGateNext(t *testing.T) {
	const H = "aaaa"
	d := podDeployment(1, manifests.Container{Name: "proxy", Image: "img:1", RestartPolicy: "Always", StartupProbe: tcpProbe(10, 30)},
		manifests.Container{Name: "migrate", Image: "img:1"})
	in := podInput(d, podOf(H, 0, dockerx.StateRunning, map[string]string{"proxy": dockerx.StateRunning}))
	in.Instance, in.Name, in.Now, in.Hash = "i", "web", t0, H
	// The prober has no verdict yet (startup probe running): not ready,
	// not started.
	in.Ready, in.Available = map[string]bool{}, map[string]bool{}
	in.Unstarted = map[string]bool{}
	for _, p := range in.Pods {
		if m := p.members["proxy"]; m != nil {
			in.Unstarted[m.ID] = true
		}
	}
	if len(in.Unstarted) != 1 {
		t.Fatalf("no proxy member in the input")
	}
	creates := func(plan Plan) bool {
		for _, op := range plan.Ops {
			if op.Kind == OpCreate && op.Container == "migrate" {
				return true
			}
		}
		return false
	}
	if plan := ComputePlan(in); creates(plan) {
		t.Fatalf("init container migrate is created while sidecar proxy's startupProbe has not succeeded:\n%s", plan)
	}
	in.Unstarted = nil // started: its successor goes on
	if plan := ComputePlan(in); !creates(plan) {
		t.Errorf("the sidecar started, and init container migrate is not created:\n%s", plan)
	}
}
