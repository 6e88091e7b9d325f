package reconciler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// A create can fail with a name conflict for three reasons (docs/design.md
// §2, "Nothing is adopted that dockctl did not make"):
//
//   - The name is held by a replica of this deployment that the list did
//     not show yet (a create that raced with ours): that one is adopted, the
//     next sync sees it.
//   - It is held by a container Docker shows that this deployment does not
//     own — one made by hand, another instance's, the controller's own —
//     which no retry will ever free: that name is blocked at once, and the
//     planner picks the next free ordinal instead.
//   - Docker reserves the name but shows no container under it. Right
//     after a controller restart, or under load, that is most often a
//     create still in flight: one a killed or timed-out client sent, which
//     dockerd completes anyway, and whose container shows up moments later.
//     Like the kube-controller-manager's expectations (a create it sent
//     counts until its informer observes the pod), the name counts as a
//     replica in flight of the revision that met it — taken, and counted
//     toward that revision's replicas, so no replacement is made under
//     another ordinal that would overshoot the replica count once it
//     appears — for Options.ReservedNameWindow from when it was first
//     met. Every sync looks again: once the container is listed it is
//     simply observed. When the window ends with Docker still showing
//     nothing, or Docker shows a container under the name that this
//     deployment does not own, the name is in flight no more: the planner
//     creates under it once more, and the conflict that create meets
//     blocks the name like any other held name (reported as
//     ReplicaFailure FailedCreate).

// DefaultReservedNameWindow is Options.ReservedNameWindow's default: one
// default resync period (30 s). A create dockerd is still completing for a
// dead client lands within seconds even under load (the e2e fault test
// sees it within one); a name still reserved after a whole resync period is
// no create in flight but one Docker keeps (a removal it never finished),
// which no wait frees.
const DefaultReservedNameWindow = 30 * time.Second

// reservation is a name Docker reserves without showing a container, met
// by a create of the deployment.
type reservation struct {
	hash string
	// replica: the create was a replica's (or a pod's holder), not a pod
	// member's, so the name counts toward the revision's replicas.
	replica bool
	since   time.Time // when a create first met it
	// over: no longer a create in flight (its window ended, or Docker
	// shows a container this deployment does not own under the name).
	// The planner creates under the name again, and the conflict that
	// create meets blocks it, reported as any held name is.
	over bool
}

// InFlightName is a name Docker reserves for a create still in flight, as
// the planner sees it (PlanInput.InFlight).
type InFlightName struct {
	// Hash is the revision whose replica it will be.
	Hash string
	// Replica: it counts toward the revision's replicas (false for a pod
	// member's name, which is only taken).
	Replica bool
	// Until is when the window ends and the name is blocked instead.
	Until time.Time
}

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
// it (nil), counts it as a create in flight (nil) or blocks the name.
func (c *Controller) nameConflict(ctx context.Context, in PlanInput, op Op, createErr error) error {
	det, err := c.docker.InspectContainer(ctx, op.Name)
	var holder string
	switch {
	case errors.Is(err, dockerx.ErrNotFound):
		if c.reserve(in.key(), op) {
			c.log.Info("container name reserved by a create in flight; counting it as a replica until it shows",
				"deployment", in.key(), "container", op.Name, "window", c.opts.ReservedNameWindow)
			// A conflict to retry, no failure to report (createWave):
			// the sync is requeued, and the next one sees the name in
			// flight (reservedNames).
			return fmt.Errorf("create %s: %w (reserved by a create in flight: counted as a replica for up to %s)",
				op.Name, createErr, c.opts.ReservedNameWindow)
		}
		holder = "a container Docker does not show (a name it still reserves)"
	case err != nil:
		// Unknown holder: retry later rather than skip on a guess.
		return fmt.Errorf("create %s: %w (inspecting the holder: %v)", op.Name, createErr, err)
	case c.opts.SelfID != "" && strings.HasPrefix(det.ID, c.opts.SelfID):
		// The controller's own container, which it never manages (see
		// list), whatever its labels say: adopting it would create
		// nothing, at every sync.
		holder = "the controller's own container"
	case c.ownsReplica(in, det, op.Name, op.Hash):
		c.log.Info("name conflict with a replica of this deployment; adopting it", "deployment", in.key(), "container", op.Name)
		return nil
	default:
		holder = heldBy(det)
	}
	c.block(in.key(), op.Name)
	e := &nameTakenError{name: op.Name, holder: holder}
	c.log.Warn("container name held by another container; skipping it", "deployment", in.key(), "container", op.Name, "holder", holder)
	return e
}

// ownsReplica reports whether det is a replica of in's deployment,
// namespace and template hash, which a conflict under its name adopts.
func (c *Controller) ownsReplica(in PlanInput, det dockerx.ContainerDetails, name, hash string) bool {
	return det.Labels[dockerx.LabelInstance] == in.Instance && det.Labels[dockerx.LabelDeployment] == in.Name &&
		dockerx.ParseNamespace(det.Labels, name) == in.namespace() && det.Labels[dockerx.LabelTemplateHash] == hash
}

func heldBy(det dockerx.ContainerDetails) string {
	return fmt.Sprintf("container %.12s (instance %q, deployment %q), which this deployment does not own",
		det.ID, det.Labels[dockerx.LabelInstance], det.Labels[dockerx.LabelDeployment])
}

// reserve records op's name as reserved by a create in flight, from the
// first time a create met it, and reports whether its window still lasts.
func (c *Controller) reserve(key string, op Op) bool {
	now := c.opts.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reserved == nil {
		c.reserved = map[string]map[string]reservation{}
	}
	if c.reserved[key] == nil {
		c.reserved[key] = map[string]reservation{}
	}
	r, ok := c.reserved[key][op.Name]
	if !ok {
		r = reservation{hash: op.Hash, replica: op.Pod == nil || op.Role == dockerx.RoleHolder, since: now}
		c.reserved[key][op.Name] = r
	}
	if !r.over && now.Before(r.since.Add(c.opts.ReservedNameWindow)) {
		return true
	}
	delete(c.reserved[key], op.Name)
	return false
}

// block remembers a name of the deployment key as held by another.
func (c *Controller) block(key, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.blocked == nil {
		c.blocked = map[string]map[string]bool{}
	}
	if c.blocked[key] == nil {
		c.blocked[key] = map[string]bool{}
	}
	c.blocked[key][name] = true
}

// reservedNames looks again at the names of the deployment in reserved by
// creates in flight: a name now listed among observed is simply observed
// and forgotten; one Docker shows (inspect; skipped when ctx is nil) that
// the deployment does not own, or one still showing nothing when its
// window ends, is in flight no more: the planner creates under it again,
// and nameConflict blocks it if Docker still holds it. It returns the
// names still in flight.
func (c *Controller) reservedNames(ctx context.Context, in PlanInput, observed []dockerx.Container) map[string]InFlightName {
	key := in.key()
	c.mu.Lock()
	pending := maps.Clone(c.reserved[key])
	c.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	listed := map[string]bool{}
	for _, ct := range observed {
		listed[ct.Name] = true
	}
	now := c.opts.Now()
	out := map[string]InFlightName{}
	for name, r := range pending {
		until := r.since.Add(c.opts.ReservedNameWindow)
		switch {
		case listed[name]:
			c.forgetReserved(key, name)
			continue
		case r.over:
			continue
		case !now.Before(until):
			c.endReservation(key, name)
			continue
		}
		if ctx != nil {
			det, err := c.docker.InspectContainer(ctx, name)
			if err == nil && (c.opts.SelfID != "" && strings.HasPrefix(det.ID, c.opts.SelfID) || !c.ownsReplica(in, det, name, r.hash)) {
				c.endReservation(key, name)
				continue
			}
		}
		out[name] = InFlightName{Hash: r.hash, Replica: r.replica, Until: until}
	}
	return out
}

// endReservation marks a reserved name as no create in flight any more.
func (c *Controller) endReservation(key, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.reserved[key][name]; ok {
		r.over = true
		c.reserved[key][name] = r
	}
}

func (c *Controller) forgetReserved(key, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.reserved[key], name)
}

// blockedNames returns a copy of the blocked names of the deployment key.
func (c *Controller) blockedNames(key string) map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.blocked[key])
}

// forgetBlocked drops a deleted deployment's blocked and reserved names: a
// new one of the same name starts clean.
func (c *Controller) forgetBlocked(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.blocked, key)
	delete(c.reserved, key)
}
