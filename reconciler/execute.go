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

// errNotRun is the outcome of an op that was not carried out
// (podruntime.ErrNotRun).
var errNotRun = podruntime.ErrNotRun

// execute hands a plan to the pod runtime's executor (Runtime.Execute),
// which carries it out in the order its dependencies give (Op.DependsOn,
// set by the planner: see link); this controller's share of it — the
// events and waiting reasons of each op's outcome, the surge gate on
// creates, the ReplicaFailure the errors amount to, and the wave's creates
// — is deploymentExec. It returns a user-facing failure message for the
// ReplicaFailure condition when replicas could not be created or removed.
func (c *Controller) execute(ctx context.Context, in PlanInput, plan Plan) (retFail failure, retErr error) {
	defer func() { c.recordPlan(in, plan, retErr, retFail) }()
	x := &deploymentExec{c: c, in: in, plan: plan}
	f, err := c.runtime.Execute(ctx, podruntime.ExecInput{
		Key: in.key(), Now: in.Now, MaxInFlight: c.opts.MaxCreatesInFlight, Docker: c.docker,
	}, plan.Ops, x)
	return failure{f.Reason, f.Message}, err
}

// deploymentExec is the Deployment controller's podruntime.ExecHooks for
// one plan.
type deploymentExec struct {
	c    *Controller
	in   PlanInput
	plan Plan
}

func (x *deploymentExec) Ended(op Op, err error) {
	x.c.recordOp(x.in, op, err)   // events.go: the outcome is known here
	x.c.noteCreate(x.in, op, err) // waiting.go: a failed create shows on its pod
}

// CreatesSafe is today's gate on creates: a failed removal may leave a
// container running, holding a host port or a place under the surge bound,
// and creating beside it could exceed maxSurge; createsSafe (pure,
// planner-side: surge.go) judges from the plan's own counts whether it
// does.
func (x *deploymentExec) CreatesSafe(depErrs []error) bool {
	return createsSafe(x.in, x.plan, depErrs)
}

// CheckStart: Docker resolves a subPath bind again at every start.
func (x *deploymentExec) CheckStart(ctx context.Context, id string) error {
	return x.c.checkStartSubPaths(ctx, x.in, id) // files.go
}

func (x *deploymentExec) WriteFiles(ctx context.Context, op Op) error {
	return x.c.writePodFiles(ctx, op) // files.go
}

func (x *deploymentExec) OpsFailed(errs []error) podruntime.Failure {
	fail := removalFailure(errs)
	if f := subPathFailure(errs); f.reason != "" { // files.go
		fail = f
	}
	return podruntime.Failure{Reason: fail.reason, Message: fail.message}
}

func (x *deploymentExec) Creates(ctx context.Context, creates []Op, ended func(Op, error), window *int) (podruntime.Failure, []error, bool) {
	f, errs, refused := x.c.runCreates(ctx, x.in, creates, ended, window)
	return podruntime.Failure{Reason: f.reason, Message: f.message}, errs, refused
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
	failed, reached := podruntime.SlowStart(ready, c.opts.MaxCreatesInFlight, *window, podruntime.GuardOps(func(op Op) error {
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
		return &startError{ID: id, Name: op.Name, Err: err}
	}
	return nil
}
