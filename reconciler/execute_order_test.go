package reconciler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// orderDocker records the executor's write calls in the order they are
// made, and fails those named in fail. Nothing else is needed: the
// executor only maps ops to calls.
type orderDocker struct {
	*dockerfake.Engine
	mu    sync.Mutex
	calls []string
	fail  map[string]bool // "start s", "remove id-r", …
}

func (d *orderDocker) call(what string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, what)
	if d.fail[what] {
		return fmt.Errorf("%s: refused", what)
	}
	return nil
}

func (d *orderDocker) StartContainer(_ context.Context, id string) error {
	return d.call("start " + id)
}
func (d *orderDocker) UnpauseContainer(_ context.Context, id string) error {
	return d.call("unpause " + id)
}
func (d *orderDocker) RemoveContainer(_ context.Context, id string) error {
	return d.call("remove " + id)
}
func (d *orderDocker) CreateContainer(_ context.Context, req dockerx.CreateRequest) (string, error) {
	return req.Name, d.call("create " + req.Name)
}
func (d *orderDocker) EnsureImage(context.Context, string, string, []dockerx.RegistryCredential) error {
	return nil
}
func (d *orderDocker) ImageUser(context.Context, string) (string, error) { return "", nil }

func newOrderController(t *testing.T, fail ...string) (*Controller, *orderDocker) {
	t.Helper()
	st, err := store.Open(t.TempDir(), "i")
	if err != nil {
		t.Fatal(err)
	}
	d := &orderDocker{Engine: dockerfake.New(testImage), fail: map[string]bool{}}
	for _, f := range fail {
		d.fail[f] = true
	}
	// One op in flight at a time, so that the recorded order is the one
	// the dependencies force and not a race.
	return New(d, st, Options{Instance: "i", MaxCreatesInFlight: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}), d
}

// TestExecuteFollowsDependencies: the executor carries a plan out in the
// order of its ops' dependencies, whatever their kinds, and a failed (or
// skipped) dependency skips its dependents unless their OnDepFailure says
// otherwise. Before ops had dependencies the executor ran stops, starts
// and creates in a fixed order of its own.
func TestExecuteFollowsDependencies(t *testing.T) {
	tests := []struct {
		name string
		ops  []Op
		fail []string
		want string // the write calls, in order
	}{
		{
			name: "an unpause, then a removal, then a start, as the plan says",
			ops: []Op{
				{ID: 1, Kind: OpUnpause, Name: "u", ContainerID: "u"},
				{ID: 2, Kind: OpRemove, Name: "r", ContainerID: "r", DependsOn: []OpID{1}},
				{ID: 3, Kind: OpStart, Name: "s", ContainerID: "s", DependsOn: []OpID{2}},
			},
			want: "unpause u, remove r, start s",
		},
		{
			name: "a failed start skips its dependents, and theirs, but not one that runs despite it",
			ops: []Op{
				{ID: 1, Kind: OpStart, Name: "s", ContainerID: "s"},
				{ID: 2, Kind: OpUnpause, Name: "u", ContainerID: "u", DependsOn: []OpID{1}},
				{ID: 3, Kind: OpRemove, Name: "r", ContainerID: "r", DependsOn: []OpID{2}},
				{ID: 4, Kind: OpStart, Name: "t", ContainerID: "t", DependsOn: []OpID{1}, OnDepFailure: RunOnDepFailure},
			},
			fail: []string{"start s"},
			want: "start s, start t",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, d := newOrderController(t, tt.fail...)
			_, err := c.execute(context.Background(), PlanInput{Instance: "i", Name: "web", Now: t0}, Plan{Ops: tt.ops})
			if (err != nil) != (len(tt.fail) > 0) {
				t.Errorf("execute: %v", err)
			}
			if got := strings.Join(d.calls, ", "); got != tt.want {
				t.Errorf("calls %q, want %q", got, tt.want)
			}
		})
	}
}

// TestExecuteCreatesAfterFailedRemoval keeps the gate on creates that the
// fixed order had: an immediate removal that fails blocks the plan's
// creates if the container is running (it may hold a host port or a place
// under the surge bound), not if it had exited (createsSafe).
func TestExecuteCreatesAfterFailedRemoval(t *testing.T) {
	const old = "0ld0"
	for _, tt := range []struct {
		state string
		want  string
	}{
		{dockerx.StateRunning, "remove id-i_web-0ld0-2"},
		{dockerx.StateExited, "remove id-i_web-0ld0-2, create i_web-HASH-0, start i_web-HASH-0"},
	} {
		t.Run(tt.state, func(t *testing.T) {
			d := withGrace(withStrategy(deployment(3), manifests.StrategyRollingUpdate, 1, 1), 0)
			hash := manifests.TemplateHash(&d.Spec.Template)
			oldTmpl := d.DeepCopy().Spec.Template
			oldTmpl.Spec.Containers[0].Image = "img:0"
			cs := []dockerx.Container{ctr(old, 0, dockerx.StateRunning, time.Hour), ctr(old, 1, dockerx.StateRunning, time.Hour),
				ctr(old, 2, tt.state, time.Hour)}
			in := PlanInput{
				Instance: "i", Name: "web", Desired: d, Hash: hash, Now: t0, Containers: cs, Available: availableIfRunning(cs),
				Revisions: []store.Revision{{Number: 1, Hash: old, Template: oldTmpl}, {Number: 2, Hash: hash, Template: d.Spec.Template}},
				State:     RolloutState{Sizes: map[string]int32{old: 3}},
			}
			plan := ComputePlan(in)
			if len(plan.Creates()) == 0 {
				t.Fatalf("plan has no create:\n%s", plan)
			}
			c, rec := newOrderController(t, "remove id-i_web-0ld0-2")
			fail, err := c.execute(context.Background(), in, plan)
			var re *removeError
			if !errors.As(err, &re) || fail.reason != ReasonFailedDelete {
				t.Errorf("execute: %v, %+v: want the removal's error and FailedDelete", err, fail)
			}
			if got, want := strings.Join(rec.calls, ", "), strings.ReplaceAll(tt.want, "HASH", hash); got != want {
				t.Errorf("plan:\n%s\ncalls %q, want %q", plan, got, want)
			}
		})
	}
}
