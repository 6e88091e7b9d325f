package podruntime

import "sync"

// SlowStart runs fn for each op with a concurrency window that starts at
// start (1 for a first wave) and grows by one with every success, up to limit — 1, 2, 4, … in flight,
// like TCP slow start, with no barrier between rounds. The first failure
// stops new launches: a broken image or a full disk costs a handful of
// Docker calls, while a healthy scale-up soon runs at the engine's
// throughput. It returns the errors of the ops that ran and failed.
//
// A later wave of creates of one plan (a pod's members after their
// holders) passes the window the previous one reached, which SlowStart
// also returns, instead of ramping up again. Each fn runs in a goroutine of its own, guarded (Guard): a
// caller that wants its panics named wraps fn in its own Guard.
func SlowStart[T any](ops []T, limit, start int, fn func(T) error) ([]error, int) {
	return windowed(ops, limit, start, fn, nil, func(w int) int { return w + 1 })
}

// Parallel runs fn for each op, at most limit at a time, and returns every
// error. Unlike creates, removals and starts are not throttled by slow start:
// each touches an existing container, so one failure says nothing about the
// next.
func Parallel[T any](ops []T, limit int, fn func(T) error) []error {
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
		go func(op T) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := Guard("", func() error { return fn(op) }); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}(op)
	}
	wg.Wait()
	return errs
}

// OpenStart runs create and then, when it succeeded, start for each op, at
// most limit ops at a time (an op holds its place until its start
// returned). Like SlowStart it launches start ops first (1 for a first
// wave) and the first refused create stops new launches; unlike it, the
// first create that succeeds opens the window to limit at once, instead
// of one more per success. Kubernetes' Job controller creates a Job's pods
// in slow-start batches (1, 2, 4, …) only so that a refused create stops
// the rest early (pkg/controller/job, slowStartBatch): one create answered
// already rules out the quota or admission refusal that would refuse them
// all, while waiting for its start and for each next round cost a first
// wave of ten pods four rounds of a create and a start (docs/design.md
// §17.1). It returns the errors of the creates that failed and the window
// reached: limit once a create succeeded with none refused.
func OpenStart[T any](ops []T, limit, start int, create func(T) error, then func(T)) ([]error, int) {
	errs, window := windowed(ops, limit, start, create, then, func(int) int { return limit })
	if len(errs) > 0 {
		return errs, 1
	}
	return errs, window
}

// windowed runs first for each op, then (when set and first succeeded)
// then, with at most window ops in flight: window starts at start and
// each success of first makes it grow(window), up to limit; an op holds
// its place until its then returned. The first failure stops new
// launches (SlowStart, OpenStart).
func windowed[T any](ops []T, limit, start int, first func(T) error, then func(T), grow func(int) int) ([]error, int) {
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
		go func(op T) {
			defer wg.Done()
			err := Guard("", func() error { return first(op) })
			mu.Lock()
			if err != nil {
				failed = true
				errs = append(errs, err)
			} else {
				window = min(grow(window), limit)
			}
			if err == nil && then != nil {
				cond.Broadcast()
				mu.Unlock()
				_ = Guard("", func() error { then(op); return nil })
				mu.Lock()
			}
			inFlight--
			cond.Broadcast()
			mu.Unlock()
		}(op)
	}
	wg.Wait()
	return errs, window
}
