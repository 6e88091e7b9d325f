package podruntime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/dockctl/dockctl/manifests"
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
// preStop runs in the stopper (package reconciler's stopper.go, with
// RunHook), after the pod left its Services (stopdrain.go there) and before the stop signal, within the stop's
// grace period: what it used is taken from the grace left for the
// signal, which keeps at least minPodGrace, as kubelet's
// minimumGracePeriodInSeconds. A failed preStop hook is logged (kubelet's
// FailedPreStopHook event); the stop goes on. It runs for every graceful
// stop of a running container: scale-down, rollout, deletion, liveness
// restart.
//
// exec runs in the container through the exec API; httpGet and tcpSocket
// go where probes go — through the ProbeRunner: directly, or relayed
// through the DNS helper (package reconciler's route.go) — to the pod's
// address; sleep waits. A tcpSocket hook, which
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

// RunHook runs h until it ends, fails or ctx ends (the stopper runs
// preStop hooks with it).
func (p *Prober) RunHook(ctx context.Context, h Hook) error {
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
		t := ProbeTarget{ContainerID: h.ID, Ports: h.Ports, netOwner: h.NetOwner}
		if t.netOwner == "" {
			t.netOwner = h.ID
		}
		if err := p.locate(ctx, &t); err != nil {
			return fmt.Errorf("locate %s: %w", h.Name, err)
		}
		secs := int32(min(math.Ceil(timeout.Seconds()), math.MaxInt32))
		return p.probeRunner().Run(ctx, t, &manifests.Probe{HTTPGet: hd.HTTPGet, TCPSocket: hd.TCPSocket, TimeoutSeconds: max(secs, 1)})
	}
	return fmt.Errorf("hook has no handler")
}

// postStart runs a container's postStart hook once for its current run
// (true: run, or not this controller's to run; false: it failed, and the
// container is marked for a restart, or ctx ended).
func (p *Prober) postStart(ctx context.Context, w *probeWorker, t ProbeTarget, name string, h *manifests.LifecycleHandler) bool {
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
		err = p.RunHook(hctx, Hook{Handler: h, ID: t.ContainerID, Name: name, NetOwner: t.netOwner, Ports: t.Ports})
		if !errors.Is(err, ErrNoVerdict) || hctx.Err() != nil {
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
		p.events.Event(t.ref, store.EventWarning, "FailedPostStartHook", fmt.Sprintf("PostStartHook failed: %v", err))
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
