package reconciler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

func (c *Controller) logPlan(name string, plan Plan) {
	for _, op := range plan.Ops {
		attrs := []any{"deployment", name, "op", op.Kind, "container", op.Name, "reason", op.Reason, "cause", op.Cause, "id", op.ID}
		if len(op.DependsOn) > 0 {
			attrs = append(attrs, "after", podruntime.IDRanges(op.DependsOn))
		}
		c.log.Info("planned", attrs...)
	}
}

// errNotRun is the outcome of an op that was not carried out: a
// dependency failed (see DepFailurePolicy), its image is missing, or slow
// start stopped launching after a failure. Its own dependents treat it as
// a failure.
var errNotRun = errors.New("not carried out")

// execute carries out a plan in the order its dependencies give (Op.DependsOn,
// set by the planner: see link), mapping each op to Docker calls. It runs
// in waves: every op whose dependencies have all ended runs in the next
// wave, the ops of one wave in parallel — removals, starts and unpauses at
// most MaxCreatesInFlight at a time, creates with slow start, graceful
// stops handed to the stopper (submitted is done). An op whose dependency
// failed or was skipped runs or is skipped as its OnDepFailure says; the
// executor makes no choice of its own. It returns a user-facing failure
// message for the ReplicaFailure condition when replicas could not be
// created or removed.
func (c *Controller) execute(ctx context.Context, in PlanInput, plan Plan) (retFail failure, retErr error) {
	var (
		errs    []error
		fail    failure
		mu      sync.Mutex
		outcome = make(map[OpID]error, len(plan.Ops)) // ended ops: nil on success
	)
	ended := func(op Op, err error) {
		mu.Lock()
		outcome[op.ID] = err
		mu.Unlock()
		c.recordOp(in, op, err)   // events.go: the outcome is known here
		c.noteCreate(in, op, err) // waiting.go: a failed create shows on its pod
	}
	defer func() { c.recordPlan(in, plan, retErr, retFail) }()
	// createsSafe is judged once per set of dependencies: every create of
	// a plan shares one (link), and the judgement counts all containers.
	safe := map[*OpID]bool{}
	window := 1 // slow start's, carried across waves
	pending := plan.Ops
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
			case unmet, len(depErrs) > 0 && !c.runDespite(in, plan, op, depErrs, safe):
				ended(op, errNotRun)
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
			c.stopper.Submit(in.key(), op.StopRequest(), in.Now)
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
				otherErrs = podruntime.Parallel(others, c.opts.MaxCreatesInFlight, guard(func(op Op) error {
					err := c.runOp(ctx, in, op)
					ended(op, err)
					return err
				}))
			}()
		}
		var createErrs []error
		createFail, refused := failure{}, false
		if len(creates) > 0 {
			createFail, createErrs, refused = c.runCreates(ctx, in, creates, ended, &window)
		}
		wg.Wait()
		for _, op := range others {
			if _, done := outcome[op.ID]; !done {
				ended(op, errNotRun) // it panicked: guarded made that its error
			}
		}
		errs = append(errs, otherErrs...)
		if len(others) > 0 && len(errs) > 0 {
			fail = removalFailure(errs)
			if f := subPathFailure(errs); f.reason != "" { // files.go
				fail = f
			}
		}
		if refused {
			// As ever: a refused template ends the sync with that alone.
			return createFail, createErrs[0]
		}
		if createFail.reason != "" {
			fail = createFail
		}
		errs = append(errs, createErrs...)
	}
	return fail, errors.Join(errs...)
}

// runDespite reports whether op runs although some of its dependencies
// failed (depErrs), as its OnDepFailure says. RunIfCreatesSafe is today's
// gate on creates: a failed removal may leave a container running, holding
// a host port or a place under the surge bound, and creating beside it
// could exceed maxSurge; createsSafe (pure, planner-side: surge.go) judges
// from the plan's own counts whether it does. The gate is applied here
// because only carrying the removals out tells which of them failed.
func (c *Controller) runDespite(in PlanInput, plan Plan, op Op, depErrs []error, safe map[*OpID]bool) bool {
	switch op.OnDepFailure {
	case RunOnDepFailure:
		return true
	case RunIfCreatesSafe:
		key := &op.DependsOn[0]
		ok, judged := safe[key]
		if !judged {
			ok = createsSafe(in, plan, depErrs)
			safe[key] = ok
		}
		return ok
	}
	return false
}

// runOp maps an op on an existing container to its one Docker call.
func (c *Controller) runOp(ctx context.Context, in PlanInput, op Op) error {
	switch op.Kind {
	case OpRemove:
		// Nothing to wait for (no grace): removed at once.
		if err := c.docker.RemoveContainer(ctx, op.ContainerID); err != nil {
			return &removeError{id: op.ContainerID, name: op.Name, err: err}
		}
	case OpUnpause:
		if err := c.docker.UnpauseContainer(ctx, op.ContainerID); err != nil {
			return fmt.Errorf("unpause %s: %w", op.Name, err)
		}
	case OpStart:
		// Docker resolves a subPath bind again at every start.
		if err := c.checkStartSubPaths(ctx, in, op.ContainerID); err != nil { // files.go
			return &startError{id: op.ContainerID, name: op.Name, err: err}
		}
		if err := c.docker.StartContainer(ctx, op.ContainerID); err != nil {
			return &startError{id: op.ContainerID, name: op.Name, err: err}
		}
	case OpCreateVolume:
		if op.Volume == nil {
			return fmt.Errorf("create volume %s: the plan names no volume", op.Name)
		}
		if _, err := c.docker.CreateVolume(ctx, *op.Volume); err != nil {
			return fmt.Errorf("create volume %s: %w", op.Name, err)
		}
	case OpRemoveVolume:
		if err := c.docker.RemoveVolume(ctx, op.Name); err != nil {
			return fmt.Errorf("remove volume %s: %w", op.Name, err)
		}
	case OpWriteFiles:
		return c.writePodFiles(ctx, op) // files.go
	default:
		return fmt.Errorf("%s %s: not an op on an existing container", op.Kind, op.Name)
	}
	return nil
}

// runCreates carries out one wave's creates: templates checked, images
// and claims' volumes ensured, then slow start. refused reports a template that must not be
// created from, which ends the sync.
//
// window is the slow-start window, carried from one wave to the next.
func (c *Controller) runCreates(ctx context.Context, in PlanInput, creates []Op, ended func(Op, error), window *int) (fail failure, errs []error, refused bool) {
	templates, err := templatesOf(creates)
	if err == nil {
		// Defence in depth, and deliberately here rather than in the
		// plan: the planner creates no refused revision, and this check
		// trusts no plan, so that nothing is ever created from a template
		// that was not checked.
		for h, d := range templates {
			if msg := c.templateRefusal(h, d.Template); msg != "" {
				err = fmt.Errorf("create from %s", msg)
			}
		}
	}
	if err != nil {
		for _, op := range creates {
			ended(op, errNotRun)
		}
		return failure{ReasonFailedCreate, err.Error()}, []error{err}, true
	}
	// imagePullPolicy Always fallen back to a local copy: each pod created
	// from it says so (a Warning event), not only the log.
	var fellBack sync.Map // image ref → the pull's error
	pullCtx := dockerx.WithPullFallback(ctx, func(ref string, err error) { fellBack.Store(ref, err) })
	missing, pullErrs, imageFail, err := c.ensureImages(pullCtx, in.namespace(), templates)
	if err != nil {
		fail = imageFail
		errs = append(errs, err)
	}
	// Checked revision by revision, so that each pod refused shows its
	// own revision's refusal (waiting.go).
	refusedAsRoot := map[string]failure{}
	for _, hash := range slices.Sorted(maps.Keys(templates)) {
		one := map[string]*dockerx.PodTemplate{hash: templates[hash]}
		if f, err := c.checkRunAsNonRoot(ctx, creates, one, missing); err != nil { // imageuser.go
			if len(refusedAsRoot) == 0 {
				fail = f
			}
			refusedAsRoot[hash] = f
			errs = append(errs, err)
		}
	}
	unbound, claimFail, claimsDone, err := c.ensureClaims(ctx, in.namespace(), templates) // claims.go
	defer claimsDone()
	if err != nil {
		fail = claimFail
		errs = append(errs, err)
	}
	holderImage, err := c.ensureHolderImage(ctx, creates)
	if err != nil {
		fail = failure{ReasonFailedCreate, err.Error()}
		errs = append(errs, err)
	}
	network, err := c.podNetworkStatus(ctx)
	if err != nil {
		// A pod created off the instance network would never resolve a
		// Service name (DNS is fixed at create): none is created.
		for _, op := range creates {
			ended(op, errNotRun)
		}
		return failure{ReasonFailedCreate, err.Error()}, append(errs, err), false
	}
	// Only the revisions whose image is missing wait for it: an old
	// revision keeps healing while a new one cannot be pulled.
	ready := creates[:0:0]
	ran := map[OpID]bool{}
	var mu sync.Mutex
	for _, op := range creates {
		if !missing[op.Hash] && !unbound[op.Hash] && (op.Role != dockerx.RoleHolder || holderImage != "") {
			ready = append(ready, op)
		}
	}
	failed, reached := podruntime.SlowStart(ready, c.opts.MaxCreatesInFlight, *window, guard(func(op Op) error {
		err := c.create(ctx, in, op, holderImage, network)
		if err == nil {
			c.recordPullFallback(in, op, &fellBack) // events.go
		}
		mu.Lock()
		ran[op.ID] = true
		mu.Unlock()
		ended(op, err)
		return err
	}))
	for _, op := range creates {
		switch {
		case ran[op.ID]:
		case missing[op.Hash] && pullErrs[op.Hash] != "":
			ended(op, &waitError{podruntime.WaitErrImagePull, pullErrs[op.Hash]}) // waiting.go
		case refusedAsRoot[op.Hash].reason != "":
			// The kubelet's verifyRunAsNonRoot fails the container's
			// config; an image it could not inspect, its create.
			r, reason := refusedAsRoot[op.Hash], podruntime.WaitCreateContainerError
			if r.reason == ReasonCreateContainerConfigError {
				reason = podruntime.WaitCreateContainerConfigError
			}
			ended(op, &waitError{reason, r.message})
		case unbound[op.Hash] && claimFail.reason != "":
			ended(op, &waitError{podruntime.WaitPending, claimFail.message})
		case op.Role == dockerx.RoleHolder || op.Pod == nil:
			// Slow start stopped after a failure: the pod waits for the
			// next sync's attempt (waiting.go).
			ended(op, &waitError{podruntime.WaitContainerCreating, "waiting for an earlier create to succeed"})
		default:
			ended(op, errNotRun)
		}
	}
	for _, err := range failed {
		var se *startError
		if !errors.Is(err, dockerx.ErrConflict) && !errors.As(err, &se) {
			fail = failure{ReasonFailedCreate, err.Error()}
		}
	}
	if len(failed) == 0 {
		*window = reached
	} else {
		*window = 1 // a failure: the next wave starts carefully again
	}
	return fail, append(errs, failed...), false
}

func opIDs(ops []Op) string {
	ids := make([]OpID, len(ops))
	for i, op := range ops {
		ids[i] = op.ID
	}
	return podruntime.IDRanges(ids)
}

// templatesOf returns, per template hash to create, the pod template the
// plan creates it from.
func templatesOf(creates []Op) (map[string]*dockerx.PodTemplate, error) {
	out := map[string]*dockerx.PodTemplate{}
	for _, op := range creates {
		if op.From == nil {
			return nil, fmt.Errorf("create %s: the plan names no template to create it from", op.Name)
		}
		out[op.Hash] = op.From
	}
	return out, nil
}

// ensureImages makes sure every image to create from is present, pulling
// as each template's imagePullPolicy says. It returns the template hashes
// whose image is missing, each with why (the pull of its own image: the
// pods of one revision never show another's), and the failure to report
// for the deployment (the first).
func (c *Controller) ensureImages(ctx context.Context, namespace string, templates map[string]*dockerx.PodTemplate) (map[string]bool, map[string]string, failure, error) {
	missing := map[string]bool{}
	why := map[string]string{}
	var fail failure
	var errs []error
	for _, hash := range slices.Sorted(maps.Keys(templates)) {
		secrets := c.templatePullSecrets(namespace, templates[hash]) // pullsecrets.go
		for _, ctr := range templates[hash].Template.Spec.AllContainers() {
			if err := c.docker.EnsureImage(ctx, ctr.Image, ctr.ImagePullPolicy, secrets); err != nil {
				missing[hash] = true
				msg := fmt.Sprintf("image %s: %v", ctr.Image, err)
				if why[hash] == "" {
					why[hash] = msg
				}
				// kubelet's Failed event; the pod is not made yet, so it is the deployment's.
				Eventf(c.opts.Recorder, deploymentRef(namespace, templates[hash].Owner), store.EventWarning, "Failed", "Failed to pull image %q: %v", ctr.Image, err)
				if fail.reason == "" {
					fail = failure{ReasonErrImagePull, msg}
				}
				errs = append(errs, fmt.Errorf("ensure image %s: %w", ctr.Image, err))
			}
		}
	}
	return missing, why, fail, errors.Join(errs...)
}

// ensureHolderImage makes the holder image present when the wave creates a
// holder, and returns its reference ("" when none is needed).
func (c *Controller) ensureHolderImage(ctx context.Context, creates []Op) (string, error) {
	for _, op := range creates {
		if op.Role == dockerx.RoleHolder {
			c.helperImages.Store(true) // for the sweep to collect it once unused
			ref, err := c.docker.EnsureHolderImage(ctx, c.opts.Instance)
			// The image may be new: the sweep must look for it once no
			// holder is left, even if no sweep ever sees one of these
			// holders (they may all be gone before the next one). Set once
			// loaded, so that a collection whose list missed it does not
			// clear the flag after us (collectHelperImages).
			c.helperImages.Store(true)
			if err != nil {
				return "", fmt.Errorf("holder image: %w", err)
			}
			return ref, nil
		}
	}
	return "", nil
}

// create makes and starts one container of op. The network owner of a
// pod (a replica without holder, or a holder) is created on the instance
// network (nil: none to use) unless it shares the host's: a create-time
// setting, never part of the template hash or the plan.
func (c *Controller) create(ctx context.Context, in PlanInput, op Op, holderImage string, network *store.NetworkStatus) error {
	if op.From == nil {
		return fmt.Errorf("create %s: the plan names no template to create it from", op.Name)
	}
	from := *op.From
	// Labelled with the deployment's incarnation, so that the one applied
	// again after an orphaning deletion tells its pods from its own
	// (orphans.go).
	from.OwnerUID = in.OwnerUID
	req := dockerx.CreateRequest{
		Instance: in.Instance, Namespace: in.namespace(), Name: op.Name, TemplateHash: op.Hash, From: &from,
		Role: op.Role, Pod: op.Pod, Container: op.Container,
	}
	if op.Role == dockerx.RoleHolder {
		req.Image = holderImage
		if manifests.NeedsWriter(&op.From.Template.Spec) {
			img, err := c.writerHolderImage(ctx) // files.go
			if err != nil {
				return fmt.Errorf("create %s: %w", op.Name, err)
			}
			req.Image = img
		}
	}
	if (op.Pod == nil || op.Role == dockerx.RoleHolder) && !op.From.Template.Spec.HostNetwork {
		req.Network = podNetwork(network, in.namespace())
	}
	// Before the pod address: a wait for a Service's address must not
	// hold the lock other creates take for theirs.
	svcEnv := c.containerServiceEnv(ctx, in, op)                     // serviceenv.go
	podIP, release, err := c.assignPodIP(ctx, in, op, &req, network) // podip.go
	if err != nil {
		return err
	}
	defer release()
	env, err := c.resolveEnv(ctx, in, op, req, podIP, svcEnv) // envctl.go
	if err != nil {
		return &configError{err} // waiting.go: the kubelet's CreateContainerConfigError
	}
	req.Env = env
	if err := c.createInputs(ctx, &req, op); err != nil { // seccomp.go
		return err
	}
	if op.Pod != nil && op.Role != dockerx.RoleHolder {
		if err := c.checkSubPaths(ctx, op.From, op.Hash, *op.Pod, op.Container); err != nil { // files.go
			return err
		}
	}
	id, err := c.docker.CreateContainer(ctx, req)
	if errors.Is(err, dockerx.ErrConflict) {
		return c.nameConflict(ctx, in, op, err)
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", op.Name, err)
	}
	if err := c.docker.StartContainer(ctx, id); err != nil {
		return &startError{id: id, name: op.Name, err: err}
	}
	return nil
}
