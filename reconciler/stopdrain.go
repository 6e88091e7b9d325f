package reconciler

import (
	"context"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/podruntime"
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

// stopDeadline is when a stop begun now kills its container at the
// latest: its drain's bound, then its grace period; or the op's Deadline,
// for a stop in flight shortened.
func stopDeadline(op Op, now time.Time) time.Time {
	if !op.Deadline.IsZero() {
		return op.Deadline
	}
	if op.Drain != nil {
		now = now.Add(drainBound(op.Grace))
	}
	if op.hasPreStop() {
		now = now.Add(minPodGrace) // the least grace a preStop hook leaves
	}
	return now.Add(op.Grace)
}

// setDrains marks the graceful stops of running pods with the pod to
// drain: a replica's removal or liveness restart, a pod's removal (any of
// its containers running), and a member's liveness restart (its pod
// drains: a container restarting makes its pod not ready, as in
// Kubernetes).
func (in PlanInput) setDrains(ops []Op) {
	if !in.DrainPods {
		return
	}
	var units map[string]*dockerx.Container
	var podOf map[string]*podruntime.Pod // member or holder ID → pod
	for i := range ops {
		op := &ops[i]
		if op.Grace <= 0 || (op.Kind != OpRemove && op.Kind != OpRestart) {
			continue // not a graceful stop: nothing runs long enough to drain
		}
		if p := in.Pods[op.ContainerID]; p != nil {
			if podServing(p) {
				op.Drain = &DrainRef{Namespace: in.namespace(), Pod: p.Name}
			}
			continue
		}
		if units == nil {
			units = make(map[string]*dockerx.Container, len(in.Containers))
			for j := range in.Containers {
				units[in.Containers[j].ID] = &in.Containers[j]
			}
		}
		if c := units[op.ContainerID]; c != nil {
			if c.State == dockerx.StateRunning {
				op.Drain = &DrainRef{Namespace: in.namespace(), Pod: podName(c.Deployment, c)}
			}
			continue
		}
		if podOf == nil {
			podOf = map[string]*podruntime.Pod{}
			for _, p := range in.Pods {
				for _, c := range p.Containers() {
					podOf[c.ID] = p
				}
			}
		}
		if p := podOf[op.ContainerID]; p != nil && podServing(p) {
			op.Drain = &DrainRef{Namespace: in.namespace(), Pod: p.Name}
		}
	}
}

// podServing reports whether any container of a holder pod runs.
func podServing(p *podruntime.Pod) bool {
	for _, c := range p.Containers() {
		if c.State == dockerx.StateRunning {
			return true
		}
	}
	return false
}

// drain takes op's pod out of the Services' endpoints, bounded, and
// reports whether the stop may go on (false: the controller is stopping,
// and the stop is abandoned as any stop in flight is). A failed or
// timed-out drain is logged; the stop proceeds.
func (s *stopper) drain(op Op) bool {
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
		done <- guarded(func(op Op) error { return s.drainer.Drain(ctx, op.Drain.Namespace, op.Drain.Pod) }, op)
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
