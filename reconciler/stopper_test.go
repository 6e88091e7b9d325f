package reconciler

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/internal/dockerfake"
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
	s := newStopper(panickyDocker{dockerfake.New()}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
		func(_ string, err error) { done <- err }, func(string) {})
	defer s.shutdown()
	s.submit("web", Op{Kind: OpRemove, Name: "c", ContainerID: "x", Grace: time.Second}, t0)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "panic") {
			t.Fatalf("job ended with %v, want an error saying it panicked", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the job never ended")
	}
	if busy, _ := s.inFlight("web"); len(busy) != 1 {
		t.Fatalf("in flight after the job ended: %v (the ended job stays until the next list)", busy)
	}
}
