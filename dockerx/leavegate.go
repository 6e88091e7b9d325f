package dockerx

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"
)

// leaveGate serialises the calls that make a container leave a network, on
// an Engine whose libnetwork can deadlock when two containers of one
// network leave it at once (docs/design.md §1).
//
// In Docker 20.10 up to 20.10.26 (and every earlier release) a container
// leaving a network reads the network's service records holding the
// network's lock and then takes the network controller's lock
// (getSvcRecords), while the controller's watch loop, told that another
// endpoint of the same network was deleted, holds the controller's lock
// and then takes the network's (processEndpointDelete). Two containers of
// one network stopping together can therefore wedge the whole daemon: from
// then on every network call, every stop and every removal hangs until
// dockerd is restarted (moby/moby#46661, fixed by moby/libnetwork#2679 in
// 20.10.27 and by moby/moby#42545 in 23.0). dockctl keeps every pod on one
// instance network and stops them in parallel (a scale-down, a rollout's
// surge, a deleted namespace), which is exactly that pattern.
//
// On such an Engine the gate lets one stop or removal at a time run
// through its exit and network cleanup: a stop holds it until the
// container has exited and Docker has finished handling the exit (an
// inspect waits for the container lock the exit handler holds while it
// releases the network), a forced removal until Docker has removed the
// container. A container that takes longer than hold to exit (a workload
// draining connections within its grace period) releases the gate then,
// so that a slow stop never delays the others by more than hold; its own
// exit comes later, at a time of its own choosing, as a crash does.
// Containers that exit by themselves are outside dockctl's reach. On any
// other Engine the gate is open and costs nothing.
//
// Calls wait for their turn in the order they came, for as long as their
// caller's context allows: a call whose context ends while it waits (the
// controller shuts down, a stop is to be sent again with a shortened grace
// period) leaves at once, unsent, without taking the gate. The call's own
// deadline (Client's timeout) starts when its turn comes, so that a call
// queued behind a long scale-down is not failed for the time it queued;
// each turn lasts at most hold, so the wait is bounded by the queue.
type leaveGate struct {
	turnOnce sync.Once
	turn     chan struct{} // holds a token while a gated call is in flight

	decideMu sync.Mutex // guards decided, serial and asking
	decided  bool
	serial   bool
	asking   bool // a version query is in flight
	// hold is how long a stop keeps the gate while its container has not
	// exited yet.
	hold time.Duration
	// after arms the hold (time.AfterFunc when nil; tests fake the clock).
	after func(d time.Duration, f func()) (stop func() bool)
}

// defaultLeaveHold bounds how long one stop keeps the gate: long enough
// for a workload that exits at once on its stop signal (milliseconds) and
// for Docker's exit handling under load, short enough that a slow drainer
// does not make the others wait for its grace period.
const defaultLeaveHold = 2 * time.Second

// enter takes the gate when the Engine needs it and returns the function
// that gives it back (safe to call more than once) and whether it was
// taken. A taken gate is given back by itself after the hold, whatever
// the call is still waiting for; each taking is given back once, so a
// hold that ends after its release frees no other call's turn. It returns
// ctx's error, the gate not taken, when ctx ends first.
func (g *leaveGate) enter(ctx context.Context, api dockerAPI, timeout time.Duration) (release func(), held bool, err error) {
	if !g.needed(ctx, api, timeout) {
		return func() {}, false, nil
	}
	turn := g.turns()
	if err := ctx.Err(); err != nil {
		return func() {}, false, err // ended already: never take the turn
	}
	select {
	case turn <- struct{}{}:
	case <-ctx.Done():
		return func() {}, false, ctx.Err()
	}
	free := sync.OnceFunc(func() { <-turn })
	stop := g.arm(g.holdFor(), free)
	return func() { stop(); free() }, true, nil
}

// turns returns the gate's one-token channel; the zero leaveGate is ready
// for use. A channel queues its senders in order, which sync.Mutex does
// not promise, and a select lets a waiter leave when its context ends.
func (g *leaveGate) turns() chan struct{} {
	g.turnOnce.Do(func() { g.turn = make(chan struct{}, 1) })
	return g.turn
}

// arm calls f after d.
func (g *leaveGate) arm(d time.Duration, f func()) (stop func() bool) {
	if g.after != nil {
		return g.after(d, f)
	}
	return time.AfterFunc(d, f).Stop
}

// needed reports whether the Engine is one whose libnetwork has the lock
// order bug; the answer is remembered once the Engine gave its version.
// Until then, and while another call is asking, the gate is taken, which
// is safe: one query at a time, none of the callers waiting behind
// another's (a daemon slow to answer delays only the caller that asked).
// An Engine that answered with an error is asked again by the next call.
func (g *leaveGate) needed(ctx context.Context, api dockerAPI, timeout time.Duration) bool {
	g.decideMu.Lock()
	if g.decided || g.asking {
		serial := g.serial || !g.decided
		g.decideMu.Unlock()
		return serial
	}
	g.asking = true
	g.decideMu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := api.ServerVersion(ctx)
	g.decideMu.Lock()
	defer g.decideMu.Unlock()
	g.asking = false
	if err != nil {
		return true // unknown: the call that follows will most likely fail too
	}
	g.decided, g.serial = true, leavesDeadlock(v.Version)
	return g.serial
}

// LeavesDeadlock reports whether Engine version v can deadlock when two
// containers of one network leave it at once (leaveGate): for code that
// removes containers through the Docker API itself, as the benchmark
// harness does.
func LeavesDeadlock(v string) bool { return leavesDeadlock(v) }

// leavesDeadlock reports whether Engine version v (as `docker version`
// prints it: "20.10.24", "20.10.24+dfsg1", "28.2.2") has libnetwork's
// getSvcRecords/processEndpointDelete lock inversion: every release before
// 20.10.27, and none from 22.06 on. A leading "v" is ignored. A version
// that cannot be read is taken as fixed: an Engine that odd is a
// development build ("dev", "master").
func leavesDeadlock(v string) bool {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	num := func(s string) (int, bool) {
		end := 0
		for end < len(s) && s[end] >= '0' && s[end] <= '9' {
			end++
		}
		n, err := strconv.Atoi(s[:end])
		return n, err == nil
	}
	major, ok1 := num(parts[0])
	minor, ok2 := num(parts[1])
	if !ok1 || !ok2 {
		return false
	}
	switch {
	case major < 20 || (major == 20 && minor < 10):
		return true
	case major == 20 && minor == 10:
		if len(parts) < 3 {
			return true
		}
		patch, ok := num(parts[2])
		return !ok || patch < 27
	}
	return false
}

// holdFor is how long a stop may keep the gate before its container exits.
func (g *leaveGate) holdFor() time.Duration {
	if g.hold > 0 {
		return g.hold
	}
	return defaultLeaveHold
}
