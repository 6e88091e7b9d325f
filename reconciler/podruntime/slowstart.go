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
			err := Guard("", func() error { return fn(op) })
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
