package replicaset

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/workload"
)

// Status is apps/v1 ReplicaSetStatus.
type Status struct {
	ObservedGeneration   int64
	Replicas             int32
	FullyLabeledReplicas int32
	ReadyReplicas        int32
	AvailableReplicas    int32
}

// Decision is what one sync decided: create CreatePods, delete DeletePods,
// record Events and Status, and sync again at RequeueAt when not zero.
type Decision struct {
	Status     Status
	CreatePods []podruntime.PodSpec
	DeletePods []string
	Events     []workload.Event
	RequeueAt  time.Time
}

// DeletionCostAnnotation is controller.kubernetes.io/pod-deletion-cost: a
// pod of lower cost is deleted first.
const DeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// Sync decides one step of rs's controller (syncReplicaSet,
// manageReplicas). pods are the set's pods.
func Sync(rs *manifests.ReplicaSet, pods []workload.ObservedPod, now time.Time) Decision {
	var d Decision
	var active []*workload.ObservedPod
	taken := map[string]bool{}
	for i := range pods {
		taken[pods[i].Name] = true
		if pods[i].Active() {
			active = append(active, &pods[i])
		}
	}
	d.Status, d.RequeueAt = status(rs, active, now)
	diff := len(active) - int(rs.Replicas())
	switch {
	case diff < 0:
		hash := manifests.TemplateHash(&rs.Spec.Template)
		for _, name := range workload.GenerateNames(rs.Metadata.Name, -diff, taken) {
			d.CreatePods = append(d.CreatePods, podruntime.PodSpec{Namespace: rs.Metadata.Namespace, Name: name,
				Owner:    podruntime.OwnerRef{Kind: manifests.KindReplicaSet, Name: rs.Metadata.Name},
				Template: &rs.Spec.Template, TemplateHash: hash})
			d.Events = append(d.Events, workload.Normal("SuccessfulCreate", "Created pod: %s", name))
		}
	case diff > 0:
		slices.SortStableFunc(active, func(a, b *workload.ObservedPod) int { return deleteFirst(a, b, now) })
		for _, p := range active[:diff] {
			d.DeletePods = append(d.DeletePods, p.Name)
			d.Events = append(d.Events, workload.Normal("SuccessfulDelete", "Deleted pod: %s", p.Name))
		}
	}
	return d
}

// status is calculateStatus over the active pods.
func status(rs *manifests.ReplicaSet, active []*workload.ObservedPod, now time.Time) (Status, time.Time) {
	st := Status{ObservedGeneration: rs.Metadata.Generation, Replicas: int32(len(active))}
	var requeue workload.Requeue
	for _, p := range active {
		if fullyLabeled(rs.Spec.Template.Metadata.Labels, p.Labels) {
			st.FullyLabeledReplicas++
		}
		if p.Ready() {
			st.ReadyReplicas++
			if p.Available(rs.Spec.MinReadySeconds, now) {
				st.AvailableReplicas++
			} else {
				requeue.NotAvailableYet(p, rs.Spec.MinReadySeconds, now)
			}
		}
	}
	return st, requeue.At
}

// fullyLabeled: the pod carries every label of the template.
func fullyLabeled(template, pod map[string]string) bool {
	for k, v := range template {
		if got, ok := pod[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// phaseRank is podPhaseToOrdinal: Pending < Unknown < Running.
func phaseRank(p *workload.ObservedPod) int {
	switch p.Status.Phase {
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	}
	return 0
}

// deleteFirst orders pods as ActivePodsWithRanks does (every pod is on
// the one node, so the rank of pods doubled up on a node is the same for
// all and drops out); a tie keeps names in order so the choice is stable.
func deleteFirst(a, b *workload.ObservedPod, now time.Time) int {
	if ra, rb := phaseRank(a), phaseRank(b); ra != rb {
		return ra - rb
	}
	if a.Ready() != b.Ready() {
		if !a.Ready() {
			return -1
		}
		return 1
	}
	if ca, cb := deletionCost(a), deletionCost(b); ca != cb {
		if ca < cb {
			return -1
		}
		return 1
	}
	if a.Ready() && b.Ready() && !a.Status.ReadySince.Equal(b.Status.ReadySince) {
		if c := logRankCompare(a.Status.ReadySince, b.Status.ReadySince, now); c != 0 {
			return c
		}
		return compareNames(a, b)
	}
	if ra, rb := a.MaxRestarts(), b.MaxRestarts(); ra != rb {
		return rb - ra
	}
	if !a.Created.Equal(b.Created) {
		if c := logRankCompare(a.Created, b.Created, now); c != 0 {
			return c
		}
	}
	return compareNames(a, b)
}

// logRankCompare is LogarithmicScaleDown: times are compared by the power
// of two of their age, a zero time (unknown) first, a newer one first.
func logRankCompare(a, b, now time.Time) int {
	if a.IsZero() != b.IsZero() {
		if a.IsZero() {
			return -1
		}
		return 1
	}
	ra, rb := logRank(now.Sub(a)), logRank(now.Sub(b))
	switch {
	case ra < rb:
		return -1
	case ra > rb:
		return 1
	}
	return 0
}

func logRank(d time.Duration) int64 {
	if d <= 0 {
		return -1
	}
	return int64(math.Log2(float64(d)))
}

// deletionCost is the pod's pod-deletion-cost annotation (0 when absent
// or not an int32, as the API server refuses it then).
func deletionCost(p *workload.ObservedPod) int32 {
	v, err := strconv.ParseInt(p.Annotations[DeletionCostAnnotation], 10, 32)
	if err != nil {
		return 0
	}
	return int32(v)
}

func compareNames(a, b *workload.ObservedPod) int { return strings.Compare(a.Name, b.Name) }
