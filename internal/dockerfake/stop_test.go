package dockerfake

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// TestStopContainerFollowsDocker: a stop sends the stop signal; a container
// that honours it exits at once, one that ignores it is killed only when
// the timeout runs out, and an abandoned stop leaves it running.
func TestStopContainerFollowsDocker(t *testing.T) {
	e := New("img")
	add := func(name string) string {
		id, err := e.Add(dockerx.Container{Name: name, Image: "img", State: dockerx.StateRunning,
			Labels: map[string]string{dockerx.LabelInstance: "i"}}, "")
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	polite, stubborn := add("polite"), add("stubborn")
	e.IgnoresStop = func(c dockerx.Container) bool { return c.Name == "stubborn" }
	fire := make(chan time.Time)
	var asked time.Duration
	e.After = func(d time.Duration) <-chan time.Time { asked = d; return fire }
	state := func(id string) string {
		for _, c := range e.Snapshot() {
			if c.ID == id {
				return c.State
			}
		}
		return "gone"
	}
	ctx := context.Background()

	if err := e.StopContainer(ctx, polite, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := state(polite); got != dockerx.StateExited {
		t.Fatalf("a container honouring its stop signal: %s, want exited at once", got)
	}

	done := make(chan error, 1)
	go func() { done <- e.StopContainer(ctx, stubborn, time.Hour) }()
	if got := state(stubborn); got != dockerx.StateRunning {
		t.Fatalf("during the grace period: %s, want running", got)
	}
	// fire is unbuffered: the stop is still waiting for its kill when the
	// send goes through, whatever the machine's speed.
	fire <- time.Now()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if asked != time.Hour || state(stubborn) != dockerx.StateExited {
		t.Fatalf("after the timeout (asked %v): %s, want killed after 1h", asked, state(stubborn))
	}

	// An abandoned stop: the signal was ignored, the kill never comes.
	again := add("stubborn2")
	e.IgnoresStop = func(dockerx.Container) bool { return true }
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := e.StopContainer(cctx, again, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned stop: %v, want context.Canceled", err)
	}
	if got := state(again); got != dockerx.StateRunning {
		t.Fatalf("after an abandoned stop: %s, want still running", got)
	}
	if err := e.StopContainer(ctx, "missing", time.Second); !errors.Is(err, dockerx.ErrNotFound) {
		t.Fatalf("stop of a missing container: %v, want ErrNotFound", err)
	}
}
