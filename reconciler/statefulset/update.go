package statefulset

import (
	"k8s.io/apimachinery/pkg/util/intstr"
)

// rollingUpdate replaces pods not at the update revision, from the highest
// ordinal down to the partition. Without maxUnavailable, one at a time:
// the highest pod to replace is deleted, and nothing more happens while a
// pod at or above the partition is unavailable (not running, ready and
// available for minReadySeconds, or terminating). With maxUnavailable
// (updateStatefulSetAfterInvariantEstablished), up to maxUnavailable pods
// of the whole range may be unavailable, those already unavailable
// included.
func (s *syncer) rollingUpdate(replicas []*slot, st *Status) {
	ru := s.set.Spec.UpdateStrategy.RollingUpdate
	updateMin := 0
	if ru != nil && ru.Partition != nil {
		updateMin = int(*ru.Partition)
	}
	if ru != nil && ru.MaxUnavailable != nil {
		s.rollingUpdateMaxUnavailable(replicas, updateMin, ru.MaxUnavailable, st)
		return
	}
	for i := len(replicas) - 1; i >= updateMin; i-- {
		sl := replicas[i]
		if sl.revision != s.update.Name && !sl.terminating() {
			s.deletePod(sl)
			st.CurrentReplicas--
			return
		}
		if sl.unavailable(s.set.Spec.MinReadySeconds, s.now) {
			if outdated(replicas[updateMin:i], s.update.Name) {
				s.waitUpdate("rolling update waits for pod %s", sl.name)
			}
			return
		}
	}
}

func (s *syncer) rollingUpdateMaxUnavailable(replicas []*slot, updateMin int, mu *intstr.IntOrString, st *Status) {
	maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(mu, len(replicas), false)
	if err != nil || maxUnavailable < 1 {
		// A percent rounding down to 0 still lets one pod go, as
		// getStatefulSetMaxUnavailable does; validation refuses the rest.
		maxUnavailable = 1
	}
	unavailable := 0
	for _, sl := range replicas {
		if sl.unavailable(s.set.Spec.MinReadySeconds, s.now) {
			unavailable++
		}
	}
	if unavailable >= maxUnavailable {
		s.waitUpdate("rolling update waits: %d pods unavailable, maxUnavailable %d", unavailable, maxUnavailable)
		return
	}
	budget := maxUnavailable - unavailable
	for i := len(replicas) - 1; i >= updateMin && budget > 0; i-- {
		sl := replicas[i]
		if sl.revision != s.update.Name && !sl.terminating() {
			s.deletePod(sl)
			st.CurrentReplicas--
			budget--
		}
	}
}

// waitUpdate records why an update waits, under either policy: Parallel
// changes how pods are created and removed, not how they are replaced.
func (s *syncer) waitUpdate(format string, args ...any) {
	m := s.monotonic
	s.monotonic = true
	s.wait(format, args...)
	s.monotonic = m
}

// outdated is whether a pod of slots is still to be replaced.
func outdated(slots []*slot, update string) bool {
	for _, sl := range slots {
		if sl.revision != update {
			return true
		}
	}
	return false
}
