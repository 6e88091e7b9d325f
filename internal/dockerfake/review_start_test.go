package dockerfake

import (
	"context"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
)

// Docker refuses to start a container that is being removed or that a
// failed removal left dead ("container is marked for removal and cannot be
// started"). The fake started it: a controller that starts one (a
// liveness restart racing a removal, say) went unnoticed, and the
// container came back running and was never destroyed.
func TestStartRefusesRemovingAndDead(t *testing.T) {
	e := New("img")
	e.HoldRemovals(true)
	id, err := e.Add(dockerx.Container{Name: "c", Image: "img", State: dockerx.StateRunning,
		Labels: map[string]string{dockerx.LabelInstance: "i"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RemoveContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if err := e.StartContainer(context.Background(), id); err == nil {
		t.Errorf("start of a container being removed succeeded; Docker refuses it")
	}
	e.DeadOnRemove = func(string) bool { return true }
	e.FinishRemovals()
	if err := e.StartContainer(context.Background(), id); err == nil {
		t.Errorf("start of a dead container succeeded; Docker refuses it")
	}
	for _, c := range e.Snapshot() {
		if c.ID == id && c.State != dockerx.StateDead {
			t.Fatalf("container %s after the refused starts, want dead", c.State)
		}
	}
}
