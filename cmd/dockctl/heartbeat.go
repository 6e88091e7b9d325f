package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
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
// once ctx is done; it returns then. Each beat carries the loop's last
// finished pass, as lastPass reports it (nil: none to report). A failed
// write is logged and tried at the next tick: a controller does not stop
// for it.
func keepHeartbeat(ctx context.Context, w heartbeatWriter, hb store.Heartbeat, now func() time.Time, ticks <-chan time.Time, lastPass func() time.Time, log *slog.Logger) {
	beat := func() {
		hb.Beat = now()
		if lastPass != nil {
			hb.LastPass = lastPass()
		}
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
// every store.DefaultHeartbeatInterval, the loop passing every passEvery;
// the loop's progress is read from what setLastPass is given once the
// loop exists. The returned stop marks the heartbeat stopped and waits for
// that write.
func startHeartbeat(st *store.Store, instance string, passEvery time.Duration, log *slog.Logger) (setLastPass func(func() time.Time), stop func()) {
	host, _ := os.Hostname()
	now := time.Now
	hb := store.Heartbeat{Instance: instance, PID: os.Getpid(), Host: host, Started: now(), Interval: store.DefaultHeartbeatInterval, PassEvery: passEvery}
	ticker := time.NewTicker(hb.Interval)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var progress atomic.Pointer[func() time.Time]
	lastPass := func() time.Time {
		if f := progress.Load(); f != nil {
			return (*f)()
		}
		return time.Time{}
	}
	go func() {
		defer close(done)
		keepHeartbeat(ctx, st, hb, now, ticker.C, lastPass, log)
	}()
	setLastPass = func(f func() time.Time) { progress.Store(&f) }
	return setLastPass, func() {
		ticker.Stop()
		cancel()
		<-done
	}
}

// controllerWarning says why nothing may act on what the state directory
// holds ("" when a controller's heartbeat is fresh at now). A held
// controller lock with no heartbeat ever written is a controller of a
// release before heartbeats: taken for running. So is a held lock over a
// heartbeat marked stopped: the controller that marked it let the lock go
// after, so another holds it now (of a release before heartbeats, or one
// that took over and has yet to beat). A held lock over a beat gone stale
// is no such sign: it is how a hung controller looks.
func controllerWarning(instance string, hb *store.Heartbeat, lockHeld bool, now time.Time) string {
	if lockHeld && (hb == nil || !hb.Stopped.IsZero()) {
		return ""
	}
	why := hb.Staleness(now)
	if why == "" {
		if stall := hb.Stall(now); stall != "" {
			return fmt.Sprintf("the controller of instance %q runs, but %s", instance, stall)
		}
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
		if hb != nil && hb.Staleness(now) == "" {
			consequence = noControllerProgress // it runs, wedged
		}
		fmt.Fprintf(w, "Warning: %s: %s\n", msg, consequence)
	}
}

// What a missing controller means for each kind of command.
const (
	noControllerApply = "the objects are stored, but nothing acts on them until `dockctl controller` runs"
	noControllerRead  = "status and conditions may be stale"
	// A controller that runs but finishes no pass, for every command.
	noControllerProgress = "what is stored may not be acted on, and status and conditions may be stale"
)
