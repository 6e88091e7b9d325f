package reconciler

import (
	"context"
	"fmt"
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
		Instance: in.Instance, Namespace: in.namespace(), OwnerUID: in.OwnerUID,
		Config: c.opts.Config, Key: in.key(), Now: in.Now, MaxInFlight: c.opts.MaxCreatesInFlight, Docker: c.docker,
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
	return x.c.fileVolumes.Write(ctx, op) // podruntime.FileVolumes
}

func (x *deploymentExec) OpsFailed(errs []error) podruntime.Failure {
	fail := removalFailure(errs)
	if f := subPathFailure(errs); f.reason != "" { // files.go
		fail = f
	}
	return podruntime.Failure{Reason: fail.reason, Message: fail.message}
}

// Refusal: trust.go's privilege and record gates.
func (x *deploymentExec) Refusal(hash string, t *manifests.PodTemplateSpec) string {
	return x.c.templateRefusal(hash, t)
}

func (x *deploymentExec) PullSecrets(t *dockerx.PodTemplate) []dockerx.RegistryCredential {
	return x.c.templatePullSecrets(x.in.namespace(), t) // pullsecrets.go
}

// PullFailed records kubelet's Failed event; the pod is not made yet, so
// it is the deployment's.
func (x *deploymentExec) PullFailed(t *dockerx.PodTemplate, image string, err error) {
	Eventf(x.c.opts.Recorder, deploymentRef(x.in.namespace(), t.Owner), store.EventWarning, "Failed", "Failed to pull image %q: %v", image, err)
}

func (x *deploymentExec) Created(op Op, fellBack *sync.Map) {
	x.c.recordPullFallback(x.in, op, fellBack) // events.go
}

func (x *deploymentExec) HelperImageUsed() { x.c.helperImages.Store(true) }

func (x *deploymentExec) Network(ctx context.Context) (*store.NetworkStatus, error) {
	return x.c.podNetworkStatus(ctx) // network.go
}

// Prepare fills a create of this controller's: a holder of a pod with
// file volumes runs the helper image; the network owner of a pod (a
// replica without holder, or a holder) is created on the instance network
// (nil: none to use) unless it shares the host's, a create-time setting
// never part of the template hash or the plan; then the Service
// variables, the pod's address, its environment, what the create needs
// from outside the template, and its subPath binds checked.
func (x *deploymentExec) Prepare(ctx context.Context, op Op, req *dockerx.CreateRequest, network *store.NetworkStatus) (release func(), err error) {
	c, in := x.c, x.in
	if op.Role == dockerx.RoleHolder && manifests.NeedsWriter(&op.From.Template.Spec) {
		img, err := c.fileVolumes.Image(ctx) // podruntime.FileVolumes
		if err != nil {
			return nil, fmt.Errorf("create %s: %w", op.Name, err)
		}
		req.Image = img
	}
	if (op.Pod == nil || op.Role == dockerx.RoleHolder) && !op.From.Template.Spec.HostNetwork {
		req.Network = podNetwork(network, in.namespace())
	}
	// Before the pod address: a wait for a Service's address must not
	// hold the lock other creates take for theirs.
	svcEnv := c.containerServiceEnv(ctx, in, op)                      // serviceenv.go
	podIP, releaseIP, err := c.assignPodIP(ctx, in, op, req, network) // podip.go
	if err != nil {
		return nil, err
	}
	prepared := false
	defer func() {
		if !prepared {
			// No create: the address, and the lock its assignment may
			// hold until the create ended, are free again — on an error
			// or a panic alike (GuardOps makes a panic the op's error,
			// and the next create must not wait on the lock forever).
			releaseIP()
		}
	}()
	env, err := c.resolveEnv(ctx, in, op, *req, podIP, svcEnv) // envctl.go
	if err != nil {
		return nil, &podruntime.ConfigError{Err: err} // the kubelet's CreateContainerConfigError (podruntime.CreateWait)
	}
	req.Env = env
	if err := c.createInputs(ctx, req, op); err != nil { // seccomp.go
		return nil, err
	}
	if op.Pod != nil && op.Role != dockerx.RoleHolder {
		if err := c.fileVolumes.CheckSubPaths(ctx, op.From, op.Hash, *op.Pod, op.Container); err != nil { // podruntime.FileVolumes
			return nil, err
		}
	}
	prepared = true
	return releaseIP, nil
}

func (x *deploymentExec) NameConflict(ctx context.Context, op Op, err error) error {
	return x.c.nameConflict(ctx, x.in, op, err) // conflict.go
}
