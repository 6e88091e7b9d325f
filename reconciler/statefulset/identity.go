package statefulset

import (
	"maps"
	"strconv"
	"strings"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/workload"
)

// Labels Kubernetes' StatefulSet controller puts on its pods.
const (
	PodNameLabel  = "statefulset.kubernetes.io/pod-name"
	PodIndexLabel = "apps.kubernetes.io/pod-index"
)

// Revision is one revision of the set's pod template. Its Name is what a
// StatefulSet's pod carries in its controller-revision-hash label and what
// status.currentRevision and updateRevision hold.
type Revision = workload.Revision

// RevisionOf is the set's revision as its spec stands: the update revision.
func RevisionOf(set *manifests.StatefulSet) Revision {
	return workload.NewRevision(set.Metadata.Name, &set.Spec.Template, set.TemplateHash())
}

// PodName is NAME-ordinal.
func PodName(set *manifests.StatefulSet, ordinal int) string {
	return set.Metadata.Name + "-" + strconv.Itoa(ordinal)
}

// Ordinal parses NAME-i; ok is false for a name that is not one of the
// set's (getParentNameAndOrdinal).
func Ordinal(set *manifests.StatefulSet, podName string) (int, bool) {
	rest, ok := strings.CutPrefix(podName, set.Metadata.Name+"-")
	if !ok || rest == "" || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 || strconv.Itoa(i) != rest {
		return 0, false
	}
	return i, true
}

// startOrdinal is spec.ordinals.start (0 when unset).
func startOrdinal(set *manifests.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

// Owner is what the set's pods and claims name as their owner.
func Owner(set *manifests.StatefulSet) podruntime.OwnerRef {
	return podruntime.OwnerRef{Kind: manifests.KindStatefulSet, Name: set.Metadata.Name}
}

// revisionFor is the revision a missing pod of this ordinal is created at
// (newVersionedStatefulSetPod): under RollingUpdate, below the partition
// the current revision, else the update revision. OnDelete creates at the
// update revision.
func revisionFor(set *manifests.StatefulSet, current, update Revision, ordinal int) Revision {
	us := set.Spec.UpdateStrategy
	if us.Type != manifests.StrategyOnDelete && us.RollingUpdate != nil && us.RollingUpdate.Partition != nil &&
		ordinal < startOrdinal(set)+int(*us.RollingUpdate.Partition) {
		return current
	}
	return update
}

// PodAt is pod ordinal of the set at revision rev (newPod): how a pod
// the set has is kept by the runtime, from its own revision.
func PodAt(set *manifests.StatefulSet, rev Revision, ordinal int) podruntime.PodSpec {
	return newPod(set, rev, ordinal)
}

// newPod is pod ordinal of the set at revision rev: the revision's
// template with the pod's identity labels and a volume per
// volumeClaimTemplate naming the pod's claim (newStatefulSetPod,
// updateIdentity, updateStorage). The template is a copy whose labels and
// volumes are the pod's own; the rest is shared with the revision's
// template, which nothing changes.
func newPod(set *manifests.StatefulSet, rev Revision, ordinal int) podruntime.PodSpec {
	name := PodName(set, ordinal)
	t := *rev.Template
	t.Metadata.Labels = maps.Clone(t.Metadata.Labels)
	if t.Metadata.Labels == nil {
		t.Metadata.Labels = map[string]string{}
	}
	t.Metadata.Labels[PodNameLabel] = name
	t.Metadata.Labels[PodIndexLabel] = strconv.Itoa(ordinal)
	t.Metadata.Labels[workload.RevisionLabel] = rev.Name
	if len(set.Spec.VolumeClaimTemplates) > 0 {
		claimed := map[string]string{}
		for _, ct := range set.Spec.VolumeClaimTemplates {
			claimed[ct.Metadata.Name] = ClaimName(set, ct.Metadata.Name, ordinal)
		}
		var vols []manifests.Volume
		for _, v := range t.Spec.Volumes {
			if _, ok := claimed[v.Name]; !ok {
				vols = append(vols, v)
			}
		}
		for _, ct := range set.Spec.VolumeClaimTemplates {
			vols = append(vols, manifests.Volume{Name: ct.Metadata.Name,
				PersistentVolumeClaim: &manifests.PersistentVolumeClaimVolumeSource{ClaimName: claimed[ct.Metadata.Name]}})
		}
		t.Spec.Volumes = vols
	}
	return podruntime.PodSpec{
		Namespace:    set.Metadata.Namespace,
		Name:         name,
		Owner:        Owner(set),
		Template:     &t,
		TemplateHash: rev.Hash,
		Identity: podruntime.Identity{Ordinal: ordinal, HasOrdinal: true, Hostname: name,
			Subdomain: set.Spec.ServiceName},
	}
}
