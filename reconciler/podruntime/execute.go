package podruntime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// The plan executor (docs/design.md §17): a workload controller whose
// planner orders a plan of Ops (Op.DependsOn, Op.Needs, Op.OnDepFailure)
// hands it to Runtime.Execute, which carries it out in that order. What
// is the owner's own — the events of each op's outcome, the waiting
// reasons its status shows, its surge gate, the failure condition it
// reports, and what its creates need from outside the template — it gives
// as ExecHooks;
// the executor knows no workload kind.

// ErrNotRun is the outcome of an op that was not carried out: a
// dependency failed (see DepFailurePolicy), its image is missing, or slow
// start stopped launching after a failure. Its own dependents treat it as
// a failure.
var ErrNotRun = errors.New("not carried out")

// Failure is why a plan's pods could not be made or removed, in the
// owner's words (the Deployment's ReplicaFailure reason and message); the
// zero value is no failure.
type Failure struct {
	Reason, Message string
}

// StartError is a start that Docker refused: the container exists but
// stays `created`.
type StartError struct {
	ID, Name string
	Err      error
}

func (e *StartError) Error() string { return fmt.Sprintf("start %s: %v", e.Name, e.Err) }
func (e *StartError) Unwrap() error { return e.Err }

// RemoveError is a removal that Docker refused.
type RemoveError struct {
	ID, Name string
	Err      error
}

func (e *RemoveError) Error() string { return fmt.Sprintf("remove %s: %v", e.Name, e.Err) }
func (e *RemoveError) Unwrap() error { return e.Err }

// ExecDocker is what the executor asks of Docker itself: images, creates,
// the ops on existing containers and on volumes.
type ExecDocker interface {
	EnsureImage(ctx context.Context, ref, pullPolicy string, secrets []dockerx.RegistryCredential) error
	ImageUser(ctx context.Context, ref string) (string, error)
	EnsureHolderImage(ctx context.Context, instance string) (string, error)
	CreateContainer(ctx context.Context, req dockerx.CreateRequest) (string, error)
	CreateClaimVolume(ctx context.Context, req dockerx.ClaimVolumeRequest) (string, error)
	RemoveContainer(ctx context.Context, id string) error
	UnpauseContainer(ctx context.Context, id string) error
	StartContainer(ctx context.Context, id string) error
	CreateVolume(ctx context.Context, req dockerx.VolumeRequest) (string, error)
	RemoveVolume(ctx context.Context, name string) error
}

// ExecInput is one plan's execution: whose it is and with what.
type ExecInput struct {
	// Instance, Namespace and OwnerUID are the creates' (the owner's
	// incarnation labels its pods).
	Instance, Namespace, OwnerUID string
	// Config is what the creates' claims are checked against (nil: none
	// exists).
	Config ConfigStore
	// Key names the owner to the Stopper (its Done is called with it).
	Key string
	// Now is the sync's time, the start of the graceful stops' grace.
	Now time.Time
	// MaxInFlight caps the ops of a wave run at once (creates, with slow
	// start, and the others).
	MaxInFlight int
	Docker      ExecDocker
}

// ExecHooks are the owner controller's share of an execution: the effects
// of its own, called by the executor, never a switch on its kind.
type ExecHooks interface {
	CreateHooks
	// Ended is told each op's outcome once it ended (nil: success), once
	// per op; it records the owner's events and waiting reasons. Calls
	// come from the executor's goroutines at once.
	Ended(op Op, err error)
	// CreatesSafe reports whether the ops gated by RunIfCreatesSafe run
	// although some of the ops they depend on failed (depErrs). It is
	// asked once per set of dependencies.
	CreatesSafe(depErrs []error) bool
	// CheckStart checks an existing container before the executor starts
	// it again (Docker resolves a subPath bind again at every start).
	CheckStart(ctx context.Context, id string) error
	// WriteFiles carries out an OpWriteFiles.
	WriteFiles(ctx context.Context, op Op) error
	// OpsFailed is the failure a wave's errors of ops other than creates
	// (removals, starts, volumes, file writes) amount to, with all the
	// plan's errors so far.
	OpsFailed(errs []error) Failure
}

// Execute carries out a plan in the order its dependencies give
// (Op.DependsOn, set by the planner), mapping each op to Docker calls. It
// runs in waves: every op whose dependencies have all ended runs in the
// next wave, the ops of one wave in parallel — removals, starts and
// unpauses at most in.MaxInFlight at a time, creates with slow start
// (execcreate.go), graceful stops handed to the Stopper (submitted is done). An op
// whose dependency failed or was skipped runs or is skipped as its
// OnDepFailure says; the executor makes no choice of its own. It returns
// the failure the owner reports when pods could not be created or
// removed.
func (r *Runtime) Execute(ctx context.Context, in ExecInput, plan []Op, h ExecHooks) (Failure, error) {
	var (
		errs    []error
		fail    Failure
		mu      sync.Mutex
		outcome = make(map[OpID]error, len(plan)) // ended ops: nil on success
	)
	ended := func(op Op, err error) {
		mu.Lock()
		outcome[op.ID] = err
		mu.Unlock()
		h.Ended(op, err)
	}
	// CreatesSafe is judged once per set of dependencies: every create of
	// a plan shares one, and the judgement counts all containers.
	safe := map[*OpID]bool{}
	window := 1 // slow start's, carried across waves
	pending := plan
	for len(pending) > 0 {
		var stops, others, creates, later []Op
		for _, op := range pending {
			var depErrs []error
			ready, unmet := true, false
			for _, id := range op.DependsOn {
				err, done := outcome[id]
				if !done {
					ready = false
					break
				}
				if err != nil {
					depErrs = append(depErrs, err)
				}
			}
			for _, id := range op.Needs {
				err, done := outcome[id]
				if !done {
					ready = false
					break
				}
				unmet = unmet || err != nil
			}
			switch {
			case !ready:
				later = append(later, op)
				continue
			case unmet, len(depErrs) > 0 && !runDespite(op, depErrs, safe, h):
				ended(op, ErrNotRun)
				continue
			}
			switch {
			case op.Kind == OpCreate:
				creates = append(creates, op)
			case op.Kind == OpRestart || (op.Kind == OpRemove && (op.Grace > 0 || op.Phases != nil)):
				stops = append(stops, op)
			default:
				others = append(others, op)
			}
		}
		if len(later) == len(pending) {
			// A plan bug: never guess an order, do nothing more.
			return fail, errors.Join(append(errs, fmt.Errorf("plan: ops %s wait on each other", opIDs(later)))...)
		}
		pending = later

		for _, op := range stops {
			// A graceful stop is handed to the stopper, never holding a
			// worker; it is done once submitted. After a liveness restart
			// the stopper gives the new run fresh probes once it started.
			r.stopper.Submit(in.Key, op.StopRequest(), in.Now)
			ended(op, nil)
		}
		var otherErrs []error
		var wg sync.WaitGroup
		if len(others) > 0 {
			// Run beside this wave's creates, if any: they do not depend
			// on each other, or the planner would have said so.
			wg.Add(1)
			go func() {
				defer wg.Done()
				otherErrs = Parallel(others, in.MaxInFlight, GuardOps(func(op Op) error {
					err := runOp(ctx, in.Docker, h, op)
					ended(op, err)
					return err
				}))
			}()
		}
		var createErrs []error
		createFail, refused := Failure{}, false
		if len(creates) > 0 {
			createFail, createErrs, refused = r.creates(ctx, in, h, creates, ended, &window)
		}
		wg.Wait()
		for _, op := range others {
			if _, done := outcome[op.ID]; !done {
				ended(op, ErrNotRun) // it panicked: GuardOps made that its error
			}
		}
		errs = append(errs, otherErrs...)
		if len(others) > 0 && len(errs) > 0 {
			fail = h.OpsFailed(errs)
		}
		if refused {
			// A refused template ends the execution with that alone.
			return createFail, createErrs[0]
		}
		if createFail.Reason != "" {
			fail = createFail
		}
		errs = append(errs, createErrs...)
	}
	return fail, errors.Join(errs...)
}

// runDespite reports whether op runs although some of its dependencies
// failed (depErrs), as its OnDepFailure says. RunIfCreatesSafe is the
// owner's gate on creates (h.CreatesSafe): a failed removal may leave a
// container running, holding a host port or a place under a surge bound.
// It is applied here because only carrying the removals out tells which
// of them failed.
func runDespite(op Op, depErrs []error, safe map[*OpID]bool, h ExecHooks) bool {
	switch op.OnDepFailure {
	case RunOnDepFailure:
		return true
	case RunIfCreatesSafe:
		key := &op.DependsOn[0]
		ok, judged := safe[key]
		if !judged {
			ok = h.CreatesSafe(depErrs)
			safe[key] = ok
		}
		return ok
	}
	return false
}

// runOp maps an op on an existing container or a volume to its one
// Docker call.
func runOp(ctx context.Context, d ExecDocker, h ExecHooks, op Op) error {
	switch op.Kind {
	case OpRemove:
		// Nothing to wait for (no grace): removed at once.
		if err := d.RemoveContainer(ctx, op.ContainerID); err != nil {
			return &RemoveError{ID: op.ContainerID, Name: op.Name, Err: err}
		}
	case OpUnpause:
		if err := d.UnpauseContainer(ctx, op.ContainerID); err != nil {
			return fmt.Errorf("unpause %s: %w", op.Name, err)
		}
	case OpStart:
		if err := h.CheckStart(ctx, op.ContainerID); err != nil {
			return &StartError{ID: op.ContainerID, Name: op.Name, Err: err}
		}
		if err := d.StartContainer(ctx, op.ContainerID); err != nil {
			return &StartError{ID: op.ContainerID, Name: op.Name, Err: err}
		}
	case OpCreateVolume:
		if op.Volume == nil {
			return fmt.Errorf("create volume %s: the plan names no volume", op.Name)
		}
		if _, err := d.CreateVolume(ctx, *op.Volume); err != nil {
			return fmt.Errorf("create volume %s: %w", op.Name, err)
		}
	case OpRemoveVolume:
		if err := d.RemoveVolume(ctx, op.Name); err != nil {
			return fmt.Errorf("remove volume %s: %w", op.Name, err)
		}
	case OpWriteFiles:
		return h.WriteFiles(ctx, op)
	default:
		return fmt.Errorf("%s %s: not an op on an existing container", op.Kind, op.Name)
	}
	return nil
}

// GuardOps is fn with each call guarded (Guard), for SlowStart and
// Parallel: a panic becomes that op's error, naming it. An executor's
// goroutine cannot be recovered by the sync that started it, and one bad
// op must not take the whole controller down.
func GuardOps(fn func(Op) error) func(Op) error {
	return func(op Op) error {
		return Guard(fmt.Sprintf("%s %s", op.Kind, op.Name), func() error { return fn(op) })
	}
}

func opIDs(ops []Op) string {
	ids := make([]OpID, len(ops))
	for i, op := range ops {
		ids[i] = op.ID
	}
	return IDRanges(ids)
}
