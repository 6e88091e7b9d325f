package reconciler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

func (c *Controller) logPlan(name string, plan Plan) {
	for _, op := range plan.Ops {
		c.log.Info("planned", "deployment", name, "op", op.Kind, "container", op.Name, "reason", op.Reason, "cause", op.Cause)
	}
}

// execute carries out a plan, step by step in the plan's order (see
// Plan.Steps), mapping each op to Docker calls: creates run with slow start.
// It returns a user-facing failure message for the ReplicaFailure condition
// when replicas could not be created or removed.
func (c *Controller) execute(ctx context.Context, in PlanInput, plan Plan) (failure, error) {
	var errs []error
	stops, starts, creates := plan.Steps()
	var removals []Op
	for _, op := range stops {
		if op.Kind == OpRemove && op.Grace <= 0 {
			removals = append(removals, op) // nothing to wait for: removed at once
			continue
		}
		// A graceful stop is handed to the stopper, never holding a
		// worker. After a liveness restart the stopper gives the new run
		// fresh probes once it started.
		c.stopper.submit(in.Name, op, in.Now)
	}
	errs = append(errs, parallel(removals, c.opts.MaxCreatesInFlight, func(op Op) error {
		if err := c.docker.RemoveContainer(ctx, op.ContainerID); err != nil {
			return &removeError{id: op.ContainerID, name: op.Name, err: err}
		}
		return nil
	})...)
	errs = append(errs, parallel(starts, c.opts.MaxCreatesInFlight, func(op Op) error {
		switch op.Kind {
		case OpUnpause:
			if err := c.docker.UnpauseContainer(ctx, op.ContainerID); err != nil {
				return fmt.Errorf("unpause %s: %w", op.Name, err)
			}
			return nil
		}
		if err := c.docker.StartContainer(ctx, op.ContainerID); err != nil {
			return &startError{id: op.ContainerID, name: op.Name, err: err}
		}
		return nil
	})...)

	var fail failure
	if len(errs) > 0 {
		fail = removalFailure(errs)
		if len(creates) > 0 && !createsSafe(in, plan, errs) {
			// A removal failed: creating now could exceed maxSurge. The
			// retry recomputes from what Docker then shows. This gate
			// stays in the executor because only carrying out the
			// removals tells which of them failed; what it then allows is
			// judged by createsSafe, pure and planner-side (surge.go),
			// from the plan's own counts.
			return fail, errors.Join(errs...)
		}
	}
	if len(creates) > 0 {
		templates, err := templatesOf(creates)
		if err == nil {
			// Defence in depth, and deliberately here rather than in the
			// plan: the planner creates no refused revision, and this
			// check trusts no plan, so that nothing is ever created from
			// a template that was not checked.
			for h, d := range templates {
				if msg := c.templateRefusal(h, &d.Spec.Template); msg != "" {
					err = fmt.Errorf("create from %s", msg)
				}
			}
		}
		if err != nil {
			return failure{ReasonFailedCreate, err.Error()}, err
		}
		missing, f, err := c.ensureImages(ctx, templates)
		if err != nil {
			fail = f
			errs = append(errs, err)
		}
		// Only the revisions whose image is missing wait for it: an old
		// revision keeps healing while a new one cannot be pulled.
		ready := creates[:0:0]
		for _, op := range creates {
			if !missing[op.Hash] {
				ready = append(ready, op)
			}
		}
		failed := slowStart(ready, c.opts.MaxCreatesInFlight, func(op Op) error {
			return c.create(ctx, in, op)
		})
		for _, err := range failed {
			var se *startError
			if !errors.Is(err, dockerx.ErrConflict) && !errors.As(err, &se) {
				fail = failure{ReasonFailedCreate, err.Error()}
			}
		}
		errs = append(errs, failed...)
	}
	return fail, errors.Join(errs...)
}

// templatesOf returns, per template hash to create, the deployment the
// plan creates it from.
func templatesOf(creates []Op) (map[string]*manifests.Deployment, error) {
	out := map[string]*manifests.Deployment{}
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
// whose image is missing, with the failure to report for them.
func (c *Controller) ensureImages(ctx context.Context, templates map[string]*manifests.Deployment) (map[string]bool, failure, error) {
	missing := map[string]bool{}
	var fail failure
	var errs []error
	for _, hash := range slices.Sorted(maps.Keys(templates)) {
		ctr := templates[hash].Container()
		if err := c.docker.EnsureImage(ctx, ctr.Image, ctr.ImagePullPolicy); err != nil {
			missing[hash] = true
			if fail.reason == "" {
				fail = failure{ReasonErrImagePull, fmt.Sprintf("image %s: %v", ctr.Image, err)}
			}
			errs = append(errs, fmt.Errorf("ensure image %s: %w", ctr.Image, err))
		}
	}
	return missing, fail, errors.Join(errs...)
}

func (c *Controller) create(ctx context.Context, in PlanInput, op Op) error {
	id, err := c.docker.CreateContainer(ctx, dockerx.CreateRequest{
		Instance: in.Instance, Name: op.Name, TemplateHash: op.Hash, Deployment: op.From,
	})
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
