package reconciler

import (
	"fmt"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/internal/golden"
	"github.com/dockctl/dockctl/store"
)

// TestPlanGolden compares the rendered plans (Plan.String: ops, their
// dependencies and what to do when one fails) of a table of inputs with
// testdata/plan-*.golden. Run with -update to rewrite them after an
// intended change, and read the diff: the order the executor follows is
// the one these files show.
func TestPlanGolden(t *testing.T) {
	const H, old = "aaaa", "0ld0"
	running, exited := dockerx.StateRunning, dockerx.StateExited
	oldRev := func(d *manifests.Deployment) []store.Revision {
		tmpl := d.DeepCopy().Spec.Template
		tmpl.Spec.Containers[0].Image = "img:0"
		return []store.Revision{{Number: 1, Hash: old, Template: tmpl}, {Number: 2, Hash: H, Template: d.Spec.Template}}
	}
	withHostPort := func(d *manifests.Deployment) *manifests.Deployment {
		d.Spec.Template.Spec.Containers[0].Ports = []manifests.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: "TCP"}}
		return d
	}
	rolling := func(d *manifests.Deployment, cs ...dockerx.Container) PlanInput {
		return PlanInput{
			Desired: d, Revisions: oldRev(d), Containers: cs, Available: availableIfRunning(cs),
			State: RolloutState{Sizes: map[string]int32{old: int32(len(cs))}},
		}
	}
	three := []dockerx.Container{ctr(H, 0, running, time.Hour), ctr(H, 1, running, time.Hour), ctr(H, 2, running, 2*time.Hour)}
	tests := []struct {
		name string
		in   PlanInput
	}{
		{"scale-up", PlanInput{Desired: deployment(3), Containers: three[:1]}},
		{"scale-down", PlanInput{Desired: deployment(1), Containers: three, Available: availableIfRunning(three)}},
		{"rolling-update-step", rolling(withStrategy(deployment(3), manifests.StrategyRollingUpdate, 1, 1),
			ctr(old, 0, running, time.Hour), ctr(old, 1, running, time.Hour), ctr(old, 2, running, time.Hour))},
		{"recreate", rolling(withStrategy(deployment(2), manifests.StrategyRecreate, 0, 0),
			ctr(old, 0, running, time.Hour), ctr(old, 1, running, time.Hour))},
		{"hostport-rollout", rolling(withHostPort(deployment(2)),
			ctr(old, 0, running, time.Hour), ctr(old, 1, running, time.Hour))},
		{"hostport-rollout-no-grace", rolling(withGrace(withHostPort(deployment(2)), 0),
			ctr(old, 0, running, time.Hour), ctr(old, 1, running, time.Hour))},
		{"deleted", PlanInput{Containers: three}},
		{"liveness-restart", PlanInput{Desired: deployment(4), Containers: three,
			LivenessFailed: map[string]bool{three[1].ID: true}}},
		{"crash-backoff", PlanInput{Desired: deployment(3),
			Containers:     []dockerx.Container{ctr(H, 0, exited, time.Hour), ctr(H, 1, exited, time.Hour), ctr(H, 2, running, time.Hour)},
			StartNotBefore: map[string]time.Time{"id-" + dockerx.ContainerName("i", "", "web", H, 0): t0.Add(40 * time.Second)}}},
		// A deployment applied again over the orphans of another template
		// it adopts (orphans.go): a fresh history and rollout state, so
		// their revision is unknown, its size adopted from what runs, and
		// scaled down by the strategy as the new one grows.
		{"adopted-orphans-rollout", PlanInput{Desired: withStrategy(deployment(3), manifests.StrategyRollingUpdate, 1, 0),
			Revisions:  []store.Revision{{Number: 1, Hash: H, Template: deployment(3).Spec.Template}},
			Containers: []dockerx.Container{ctr("0rph", 0, running, time.Hour), ctr("0rph", 1, running, time.Hour), ctr("0rph", 2, running, time.Hour)},
			Available:  availableIfRunning([]dockerx.Container{ctr("0rph", 0, running, time.Hour), ctr("0rph", 1, running, time.Hour), ctr("0rph", 2, running, time.Hour)}),
			Refused:    map[string]string{"0rph": "not in the history"}}},
		// The orphans of its template it does not adopt hold their names
		// (ownedPods: blocked): its pods take the next ordinals.
		{"orphan-names-held", PlanInput{Desired: deployment(2), BlockedNames: map[string]bool{
			dockerx.ContainerName("i", "", "web", H, 0): true, dockerx.ContainerName("i", "", "web", H, 1): true}}},
		{"dead-paused-stopped-missing", PlanInput{Desired: deployment(4),
			Containers: []dockerx.Container{ctr(H, 0, dockerx.StateDead, time.Hour), ctr(H, 1, dockerx.StatePaused, time.Hour),
				ctr(H, 2, exited, time.Hour)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Instance, in.Name, in.Hash, in.Now = "i", "web", H, t0
			plan := ComputePlan(in)
			checkOrder(t, plan)
			checkPlanGolden(t, tt.name, plan)
		})
	}
}

// checkPlanGolden compares a rendered plan with testdata/plan-NAME.golden
// (-update rewrites it).
func checkPlanGolden(t *testing.T, name string, plan Plan) {
	t.Helper()
	golden.Check(t, "plan-"+name, plan.String())
}

// checkOrder asserts the order the plan's dependencies give, one rule at a
// time, so that regenerating the goldens (-update) cannot accept a
// regression: stops first (a replacement never fights its predecessor for
// a host port), then starts and unpauses, then creates.
func checkOrder(t *testing.T, plan Plan) {
	t.Helper()
	var stops, stopsAndStarts []OpID
	for i, op := range plan.Ops {
		if op.ID != OpID(i+1) {
			t.Errorf("op %d has ID %d", i, op.ID)
		}
		switch op.Kind {
		case OpRemove, OpRestart:
			stops = append(stops, op.ID)
			stopsAndStarts = append(stopsAndStarts, op.ID)
		case OpStart, OpUnpause:
			stopsAndStarts = append(stopsAndStarts, op.ID)
		}
	}
	for _, op := range plan.Ops {
		var want []OpID
		policy := SkipOnDepFailure
		switch op.Kind {
		case OpStart, OpUnpause:
			want, policy = stops, RunOnDepFailure
		case OpCreate, OpCreateVolume:
			want, policy = stopsAndStarts, RunIfCreatesSafe
		}
		if fmt.Sprint(op.DependsOn) != fmt.Sprint(want) || (len(want) > 0 && op.OnDepFailure != policy) {
			t.Errorf("%s: depends on %v (%s), want %v (%s)", op.Line(), op.DependsOn, op.OnDepFailure, want, policy)
		}
	}
}
