package store

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

// The stored kinds. Every namespaced kind the store keeps is one
// registration in storedKinds — ConfigMap, Secret and claim
// (config.go), Service (services.go), Deployment (records.go) — and the
// transactions (apply, prune, delete, a namespace's deletion, an update of
// metadata, commit) iterate the registry: none of them names a kind. A
// generic kind is an *objectKind[T] (its record an ObjectRecord[T]); a kind
// whose record carries more (a Deployment's revisions) implements
// storedKind itself. Namespaces are the scope of the others (whether an
// object may be stored, what a namespace's deletion takes with it) and
// stay apart (namespaces.go).

// storedKind is one registered kind.
type storedKind interface {
	// Kind is the kind's name, as ObjectRef.Kind says it.
	Kind() string
	// subdomainNames tells a kind whose names are DNS-1123 subdomains
	// (a label otherwise: they become file names either way).
	subdomainNames() bool
	// recordsDir is the directory of a namespace holding the kind's
	// records, one <name>.json each.
	recordsDir() string
	// watchPrefix is what the kind's watch keys start with, before
	// Key(ns, name) ("" for a Deployment's: the controller's first keys).
	watchPrefix() string
	// pruneRank orders the pruned objects in Apply's results: lower
	// first (what refers to others before what is referred to).
	pruneRank() int
	// begin returns the kind's part of a transaction, holding the
	// objects of b, checked and normalized (once refuses a duplicate).
	begin(b *Bundle, once func(kind, ns, name string) error) (kindTx, error)
	// liveCopy is a copy of the live object ref names, the metadata in
	// it, its validation, and a Bundle holding it (UpdateMetadata).
	liveCopy(s *Store, ref ObjectRef) (*manifests.ObjectMeta, func() error, Bundle, error)
	// metas are the metadata of the kind's objects in b, and filter
	// keeps those of them keep says (Bundle.Refs, Bundle.Filter).
	metas(b *Bundle) []*manifests.ObjectMeta
	// each calls f with a shallow copy of each of the kind's objects in
	// b (Bundle.Each).
	each(b *Bundle, f func(kind string, obj any, m *manifests.ObjectMeta) error) error
	filter(b *Bundle, keep func(*manifests.ObjectMeta) bool)
	// lookup and list are LookupObject and ListObjects of the kind.
	lookup(s *Store, ns, name string) (*StoredObject, error)
	list(s *Store) ([]*StoredObject, []error)
}

// kindTx is a stored kind's part of one write transaction: the bundle's
// objects of the kind, the records read, and the records to write.
type kindTx interface {
	// load reads the records of the bundle's objects and every record
	// of the namespaces nss (where a prune looks).
	load(s *Store, nss []string) error
	// plan computes the results of storing the bundle's objects.
	plan(c *planCtx) error
	// prune tombstones the live records load read that prunable names.
	prune(c *planCtx, prunable func(ObjectRef, map[string]string, Ownership) bool)
	// each calls f with every record load read.
	each(f func(ref ObjectRef, live bool))
	// namespaces adds the namespaces of the bundle's objects to set.
	namespaces(set map[string]bool)
	// remove tombstones the live object ref names, or returns an error
	// wrapping ErrNotFound; orphan: its pods are left running ownerless
	// (--cascade=orphan, orphans.go).
	remove(s *Store, ref ObjectRef, now time.Time, orphan bool) error
	// release drops, from the live objects of namespace ns that done
	// does not hold, the ownerReferences naming owner (of uid, or
	// without one): the garbage collector's orphaning of an owner's
	// dependents.
	release(s *Store, ns string, owner ObjectRef, uid string, now time.Time, done map[ObjectRef]bool) error
	// removeIn tombstones every live object of namespace ns that done
	// does not hold, and adds them to done (a namespace's deletion).
	removeIn(s *Store, ns string, now time.Time, done map[ObjectRef]bool) error
	// touched adds the namespaces of the records to write to set.
	touched(set map[string]bool)
	// beforeWrite runs before any record of the transaction is written
	// (a revived deployment's status goes first).
	beforeWrite(s *Store) error
	// write prepares the writes of the records (see applyTx.commit).
	write(prep func(rel string, data []byte, err error) error) error
	// setPlanned puts the planned objects into b (Preview).
	setPlanned(b *Bundle)
}

// Refs names b's objects in the order a deletion takes them: the stored
// kinds by pruneRank (what refers to others first), each in the order of
// b, then the Namespaces, so that each object is reported deleted by its
// own line rather than with its namespace. A namespace is as b holds it
// ("" for default).
func (b *Bundle) Refs() []ObjectRef {
	ks := append([]storedKind(nil), storedKinds...)
	sort.SliceStable(ks, func(i, j int) bool { return ks[i].pruneRank() < ks[j].pruneRank() })
	var out []ObjectRef
	for _, k := range ks {
		for _, m := range k.metas(b) {
			out = append(out, ObjectRef{Kind: k.Kind(), Namespace: m.Namespace, Name: m.Name})
		}
	}
	for _, n := range b.Namespaces {
		out = append(out, ObjectRef{Kind: KindNamespace, Name: n.Metadata.Name})
	}
	return out
}

// Each calls f, until it fails, with every object of b in the order
// Apply stores them (Namespaces, then storedKinds' order, each kind in the
// order of b): obj is a shallow copy of the object (a pointer to its
// manifests type), m its metadata. f may replace the copy's fields,
// never write into what they point to.
func (b *Bundle) Each(f func(kind string, obj any, m *manifests.ObjectMeta) error) error {
	nsMeta := func(n *manifests.Namespace) *manifests.ObjectMeta { return &n.Metadata }
	if err := eachCopy(KindNamespace, b.Namespaces, nsMeta, f); err != nil {
		return err
	}
	for _, k := range storedKinds {
		if err := k.each(b, f); err != nil {
			return err
		}
	}
	return nil
}

func eachCopy[T any](kind string, in []*T, meta func(*T) *manifests.ObjectMeta, f func(kind string, obj any, m *manifests.ObjectMeta) error) error {
	for _, o := range in {
		c := *o
		if err := f(kind, &c, meta(&c)); err != nil {
			return err
		}
	}
	return nil
}

// Len is the number of b's objects, of every kind.
func (b *Bundle) Len() int { return len(b.Refs()) }

// Filter keeps the objects of b, of every kind, whose metadata keep
// accepts.
func (b *Bundle) Filter(keep func(kind string, m *manifests.ObjectMeta) bool) {
	b.Namespaces = filterObjects(b.Namespaces, func(n *manifests.Namespace) *manifests.ObjectMeta { return &n.Metadata },
		func(m *manifests.ObjectMeta) bool { return keep(KindNamespace, m) })
	for _, k := range storedKinds {
		k.filter(b, func(m *manifests.ObjectMeta) bool { return keep(k.Kind(), m) })
	}
}

func filterObjects[T any](in []*T, meta func(*T) *manifests.ObjectMeta, keep func(*manifests.ObjectMeta) bool) []*T {
	out := in[:0]
	for _, o := range in {
		if keep(meta(o)) {
			out = append(out, o)
		}
	}
	return out
}

func metasOf[T any](in []*T, meta func(*T) *manifests.ObjectMeta) []*manifests.ObjectMeta {
	out := make([]*manifests.ObjectMeta, len(in))
	for i, o := range in {
		out[i] = meta(o)
	}
	return out
}

// planCtx is what the kinds' plans share in one apply.
type planCtx struct {
	s       *Store
	now     time.Time
	own     *ownerCheck
	zeros   map[ObjectRef]map[string]any
	missing func(kind, ns, name string) error
	applied map[ObjectRef]bool
	visited map[string]bool
	results []ApplyResult
}

// storedKinds is the registry, in the order Apply stores the kinds: what
// is referred to before what refers to it, so that a crash between two
// renames never leaves a pod without its ConfigMap.
var storedKinds = append([]storedKind{configMapKind, secretKind, claimKind, serviceKind, deploymentKind,
	cronJobKind, jobKind, statefulSetKind, daemonSetKind, replicaSetKind, podKind},
	routingKinds...) // routing.go

// kindNamed is the registration of kind, or nil.
func kindNamed(kind string) storedKind {
	for _, k := range storedKinds {
		if k.Kind() == kind {
			return k
		}
	}
	return nil
}

// kindDirs are the kinds' record directories, in the registry's order.
func kindDirs() []string {
	out := make([]string, len(storedKinds))
	for i, k := range storedKinds {
		out[i] = k.recordsDir()
	}
	return out
}

// kindOfDir is the kind whose records dir holds, or nil.
func kindOfDir(dir string) storedKind {
	for _, k := range storedKinds {
		if k.recordsDir() == dir {
			return k
		}
	}
	return nil
}

// watchKeyOf is the watch key of object name of kind k in namespace ns.
func watchKeyOf(k storedKind, ns, name string) string { return k.watchPrefix() + Key(ns, name) }

// pruneOrder is storedKinds by pruneRank.
func pruneOrder(txs []kindTx) []kindTx {
	out := append([]kindTx(nil), txs...)
	idx := map[kindTx]int{}
	for i, t := range txs {
		idx[t] = storedKinds[i].pruneRank()
	}
	sort.SliceStable(out, func(i, j int) bool { return idx[out[i]] < idx[out[j]] })
	return out
}

// prepareEach checks names, refuses duplicates (once) and normalizes the
// objects of one kind of a bundle.
func prepareEach[T, N any](kind string, objs []*T, meta func(*T) *manifests.ObjectMeta, norm func(*T) (N, error), once func(kind, ns, name string) error) ([]N, error) {
	out := make([]N, 0, len(objs))
	for i, o := range objs {
		if o == nil {
			return nil, fmt.Errorf("%s #%d is nil", lower(kind), i+1)
		}
		m := meta(o)
		if err := checkObject(kind, m.Namespace, m.Name); err != nil {
			return nil, err
		}
		if err := once(kind, m.Namespace, m.Name); err != nil {
			return nil, err
		}
		n, err := norm(o)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", lower(kind), display(m.Namespace, m.Name), err)
		}
		out = append(out, n)
	}
	return out, nil
}

// planOne is what every kind's plan does for one object after merging it:
// its result, the ownership rules, the last-applied configuration; it
// returns the record to write, or nil.
func planOne[R any](c *planCtx, ref ObjectRef, act Action, gen int64, live bool, oldOwn Ownership, old, rec *R, file []byte,
	own func(*R) *Ownership, applied func(*R) *Applied) *R {
	c.results = append(c.results, ApplyResult{ObjectRef: ref, Action: act, Generation: gen})
	rec, write := claim(c.own, ref, live, oldOwn, rec, act, own)
	if rec, write = remember(c.own.opts, old, rec, write, file, applied); write {
		return rec
	}
	return nil
}

// fileOf is the file of an object of the bundle: its canonical JSON with
// the zeros of its manifest (merge.go).
func (c *planCtx) fileOf(kind, ns, name string, all []byte) (ObjectRef, []byte, error) {
	if err := c.missing(kind, ns, name); err != nil {
		return ObjectRef{}, nil, err
	}
	ref := ObjectRef{Kind: kind, Namespace: orDefault(ns), Name: name}
	c.applied[ref], c.visited[ref.Namespace] = true, true
	file, err := withZeros(all, c.zeros[ref])
	if err != nil {
		return ref, nil, fmt.Errorf("%s %q: %w", lower(kind), display(ns, name), err)
	}
	return ref, file, nil
}

// lastApplied is a live record's last-applied configuration (none for a
// tombstone: a revival is a new object).
func lastApplied(live bool, a Applied) json.RawMessage {
	if !live {
		return nil
	}
	return a.LastApplied
}

// StoredObject is one stored object of any kind, as its record holds it:
// the object (a pointer to a copy of its manifests type,
// *manifests.Deployment, *manifests.Service…, metadata.namespace "" for
// default) and the record's bookkeeping.
type StoredObject struct {
	Object any
	// Meta is Object's metadata.
	Meta       *manifests.ObjectMeta
	Generation int64 // 0 for a Namespace
	Created    time.Time
	Deleted    bool
	// Updated is the record's last write, for a tombstone its deletion
	// (zero for a Deployment's and a Namespace's record).
	Updated time.Time
	Ownership
	// Revisions is the pod template history of a StatefulSet, a
	// DaemonSet (ObjectRecord.Revisions) or a Deployment
	// (Record.Revisions), oldest first; nil for the other kinds.
	Revisions []Revision
	// Orphaned are the incarnations whose pods were left ownerless
	// (ObjectRecord.Orphaned); PodOwner reads it.
	Orphaned []string
	// adopts are the labels an orphan must carry to be adopted (the
	// object's selector; nil: it adopts none).
	adopts map[string]string
	// podUID, when set, is the incarnation a container of the object's
	// pods was made under, from its owner-uid label and creation (a
	// Deployment's: Record.PodUID); nil: the label as it is.
	podUID func(label string, created time.Time) string
}

// LookupObject returns the record of the object ref names, of any stored
// kind, tombstones included (StoredObject.Deleted), or an error wrapping
// ErrNotFound for one never known: the kind-blind form of Lookup,
// LookupService, LookupNamespace, LookupConfigMapRecord….
func (s *Store) LookupObject(ref ObjectRef) (*StoredObject, error) {
	if ref.Kind == KindNamespace {
		r, err := s.LookupNamespace(ref.Name)
		if err != nil {
			return nil, err
		}
		return namespaceObject(r), nil
	}
	ref = unscoped(ref)
	k := kindNamed(ref.Kind)
	if k == nil {
		return nil, fmt.Errorf("unknown kind %q", ref.Kind)
	}
	if err := checkObject(ref.Kind, ref.Namespace, ref.Name); err != nil {
		return nil, err
	}
	return k.lookup(s, ref.Namespace, ref.Name)
}

// ListObjects returns every record of kind, of every namespace, live and
// tombstoned, sorted by namespace and name; a file that cannot be read
// yields one error naming it and does not hide the others.
func (s *Store) ListObjects(kind string) ([]*StoredObject, []error) {
	if kind == KindNamespace {
		recs, err := s.ListNamespaces()
		out := make([]*StoredObject, len(recs))
		for i, r := range recs {
			out[i] = namespaceObject(r)
		}
		if err != nil {
			return out, []error{err}
		}
		return out, nil
	}
	k := kindNamed(kind)
	if k == nil {
		return nil, []error{fmt.Errorf("unknown kind %q", kind)}
	}
	return k.list(s)
}

func namespaceObject(r *NamespaceRecord) *StoredObject {
	n := r.Namespace
	return &StoredObject{Object: &n, Meta: &n.Metadata, Created: r.Created, Deleted: r.Deleted, Ownership: r.Ownership}
}
