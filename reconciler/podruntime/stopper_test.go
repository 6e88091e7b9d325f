package podruntime_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/reconciler/internal/podtest"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// panickyDocker panics in StopContainer, as a bug in a client or a fake can.
type panickyDocker struct{ *dockerfake.Engine }

func (panickyDocker) StopContainer(context.Context, string, time.Duration) error {
	panic("stop exploded")
}

// A stop job runs in a goroutine of its own, where a panic is recovered by
// nothing: it would take the whole controller down, every deployment with
// it, while a sync that panics is recovered and retried alone. A job that
// panics must end with an error, so its deployment is retried with
// backoff, like a failed stop.
func TestStopJobPanicIsRecovered(t *testing.T) {
	done := make(chan error, 1)
	s := podruntime.NewStopper(podruntime.StopperConfig{Docker: panickyDocker{dockerfake.New()}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Done: func(_ string, err error) { done <- err }, Restarted: func(string) {}})
	defer s.Shutdown()
	s.Submit("web", podruntime.StopRequest{Kind: podruntime.StopRemove, Name: "c", ContainerID: "x", Grace: time.Second}, podtest.T0)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "panic") {
			t.Fatalf("job ended with %v, want an error saying it panicked", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the job never ended")
	}
	if busy, _ := s.InFlight("web"); len(busy) != 1 {
		t.Fatalf("in flight after the job ended: %v (the ended job stays until the next list)", busy)
	}
}

// TestStopperShortensNeverLengthens: an op with a Deadline moves the kill
// of the removal in flight earlier — the stop is sent again with what is
// left, and Docker kills then — never later, and starts no stop of a
// container that has none in flight.
func TestStopperShortensNeverLengthens(t *testing.T) {
	engine := dockerfake.New(podtest.Image)
	id, _ := engine.Add(dockerx.Container{Name: "c", State: dockerx.StateRunning, Labels: map[string]string{}}, "")
	engine.IgnoresStop = func(dockerx.Container) bool { return true }
	var mu sync.Mutex
	var asked []time.Duration
	engine.After = func(d time.Duration) <-chan time.Time {
		mu.Lock()
		asked = append(asked, d)
		mu.Unlock()
		if d <= 5*time.Second {
			return time.After(d)
		}
		return nil // the first stop's kill never comes within the test
	}
	done := make(chan error, 1)
	s := podruntime.NewStopper(podruntime.StopperConfig{Docker: engine, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Done: func(_ string, err error) { done <- err }, Restarted: func(string) {}})
	defer s.Shutdown()
	deadline := func(id string) time.Time {
		_, removing := s.InFlight("web")
		return removing[id]
	}

	now := time.Now()
	s.Submit("web", podruntime.StopRequest{Kind: podruntime.StopRemove, Name: "c", ContainerID: id, Grace: time.Hour}, now)
	first := deadline(id)
	if !first.Equal(now.Add(time.Hour)) {
		t.Fatalf("deadline %v, want %v", first, now.Add(time.Hour))
	}
	s.Submit("web", podruntime.StopRequest{Kind: podruntime.StopRemove, Name: "c", ContainerID: id, Grace: 2 * time.Hour, Deadline: now.Add(2 * time.Hour)}, now)
	if got := deadline(id); !got.Equal(first) {
		t.Fatalf("a later deadline moved the kill to %v, want it kept at %v", got, first)
	}
	s.Submit("web", podruntime.StopRequest{Kind: podruntime.StopRemove, Name: "other", ContainerID: "not-stopping", Grace: time.Second, Deadline: now.Add(time.Second)}, now)
	if busy, _ := s.InFlight("web"); busy["not-stopping"] {
		t.Fatal("a shortening started a stop of a container that had none in flight")
	}

	for wait := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := len(asked)
		mu.Unlock()
		if n == 1 {
			break // the first stop is sent, and waits
		}
		if time.Now().After(wait) {
			t.Fatal("the first stop was never sent")
		}
	}
	at := time.Now()
	kill := at.Add(time.Second)
	s.Submit("web", podruntime.StopRequest{Kind: podruntime.StopRemove, Name: "c", ContainerID: id, Grace: time.Second, Deadline: kill}, at)
	if got := deadline(id); !got.Equal(kill) {
		t.Fatalf("deadline %v, want it shortened to %v", got, kill)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the shortened stop never ended")
	}
	for _, c := range engine.Snapshot() {
		if c.ID == id && c.State != dockerx.StateRemoving {
			t.Fatalf("container %s after its shortened stop, want removed", c.State)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 || asked[0] != time.Hour || asked[1] > time.Second {
		t.Fatalf("stops sent with graces %v, want 1h then at most the 1s left", asked)
	}
}
