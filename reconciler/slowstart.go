package reconciler

import (
	"fmt"
	"sync"

	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// guarded runs fn(op), turning a panic into that op's error: a goroutine of
// an executor cannot be recovered by the sync that started it, and one bad
// operation must not take the whole controller down.
func guarded(fn func(Op) error, op Op) error {
	return podruntime.Guard(fmt.Sprintf("%s %s", op.Kind, op.Name), func() error { return fn(op) })
}

// slowStart runs fn for each op with a concurrency window that starts at 1
// and grows by one with every success, up to limit — 1, 2, 4, … in flight,
// like TCP slow start, with no barrier between rounds. The first failure
// stops new launches: a broken image or a full disk costs a handful of
// Docker calls, while a healthy scale-up soon runs at the engine's
// throughput. It returns the errors of the ops that ran and failed.
func slowStart(ops []Op, limit int, fn func(Op) error) []error {
	errs, _ := slowStartFrom(ops, limit, 1, fn)
	return errs
}

// slowStartFrom is slowStart with a window that starts at start (a later
// wave of creates of one plan — a pod's members after their holders —
// carries on where the previous one got, instead of ramping up again). It
// also returns the window reached.
func slowStartFrom(ops []Op, limit, start int, fn func(Op) error) ([]error, int) {
	if limit < 1 {
		limit = 1
	}
	var (
		mu       sync.Mutex
		cond     = sync.NewCond(&mu)
		window   = min(max(start, 1), limit)
		inFlight = 0
		failed   bool
		errs     []error
		wg       sync.WaitGroup
	)
	for _, op := range ops {
		mu.Lock()
		for inFlight >= window && !failed {
			cond.Wait()
		}
		if failed {
			mu.Unlock()
			break
		}
		inFlight++
		mu.Unlock()

		wg.Add(1)
		go func(op Op) {
			defer wg.Done()
			err := guarded(fn, op)
			mu.Lock()
			inFlight--
			if err != nil {
				failed = true
				errs = append(errs, err)
			} else if window < limit {
				window++
			}
			cond.Broadcast()
			mu.Unlock()
		}(op)
	}
	wg.Wait()
	return errs, window
}

// parallel runs fn for each op, at most limit at a time, and returns every
// error. Unlike creates, removals and starts are not throttled by slow start:
// each touches an existing container, so one failure says nothing about the
// next.
func parallel(ops []Op, limit int, fn func(Op) error) []error {
	if limit < 1 {
		limit = 1
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, limit)
	)
	for _, op := range ops {
		wg.Add(1)
		sem <- struct{}{}
		go func(op Op) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := guarded(fn, op); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}(op)
	}
	wg.Wait()
	return errs
}
