package podruntime

import (
	"context"

	"github.com/dockctl/dockctl/manifests"
)

// Startup probes, as kubelet runs them: while a container's startupProbe
// has not succeeded, its readiness and liveness probes do not run and it
// is not ready; once it succeeds it runs no more (for this run of the
// container), and the other probes begin. failureThreshold failures in a
// row restart the container, as a failed liveness probe does (the planner
// sees it as LivenessFailed, and the stopper restarts it after draining
// and its preStop hook). A controller that starts again runs the startup
// probe of a running container again: it knows no verdict of the previous
// one, and until it succeeds the container's recorded readiness stands (a
// first worker's rule, see probeWorker.judged).

// startup runs the startup probe until it succeeds (true) or reaches its
// failureThreshold (false: the container is marked not alive, to be
// restarted) or ctx ends (false).
func (p *Prober) startup(ctx context.Context, w *probeWorker, t ProbeTarget, name string, pr *manifests.Probe) bool {
	started := false
	p.loop(ctx, t, "Startup", pr, func(ok bool) bool {
		if ok {
			started = true
			p.log.Info("startup probe succeeded", "container", name)
		} else {
			p.fail(w, name, "startup probe failed")
		}
		return false // either way, the startup probe is done
	})
	return started && ctx.Err() == nil
}

// fail marks the worker's container not alive (to be restarted) and tells
// its owner, once.
func (p *Prober) fail(w *probeWorker, name, why string) {
	w.mu.Lock()
	changed := w.alive
	w.alive = false
	if w.ready != nil {
		// Not ready either: it is going to be restarted.
		*w.ready, w.judged = false, true
	}
	w.mu.Unlock()
	if changed {
		p.log.Warn(why, "container", name)
		p.notify(w.owner)
	}
}
