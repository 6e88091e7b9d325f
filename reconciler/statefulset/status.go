package statefulset

import (
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/workload"
)

// Status is apps/v1 StatefulSetStatus, the fields dockctl reports.
type Status struct {
	ObservedGeneration int64
	Replicas           int32
	ReadyReplicas      int32
	AvailableReplicas  int32
	CurrentReplicas    int32
	UpdatedReplicas    int32
	CurrentRevision    string
	UpdateRevision     string
	CollisionCount     int32
}

// countPods is computeReplicaStatus over the observed pods of the set: a
// pod counts as a replica once it exists, ready when running and ready,
// available when ready for minReadySeconds, current or updated by its
// revision label unless it is terminating.
func countPods(st *Status, set *manifests.StatefulSet, pods []*workload.ObservedPod, s *syncer) {
	for _, p := range pods {
		if p.Exists() {
			st.Replicas++
		}
		if p.RunningAndReady() {
			st.ReadyReplicas++
			if p.Available(set.Spec.MinReadySeconds, s.now) {
				st.AvailableReplicas++
			} else {
				s.requeue.NotAvailableYet(p, set.Spec.MinReadySeconds, s.now)
			}
		}
		if p.Exists() && !p.Terminating() {
			if p.Revision() == st.CurrentRevision {
				st.CurrentReplicas++
			}
			if p.Revision() == st.UpdateRevision {
				st.UpdatedReplicas++
			}
		}
	}
}

// completeRollingUpdate advances the current revision to the update
// revision once spec.replicas pods exist, every one updated and ready —
// compared with spec.replicas, as Kubernetes' completeRollingUpdate does:
// a set still scaling up to its replicas, its pods so far updated, has
// not completed its update (RollingUpdate only: under OnDelete the
// current revision is the one pods were last replaced from, and only a
// rollout by hand moves them).
func completeRollingUpdate(set *manifests.StatefulSet, st *Status) {
	want := set.Replicas()
	if set.Spec.UpdateStrategy.Type != manifests.StrategyOnDelete &&
		st.UpdatedReplicas == want && st.ReadyReplicas == want && st.Replicas == want {
		st.CurrentReplicas = st.UpdatedReplicas
		st.CurrentRevision = st.UpdateRevision
	}
}
