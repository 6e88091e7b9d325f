package podruntime

import (
	"context"
	"fmt"
	"time"
)

// Drain before stop (docs/design.md §8, §10): a pod leaves the endpoints of
// every Service, and the data plane has acknowledged it, before its graceful
// stop begins — for a scale-down, a rollout, a deletion and a liveness
// restart alike, since each of them is a graceful stop carried out by the
// stopper. The planner says which stops drain (setDrains, pure); the stopper
// calls the Drainer in the stop's own goroutine, never in a worker, bounded
// by maxDrain and by the stop's grace period: a Service data plane that does
// not answer delays a stop, it never blocks one. A stop of a container that
// is not running drains nothing: it serves no traffic.

// DrainRef names the pod a stop drains first.
type DrainRef struct {
	Namespace string
	Pod       string // the pod's name, as `get pods` shows it (its hostname)
}

// maxDrain bounds a drain: min(maxDrain, the stop's grace period).
const maxDrain = 10 * time.Second

// drainBound is how long a stop with this grace waits for its drain.
func drainBound(grace time.Duration) time.Duration {
	return min(maxDrain, max(grace, 0))
}

// StopDeadline is when a stop begun now kills its container at the
// latest: its drain's bound, then its grace period; or the op's Deadline,
// for a stop in flight shortened.
func StopDeadline(op StopRequest, now time.Time) time.Time {
	if !op.Deadline.IsZero() {
		return op.Deadline
	}
	if op.Drain != nil {
		now = now.Add(drainBound(op.Grace))
	}
	if op.hasPreStop() {
		now = now.Add(MinPodGrace) // the least grace a preStop hook leaves
	}
	return now.Add(op.Grace)
}

// drain takes op's pod out of the Services' endpoints, bounded, and
// reports whether the stop may go on (false: the controller is stopping,
// and the stop is abandoned as any stop in flight is). A failed or
// timed-out drain is logged; the stop proceeds.
func (s *Stopper) drain(op StopRequest) bool {
	if op.Drain == nil || s.drainer == nil {
		return true
	}
	bound := drainBound(op.Grace)
	job, _ := s.wait(op.ContainerID, 0)
	ctx, cancel := context.WithTimeout(job, bound)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		// Its own goroutine: a Drainer that ignores its context cannot
		// hold the stop past the bound (it is left to return on its own).
		done <- Guard(fmt.Sprintf("%s %s", op.Kind, op.Name), func() error { return s.drainer.Drain(ctx, op.Drain.Namespace, op.Drain.Pod) })
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	switch {
	case s.ctx.Err() != nil:
		return false
	case err != nil && job.Err() != nil:
		s.log.Info("drain cut short: the stop's deadline was shortened", "pod", op.Drain.Pod, "namespace", op.Drain.Namespace, "took", time.Since(start))
		return true
	case err != nil:
		s.log.Warn("drain before stop failed; stopping anyway", "pod", op.Drain.Pod, "namespace", op.Drain.Namespace,
			"container", op.Name, "bound", bound, "took", time.Since(start), "err", err)
		return true
	}
	s.log.Info("drained before stop", "pod", op.Drain.Pod, "namespace", op.Drain.Namespace, "took", time.Since(start))
	return true
}
