package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/dockctl/dockctl/store"
)

// The controller's heartbeat (docs/design.md §5): the controller refreshes
// controller.json in the state directory while it runs and marks it stopped
// when it shuts down; apply, get and describe warn on stderr, as kubectl
// prints its `Warning:` lines, when no controller of the instance has a
// fresh one, since everything they store or show is then acted on by no one.

// heartbeatWriter is what keeps the heartbeat: the controller's store.
type heartbeatWriter interface {
	WriteHeartbeat(store.Heartbeat) error
}

// keepHeartbeat writes hb at once, again at every tick, and marked stopped
// once ctx is done; it returns then. A failed write is logged and tried at
// the next tick: a controller does not stop for it.
func keepHeartbeat(ctx context.Context, w heartbeatWriter, hb store.Heartbeat, now func() time.Time, ticks <-chan time.Time, log *slog.Logger) {
	beat := func() {
		hb.Beat = now()
		if err := w.WriteHeartbeat(hb); err != nil {
			log.Warn("write heartbeat", "err", err)
		}
	}
	beat()
	for {
		select {
		case <-ctx.Done():
			hb.Stopped = now()
			beat()
			return
		case <-ticks:
			beat()
		}
	}
}

// startHeartbeat runs keepHeartbeat for the controller of instance on st
// every store.DefaultHeartbeatInterval; the returned stop marks the
// heartbeat stopped and waits for that write.
func startHeartbeat(st *store.Store, instance string, log *slog.Logger) (stop func()) {
	host, _ := os.Hostname()
	now := time.Now
	hb := store.Heartbeat{Instance: instance, PID: os.Getpid(), Host: host, Started: now(), Interval: store.DefaultHeartbeatInterval}
	ticker := time.NewTicker(hb.Interval)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		keepHeartbeat(ctx, st, hb, now, ticker.C, log)
	}()
	return func() {
		ticker.Stop()
		cancel()
		<-done
	}
}

// controllerWarning says why nothing may act on what the state directory
// holds ("" when a controller's heartbeat is fresh at now). A held
// controller lock with no heartbeat ever written is a controller of a
// release before heartbeats: taken for running.
func controllerWarning(instance string, hb *store.Heartbeat, lockHeld bool, now time.Time) string {
	if hb == nil && lockHeld {
		return ""
	}
	why := hb.Staleness(now)
	if why == "" {
		return ""
	}
	return fmt.Sprintf("no controller is running for instance %q (%s)", instance, why)
}

// warnNoController prints, on w, kubectl's style of warning when no
// controller of the instance runs, followed by what that means for the
// command (consequence). What cannot be read is not warned about: the
// command reports the state directory's errors itself.
func warnNoController(w io.Writer, st *store.Store, instance, consequence string, now time.Time) {
	hb, err := st.ReadHeartbeat()
	if err != nil {
		fmt.Fprintf(w, "Warning: controller heartbeat: %v\n", err)
		return
	}
	held, _ := st.ControllerRunning()
	if msg := controllerWarning(instance, hb, held, now); msg != "" {
		fmt.Fprintf(w, "Warning: %s: %s\n", msg, consequence)
	}
}

// What a missing controller means for each kind of command.
const (
	noControllerApply = "the objects are stored, but nothing acts on them until `dockctl controller` runs"
	noControllerRead  = "status and conditions may be stale"
)
