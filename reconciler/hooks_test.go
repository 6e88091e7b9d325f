package reconciler

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
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

func withPreStop(d *manifests.Deployment, names ...string) *manifests.Deployment {
	for i := range d.Spec.Template.Spec.Containers {
		c := &d.Spec.Template.Spec.Containers[i]
		if len(names) == 0 || slices.Contains(names, c.Name) {
			c.Lifecycle = &manifests.Lifecycle{PreStop: &manifests.LifecycleHandler{Exec: &manifests.ExecAction{Command: []string{"drain", c.Name}}}}
		}
	}
	return d
}

// TestSetPreStops: the plan gives exactly the graceful stops of running
// containers their own revision's preStop hook, pod members with their
// holder as the address owner.
func TestSetPreStops(t *testing.T) {
	d := withPreStop(deployment(1))
	hash := manifests.TemplateHash(&d.Spec.Template)
	running := ctr(hash, 0, dockerx.StateRunning, time.Hour)
	surplus := ctr(hash, 1, dockerx.StateRunning, time.Minute)
	exited := ctr(hash, 1, dockerx.StateExited, time.Minute)
	pd := withPreStop(podDeployment(0), "app")
	pdHash := manifests.TemplateHash(&pd.Spec.Template)
	pod := podOf(pdHash, 0, dockerx.StateRunning, map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": dockerx.StateRunning, "log": dockerx.StateRunning})
	var app, holder dockerx.Container
	for _, c := range pod {
		switch {
		case c.Role == dockerx.RoleHolder:
			holder = c
		case c.ContainerName == "app":
			app = c
		}
	}
	tests := []struct {
		name string
		in   PlanInput
		want []string // "kind container: hook → netOwner"
	}{
		{"scale-down runs the surplus replica's hook", PlanInput{Desired: d, Containers: []dockerx.Container{running, surplus}},
			[]string{fmt.Sprintf("remove %s: drain web → %s", surplus.Name, surplus.ID)}},
		{"an exited replica has nothing to stop", PlanInput{Desired: d, Containers: []dockerx.Container{running, exited}}, nil},
		{"liveness restart runs it", PlanInput{Desired: d, Containers: []dockerx.Container{running}, LivenessFailed: map[string]bool{running.ID: true}},
			[]string{fmt.Sprintf("restart %s: drain web → %s", running.Name, running.ID)}},
		{"a pod's removal (scaled to zero) runs its member's hook, addressed at the holder", podInput(pd, pod),
			[]string{fmt.Sprintf("remove %s: drain app → %s", app.Name, holder.ID)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Name, in.Instance, in.Now = "web", "i", t0
			if in.Desired != nil && in.Hash == "" {
				in.Hash = manifests.TemplateHash(&in.Desired.Spec.Template)
			}
			if in.Pods == nil {
				in.Containers, in.Pods = podruntime.GroupPods(in.Containers, templateLookup(in.Desired, in.Hash, nil), nil)
			}
			plan := ComputePlan(in)
			var got []string
			add := func(kind OpKind, h *podruntime.Hook) {
				got = append(got, fmt.Sprintf("%s %s: %s → %s", kind, h.Name, joinCmd(h.Handler), h.NetOwner))
			}
			for _, op := range plan.Ops {
				if op.PreStop != nil {
					add(op.Kind, op.PreStop)
				}
				for _, ph := range op.Phases {
					for _, tg := range ph {
						if tg.PreStop != nil {
							add(op.Kind, tg.PreStop)
						}
					}
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("preStop hooks:\n got  %q\n want %q\nplan:\n%s", got, tt.want, plan)
			}
		})
	}
}

func joinCmd(h *manifests.LifecycleHandler) string {
	if h.Exec == nil {
		return "?"
	}
	return fmt.Sprint(h.Exec.Command[0], " ", h.Exec.Command[1])
}

// TestResumedStopRunsPreStopWithinDeadline: a controller that restarts
// mid-stop resumes it with the time left before the recorded deadline. It
// cannot tell whether the first controller ran the preStop hook (it may
// have stopped during the drain, before the hook), so the hook runs again
// - Kubernetes delivers hooks at least once, as a restarted kubelet kills
// a pod again - within what the deadline leaves.
func TestResumedStopRunsPreStopWithinDeadline(t *testing.T) {
	d := withPreStop(deployment(1))
	hash := manifests.TemplateHash(&d.Spec.Template)
	keep := ctr(hash, 0, dockerx.StateRunning, time.Hour)
	stopping := ctr(hash, 1, dockerx.StateRunning, time.Hour)
	recorded := t0.Add(time.Second) // 1 s of the grace left
	in := PlanInput{Instance: "i", Name: "web", Desired: d, Hash: hash, Now: t0,
		Containers: []dockerx.Container{keep, stopping}, DrainPods: true,
		Terminating: map[string]time.Time{stopping.ID: recorded}, Stopping: map[string]bool{}}
	in.Containers, in.Pods = podruntime.GroupPods(in.Containers, templateLookup(in.Desired, in.Hash, nil), nil)
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

func (h *countHooks) RunHook(context.Context, podruntime.Hook) error {
	h.mu.Lock()
	h.n++
	h.mu.Unlock()
	return nil
}

// TestResumedStopRunsHookThatNeverRan: the status records a stop's
// deadline as soon as the plan is executed (recordStops, after submit),
// while the stopper still drains (up to the drain's bound) before the preStop hook.
// A controller shut down during the drain abandons the job (run: "shutting
// down: the next controller resumes the stop"): the hook never ran. The
// next controller sees the recorded deadline (Terminating) and must plan
// the stop with the hook (setPreStops), or it is never run at all;
// Kubernetes delivers hooks at least once.
func TestResumedStopRunsHookThatNeverRan(t *testing.T) {
	d := withPreStop(deployment(1))
	hash := manifests.TemplateHash(&d.Spec.Template)
	keep := ctr(hash, 0, dockerx.StateRunning, time.Hour)
	extra := ctr(hash, 1, dockerx.StateRunning, time.Hour)
	mk := func() PlanInput {
		in := PlanInput{Instance: "i", Name: "web", Desired: d, Hash: hash, Now: t0,
			Containers: []dockerx.Container{keep, extra}, DrainPods: true, Terminating: map[string]time.Time{}, Stopping: map[string]bool{}}
		in.Containers, in.Pods = podruntime.GroupPods(in.Containers, templateLookup(in.Desired, in.Hash, nil), nil)
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
	s := podruntime.NewStopper(podruntime.StopperConfig{Docker: dockerfake.New(testImage), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Drainer: drainer, Hooks: hooks, Done: func(string, error) {}, Restarted: func(string) {}})
	s.Submit("default/web", op.stopRequest(), t0)
	state := deploymentState{Containers: map[string]*podruntime.ContainerState{}}
	recordStops(&state, plan, t0) // as sync does, right after execute
	<-drainer.began
	s.Shutdown() // controller restarted mid-drain
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
