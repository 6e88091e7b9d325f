package reconciler

import (
	"math"
	"sort"
)

// RolloutState is what Kubernetes keeps in its ReplicaSet objects: the
// target size of each revision (template hash) of a deployment. Containers
// are then created or removed per revision to match. Keeping sizes, not
// just counting containers, is what lets a rollout survive a failed create
// or a controller restart exactly where it was, and what makes a scale
// during a rollout proportional. It is persisted in the controller's status.
type RolloutState struct {
	Sizes map[string]int32 `json:"sizes,omitempty"`
	// DesiredReplicas and MaxReplicas are the deployment's replicas and
	// replicas+maxSurge when Sizes were last computed (Kubernetes'
	// desired-replicas and max-replicas annotations): a change of replicas
	// is a scaling event.
	DesiredReplicas *int32 `json:"desiredReplicas,omitempty"`
	MaxReplicas     int32  `json:"maxReplicas,omitempty"`
}

// revisionSet is one revision's share of a deployment during planning.
type revisionSet struct {
	hash      string
	number    int64 // revision number; 0 when unknown (treated as oldest)
	size      int32 // target container count
	active    int32 // containers that exist and are not being removed
	available int32
}

// rolloutParams are the resolved strategy settings.
type rolloutParams struct {
	replicas       int32
	maxSurge       int32
	maxUnavailable int32
	// availableBudget is the user's maxUnavailable as Kubernetes resolves
	// it, for the Available condition; maxUnavailable may be forced higher
	// for the rollout (see resolveParams).
	availableBudget int32
	recreate        bool
	paused          bool
}

// computeSizes updates the sizes of sets in place, following the
// Kubernetes Deployment controller: a scaling event first (proportional
// during a rollout), then one step of the strategy. newSet is the current
// template's set, nil while paused before it exists. removingOld is the
// number of old-revision containers still being removed; totalPods counts
// every container that exists (created, running or being removed), so that
// surge is bounded by what Docker really holds.
func computeSizes(sets []*revisionSet, newSet *revisionSet, p rolloutParams, prev RolloutState, removingOld, totalPods int32) {
	if prev.DesiredReplicas != nil && *prev.DesiredReplicas != p.replicas {
		scaleEvent(sets, newSet, p, prev.MaxReplicas)
	}
	// A revision keeps at most size containers, and its surplus is removed
	// unavailable first: what stays available is min(available, size).
	// Counting the available replicas a scale-down just sized away would
	// let the step below remove old replicas that availability still
	// needs (Kubernetes syncs a scaling event alone, from fresh counts).
	for _, s := range sets {
		s.available = min32(s.available, max32(s.size, 0))
	}
	if p.paused {
		// Paused: scaling still works (above), but no new revision rolls
		// out. As in Kubernetes, whose sync() of a paused deployment never
		// creates the new ReplicaSet (getAllReplicaSetsAndSyncRevision with
		// createIfNotExisted false), a deployment created paused gets no
		// replicas until it is resumed: ComputePlan passes no newSet then.
		return
	}
	olds := oldSets(sets, newSet)
	if p.recreate {
		// Every old container is gone before the first new one is created.
		oldLeft := removingOld
		for _, s := range olds {
			s.size = 0
			oldLeft += s.active
		}
		if oldLeft == 0 {
			newSet.size = p.replicas
		} else {
			newSet.size = 0
		}
		return
	}

	// Scale the new revision up within the surge budget.
	maxTotal := p.replicas + p.maxSurge
	current := max32(sum(sets), totalPods)
	if newSet.size > p.replicas {
		newSet.size = p.replicas
	} else if current < maxTotal && newSet.size < p.replicas {
		newSet.size += min32(maxTotal-current, p.replicas-newSet.size)
	}

	// Scale old revisions down within the availability budget.
	if sum(olds) == 0 {
		return
	}
	minAvailable := p.replicas - p.maxUnavailable
	newUnavailable := max32(newSet.size-newSet.available, 0)
	maxScaledDown := sum(sets) - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return
	}
	// Unhealthy old replicas go first: removing them costs no availability.
	sort.SliceStable(olds, func(i, j int) bool { return olds[i].number < olds[j].number })
	cleaned := int32(0)
	for _, s := range olds {
		if cleaned >= maxScaledDown {
			break
		}
		unhealthy := max32(s.size-s.available, 0)
		n := min32(maxScaledDown-cleaned, unhealthy)
		s.size -= n
		cleaned += n
	}
	// Then available ones, oldest revision first, down to minAvailable.
	availableTotal := int32(0)
	for _, s := range sets {
		availableTotal += s.available
	}
	if availableTotal <= minAvailable {
		return
	}
	toScaleDown := availableTotal - minAvailable
	for _, s := range olds {
		if toScaleDown <= 0 {
			break
		}
		n := min32(s.size, toScaleDown)
		s.size -= n
		toScaleDown -= n
	}
}

// scaleEvent applies a change of replicas to the revision sizes, as
// Kubernetes' Deployment controller scale() does: one active revision takes
// it all; a saturated new revision scales the old ones to zero; otherwise
// the change is spread in proportion to the revisions' sizes, so that a
// stalled rollout does not put every new replica into a broken revision.
func scaleEvent(sets []*revisionSet, newSet *revisionSet, p rolloutParams, prevMax int32) {
	var active []*revisionSet
	for _, s := range sets {
		if s.size > 0 {
			active = append(active, s)
		}
	}
	switch {
	case len(active) == 0:
		if target := latest(sets, newSet); target != nil {
			target.size = p.replicas
		}
		return
	case len(active) == 1:
		active[0].size = p.replicas
		return
	case newSet != nil && newSet.size == p.replicas && newSet.available == p.replicas:
		for _, s := range oldSets(sets, newSet) {
			s.size = 0
		}
		return
	}
	allowed := p.replicas
	if !p.recreate {
		allowed += p.maxSurge
	}
	toAdd := allowed - sum(sets)
	if toAdd == 0 {
		return
	}
	ordered := append([]*revisionSet(nil), sets...)
	sort.SliceStable(ordered, func(i, j int) bool {
		a, b := ordered[i], ordered[j]
		if a.size != b.size {
			return a.size > b.size
		}
		if toAdd > 0 {
			return a.number > b.number // larger first, newer first on ties
		}
		return a.number < b.number // larger first, older first on ties
	})
	if prevMax <= 0 {
		prevMax = sum(sets)
	}
	added := int32(0)
	sizes := make([]int32, len(ordered))
	for i, s := range ordered {
		sizes[i] = s.size + proportion(s.size, toAdd, added, p.replicas, allowed, prevMax)
		added += sizes[i] - s.size
	}
	if added != toAdd && len(ordered) > 0 {
		sizes[0] = max32(sizes[0]+toAdd-added, 0)
	}
	for i, s := range ordered {
		s.size = sizes[i]
	}
}

// proportion is Kubernetes' GetReplicaSetProportion: the share of toAdd a
// revision of the given size receives, bounded by what is left to add.
func proportion(size, toAdd, added, replicas, allowed, prevMax int32) int32 {
	if size == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	var fraction int32
	if replicas == 0 {
		fraction = -size
	} else {
		fraction = int32(math.Round(float64(size)*float64(allowed)/float64(prevMax))) - size
	}
	left := toAdd - added
	if toAdd > 0 {
		return min32(fraction, left)
	}
	return max32(fraction, left)
}

func oldSets(sets []*revisionSet, newSet *revisionSet) []*revisionSet {
	var out []*revisionSet
	for _, s := range sets {
		if s != newSet {
			out = append(out, s)
		}
	}
	return out
}

func latest(sets []*revisionSet, newSet *revisionSet) *revisionSet {
	if newSet != nil {
		return newSet
	}
	var best *revisionSet
	for _, s := range sets {
		if best == nil || s.number > best.number {
			best = s
		}
	}
	return best
}

// sum adds the sizes in int64 and saturates: many revisions of a large
// size (a crafted status file) must not wrap around to a small count.
func sum(sets []*revisionSet) int32 {
	var n int64
	for _, s := range sets {
		n += int64(s.size)
	}
	return int32(min(n, math.MaxInt32))
}

func min32(a, b int32) int32 {
	if a < b {
		return a
	}
	return b
}

func max32(a, b int32) int32 {
	if a > b {
		return a
	}
	return b
}
