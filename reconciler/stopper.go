package reconciler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// stopper carries out graceful stops (docs/design.md §8, Graceful stop)
// outside the workers. Docker's stop call blocks until the container exits
// or its grace period ends; made by a worker it would hold that worker for
// up to the grace period and, with a few such containers, starve every other
// deployment. Each stop gets a goroutine of its own instead: it mostly
// waits on Docker, and one container that ignores its stop signal then
// delays nothing but its own removal. It names deployments by their key
// ("namespace/name"), as the work queue does.
type stopper struct {
	docker Docker
	log    *slog.Logger
	// events records a failed preStop hook; nil records none.
	events EventRecorder
	// drainer takes a pod out of the Services' endpoints before its stop
	// (stopdrain.go); nil: nothing to drain.
	drainer Drainer
	// hooks runs preStop hooks (hooks.go); nil: none run.
	hooks hookRunner
	// done is called when a job ends (err nil on success), to queue its
	// deployment again: the container is gone, or restarted.
	done func(deployment string, err error)
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
	// finished holds jobs that ended after their deployment's last list
	// began: that list may show the container mid-job (a restart's
	// container exited), so it stays "in flight" for the planner until a
	// list taken after the end consumes it. seq numbers the endings;
	// listed is, per deployment, seq when its last sync began to list.
	finished map[string]stopJob
	seq      uint64
	listed   map[string]uint64
}

type stopJob struct {
	deployment string
	kind       OpKind
	deadline   time.Time // when the container is killed
	ended      uint64    // seq at its end, for finished jobs
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

func newStopper(docker Docker, log *slog.Logger, drainer Drainer, done func(string, error), restarted func(string)) *stopper {
	ctx, cancel := context.WithCancel(context.Background())
	return &stopper{docker: docker, log: log, drainer: drainer, done: done, restarted: restarted, ctx: ctx, cancel: cancel,
		inflight: map[string]stopJob{}, finished: map[string]stopJob{}, listed: map[string]uint64{}}
}

// submit starts op (OpRemove or OpRestart) of a deployment's container and
// returns at once. It is idempotent: a container whose job is in flight is
// not stopped twice, so a sync may plan the same removal again. An op with
// a Deadline only ever shortens the removal in flight (shorten); it starts
// none.
func (s *stopper) submit(deployment string, op Op, now time.Time) {
	s.mu.Lock()
	if job, busy := s.inflight[op.ContainerID]; busy || !op.Deadline.IsZero() || s.ctx.Err() != nil {
		if busy && !op.Deadline.IsZero() {
			s.shortenLocked(op, job, now)
		}
		s.mu.Unlock()
		return
	}
	ctx, cut := context.WithCancel(s.ctx)
	s.inflight[op.ContainerID] = stopJob{deployment: deployment, kind: op.Kind, deadline: stopDeadline(op, now), ctx: ctx, cut: cut}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		err := guarded(s.run, op) // a panic here would take the controller down
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
			s.log.Error("stop failed; the next sync retries", "deployment", deployment, "container", op.Name, "err", err)
		}
		s.done(deployment, err)
	}()
}

// shortenLocked moves the kill of job, the removal op names, to
// op.Deadline when that is earlier — never later, as the kubelet only
// ever shortens a termination's grace period — and ends the job's current
// wait, so that it stops the container again within what is left. now is
// the planner's time of op. The caller holds mu.
func (s *stopper) shortenLocked(op Op, job stopJob, now time.Time) {
	if job.kind != OpRemove || !op.Deadline.Before(job.deadline) {
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
func (s *stopper) wait(job string, grace time.Duration) (context.Context, time.Duration) {
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
func (s *stopper) stopContainer(job, id string, grace time.Duration) error {
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
func (s *stopper) run(op Op) error {
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
	if op.Kind == OpRestart {
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

// listing is called by a sync just before it lists a deployment's
// containers: jobs that ended before it are reflected in that list.
func (s *stopper) listing(deployment string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listed[deployment] = s.seq
	for id, j := range s.finished {
		if j.deployment == deployment && j.ended <= s.seq {
			delete(s.finished, id)
		}
	}
}

// inFlight returns a deployment's containers with a job in flight (or
// ended too recently for the last list to show it), and the kill deadlines
// of those being removed.
func (s *stopper) inFlight(deployment string) (busy map[string]bool, removing map[string]time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	busy, removing = map[string]bool{}, map[string]time.Time{}
	add := func(id string, j stopJob) {
		busy[id] = true
		if j.kind == OpRemove {
			removing[id] = j.deadline
		}
	}
	for id, j := range s.inflight {
		if j.deployment == deployment {
			add(id, j)
		}
	}
	for id, j := range s.finished {
		if j.deployment == deployment && j.ended > s.listed[deployment] {
			add(id, j)
		}
	}
	return busy, removing
}

// shutdown abandons the jobs in flight and waits for their goroutines.
func (s *stopper) shutdown() {
	s.cancel()
	s.wg.Wait()
}

// stopInputs fills the planner's view of stopping containers: those whose
// stop deadline the status file holds (a stop begun by this or an earlier
// controller) and those with a job in flight here (addTerminating).
func (c *Controller) stopInputs(in *PlanInput, s deploymentState, ready map[string]bool) {
	busy, removing := c.stopper.inFlight(in.key())
	in.Stopping = busy
	in.Terminating = removing
	s.addTerminating(in.Terminating, ready)
	in.unready(ready)
	in.MaxReplicas = c.opts.MaxReplicas
	in.MaxGracePeriod = c.opts.MaxGracePeriod
	in.DrainPods = c.stopper.drainer != nil
}

// recordStops notes the kill deadline of every container a plan began to
// stop, so that a restarted controller resumes the stop instead of counting
// the container as a live replica again. A resumed stop keeps its deadline;
// a shortened one (Op.Deadline) records the earlier one.
func recordStops(s *deploymentState, plan Plan, now time.Time) {
	for _, op := range plan.Ops {
		if op.Kind != OpRemove || op.Grace <= 0 && op.Deadline.IsZero() {
			continue
		}
		cst := s.container(op.ContainerID)
		if d := stopDeadline(op, now); cst.StopDeadline.IsZero() || d.Before(cst.StopDeadline) {
			cst.StopDeadline = d
		}
	}
}

// recordInFlight notes the kill deadline of every observed container whose
// stop is in flight here but not recorded: one begun while the deployment
// was deleted, which was then applied again with a fresh status file. A
// restarted controller must resume it, not take the container for a live
// replica of the revived deployment.
func recordInFlight(s *deploymentState, in PlanInput) {
	for _, c := range in.Containers {
		deadline, ok := in.Terminating[c.ID]
		if !ok || c.State == dockerx.StateRemoving {
			continue
		}
		if cst := s.container(c.ID); cst.StopDeadline.IsZero() {
			cst.StopDeadline = deadline
		}
	}
}

// liveContainers leaves out the terminating containers, those whose stop
// has begun and those a user deleted: like Kubernetes' status.replicas,
// status counts only replicas that are not terminating.
func liveContainers(in PlanInput) []dockerx.Container {
	deleted := in.deleted()
	if len(in.Terminating) == 0 && len(deleted) == 0 {
		return in.Containers
	}
	out := make([]dockerx.Container, 0, len(in.Containers))
	for _, ct := range in.Containers {
		if _, ok := in.Terminating[ct.ID]; !ok && !deleted[ct.ID] {
			out = append(out, ct)
		}
	}
	return out
}

// runPod stops a holder pod gracefully, phase after phase (stopPhases: app
// containers, sidecars, the holder), every phase within what is left of the
// pod's one grace period, as the kubelet gives a pod one grace period for
// all its containers. A container already gone is no error. The pod's
// volumes are collected by the next sync, once it lists no container of the
// pod.
func (s *stopper) runPod(op Op) error {
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
				} else if grace < minPodGrace && op.Grace > 0 {
					// The kubelet gives every container at least this
					// long, even when those stopped before it used up
					// the pod's grace (minimumGracePeriodInSeconds).
					grace = minPodGrace
				}
				grace = s.preStop(op.ContainerID, t.PreStop, grace)
				errs[i] = s.stopAndRemove(op.ContainerID, t, grace)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err // the next sync resumes the pod's stop
		}
	}
	return nil
}

// minPodGrace is the least time a container of a pod gets to stop.
const minPodGrace = 2 * time.Second

func (s *stopper) stopAndRemove(job string, t StopTarget, grace time.Duration) error {
	if err := s.stopContainer(job, t.ID, grace); err != nil {
		if errors.Is(err, dockerx.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("stop %s: %w", t.Name, err)
	}
	if err := s.docker.RemoveContainer(s.ctx, t.ID); err != nil {
		return fmt.Errorf("remove %s: %w", t.Name, err)
	}
	return nil
}
