package reconciler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/dockctl/dockctl/dockerx"
)

// The reconcile contract every kind's loop follows, as controller-runtime's
// pkg/reconcile defines it: sources only queue keys; a Reconciler syncs one
// key from scratch; the loop decides from its answer whether and when the
// key comes back.

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

// loopConfig describes one kind's loop. Zero values take the defaults.
type loopConfig struct {
	// Name names the work queue in metrics (e.g. "deployments").
	Name string
	// KeyAttr is the log attribute that names a key (e.g. "deployment").
	KeyAttr string
	// Workers is how many keys are synced in parallel (default 1).
	Workers int
	// RateLimiter times a failed key's retries; default: per key, 200ms
	// doubling up to 1m.
	RateLimiter workqueue.TypedRateLimiter[Request]
	// Metrics, when set, receives the work queue's metrics.
	Metrics workqueue.MetricsProvider
	// Done, when set, is told every sync's outcome (after panic recovery),
	// for metrics. It must be cheap and must not block.
	Done func(req Request, took time.Duration, err error)
	Log  *slog.Logger
}

// loop runs one kind's Reconciler: a rate-limited work queue of Requests,
// fed by the kind's sources (Add, AddAfter, AddRateLimited), drained by
// Workers goroutines (start) until shutDown. This is the one place that
// decides what a Reconcile's answer means (see Reconciler), so that every
// kind gets the same de-duplication, backoff and panic handling.
type loop struct {
	cfg   loopConfig
	r     Reconciler
	queue workqueue.TypedRateLimitingInterface[Request]
	wg    sync.WaitGroup
}

// newLoop returns a loop for r. Its queue accepts keys at once; nothing is
// synced before start.
func newLoop(r Reconciler, cfg loopConfig) *loop {
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.KeyAttr == "" {
		cfg.KeyAttr = "key"
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.RateLimiter == nil {
		cfg.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[Request](200*time.Millisecond, time.Minute)
	}
	return &loop{
		cfg: cfg,
		r:   r,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(cfg.RateLimiter,
			workqueue.TypedRateLimitingQueueConfig[Request]{Name: cfg.Name, MetricsProvider: cfg.Metrics}),
	}
}

// Add queues req for a sync now (merged with a pending one).
func (l *loop) Add(req Request) { l.queue.Add(req) }

// AddAfter queues req for a sync after d.
func (l *loop) AddAfter(req Request, d time.Duration) { l.queue.AddAfter(req, d) }

// AddRateLimited queues req after its next backoff delay: for a source
// that knows a key's last attempt failed outside the loop (e.g. a stop).
func (l *loop) AddRateLimited(req Request) { l.queue.AddRateLimited(req) }

// start runs the workers. ctx is every sync's context: cancelling it cuts
// in-flight syncs short, but only shutDown stops the workers.
func (l *loop) start(ctx context.Context) {
	for i := 0; i < l.cfg.Workers; i++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for l.processNext(ctx) {
			}
		}()
	}
}

// shutDown stops taking keys and returns once the workers have finished
// what was queued and in flight. Requeues asked for meanwhile are dropped.
func (l *loop) shutDown() {
	l.queue.ShutDownWithDrain()
	l.wg.Wait()
}

func (l *loop) processNext(ctx context.Context) bool {
	req, shutdown := l.queue.Get()
	if shutdown {
		return false
	}
	defer l.queue.Done(req)

	res, err := l.reconcile(ctx, req)
	switch {
	case err != nil && IsTerminal(err):
		// Retrying cannot help: the key waits for its next event, with
		// its backoff reset.
		l.cfg.Log.Error("sync failed; not retried", l.cfg.KeyAttr, req.Key, "err", err)
		l.queue.Forget(req)
	case err != nil:
		l.cfg.Log.Error("sync failed; retrying with backoff", l.cfg.KeyAttr, req.Key, "err", err)
		l.queue.AddRateLimited(req)
	case res.RequeueAfter > 0:
		l.queue.Forget(req)
		l.queue.AddAfter(req, res.RequeueAfter)
	default:
		l.queue.Forget(req)
	}
	return true
}

// reconcile runs one sync of req. A panic in it (a bug, or an input no
// check foresaw) is recovered and becomes that key's error, so that it is
// backed off alone while every other key keeps being reconciled.
func (l *loop) reconcile(ctx context.Context, req Request) (res Result, err error) {
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			l.cfg.Log.Error("sync panicked; retrying it with backoff", l.cfg.KeyAttr, req.Key, "panic", r, "stack", string(debug.Stack()))
			res, err = Result{}, fmt.Errorf("sync of %s panicked: %v", req.Key, r)
		}
		if l.cfg.Done != nil {
			l.cfg.Done(req, time.Since(start), err)
		}
	}()
	return l.r.Reconcile(ctx, req)
}
