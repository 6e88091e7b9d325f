package store

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

// Orphans (docs/design.md §17.1): `delete --cascade=orphan`, Kubernetes'
// orphan propagation. The garbage collector then removes the deleted
// owner from its dependents' ownerReferences and leaves them; a
// controller of the same kind and name created later adopts those its
// selector matches (its ControllerRefManager).
//
// A stored dependent (a CronJob's Job, a StatefulSet's claim) loses its
// ownerReference in the deletion's transaction, as the garbage collector
// removes it (release). A pod cannot: its owner is in its containers'
// labels (io.dockctl.owner-kind, io.dockctl.owner, io.dockctl.owner-uid),
// which Docker cannot change. So the owner's record says which of its
// kind and name's pods are nobody's: the tombstone of a deletion that
// orphans lists the deleted incarnation's uid (ObjectRecord.Orphaned),
// written in the same transaction as the tombstone, so that no controller
// ever sees the owner deleted without it. The object applied again over
// the tombstone carries the list: its pods of those incarnations are its
// own when its selector matches their labels (adopted: kept as they run,
// then rolled by its update strategy as any pod of another template),
// ownerless otherwise (released, as the ControllerRefManager releases a
// pod its owner's selector no longer matches). PodOwner is that rule, for
// the controller (which keeps or removes pods by it) and for the commands
// (which show an ownerless pod without owner). Nothing is ever written
// about a single pod: an orphan deleted by `delete pod` is simply gone,
// and a pod adopted is its adopter's by its labels, whatever restarts.

// DeleteOptions say how DeleteObjectsWith deletes.
type DeleteOptions struct {
	// Orphan leaves what the objects own (kubectl's --cascade=orphan):
	// their pods keep running ownerless, the stored objects naming them
	// as owner lose that ownerReference. A Namespace's content is
	// deleted with it whatever this says, as the namespace controller
	// deletes it. A Deployment's pods are left as a workload's are:
	// Kubernetes orphans its ReplicaSets, which keep them.
	Orphan bool
}

// OwnerUID is the uid of the incarnation of an object created at
// created (StoredObject.Created): what its pods are labelled with
// (io.dockctl.owner-uid) and its dependents name in their
// ownerReferences. A name deleted and applied again is another
// incarnation.
func OwnerUID(created time.Time) string {
	return strconv.FormatInt(created.UnixNano(), 36)
}

// UID is o's incarnation (OwnerUID).
func (o *StoredObject) UID() string { return OwnerUID(o.Created) }

// OrphanedOnDeletion reports whether o was deleted with --cascade=orphan:
// what it owned beside its pods (a StatefulSet's claims) stays too.
func (o *StoredObject) OrphanedOnDeletion() bool {
	return o.Deleted && slices.Contains(o.Orphaned, o.UID())
}

// PodOwnership is what a stored object of a workload kind is to a pod of
// its kind and name (PodOwner).
type PodOwnership int

const (
	// PodOwned: the object's pod, or one it adopted: kept while it is
	// live, removed with it once it is deleted.
	PodOwned PodOwnership = iota
	// PodOrphan: left ownerless by an orphaning deletion and not
	// adopted: nobody's; it runs, kept as any pod by the workload
	// frame's orphan keeper (its restarts, probes, endpoints), until
	// `delete pod` or its namespace's deletion removes it.
	PodOrphan
	// PodStale: an earlier incarnation's, deleted with its pods: to be
	// removed.
	PodStale
)

// PodOwner says what o is to a pod of its kind and name whose containers
// are labelled with owner uid uid ("" for a pod labelled before uids
// were: o's) and labels: see the rule above.
func (o *StoredObject) PodOwner(uid string, labels map[string]string) PodOwnership {
	own := o.UID()
	if uid == "" {
		uid = own
	}
	orphaned := slices.Contains(o.Orphaned, uid)
	switch {
	case o.OrphanedOnDeletion():
		// Deleted with --cascade=orphan: every pod it had (its own
		// and those it adopted) is left, as is every orphan it had not
		// adopted.
		if uid == own || orphaned {
			return PodOrphan
		}
		return PodStale
	case uid == own:
		return PodOwned
	case orphaned && manifests.SelectorMatches(o.adopts, labels):
		return PodOwned
	case orphaned:
		return PodOrphan
	}
	return PodStale
}

// ContainerOwner is PodOwner of the pod a container is of, whose
// owner-uid label is label, created at created and labelled labels: the
// label read as the incarnation it was made under (a Deployment's
// container made before deployments were labelled: Record.PodUID). What
// the controllers and commands ask of a container, so that the
// Deployment controller and the orphan keeper never both take one.
func (o *StoredObject) ContainerOwner(label string, created time.Time, labels map[string]string) PodOwnership {
	if o.podUID != nil {
		label = o.podUID(label, created)
	}
	return o.PodOwner(label, labels)
}

// orphanPolicy is how a kind's objects leave their pods (objectKind.orphans).
type orphanPolicy[T any] struct {
	// selector is the labels an orphan must carry to be adopted (nil:
	// none is).
	selector func(*T) map[string]string
}

func matchLabels(s *manifests.LabelSelector) map[string]string {
	if s == nil {
		return nil
	}
	return s.MatchLabels
}

func init() {
	// The kinds that own pods. A Job adopts none: its selector is the one
	// the Job controller generates from its uid (manualSelector is not
	// supported), which no pod of another Job carries. A CronJob owns
	// Jobs (released by their ownerReferences) and no pod; a standalone
	// Pod is its own pod.
	statefulSetKind.orphans = &orphanPolicy[manifests.StatefulSet]{
		selector: func(o *manifests.StatefulSet) map[string]string { return matchLabels(o.Spec.Selector) }}
	daemonSetKind.orphans = &orphanPolicy[manifests.DaemonSet]{
		selector: func(o *manifests.DaemonSet) map[string]string { return matchLabels(o.Spec.Selector) }}
	replicaSetKind.orphans = &orphanPolicy[manifests.ReplicaSet]{
		selector: func(o *manifests.ReplicaSet) map[string]string { return matchLabels(o.Spec.Selector) }}
	jobKind.orphans = &orphanPolicy[manifests.Job]{}
}

// orphanedBy adds the incarnation created at created to orphaned, in a
// new slice (the old one may be shared with the record read).
func orphanedBy(orphaned []string, created time.Time) []string {
	uid := OwnerUID(created)
	if slices.Contains(orphaned, uid) {
		return orphaned
	}
	return append(slices.Clone(orphaned), uid)
}

// release orphans the stored dependents of owner, deleted by this
// transaction: every kind drops the ownerReferences naming it.
func (tx *applyTx) release(owner ObjectRef, done map[ObjectRef]bool) error {
	k := kindNamed(owner.Kind)
	if k == nil {
		return nil
	}
	o, err := k.lookup(tx.s, owner.Namespace, owner.Name)
	if err != nil {
		return err
	}
	for _, t := range tx.kinds {
		if err := t.release(tx.s, owner.Namespace, owner, o.UID(), tx.now, done); err != nil {
			return err
		}
	}
	return nil
}

func (a *objectApply[T]) release(s *Store, ns string, owner ObjectRef, uid string, now time.Time, done map[ObjectRef]bool) error {
	recs, err := listObjectsIn(s, a.k, ns)
	if err != nil {
		return fmt.Errorf("releasing the dependents of %s %q: %w", lower(owner.Kind), display(ns, owner.Name), err)
	}
	for _, r := range recs {
		m := a.k.meta(&r.Object)
		ref := ObjectRef{Kind: a.k.kind, Namespace: ns, Name: m.Name}
		if r.Deleted || done[ref] {
			continue
		}
		kept := slices.DeleteFunc(slices.Clone(m.OwnerReferences), func(or manifests.OwnerReference) bool {
			return or.Kind == owner.Kind && or.Name == owner.Name && (or.UID == "" || or.UID == uid)
		})
		if len(kept) == len(m.OwnerReferences) {
			continue
		}
		if len(kept) == 0 {
			kept = nil
		}
		c := *r
		// A copy of the metadata: r's is shared with what was read.
		cm := *m
		cm.OwnerReferences = kept
		*a.k.meta(&c.Object) = cm
		c.Updated = now
		a.written = append(a.written, &c)
	}
	return nil
}

// PodUID is the incarnation of r's name a container of its pods was made
// under, for PodOwner: its owner-uid label. A Deployment's containers
// were labelled only once deployments could orphan: one without the
// label (label "") made before r's incarnation was created is an earlier
// incarnation's, the latest listed in Orphaned created at or before it
// (an unlabelled pod can only have been orphaned after the upgrade, by
// the deletion of the incarnation it ran under). One made before every
// listed incarnation was created ran under the first of them all the
// same: an earlier release's incarnation takes over the containers it
// finds (a state directory resumed from Docker, docs/design.md §16), so
// they can predate its record; it is never r's, whose own pods this
// release labelled. Any other unlabelled container is r's, as PodOwner
// reads "".
func (r *Record) PodUID(label string, created time.Time) string {
	if label != "" || len(r.Orphaned) == 0 || created.IsZero() || !created.Before(r.CreatedAt.Truncate(time.Second)) {
		return label
	}
	uid, at := "", time.Time{}
	first, firstAt := "", time.Time{}
	for _, o := range r.Orphaned {
		n, err := strconv.ParseInt(o, 36, 64)
		if err != nil {
			continue
		}
		// Docker's creation times may be whole seconds.
		t := time.Unix(0, n)
		if first == "" || t.Before(firstAt) {
			first, firstAt = o, t
		}
		if !t.Truncate(time.Second).After(created) && (uid == "" || t.After(at)) {
			uid, at = o, t
		}
	}
	if uid == "" {
		return first
	}
	return uid
}
