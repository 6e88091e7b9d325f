package reconciler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// Lifecycle hooks, as kubelet runs them (pkg/kubelet/lifecycle).
//
// postStart runs once per run of a container, after its start, before its
// startup, readiness and liveness probes begin; until it has run the
// container is not ready. It is run by the container's probe worker (so
// never in a sync's worker), once per start: a worker made again for the
// same run (after a pause, say) does not run it twice, and a container
// that started before this controller did is taken as having run it (a
// controller restarted mid-hook does not run it again, as a restarted
// kubelet). A hook that fails, or does not end within maxPostStart, kills
// the container as kubelet's FailedPostStartHook does: it is restarted
// (preStop, stop signal, backoff) as after a failed liveness probe.
//
// preStop runs in the stopper (stopper.go), after the pod left its
// Services (stopdrain.go) and before the stop signal, within the stop's
// grace period: what it used is taken from the grace left for the
// signal, which keeps at least minPodGrace, as kubelet's
// minimumGracePeriodInSeconds. A failed preStop hook is logged (kubelet's
// FailedPreStopHook event); the stop goes on. It runs for every graceful
// stop of a running container: scale-down, rollout, deletion, liveness
// restart.
//
// exec runs in the container through the exec API; httpGet and tcpSocket
// go where probes go — directly, or relayed through the DNS helper
// (route.go) — to the pod's address; sleep waits. A tcpSocket hook, which
// Kubernetes keeps only for compatibility (and fails at run time), is a
// connection to the port, as a tcpSocket probe.

// maxPostStart bounds a postStart hook (kubelet sets none: its pod worker
// waits; here a hook that never ends must not hold the container unready
// forever).
const maxPostStart = 2 * time.Minute

// Hook is a lifecycle handler to run against one container.
type Hook struct {
	Handler *manifests.LifecycleHandler
	// ID is the container (exec runs there), Name its name for logs;
	// NetOwner the container whose address httpGet and tcpSocket go to
	// (the container, or its pod's holder); Ports its template's ports.
	ID, Name string
	NetOwner string
	Ports    []manifests.ContainerPort
	// Pod is the pod a failure's event is about (FailedPreStopHook).
	Pod store.InvolvedObject
}

// hookRunner runs a hook within ctx; the stopper's is the prober.
type hookRunner interface {
	runHook(ctx context.Context, h Hook) error
}

var _ hookRunner = (*prober)(nil)

// runHook runs h until it ends, fails or ctx ends.
func (p *prober) runHook(ctx context.Context, h Hook) error {
	hd := h.Handler
	if hd == nil {
		return nil
	}
	timeout := time.Duration(math.MaxInt64)
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	switch {
	case hd.Exec != nil:
		code, err := p.docker.Exec(ctx, h.ID, hd.Exec.Command, max(timeout, time.Second))
		if err != nil {
			return fmt.Errorf("exec %s: %w", strings.Join(hd.Exec.Command, " "), err)
		}
		if code != 0 {
			return fmt.Errorf("exec %s: exited %d", strings.Join(hd.Exec.Command, " "), code)
		}
		return nil
	case hd.Sleep != nil:
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.clock.After(time.Duration(hd.Sleep.Seconds) * time.Second):
			return nil
		}
	case hd.HTTPGet != nil || hd.TCPSocket != nil:
		t := probeTarget{ContainerID: h.ID, Ports: h.Ports, netOwner: h.NetOwner}
		if t.netOwner == "" {
			t.netOwner = h.ID
		}
		if err := p.locate(ctx, &t); err != nil {
			return fmt.Errorf("locate %s: %w", h.Name, err)
		}
		secs := int32(min(math.Ceil(timeout.Seconds()), math.MaxInt32))
		return p.runner.Run(ctx, t, &manifests.Probe{HTTPGet: hd.HTTPGet, TCPSocket: hd.TCPSocket, TimeoutSeconds: max(secs, 1)})
	}
	return fmt.Errorf("hook has no handler")
}

// postStart runs a container's postStart hook once for its current run
// (true: run, or not this controller's to run; false: it failed, and the
// container is marked for a restart, or ctx ended).
func (p *prober) postStart(ctx context.Context, w *probeWorker, t probeTarget, name string, h *manifests.LifecycleHandler) bool {
	det, err := p.docker.InspectContainer(ctx, t.ContainerID)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("postStart: cannot inspect container", "container", name, "err", err)
			p.retire(t.ContainerID, w) // a new worker tries again
		}
		return false
	}
	if !det.StartedAt.IsZero() && det.StartedAt.Before(p.born) {
		return true // a run an earlier controller started, and hooked
	}
	p.mu.Lock()
	last, seen := p.hooked[t.ContainerID]
	if !seen || !last.started.Equal(det.StartedAt) {
		last = hookRun{started: det.StartedAt}
	}
	if last.outcome == hookRunning {
		p.hooked[t.ContainerID] = last
	}
	p.mu.Unlock()
	switch last.outcome {
	case hookSucceeded:
		return true
	case hookFailed:
		// A new worker of the same run (the first was dropped, say by a
		// pause): the run stays failed, and is restarted.
		p.fail(w, name, "postStart hook failed (FailedPostStartHook): the container is restarted")
		return false
	}
	// Running: not run yet, or its worker was dropped before the hook
	// ended — run (again) to its end, as readiness waits for it.
	outcome := func(o hookOutcome) {
		p.mu.Lock()
		if cur, ok := p.hooked[t.ContainerID]; ok && cur.started.Equal(det.StartedAt) {
			p.hooked[t.ContainerID] = hookRun{started: det.StartedAt, outcome: o}
		}
		p.mu.Unlock()
	}
	hctx, cancel := context.WithTimeout(ctx, maxPostStart)
	defer cancel()
	start := time.Now()
	for {
		err = p.runHook(hctx, Hook{Handler: h, ID: t.ContainerID, Name: name, NetOwner: t.netOwner, Ports: t.Ports})
		if !errors.Is(err, errNoVerdict) || hctx.Err() != nil {
			break
		}
		// Not run (the probe relay is missing): tried again, not failed.
		select {
		case <-hctx.Done():
		case <-p.clock.After(time.Second):
		}
	}
	if ctx.Err() != nil {
		return false // dropped: the next worker of this run runs it
	}
	if err != nil {
		outcome(hookFailed)
		Eventf(p.events, t.ref, store.EventWarning, "FailedPostStartHook", "PostStartHook failed: %v", err)
		p.fail(w, name, "postStart hook failed (FailedPostStartHook): the container is restarted")
		p.log.Warn("postStart hook error", "container", name, "err", err)
		return false
	}
	outcome(hookSucceeded)
	p.log.Info("postStart hook ran", "container", name, "took", time.Since(start))
	return true
}

// hookRun is where a container's postStart hook stands for one run of it
// (the run that started at started): a worker dropped while its hook runs
// leaves it running, so that the next worker of that run runs it to its
// end before readiness, and a failure stays one for the run.
type hookRun struct {
	started time.Time
	outcome hookOutcome
}

type hookOutcome int

const (
	hookRunning hookOutcome = iota
	hookSucceeded
	hookFailed
)

// preStop runs op's (or a pod target's) preStop hook, bounded by grace
// and by a shortening of job's deadline, and returns the grace left for
// the stop signal: at least minPodGrace (stopContainer holds it to a
// shortened deadline).
func (s *stopper) preStop(job string, h *Hook, grace time.Duration) time.Duration {
	if h == nil || s.hooks == nil || grace <= 0 {
		return grace
	}
	jctx, _ := s.wait(job, 0)
	ctx, cancel := context.WithTimeout(jctx, grace)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		done <- guarded(func(Op) error { return s.hooks.runHook(ctx, *h) }, Op{})
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	took := time.Since(start)
	switch {
	case s.ctx.Err() != nil:
	case err != nil && jctx.Err() != nil:
		s.log.Info("preStop hook cut short: the stop's deadline was shortened", "container", h.Name, "took", took)
	case err != nil:
		s.log.Warn("preStop hook failed (FailedPreStopHook); stopping anyway", "container", h.Name, "took", took, "err", err)
		if s.events != nil {
			Eventf(s.events, h.Pod, store.EventWarning, "FailedPreStopHook", "PreStopHook failed: %v", err)
		}
	default:
		s.log.Info("preStop hook ran", "container", h.Name, "took", took)
	}
	return max(grace-took, minPodGrace)
}

// hasPreStop reports whether a stop runs a preStop hook (its deadline
// allows for the least grace left after it).
func (o Op) hasPreStop() bool {
	if o.PreStop != nil {
		return true
	}
	for _, ph := range o.Phases {
		for _, t := range ph {
			if t.PreStop != nil {
				return true
			}
		}
	}
	return false
}

// setPreStops gives the graceful stops of running containers their
// template container's preStop hook: a replica's removal or restart, each
// running member of a pod's removal, a member's restart.
//
// A stop that an earlier run of the controller began (ReasonTerminating)
// runs its hook again: the controller cannot tell whether the hook ran
// (it may have stopped before, during or after it), and Kubernetes
// delivers hooks at least once, as a restarted kubelet kills a pod again.
// The resumed stop's grace is what the recorded deadline leaves.
func (in PlanInput) setPreStops(ops []Op) {
	var units map[string]*dockerx.Container
	var podOf map[string]*podruntime.Pod
	hook := func(c *dockerx.Container, netOwner string) *Hook {
		if c == nil || c.State != dockerx.StateRunning {
			return nil
		}
		tc := podruntime.TemplateContainer(in.templateOf(c.TemplateHash), c)
		if tc == nil || tc.Lifecycle == nil || tc.Lifecycle.PreStop == nil {
			return nil
		}
		return &Hook{Handler: tc.Lifecycle.PreStop, ID: c.ID, Name: c.Name, NetOwner: netOwner, Ports: tc.Ports,
			Pod: containerPodRef(in.namespace(), in.Name, c)}
	}
	holderOf := func(p *podruntime.Pod, c *dockerx.Container) string {
		if p.Holder != nil {
			return p.Holder.ID
		}
		return c.ID
	}
	for i := range ops {
		op := &ops[i]
		if op.Grace <= 0 || (op.Kind != OpRemove && op.Kind != OpRestart) {
			continue
		}
		if p := in.Pods[op.ContainerID]; p != nil {
			for _, ph := range op.Phases {
				for j := range ph {
					t := &ph[j]
					if t.Holder {
						continue
					}
					for _, c := range p.Containers() {
						if c.ID == t.ID {
							t.PreStop = hook(c, holderOf(p, c))
						}
					}
				}
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
			op.PreStop = hook(c, c.ID)
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
		if p := podOf[op.ContainerID]; p != nil {
			for _, c := range p.Containers() {
				if c.ID == op.ContainerID {
					op.PreStop = hook(c, holderOf(p, c))
				}
			}
		}
	}
}
