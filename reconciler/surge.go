package reconciler

import (
	"errors"
	"sort"
	"strings"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// createsSafeDespite decides whether a plan's creates may go ahead although
// some of its removals failed (failed holds their container IDs). A
// container that is not running (dead, exited, created) holds no port and
// is not available, so it takes nothing from its replacement; what remains
// is the surge bound, which must hold with it counted as still there. A
// failed removal of a running or paused container keeps blocking: it may
// still serve, hold a host port, or be the old replica a rollout is
// replacing. The planner already keeps its creates within the bound with
// every container counted (capCreates); this count trusts no plan, and
// frees the place only of an immediate removal that succeeded: a graceful
// one (Grace > 0) keeps its container, terminating, until it is gone.
func createsSafeDespite(in PlanInput, plan Plan, failed map[string]bool) bool {
	state := map[string]string{}
	for _, c := range in.Containers {
		state[c.ID] = c.State
	}
	// A holder pod is counted once, by its unit: a removal of one of its
	// containers is its pod's, and the pod's place is free only once every
	// one of them went.
	unit := func(id string) string { return id }
	if len(in.Pods) > 0 {
		unitOf := map[string]string{}
		for key, p := range in.Pods {
			for _, c := range p.Containers() {
				unitOf[c.ID] = key
			}
		}
		unit = func(id string) string {
			if u, ok := unitOf[id]; ok {
				return u
			}
			return id
		}
	}
	failedUnits := map[string]bool{}
	for id := range failed {
		u := unit(id)
		failedUnits[u] = true
		switch state[u] {
		case dockerx.StateDead, dockerx.StateExited, dockerx.StateCreated, dockerx.StateRemoving:
		default:
			return false
		}
	}
	total := int32(len(in.Containers))
	freed := map[string]bool{}
	for _, op := range plan.Ops {
		switch {
		case op.Kind == OpRemove && op.Grace <= 0 && op.Phases == nil:
			if u := unit(op.ContainerID); !failedUnits[u] {
				freed[u] = true
			}
		case op.Kind == OpCreate && op.Container == "": // a pod's create, not a member's
			total++
		}
	}
	return total-int32(len(freed)) <= plan.State.MaxReplicas
}

// removeError is a removal that Docker refused (podruntime.RemoveError).
type removeError = podruntime.RemoveError

// createsSafe is createsSafeDespite for the errors of a plan's removals and
// starts: a failed start changes no count, a failed removal is judged by
// createsSafeDespite, anything else blocks the creates.
func createsSafe(in PlanInput, plan Plan, errs []error) bool {
	failed := map[string]bool{}
	for _, err := range errs {
		var re *removeError
		var se *startError
		switch {
		case errors.As(err, &re):
			failed[re.ID] = true
		case errors.As(err, &se):
		default:
			return false
		}
	}
	return createsSafeDespite(in, plan, failed)
}

// removalFailure reports failed removals for ReplicaFailure, as
// Kubernetes' FailedDelete, or no failure.
func removalFailure(errs []error) failure {
	var msgs []string
	for _, err := range errs {
		var re *removeError
		if errors.As(err, &re) {
			msgs = append(msgs, re.Error())
		}
	}
	if len(msgs) == 0 {
		return failure{}
	}
	sort.Strings(msgs)
	return failure{ReasonFailedDelete, strings.Join(msgs, "; ")}
}
