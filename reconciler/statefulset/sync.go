package statefulset

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/workload"
)

// Decision is what one sync of a set decided. The executor creates
// CreateClaims before CreatePods (a pod's claims exist before it), in
// order, then deletes DeletePods, then DeleteClaims, records Events on the
// set and Status as its status, records NewRevision in the set's history
// when set, and syncs again at RequeueAt (when not zero) or on the next
// change of a pod.
type Decision struct {
	Status       Status
	CreateClaims []Claim
	CreatePods   []podruntime.PodSpec
	DeletePods   []string
	DeleteClaims []string
	Events       []workload.Event
	// NewRevision is the update revision when History lacks it.
	NewRevision *Revision
	RequeueAt   time.Time
	// Waiting says why the set makes no further progress this time
	// ("" when nothing waits), for describe and the logs.
	Waiting string
}

// slot is one ordinal of the range: the observed pod, or a pod the
// decision creates (pod nil), and the revision it runs.
type slot struct {
	ordinal  int
	name     string
	pod      *workload.ObservedPod
	revision string
	deleted  bool // deleted by this decision
}

// unavailable is isUnavailable: not running and available for
// minReadySeconds, or on its way out (a pod still to create included).
func (s *slot) unavailable(minReadySeconds int32, now time.Time) bool {
	return s.deleted || !s.pod.Healthy() || !s.pod.Available(minReadySeconds, now)
}

func (s *slot) terminating() bool { return s.deleted || s.pod.Terminating() }

type syncer struct {
	set             *manifests.StatefulSet
	current, update Revision
	now             time.Time
	monotonic       bool

	observed      map[int]*workload.ObservedPod
	claims        map[string]ObservedClaim
	claimNames    []string
	creatingClaim map[string]bool

	d       Decision
	requeue workload.Requeue
}

// Sync decides one step of the set's controller (updateStatefulSet).
// history holds the recorded revisions; prev is the status the last
// decision reported (its currentRevision picks the current revision from
// history, and its collisionCount is kept); pods are the set's pods
// (owned by it); claims the claims of its namespace.
func Sync(set *manifests.StatefulSet, history []Revision, prev Status, pods []workload.ObservedPod, claims []ObservedClaim, now time.Time) Decision {
	update := RevisionOf(set)
	current := update
	if r, ok := workload.Find(history, prev.CurrentRevision); ok {
		current = r
	}
	s := &syncer{set: set, current: current, update: update, now: now,
		monotonic: set.Spec.PodManagementPolicy != manifests.PodManagementParallel,
		observed:  map[int]*workload.ObservedPod{}, claims: map[string]ObservedClaim{}, creatingClaim: map[string]bool{}}
	if _, ok := workload.Find(history, update.Name); !ok {
		s.d.NewRevision = &update
	}
	var counted []*workload.ObservedPod
	for i := range pods {
		if ord, ok := Ordinal(set, pods[i].Name); ok {
			s.observed[ord] = &pods[i]
			counted = append(counted, &pods[i])
		}
	}
	for _, c := range claims {
		s.claims[c.Name] = c
		s.claimNames = append(s.claimNames, c.Name)
	}
	slices.Sort(s.claimNames)

	st := Status{ObservedGeneration: set.Metadata.Generation, CurrentRevision: current.Name,
		UpdateRevision: update.Name, CollisionCount: prev.CollisionCount}
	countPods(&st, set, counted, s)

	replicas, condemned := s.slots()
	s.run(replicas, condemned, &st)
	s.scaledClaims()
	completeRollingUpdate(set, &st)
	s.d.Status = st
	s.d.RequeueAt = s.requeue.At
	return s.d
}

// slots splits the observed pods into the range's replicas (a slot per
// ordinal, missing pods at the revision revisionFor gives them) and the
// condemned (ordinals outside the range), highest ordinal first.
func (s *syncer) slots() (replicas, condemned []*slot) {
	start, n := startOrdinal(s.set), int(s.set.Replicas())
	for ord := start; ord < start+n; ord++ {
		sl := &slot{ordinal: ord, name: PodName(s.set, ord), pod: s.observed[ord]}
		if sl.pod != nil {
			sl.revision = sl.pod.Revision()
		} else {
			sl.revision = revisionFor(s.set, s.current, s.update, ord).Name
		}
		replicas = append(replicas, sl)
	}
	for ord, p := range s.observed {
		if ord < start || ord >= start+n {
			condemned = append(condemned, &slot{ordinal: ord, name: p.Name, pod: p, revision: p.Revision()})
		}
	}
	slices.SortFunc(condemned, func(a, b *slot) int { return b.ordinal - a.ordinal })
	return replicas, condemned
}

// run is the body of updateStatefulSet after the status: replicas, then
// the condemned, then the update. Under OrderedReady a step that blocks
// ends the decision; under Parallel every slot is processed.
func (s *syncer) run(replicas, condemned []*slot, st *Status) {
	for _, sl := range replicas {
		if s.processReplica(sl) && s.monotonic {
			return
		}
	}
	// The first unavailable pod, lowest ordinal first among the
	// replicas and then among the condemned: the one pod a monotonic
	// scale-down may remove although it is unhealthy.
	var firstUnhealthy *slot
	for _, sl := range replicas {
		if sl.unavailable(s.set.Spec.MinReadySeconds, s.now) {
			firstUnhealthy = sl
			break
		}
	}
	for i := len(condemned) - 1; i >= 0 && firstUnhealthy == nil; i-- {
		if condemned[i].unavailable(s.set.Spec.MinReadySeconds, s.now) {
			firstUnhealthy = condemned[i]
		}
	}
	for _, sl := range condemned {
		if s.processCondemned(sl, firstUnhealthy) && s.monotonic {
			return
		}
	}
	if s.set.Spec.UpdateStrategy.Type == manifests.StrategyOnDelete {
		return
	}
	s.rollingUpdate(replicas, st)
}

// processReplica decides for one ordinal of the range; it returns true
// when a monotonic set must go no further (processReplica).
func (s *syncer) processReplica(sl *slot) bool {
	p := sl.pod
	if p.Finished() {
		// A finished pod runs no more: delete it, and a later decision,
		// once it is gone, creates it again with its identity and claims.
		if p.Status.Phase == corev1.PodFailed {
			s.d.Events = append(s.d.Events, workload.Warning("RecreatingFailedPod",
				"StatefulSet %s/%s is recreating failed Pod %s", s.ns(), s.set.Metadata.Name, sl.name))
		} else {
			s.event("RecreatingTerminatedPod", "StatefulSet %s/%s is recreating terminated Pod %s", s.ns(), s.set.Metadata.Name, sl.name)
		}
		if !p.Terminating() {
			s.deletePod(sl)
		}
		s.wait("pod %s finished: waiting for it to be gone to create it again", sl.name)
		return true
	}
	if !p.Exists() {
		create, blocked := s.claimsFor(sl.ordinal, sl.name)
		if blocked {
			s.wait("a claim of pod %s is being deleted", sl.name)
			return true
		}
		s.createClaims(create, sl.name)
		rev := s.update
		if sl.revision == s.current.Name {
			rev = s.current
		}
		s.d.CreatePods = append(s.d.CreatePods, newPod(s.set, rev, sl.ordinal))
		s.event("SuccessfulCreate", "create Pod %s in StatefulSet %s successful", sl.name, s.set.Metadata.Name)
		if s.monotonic {
			s.wait("pod %s created: waiting for it to be running and ready", sl.name)
		}
		return true
	}
	if p.Status.Phase == corev1.PodPending {
		// A pending pod's missing claims are created again
		// (createMissingPersistentVolumeClaims): a claim deleted by
		// hand under a pod not yet started comes back.
		create, _ := s.claimsFor(sl.ordinal, sl.name)
		s.createClaims(create, sl.name)
	}
	switch {
	case p.Terminating():
		s.wait("pod %s is terminating", sl.name)
		return true
	case !p.RunningAndReady():
		s.wait("pod %s is not running and ready", sl.name)
		return true
	case !p.Available(s.set.Spec.MinReadySeconds, s.now):
		s.wait("pod %s is not available for minReadySeconds yet", sl.name)
		return true
	}
	return false
}

// processCondemned decides for one pod past the range, highest ordinal
// first; it returns true when a monotonic set must go no further.
func (s *syncer) processCondemned(sl *slot, firstUnhealthy *slot) bool {
	if sl.pod.Terminating() {
		s.wait("pod %s is terminating", sl.name)
		return true
	}
	healthy := sl.pod.RunningAndReady() && sl.pod.Available(s.set.Spec.MinReadySeconds, s.now)
	if s.monotonic && sl != firstUnhealthy && !healthy {
		s.wait("pod %s is unhealthy: scale-down waits", sl.name)
		return true
	}
	s.deletePod(sl)
	return true
}

func (s *syncer) deletePod(sl *slot) {
	sl.deleted = true
	s.d.DeletePods = append(s.d.DeletePods, sl.name)
	s.event("SuccessfulDelete", "delete Pod %s in StatefulSet %s successful", sl.name, s.set.Metadata.Name)
}

func (s *syncer) event(reason, format string, args ...any) {
	s.d.Events = append(s.d.Events, workload.Normal(reason, format, args...))
}

// wait records why the decision stops; the first reason stands.
func (s *syncer) wait(format string, args ...any) {
	if s.d.Waiting == "" && s.monotonic {
		s.d.Waiting = fmt.Sprintf(format, args...)
	}
}

func (s *syncer) ns() string {
	if s.set.Metadata.Namespace == "" {
		return "default"
	}
	return s.set.Metadata.Namespace
}
