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

// StatefulSetKind runs a StatefulSet with the StatefulSet controller's
// decision (package statefulset): its claims are stored as
// PersistentVolumeClaims before the pods that mount them are created (the
// runtime's claim path makes their volumes, docs/design.md §12), and
// deleting the set removes its claims as persistentVolumeClaimRetentionPolicy
// says (Teardown). Its revisions are its record's (Env.History, as its
// ControllerRevisions are their own objects in Kubernetes); its status is
// v1 StatefulSetStatus, naming the current and update revisions: a pod is
// kept, judged (its probes, its readiness) and made again from the
// template of its own revision — when its template hash is that
// revision's — and below a partition a deleted pod comes back at the
// current revision. A status file of an earlier release that kept the
// revisions too is read, that field ignored.
func StatefulSetKind() Kind {
	k := WithPods(For(manifests.KindStatefulSet, func(s *manifests.StatefulSet) *manifests.PodTemplateSpec { return &s.Spec.Template },
		func(env Env, set *manifests.StatefulSet, prev appsv1.StatefulSetStatus, pods []workload.ObservedPod) (Outcome, error) {
			claims, err := setClaims(env, set.Metadata.NamespaceOrDefault())
			if err != nil {
				return Outcome{}, err
			}
			last := statefulset.Status{CurrentRevision: prev.CurrentRevision, UpdateRevision: prev.UpdateRevision}
			if prev.CollisionCount != nil {
				last.CollisionCount = *prev.CollisionCount
			}
			history := withCurrent(statefulset.RevisionOf(set), env.History)
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
			return Outcome{Status: st, Create: d.CreatePods, Delete: d.DeletePods, Events: d.Events, RequeueAt: d.RequeueAt}, nil
		}), "replicas", (*manifests.StatefulSet).Replicas) // the controller's cap, as a ReplicaSet's
	k.keep = func(obj any, _ func(into any) error, recorded []workload.Revision, pod string, ct dockerx.Container) (podruntime.PodSpec, bool) {
		set := obj.(*manifests.StatefulSet)
		ordinal, ok := statefulset.Ordinal(set, pod)
		if !ok {
			return podruntime.PodSpec{}, false
		}
		// Its own revision's template when it was made from one the
		// record holds, else the set's (update) revision.
		rev, ok := madeFrom(recorded, ct)
		if !ok {
			rev = statefulset.RevisionOf(set)
		}
		return statefulset.PodAt(set, rev, ordinal), true
	}
	// An orphan runs its own revision's template only: the one its
	// revision label and hash name, among the record's revisions and the
	// set's own.
	k.made = func(obj any, _ func(into any) error, recorded []workload.Revision, pod string, ct dockerx.Container) (podruntime.PodSpec, bool) {
		set := obj.(*manifests.StatefulSet)
		ordinal, ok := statefulset.Ordinal(set, pod)
		if !ok {
			return podruntime.PodSpec{}, false
		}
		rev, ok := madeFrom(withCurrent(statefulset.RevisionOf(set), recorded), ct)
		if !ok {
			return podruntime.PodSpec{}, false
		}
		return statefulset.PodAt(set, rev, ordinal), true
	}
	k.stableNames = true
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
