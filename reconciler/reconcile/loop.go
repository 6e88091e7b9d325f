package reconcile

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// Config describes one kind's loop. Zero values take the defaults.
type Config struct {
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

// Loop runs one kind's Reconciler: a rate-limited work queue of Requests,
// fed by the kind's sources (Add, AddAfter, AddRateLimited), drained by
// Workers goroutines (Start) until ShutDown. This is the one place that
// decides what a Reconcile's answer means (see Reconciler), so that every
// kind gets the same de-duplication, backoff and panic handling.
type Loop struct {
	cfg   Config
	r     Reconciler
	queue workqueue.TypedRateLimitingInterface[Request]
	wg    sync.WaitGroup
}

// NewLoop returns a Loop for r. Its queue accepts keys at once; nothing is
// synced before Start.
func NewLoop(r Reconciler, cfg Config) *Loop {
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
	return &Loop{
		cfg: cfg,
		r:   r,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(cfg.RateLimiter,
			workqueue.TypedRateLimitingQueueConfig[Request]{Name: cfg.Name, MetricsProvider: cfg.Metrics}),
	}
}

// Add queues req for a sync now (merged with a pending one).
func (l *Loop) Add(req Request) { l.queue.Add(req) }

// AddAfter queues req for a sync after d.
func (l *Loop) AddAfter(req Request, d time.Duration) { l.queue.AddAfter(req, d) }

// AddRateLimited queues req after its next backoff delay: for a source
// that knows a key's last attempt failed outside the loop (e.g. a stop).
func (l *Loop) AddRateLimited(req Request) { l.queue.AddRateLimited(req) }

// Start runs the workers. ctx is every sync's context: cancelling it cuts
// in-flight syncs short, but only ShutDown stops the workers.
func (l *Loop) Start(ctx context.Context) {
	for i := 0; i < l.cfg.Workers; i++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for l.processNext(ctx) {
			}
		}()
	}
}

// ShutDown stops taking keys and returns once the workers have finished
// what was queued and in flight. Requeues asked for meanwhile are dropped.
func (l *Loop) ShutDown() {
	l.queue.ShutDownWithDrain()
	l.wg.Wait()
}

// Queued takes the keys waiting in the queue, in order, out of it. It is
// for a test of a Loop that was never started, to see what its sources
// queued: on a running Loop it would steal keys from the workers.
func (l *Loop) Queued() []Request {
	var reqs []Request
	for l.queue.Len() > 0 {
		req, _ := l.queue.Get()
		reqs = append(reqs, req)
		l.queue.Done(req)
		l.queue.Forget(req)
	}
	return reqs
}

func (l *Loop) processNext(ctx context.Context) bool {
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
func (l *Loop) reconcile(ctx context.Context, req Request) (res Result, err error) {
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
