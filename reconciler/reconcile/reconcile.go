package reconcile

import (
	"context"
	"errors"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// Request names one object to reconcile, and nothing else: no event, no
// content (a sync re-reads what it needs, so a lost or merged request loses
// nothing). It is a comparable value: the work queue de-duplicates equal
// requests and never hands one to two workers at once.
//
// Key is the object's key in its kind's key space: "namespace/name" as
// client-go's cache.MetaNamespaceKeyFunc spells it (store.Key) —
// unambiguous, since neither part may contain "/" — or a key that can never
// be a name, for a whole-kind pass (the deployments' sweep key "*"). So
// Request stays one comparable string and every loop's de-duplication
// works unchanged.
type Request struct {
	Key string
}

// Result is what a successful Reconcile asks of the loop.
type Result struct {
	// RequeueAfter, when positive, syncs the key again after that delay
	// (e.g. when a backoff or a deadline ends), however many other events
	// queue it meanwhile. Zero: only the next event or resync does.
	RequeueAfter time.Duration
}

// Reconciler syncs one key of its kind. The loop calls it for one key at a
// time (never the same key twice at once), and:
//   - err == nil: RequeueAfter > 0 queues the key again after that delay
//     and resets its backoff; zero forgets it until the next event;
//   - err != nil: the Result is ignored and the key is retried with the
//     loop's per-key exponential backoff — unless err is (or wraps) a
//     TerminalError, which is logged and reported but not retried;
//   - a panic is recovered and becomes the key's error, retried with
//     backoff for that key alone while every other key keeps being synced.
type Reconciler interface {
	Reconcile(ctx context.Context, req Request) (Result, error)
}

// ReconcilerFunc is a function that is a Reconciler.
type ReconcilerFunc func(ctx context.Context, req Request) (Result, error)

// Reconcile implements Reconciler.
func (f ReconcilerFunc) Reconcile(ctx context.Context, req Request) (Result, error) {
	return f(ctx, req)
}

// TerminalError marks err as one that retrying cannot fix (an input that is
// wrong until someone changes it; the change then queues the key again): the
// loop logs and reports it, and does not retry the key with backoff.
// Unlike controller-runtime's, TerminalError(nil) is nil, so that
// `return Result{}, TerminalError(err)` is a success when err is nil; test
// with IsTerminal rather than errors.Is(err, TerminalError(nil)).
func TerminalError(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}

// IsTerminal reports whether err is, or wraps, a TerminalError.
func IsTerminal(err error) bool {
	var te *terminalError
	return errors.As(err, &te)
}

type terminalError struct{ err error }

func (e *terminalError) Error() string { return "terminal error: " + e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

// OwnerMapper maps a child's event to the keys of its parents, the objects
// whose sync must look at it again (e.g. a container's event to its
// deployment's key). It only reads the event: state an event changes (the
// daemon is down, the stream had a gap) is the loop owner's business, not
// its mapper's. No key means nothing to sync.
type OwnerMapper func(ev dockerx.Event) []Request
