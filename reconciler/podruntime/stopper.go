package podruntime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/store"
)

// Stopper carries out graceful stops (docs/design.md §8, Graceful stop)
// outside the workers. Docker's stop call blocks until the container exits
// or its grace period ends; made by a worker it would hold that worker for
// up to the grace period and, with a few such containers, starve every other
// owner. Each stop gets a goroutine of its own instead: it mostly
// waits on Docker, and one container that ignores its stop signal then
// delays nothing but its own removal. It names an owner by the string its
// controller queues (the Deployment controller: "namespace/name").
type Stopper struct {
	docker StopDocker
	log    *slog.Logger
	// events records a failed preStop hook; nil records none.
	events Recorder
	// drainer takes a pod out of the Services' endpoints before its stop
	// (stopdrain.go); nil: nothing to drain.
	drainer Drainer
	// hooks runs preStop hooks (the Prober); nil: none run.
	hooks HookRunner
	// done is called when a job ends (err nil on success), to queue its
	// owner again: the container is gone, or restarted.
	done func(owner string, err error)
	// restarted is called once a liveness restart has started the
	// container again, before done: its new run needs fresh probes.
	restarted func(id string)

	// ctx ends when the controller stops. Jobs are abandoned then, not
	// finished: the stop signal was sent, and the deadline recorded in
	// the status file lets the next controller resume (kill when it has
	// passed) rather than count the container as a live replica again.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	inflight map[string]stopJob // by container ID
	// finished holds jobs that ended after their owner's last list
	// began: that list may show the container mid-job (a restart's
	// container exited), so it stays "in flight" for the planner until a
	// list taken after the end consumes it. seq numbers the endings;
	// listed is, per owner, seq when its last sync began to list.
	finished map[string]stopJob
	seq      uint64
	listed   map[string]uint64
}

type stopJob struct {
	owner    string
	kind     StopKind
	deadline time.Time // when the container is killed
	ended    uint64    // seq at its end, for finished jobs
	// shortened is set once a later sync moved the deadline earlier (a pod
	// deleted again with a shorter grace period: shorten); killAt is then
	// that deadline on this process's clock (deadline is the planner's,
	// Options.Now). ctx is what the job waits under (its drain, preStop
	// hooks, stop calls): a shortening ends it (cut) and gives the job a
	// fresh one, so that the job sends its stop again within the new
	// deadline.
	shortened bool
	killAt    time.Time
	ctx       context.Context
	cut       context.CancelFunc
}

// StopDocker is what the stopper needs of Docker.
type StopDocker interface {
	StopContainer(ctx context.Context, id string, timeout time.Duration) error
	RemoveContainer(ctx context.Context, id string) error
}

// HookRunner runs a lifecycle hook within ctx: the Prober (RunHook).
type HookRunner interface {
	RunHook(ctx context.Context, h Hook) error
}

var _ HookRunner = (*Prober)(nil)

// StopperConfig is what a Stopper is built from.
type StopperConfig struct {
	Docker StopDocker
	// Drainer takes a pod out of the Services before its stop signal
	// (nil: nothing to drain).
	Drainer Drainer
	// Hooks runs preStop hooks (nil: none run).
	Hooks HookRunner
	// Recorder records FailedPreStopHook (nil: none).
	Recorder Recorder
	// Done is called when a stop ends (err nil on success), to queue its
	// owner again: the container is gone, or restarted.
	Done func(owner string, err error)
	// Restarted is called once a liveness restart's container stopped,
	// before Done: its new run needs fresh probes (Prober.Forget).
	Restarted func(id string)
	Log       *slog.Logger
}

// NewStopper returns a Stopper with no stop in flight.
func NewStopper(cfg StopperConfig) *Stopper {
	ctx, cancel := context.WithCancel(context.Background())
	return &Stopper{docker: cfg.Docker, log: cfg.Log, drainer: cfg.Drainer, hooks: cfg.Hooks, events: cfg.Recorder, done: cfg.Done, restarted: cfg.Restarted,
		ctx: ctx, cancel: cancel, inflight: map[string]stopJob{}, finished: map[string]stopJob{}, listed: map[string]uint64{}}
}

// Drains reports whether the stopper has a Drainer: whether a workload
// controller should plan drains (StopRequest.Drain).
func (s *Stopper) Drains() bool { return s.drainer != nil }

// Guard runs fn and turns a panic into an error naming what, with the
// stack: a panic in a goroutine of the runtime (a stop, a drain, a hook)
// must never take the controller, and every owner, down.
func Guard(what string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s panicked: %v\n%s", what, r, debug.Stack())
		}
	}()
	return fn()
}

// Submit starts op (StopRemove or StopRestart) of an owner's container and
// returns at once. It is idempotent: a container whose job is in flight is
// not stopped twice, so a sync may plan the same removal again. An op with
// a Deadline only ever shortens the removal in flight (shorten); it starts
// none.
func (s *Stopper) Submit(owner string, op StopRequest, now time.Time) {
	s.mu.Lock()
	if job, busy := s.inflight[op.ContainerID]; busy || !op.Deadline.IsZero() || s.ctx.Err() != nil {
		if busy && !op.Deadline.IsZero() {
			s.shortenLocked(op, job, now)
		}
		s.mu.Unlock()
		return
	}
	ctx, cut := context.WithCancel(s.ctx)
	s.inflight[op.ContainerID] = stopJob{owner: owner, kind: op.Kind, deadline: StopDeadline(op, now), ctx: ctx, cut: cut}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		err := Guard(fmt.Sprintf("%s %s", op.Kind, op.Name), func() error { return s.run(op) }) // a panic here would take the controller down
		s.mu.Lock()
		job := s.inflight[op.ContainerID]
		job.cut()
		job.ctx, job.cut = nil, nil
		delete(s.inflight, op.ContainerID)
		s.seq++
		job.ended = s.seq
		s.finished[op.ContainerID] = job
		s.mu.Unlock()
		if s.ctx.Err() != nil {
			return // shutting down: the next controller resumes
		}
		if err != nil {
			s.log.Error("stop failed; the next sync retries", "owner", owner, "container", op.Name, "err", err)
		}
		s.done(owner, err)
	}()
}

// shortenLocked moves the kill of job, the removal op names, to
// op.Deadline when that is earlier — never later, as the kubelet only
// ever shortens a termination's grace period — and ends the job's current
// wait, so that it stops the container again within what is left. now is
// the planner's time of op. The caller holds mu.
func (s *Stopper) shortenLocked(op StopRequest, job stopJob, now time.Time) {
	if job.kind != StopRemove || !op.Deadline.Before(job.deadline) {
		return
	}
	job.deadline, job.shortened, job.killAt = op.Deadline, true, time.Now().Add(op.Deadline.Sub(now))
	job.cut()
	job.ctx, job.cut = context.WithCancel(s.ctx)
	s.inflight[op.ContainerID] = job
	s.log.Info("stop shortened", "container", op.Name, "killAt", op.Deadline)
}

// wait returns the context job's next wait runs under (ended by shutdown,
// or by a shortening of its deadline) and grace, or what is left until
// the job's deadline once that was shortened, when less.
func (s *Stopper) wait(job string, grace time.Duration) (context.Context, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.inflight[job]
	if !ok || j.ctx == nil {
		return s.ctx, grace
	}
	if j.shortened {
		grace = min(grace, max(time.Until(j.killAt), 0))
	}
	return j.ctx, grace
}

// stopContainer sends container id (of job) its stop signal and waits up
// to grace for it to exit (Docker kills it then). When the job's deadline
// is shortened meanwhile, the stop is sent again with what is left until
// the new one: Docker kills after the shorter time, as the kubelet stops a
// container again when a pod's grace period is shortened.
func (s *Stopper) stopContainer(job, id string, grace time.Duration) error {
	for {
		ctx, g := s.wait(job, grace)
		err := s.docker.StopContainer(ctx, id, g)
		if err == nil || ctx.Err() == nil || s.ctx.Err() != nil {
			return err
		}
	}
}

// run drains the pod (stopdrain.go), sends the stop signal and waits up
// to the grace period (Docker kills after it), then removes the container
// with its anonymous volumes, or, for a liveness restart, starts it again.
func (s *Stopper) run(op StopRequest) error {
	if !s.drain(op) {
		return nil // shutting down: the next controller resumes the stop
	}
	if op.Phases != nil {
		return s.runPod(op)
	}
	grace := s.preStop(op.ContainerID, op.PreStop, op.Grace)
	s.log.Info("stopping container", "container", op.Name, "op", op.Kind, "grace", grace)
	if err := s.stopContainer(op.ContainerID, op.ContainerID, grace); err != nil {
		if errors.Is(err, dockerx.ErrNotFound) {
			return nil // already gone: nothing to remove or restart
		}
		return fmt.Errorf("stop %s: %w", op.Name, err)
	}
	if op.Kind == StopHalt {
		return nil // kept, stopped, for its logs
	}
	if op.Kind == StopRestart {
		// The stopped container is started again by a sync, as any
		// exited replica is: a run that ended within the crash window of
		// its start counts as a crash and backs off, as a pod killed by
		// its liveness probe does. Forgotten only now: a probe of the old
		// run, even one started by a sync while the stop was under way,
		// must not judge the new one.
		s.restarted(op.ContainerID)
		return nil
	}
	if err := s.docker.RemoveContainer(s.ctx, op.ContainerID); err != nil {
		return fmt.Errorf("remove %s: %w", op.Name, err)
	}
	return nil
}

// Listing is called by a sync just before it lists an owner's
// containers: jobs that ended before it are reflected in that list.
func (s *Stopper) Listing(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listed[owner] = s.seq
	for id, j := range s.finished {
		if j.owner == owner && j.ended <= s.seq {
			delete(s.finished, id)
		}
	}
}

// Forget drops what the stopper keeps of owner (its last list, its ended
// jobs) and reports true, unless a job of owner is in flight (false): an
// owner with nothing left is forgotten, as owners come and go.
func (s *Stopper) Forget(owner string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.inflight {
		if j.owner == owner {
			return false
		}
	}
	for id, j := range s.finished {
		if j.owner == owner {
			delete(s.finished, id)
		}
	}
	delete(s.listed, owner)
	return true
}

// InFlight returns an owner's containers with a job in flight (or
// ended too recently for the last list to show it), and the kill deadlines
// of those being removed.
func (s *Stopper) InFlight(owner string) (busy map[string]bool, removing map[string]time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	busy, removing = map[string]bool{}, map[string]time.Time{}
	add := func(id string, j stopJob) {
		busy[id] = true
		if j.kind == StopRemove {
			removing[id] = j.deadline
		}
	}
	for id, j := range s.inflight {
		if j.owner == owner {
			add(id, j)
		}
	}
	for id, j := range s.finished {
		if j.owner == owner && j.ended > s.listed[owner] {
			add(id, j)
		}
	}
	return busy, removing
}

// Shutdown abandons the jobs in flight and waits for their goroutines.
func (s *Stopper) Shutdown() {
	s.cancel()
	s.wg.Wait()
}

// runPod stops a holder pod gracefully, phase after phase (StopPhases: app
// containers, sidecars, the holder), every phase within what is left of the
// pod's one grace period, as the kubelet gives a pod one grace period for
// all its containers. A container already gone is no error. The pod's
// volumes are collected by the next sync, once it lists no container of the
// pod.
func (s *Stopper) runPod(op StopRequest) error {
	s.log.Info("stopping pod", "pod", op.Name, "grace", op.Grace, "phases", len(op.Phases))
	deadline := time.Now().Add(op.Grace)
	for _, phase := range op.Phases {
		errs := make([]error, len(phase))
		var wg sync.WaitGroup
		for i, t := range phase {
			wg.Add(1)
			go func() {
				defer wg.Done()
				grace := max(time.Until(deadline), 0)
				if t.Holder {
					grace = min(grace, time.Second) // it exits at once on its signal
				} else if grace < MinPodGrace && op.Grace > 0 {
					// The kubelet gives every container at least this
					// long, even when those stopped before it used up
					// the pod's grace (minimumGracePeriodInSeconds).
					grace = MinPodGrace
				}
				grace = s.preStop(op.ContainerID, t.PreStop, grace)
				errs[i] = s.stopAndRemove(op.ContainerID, t, grace, op.Kind != StopHalt)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err // the next sync resumes the pod's stop
		}
	}
	return nil
}

// MinPodGrace is the least time a container of a pod gets to stop, as
// the kubelet's minimumGracePeriodInSeconds.
const MinPodGrace = 2 * time.Second

// stopAndRemove stops container t of job within grace, then removes it
// unless remove is false (a halt).
func (s *Stopper) stopAndRemove(job string, t StopTarget, grace time.Duration, remove bool) error {
	if err := s.stopContainer(job, t.ID, grace); err != nil {
		if errors.Is(err, dockerx.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("stop %s: %w", t.Name, err)
	}
	if !remove {
		return nil
	}
	if err := s.docker.RemoveContainer(s.ctx, t.ID); err != nil {
		return fmt.Errorf("remove %s: %w", t.Name, err)
	}
	return nil
}

// preStop runs op's (or a pod target's) preStop hook, bounded by grace
// and by a shortening of job's deadline, and returns the grace left for
// the stop signal: at least MinPodGrace (stopContainer holds it to a
// shortened deadline).
func (s *Stopper) preStop(job string, h *Hook, grace time.Duration) time.Duration {
	if h == nil || s.hooks == nil || grace <= 0 {
		return grace
	}
	jctx, _ := s.wait(job, 0)
	ctx, cancel := context.WithTimeout(jctx, grace)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		done <- Guard("", func() error { return s.hooks.RunHook(ctx, *h) })
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
			s.events.Event(h.Pod, store.EventWarning, "FailedPreStopHook", fmt.Sprintf("PreStopHook failed: %v", err))
		}
	default:
		s.log.Info("preStop hook ran", "container", h.Name, "took", took)
	}
	return max(grace-took, MinPodGrace)
}

// hasPreStop reports whether a stop runs a preStop hook (its deadline
// allows for the least grace left after it).
func (o StopRequest) hasPreStop() bool {
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

// Drainer takes a pod out of every Service before its graceful stop
// begins (docs/design.md §8, §10): the stopper calls it before the stop
// signal, so that no proxy sends a new connection to a pod that is going.
type Drainer interface {
	// Drain marks the pod (namespace, name as `dockctl get pods` shows it)
	// terminating and returns once every Service that selected it has a
	// data plane that acknowledged a configuration without it — at once
	// when no Service selects it. It returns ctx's error, wrapped, when
	// ctx ends first: the caller bounds it and stops the pod anyway.
	Drain(ctx context.Context, namespace, pod string) error
}

// Stopping reports whether a unit's stop (or liveness restart) is in
// flight: a drained pod stays out of every Service while it is.
func (s *Stopper) Stopping(unitID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.inflight[unitID]
	return ok
}

// StopTarget is one container of a pod's graceful stop.
type StopTarget struct {
	ID, Name string
	// Holder: it runs no workload and exits at once on its stop signal.
	Holder bool
	// PreStop is the member's preStop hook, run before its stop signal.
	PreStop *Hook
}

// StopKind is what a graceful stop ends in.
type StopKind string

const (
	// StopRemove stops a container (or a holder pod, phase by phase) and
	// removes it with its anonymous volumes; with no Grace it is killed
	// and removed at once.
	StopRemove StopKind = "remove"
	// StopRestart stops a running container whose liveness probe (or
	// startup probe, or postStart hook) failed, for a later sync to start
	// it again with the crash-loop backoff: Docker does not restart
	// unhealthy containers by itself.
	StopRestart StopKind = "restart"
	// StopHalt stops the containers of a holder pod that reached a
	// terminal phase (Succeeded, Failed), phase by phase, and keeps them
	// for their logs: the kubelet stops the sandbox of a terminal pod and
	// kills its sidecars. Not a removal: the pod is not Terminating.
	StopHalt StopKind = "halt"
)

// StopRequest is a graceful stop a workload controller asks of the
// Stopper: the container-level part of its plan, in the runtime's terms.
type StopRequest struct {
	Kind StopKind
	// ContainerID is the container to stop, or, for a holder pod, the
	// pod's unit ID (Phases then lists its containers); Name its name for
	// logs.
	ContainerID, Name string
	// Grace is how long the container has between its stop signal and
	// the kill (its own revision's terminationGracePeriodSeconds, bounded
	// by the controller).
	Grace time.Duration
	// Phases is, for the graceful removal of a holder pod, its containers
	// in stop order: each phase is stopped together, after the previous
	// one is gone.
	Phases [][]StopTarget
	// Drain is the pod to take out of every Service's endpoints before
	// the stop signal; nil: nothing to drain.
	Drain *DrainRef
	// PreStop is a running container's preStop hook (not a holder pod's:
	// see StopTarget).
	PreStop *Hook
	// Deadline is, for the removal of a container whose stop is in flight,
	// an earlier kill time (a pod deleted again with a shorter grace
	// period): the stop in flight is shortened to it, and none is started.
	Deadline time.Time
}
