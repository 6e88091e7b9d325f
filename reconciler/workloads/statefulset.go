package workloads

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/statefulset"
	"github.com/dockctl/dockctl/reconciler/workload"
	"github.com/dockctl/dockctl/store"
)

// ManagerStatefulSet is the store manager of the claims a StatefulSet's
// volumeClaimTemplates make (kube-controller-manager's field manager).
const ManagerStatefulSet = "statefulset-controller"

// StatefulSetStatus is a StatefulSet's stored status: v1
// StatefulSetStatus, and the revisions of its pod template its pods and
// status name (Kubernetes' ControllerRevisions of the set): a pod of an
// earlier revision is kept, judged and made again from its own revision's
// template, and currentRevision outlives an edit of the spec.
type StatefulSetStatus struct {
	appsv1.StatefulSetStatus
	Revisions []SetRevision `json:"revisions,omitempty"`
}

// SetRevision is one stored revision of a StatefulSet's pod template.
type SetRevision struct {
	Name     string                    `json:"name"`
	Hash     string                    `json:"hash"`
	Template manifests.PodTemplateSpec `json:"template"`
}

// setHistory is the set's revisions: the stored ones and the set's own
// (the update revision), which is added when missing.
func setHistory(set *manifests.StatefulSet, stored []SetRevision) []workload.Revision {
	update := statefulset.RevisionOf(set)
	out := []workload.Revision{update}
	for i := range stored {
		r := &stored[i]
		if r.Name != update.Name {
			out = append(out, workload.Revision{Name: r.Name, Hash: r.Hash, Template: &r.Template})
		}
	}
	return out
}

// keptRevisions are the revisions of history still named: by the
// status's current and update revisions, or by a pod's revision label.
// The others go, as Kubernetes truncates the history it no longer needs.
func keptRevisions(history []workload.Revision, st appsv1.StatefulSetStatus, pods []workload.ObservedPod) []SetRevision {
	named := map[string]bool{st.CurrentRevision: true, st.UpdateRevision: true}
	for i := range pods {
		named[pods[i].Revision()] = true
	}
	var out []SetRevision
	for _, r := range history {
		if named[r.Name] && r.Template != nil {
			out = append(out, SetRevision{Name: r.Name, Hash: r.Hash, Template: *r.Template})
		}
	}
	return out
}

// StatefulSetKind runs a StatefulSet with the StatefulSet controller's
// decision (package statefulset): its claims are stored as
// PersistentVolumeClaims before the pods that mount them are created (the
// runtime's claim path makes their volumes, docs/design.md §12), and
// deleting the set removes its claims as persistentVolumeClaimRetentionPolicy
// says (Teardown). Its revision history is kept in its stored status
// (StatefulSetStatus): a pod is kept, judged (its probes, its readiness)
// and made again from the template of its own revision — when its
// template hash is that revision's — and below a partition a deleted pod
// comes back at the current revision.
func StatefulSetKind() Kind {
	k := WithPods(For(manifests.KindStatefulSet, func(s *manifests.StatefulSet) *manifests.PodTemplateSpec { return &s.Spec.Template },
		func(env Env, set *manifests.StatefulSet, prev StatefulSetStatus, pods []workload.ObservedPod) (Outcome, error) {
			claims, err := setClaims(env, set.Metadata.NamespaceOrDefault())
			if err != nil {
				return Outcome{}, err
			}
			last := statefulset.Status{CurrentRevision: prev.CurrentRevision, UpdateRevision: prev.UpdateRevision}
			if prev.CollisionCount != nil {
				last.CollisionCount = *prev.CollisionCount
			}
			history := setHistory(set, prev.Revisions)
			d := statefulset.Sync(set, history, last, pods, claims, env.Now)
			for _, c := range d.CreateClaims {
				pvc, owner := statefulset.StoredClaim(set, "", c) // objects have no uid in the store yet
				if owner != nil {
					yes := true
					pvc.Metadata.OwnerReferences = []manifests.OwnerReference{{APIVersion: "apps/v1", Kind: owner.Kind,
						Name: owner.Name, UID: owner.UID, Controller: &yes, BlockOwnerDeletion: &yes}}
				}
				if _, err := env.Store.Apply(store.Bundle{Claims: []*manifests.PersistentVolumeClaim{&pvc}},
					store.ApplyOptions{Manager: ManagerStatefulSet}); err != nil {
					return Outcome{}, fmt.Errorf("creating claim %s: %w", pvc.Metadata.Name, err)
				}
			}
			if err := deleteClaims(env.Store, set.Metadata.Namespace, d.DeleteClaims); err != nil {
				return Outcome{}, err
			}
			s := d.Status
			cc := s.CollisionCount
			st := appsv1.StatefulSetStatus{ObservedGeneration: s.ObservedGeneration, Replicas: s.Replicas, ReadyReplicas: s.ReadyReplicas,
				AvailableReplicas: s.AvailableReplicas, CurrentReplicas: s.CurrentReplicas, UpdatedReplicas: s.UpdatedReplicas,
				CurrentRevision: s.CurrentRevision, UpdateRevision: s.UpdateRevision, CollisionCount: &cc}
			return Outcome{Status: StatefulSetStatus{StatefulSetStatus: st, Revisions: keptRevisions(history, st, pods)},
				Create: d.CreatePods, Delete: d.DeletePods, Events: d.Events, RequeueAt: d.RequeueAt}, nil
		}), "replicas", (*manifests.StatefulSet).Replicas) // the controller's cap, as a ReplicaSet's
	k.keep = func(obj any, status func(into any) error, pod string, ct dockerx.Container) (podruntime.PodSpec, bool) {
		set := obj.(*manifests.StatefulSet)
		ordinal, ok := statefulset.Ordinal(set, pod)
		if !ok {
			return podruntime.PodSpec{}, false
		}
		var prev StatefulSetStatus
		if err := status(&prev); err != nil {
			prev = StatefulSetStatus{} // unreadable: the set's own revision
		}
		history := setHistory(set, prev.Revisions)
		rev := history[0]
		// Its own revision's template, but only when the pod was made
		// from it (its template hash is that revision's): a label
		// edited by hand names no template of the pod.
		if r, ok := workload.Find(history, ct.Labels[workload.RevisionLabel]); ok && r.Hash == ct.TemplateHash {
			rev = r
		}
		return statefulset.PodAt(set, rev, ordinal), true
	}
	k.teardown = func(env Env, obj any, pods []string) error {
		set := obj.(*manifests.StatefulSet)
		claims, err := setClaims(env, set.Metadata.NamespaceOrDefault())
		if err != nil {
			return err
		}
		_, del := statefulset.Teardown(set, pods, claims)
		return deleteClaims(env.Store, set.Metadata.Namespace, del)
	}
	return k
}

// setClaims are the claims of namespace ns: the live ones, and the
// deleted ones whose volume is still there (kept while a container mounts
// it, docs/design.md §12), Terminating — as Kubernetes' claim stays,
// Terminating, under its pvc-protection finalizer, and the StatefulSet
// controller neither creates it again nor makes a pod on it until it is
// gone. A deleted claim whose volume is gone is absent: storing it again
// makes it anew. Without env.Volumes (a teardown) deleted claims are
// absent.
func setClaims(env Env, ns string) ([]statefulset.ObservedClaim, error) {
	objs, errs := env.Store.ListObjects(store.KindPersistentVolumeClaim)
	if len(errs) > 0 {
		return nil, fmt.Errorf("listing claims: %w", errs[0])
	}
	var vols []dockerx.Volume
	listed := false
	var out []statefulset.ObservedClaim
	for _, o := range objs {
		if o.Meta.NamespaceOrDefault() != ns || !env.DeletedAt.IsZero() && o.Created.After(env.DeletedAt) {
			// A teardown's claims are those of the set when it was
			// deleted: a claim applied later under one of their names
			// is not its.
			continue
		}
		if !o.Deleted {
			out = append(out, statefulset.ObservedClaim{Name: o.Meta.Name})
			continue
		}
		if env.Volumes == nil {
			continue
		}
		if !listed {
			var err error
			if vols, err = env.Volumes(); err != nil {
				return nil, err
			}
			listed = true
		}
		if claimVolumeExists(vols, o.Meta.Name, ns) {
			out = append(out, statefulset.ObservedClaim{Name: o.Meta.Name, Terminating: true})
		}
	}
	return out, nil
}

// claimVolumeExists reports whether the instance's volume of claim (of
// namespace ns) is among vols.
func claimVolumeExists(vols []dockerx.Volume, claim, ns string) bool {
	for _, v := range vols {
		if v.Labels[dockerx.LabelRole] == dockerx.RoleClaim && v.Labels[dockerx.LabelClaim] == claim &&
			podruntime.OrDefaultNamespace(v.Labels[dockerx.LabelNamespace]) == ns {
			return true
		}
	}
	return false
}

func deleteClaims(st Store, ns string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	refs := make([]store.ObjectRef, len(names))
	for i, n := range names {
		refs[i] = store.ObjectRef{Kind: store.KindPersistentVolumeClaim, Namespace: ns, Name: n}
	}
	if _, err := st.DeleteObjects(refs); err != nil {
		return fmt.Errorf("deleting claims: %w", err)
	}
	return nil
}
