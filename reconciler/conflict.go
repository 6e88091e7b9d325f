package reconciler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/dockctl/dockctl/dockerx"
)

// A create can fail with a name conflict for two reasons. The name may be
// held by a replica of this deployment that the list did not show yet (a
// create that raced with ours): that one is adopted, the next sync sees
// it. Or it may be held by something this deployment does not own — a
// container made by hand, another instance's, or a name Docker still
// reserves for a container it no longer shows — which no retry will ever
// free: that name is remembered as blocked, and the planner picks the next
// free ordinal instead.

// nameTakenError is a create whose name is held by a container this
// deployment does not own. It is a failure to report, not a conflict to
// retry.
type nameTakenError struct {
	name, holder string
}

func (e *nameTakenError) Error() string {
	return fmt.Sprintf("create %s: the name is held by %s; using the next free name", e.name, e.holder)
}

// nameConflict inspects the holder of a conflicting name and either adopts
// it (nil) or blocks the name.
func (c *Controller) nameConflict(ctx context.Context, in PlanInput, op Op, createErr error) error {
	det, err := c.docker.InspectContainer(ctx, op.Name)
	var holder string
	switch {
	case errors.Is(err, dockerx.ErrNotFound):
		holder = "a container Docker does not show (a name it still reserves)"
	case err != nil:
		// Unknown holder: retry later rather than skip on a guess.
		return fmt.Errorf("create %s: %w (inspecting the holder: %v)", op.Name, createErr, err)
	case c.opts.SelfID != "" && strings.HasPrefix(det.ID, c.opts.SelfID):
		// The controller's own container, which it never manages (see
		// list), whatever its labels say: adopting it would create
		// nothing, at every sync.
		holder = "the controller's own container"
	case det.Labels[dockerx.LabelInstance] == in.Instance && det.Labels[dockerx.LabelDeployment] == in.Name &&
		dockerx.ParseNamespace(det.Labels, op.Name) == in.namespace() && det.Labels[dockerx.LabelTemplateHash] == op.Hash:
		c.log.Info("name conflict with a replica of this deployment; adopting it", "deployment", in.key(), "container", op.Name)
		return nil
	default:
		holder = fmt.Sprintf("container %.12s (instance %q, deployment %q), which this deployment does not own",
			det.ID, det.Labels[dockerx.LabelInstance], det.Labels[dockerx.LabelDeployment])
	}
	c.mu.Lock()
	if c.blocked == nil {
		c.blocked = map[string]map[string]bool{}
	}
	if c.blocked[in.key()] == nil {
		c.blocked[in.key()] = map[string]bool{}
	}
	c.blocked[in.key()][op.Name] = true
	c.mu.Unlock()
	e := &nameTakenError{name: op.Name, holder: holder}
	c.log.Warn("container name held by another container; skipping it", "deployment", in.key(), "container", op.Name, "holder", holder)
	return e
}

// blockedNames returns a copy of the blocked names of the deployment key.
func (c *Controller) blockedNames(key string) map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.blocked[key])
}

// forgetBlocked drops a deleted deployment's blocked names: a new one of
// the same name starts clean.
func (c *Controller) forgetBlocked(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.blocked, key)
}
