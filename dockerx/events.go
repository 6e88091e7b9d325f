package dockerx

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
)

// watchedActions are the container events that can change what a sync
// decides. Everything else (exec_* from health checks, attach, resize…) is
// filtered out by the daemon. "health_status" matches every
// "health_status: …" action: the daemon prefix-matches that one filter.
var watchedActions = []string{
	"create", "start", "die", "destroy", "stop", "kill",
	"pause", "unpause", "health_status", "oom",
}

// Events subscribes to the container events of one instance. The channel
// is closed only when ctx is done.
//
// The stream breaks whenever dockerd restarts, and a container that dies
// while dockerd is down emits nothing, so events alone can never be trusted
// to be complete. Events therefore reconnects forever (exponential backoff
// with jitter, 100ms doubling to 5s) and sends an Event with Gap set as soon
// as each subscription — the first one included — is established: the
// consumer must then resync everything. Because the daemon registers the
// subscription before answering, a resync started on a Gap cannot miss a
// change. Each failure — a stream that breaks, an attempt that fails — is
// reported at once with an Event with Down set, so that the consumer does
// not go on believing Docker reachable until the stream is back.
//
// A "die", "pause" or "unpause" is held back until Docker has finished
// with the container (see settle), so that a list made on receiving it
// shows the change; it may therefore arrive after events that followed it.
func (c *Client) Events(ctx context.Context, instance string) <-chan Event {
	return c.events(ctx, instance, false)
}

// EventsWithExits is Events with each "die" also sent at once, Unsettled,
// before it is held back until Docker has finished with the container: a
// consumer that knows what a die means from the event itself (its
// ExitCode: a Job's pod ended) reacts without waiting for the inspect
// that settles it, and knows a list may still show the container running
// until the settled die follows (docs/design.md §17.1).
func (c *Client) EventsWithExits(ctx context.Context, instance string) <-chan Event {
	return c.events(ctx, instance, true)
}

// events is Events, with early: EventsWithExits.
func (c *Client) events(ctx context.Context, instance string, early bool) <-chan Event {
	out := make(chan Event, 64)
	go func() {
		defer close(out)
		c.watchEvents(ctx, instance, out, early)
	}()
	return out
}

func (c *Client) watchEvents(ctx context.Context, instance string, out chan<- Event, early bool) {
	// Events held back by pump: out is closed only once they are sent or
	// dropped (they give up when ctx is done).
	var held sync.WaitGroup
	defer held.Wait()
	args := filters.NewArgs(
		filters.Arg("type", string(events.ContainerEventType)),
		filters.Arg("label", LabelInstance+"="+instance),
	)
	for _, a := range watchedActions {
		args.Add("event", a)
	}
	send := func(ev Event) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}

	backoff := c.eventsMinBackoff
	var lastErr error // why the previous stream ended; nil before the first
	for ctx.Err() == nil {
		sctx, cancel := context.WithCancel(ctx)
		msgs, errs := c.api.Events(sctx, events.ListOptions{Filters: args})
		// The SDK returns only after the daemon answered (or failed to):
		// an error already queued means the subscription never started.
		var err error
		select {
		case err = <-errs:
		default:
		}
		if err == nil {
			if !send(Event{Gap: true, Err: lastErr, Time: time.Now()}) {
				cancel()
				return
			}
			connected := time.Now()
			err = c.pump(ctx, msgs, errs, send, &held, early)
			// A stream that lived a while was healthy: start backing off
			// from scratch next time.
			if time.Since(connected) > c.eventsMaxBackoff {
				backoff = c.eventsMinBackoff
			}
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		err = classify(err)
		if err == nil {
			err = errEventStreamClosed
		}
		lastErr = err
		// Say so now, not only when the stream is back: Docker may be
		// down, and a consumer that re-lists finds out at once (its
		// readiness must not wait for its next periodic resync).
		if !send(Event{Down: true, Err: err, Time: time.Now()}) {
			return
		}
		wait := jitter(backoff)
		c.log.Warn("docker event stream broken; reconnecting", "err", err, "retry_in", wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
		backoff = min(backoff*2, c.eventsMaxBackoff)
	}
}

// pump forwards messages until the stream fails or ends, returning why. An
// event to settle is sent by a goroutine of its own once settle returns,
// counted in held, so that the stream is never stalled behind one; with
// early, a die is also sent at once, Unsettled.
func (c *Client) pump(ctx context.Context, msgs <-chan events.Message, errs <-chan error, send func(Event) bool, held *sync.WaitGroup, early bool) error {
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				// The SDK never closes it, but a closed channel must not spin.
				msgs = nil
				continue
			}
			ev := fromMessage(m)
			if early && m.Action == events.ActionDie {
				now := ev
				now.Unsettled = true
				if !send(now) {
					return ctx.Err()
				}
			}
			if settledActions[m.Action] {
				held.Add(1)
				go func() {
					defer held.Done()
					c.settle(ctx, ev.ContainerID)
					if ctx.Err() == nil {
						send(ev)
					}
				}()
				continue
			}
			if !send(ev) {
				return ctx.Err()
			}
		case err, ok := <-errs:
			if !ok {
				return errEventStreamClosed
			}
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// settledActions are the events Engine 20.10 emits while it still holds
// the container's lock, before its list is updated: a list made on
// receiving one shows the container as it was (measured: running after
// die 30 times out of 30, running after pause and paused after unpause 10
// times out of 10; start and health_status are listed at once), and no
// later event comes to correct it. A controller reacting to one would see
// nothing to do: an exited container (a crash to restart, an init
// container's end that starts the next step) or a paused one would wait
// for the periodic resync.
var settledActions = map[events.Action]bool{events.ActionDie: true, events.ActionPause: true, events.ActionUnPause: true}

// settle returns once Docker has finished with a container's change of
// state: an inspect takes the container's lock, so a list made after it
// shows the change. Its answer is of no interest: a container removed
// meanwhile has nothing left to settle.
func (c *Client) settle(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	_, _ = c.api.ContainerInspect(ctx, id)
}

type eventStreamError string

func (e eventStreamError) Error() string { return string(e) }

const errEventStreamClosed = eventStreamError("event stream closed")

func fromMessage(m events.Message) Event {
	t := time.Unix(0, m.TimeNano)
	if m.TimeNano == 0 {
		t = time.Unix(m.Time, 0)
	}
	ev := Event{
		Action:      string(m.Action),
		ContainerID: m.Actor.ID,
		Name:        m.Actor.Attributes["name"],
		Deployment:  m.Actor.Attributes[LabelDeployment],
		Namespace:   ParseNamespace(m.Actor.Attributes, m.Actor.Attributes["name"]),
		Role:        m.Actor.Attributes[LabelRole],
		OwnerKind:   m.Actor.Attributes[LabelOwnerKind],
		Owner:       m.Actor.Attributes[LabelOwner],
		Time:        t,
	}
	if m.Action == events.ActionDie {
		// Docker sets it on every die; one unparsable is taken as a
		// failure, never as a success.
		code, err := strconv.Atoi(m.Actor.Attributes["exitCode"])
		if err != nil {
			code = -1
		}
		ev.ExitCode = code
	}
	return ev
}

// jitter spreads reconnects of several controllers over [d/2, d).
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}
