package reconciler

import (
	"context"
	"fmt"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// Name conflicts of this controller's creates (docs/design.md §2,
// "Nothing is adopted that dockctl did not make"): the pod runtime judges
// them and remembers the names met taken (podruntime.NameConflicts: a
// replica of this deployment the list did not show yet is adopted, a name
// a container this deployment does not own holds is blocked and the
// planner picks the next free ordinal, a name Docker reserves without
// showing a container counts as a replica in flight of the revision that
// met it for Options.ReservedNameWindow, and is blocked once that window
// ends — reported as ReplicaFailure FailedCreate). This file is the
// deployment's share: which container is its own replica, how a holder it
// does not own is named, and the planner's view of the memory
// (PlanInput.InFlight, BlockedNames).

// DefaultReservedNameWindow is Options.ReservedNameWindow's default
// (podruntime.DefaultReservedNameWindow: one default resync period).
const DefaultReservedNameWindow = podruntime.DefaultReservedNameWindow

// InFlightName is a name Docker reserves for a create still in flight, as
// the planner sees it (PlanInput.InFlight).
type InFlightName = podruntime.InFlightName

// conflictOwner is in's deployment as the runtime judges its name
// conflicts.
func (c *Controller) conflictOwner(in PlanInput) podruntime.ConflictOwner {
	return podruntime.ConflictOwner{
		Key: in.key(), Noun: "deployment",
		Owns: func(det dockerx.ContainerDetails, name, hash string) bool {
			return ownsReplica(in, det, name, hash)
		},
		HeldBy: heldBy,
	}
}

// nameConflict inspects the holder of a conflicting name and either adopts
// it (nil), counts it as a create in flight (nil) or blocks the name.
func (c *Controller) nameConflict(ctx context.Context, in PlanInput, op Op, createErr error) error {
	return c.names.Conflict(ctx, c.docker, c.conflictOwner(in), op, createErr)
}

// ownsReplica reports whether det is a replica of in's deployment,
// namespace and template hash, which a conflict under its name adopts.
func ownsReplica(in PlanInput, det dockerx.ContainerDetails, name, hash string) bool {
	return det.Labels[dockerx.LabelInstance] == in.Instance && det.Labels[dockerx.LabelDeployment] == in.Name &&
		dockerx.ParseNamespace(det.Labels, name) == in.namespace() && det.Labels[dockerx.LabelTemplateHash] == hash
}

func heldBy(det dockerx.ContainerDetails) string {
	return fmt.Sprintf("container %.12s (instance %q, deployment %q), which this deployment does not own",
		det.ID, det.Labels[dockerx.LabelInstance], det.Labels[dockerx.LabelDeployment])
}

// reservedNames looks again at the names of the deployment reserved by
// creates in flight (podruntime.NameConflicts.InFlight; no inspect when
// ctx is nil) and returns those still in flight.
func (c *Controller) reservedNames(ctx context.Context, in PlanInput, observed []dockerx.Container) map[string]InFlightName {
	return c.names.InFlight(ctx, c.docker, c.conflictOwner(in), observed)
}

// blockedNames returns a copy of the blocked names of the deployment key.
func (c *Controller) blockedNames(key string) map[string]bool { return c.names.Blocked(key) }

// forgetBlocked drops a deleted deployment's blocked and reserved names: a
// new one of the same name starts clean.
func (c *Controller) forgetBlocked(key string) { c.names.Forget(key) }
