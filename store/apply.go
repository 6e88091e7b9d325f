package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/manifests"
)

// prepared is a bundle checked and normalized, before the store is read.
type prepared struct {
	namespaces []normNamespace
	// kinds are the bundle's objects of each stored kind, in the order of
	// storedKinds.
	kinds []kindTx
	// zeros are the bundle's (Bundle.Zeros).
	zeros map[ObjectRef]map[string]any
}

// display names an object in a message: its name in the default
// namespace (as every message of earlier releases did), namespace/name in
// any other.
func display(ns, name string) string {
	if orDefault(ns) == manifests.DefaultNamespace {
		return name
	}
	return ns + "/" + name
}

// prepare checks every name and namespace (they become paths), refuses
// duplicates, and normalizes each object.
func prepare(b Bundle) (*prepared, error) {
	p := &prepared{zeros: b.Zeros}
	seen := map[ObjectRef]bool{}
	once := func(kind, ns, name string) error {
		ref := ObjectRef{Kind: kind, Namespace: orDefault(ns), Name: name}
		if kind == KindNamespace {
			ref.Namespace = ""
		}
		if seen[ref] {
			return fmt.Errorf("%s %q appears more than once", lower(kind), display(ref.Namespace, name))
		}
		seen[ref] = true
		return nil
	}
	for i, n := range b.Namespaces {
		if n == nil {
			return nil, fmt.Errorf("namespace #%d is nil", i+1)
		}
		name := n.Metadata.Name
		if err := checkName(KindNamespace, name); err != nil {
			return nil, err
		}
		if err := once(KindNamespace, "", name); err != nil {
			return nil, err
		}
		nn, err := normalizeNamespace(n)
		if err != nil {
			return nil, fmt.Errorf("namespace %q: %w", name, err)
		}
		p.namespaces = append(p.namespaces, nn)
	}
	for _, k := range storedKinds {
		t, err := k.begin(&b, once)
		if err != nil {
			return nil, err
		}
		p.kinds = append(p.kinds, t)
	}
	return p, nil
}

// applyTx is one write transaction: what it computed, then written by
// commit in an order that a crash between two renames cannot make
// inconsistent (a namespace before its objects; tombstones of a
// namespace's objects before the namespace's own).
type applyTx struct {
	s   *Store
	now time.Time

	namespaces []*NamespaceRecord // created, revived or changed
	// kinds are the stored kinds' parts, in the order of storedKinds.
	kinds []kindTx
	// deletedNamespaces are tombstoned after their objects.
	deletedNamespaces []*NamespaceRecord
	// planned is every applied object as it is stored, merged with the
	// live one (Preview).
	planned Bundle
}

// newTx is a transaction of no bundle (a deletion, an update) at now.
func newTx(s *Store, now time.Time) *applyTx {
	tx := &applyTx{s: s, now: now}
	for _, k := range storedKinds {
		t, _ := k.begin(&Bundle{}, nil) // nothing to check in no bundle
		tx.kinds = append(tx.kinds, t)
	}
	return tx
}

// kindTx is the part of kind in the transaction.
func (tx *applyTx) kindTx(kind string) kindTx {
	for i, k := range storedKinds {
		if k.Kind() == kind {
			return tx.kinds[i]
		}
	}
	return nil
}

// apply computes the results of storing in, and what to write.
func (tx *applyTx) apply(in *prepared, opts ApplyOptions) ([]ApplyResult, error) {
	s := tx.s
	tx.kinds = in.kinds
	own := &ownerCheck{opts: opts, now: tx.now}
	c := &planCtx{s: s, now: tx.now, own: own, zeros: in.zeros, applied: map[ObjectRef]bool{}, visited: map[string]bool{}}

	// Namespaces first: they decide whether the others may be stored.
	stored, exists, err := tx.applyNamespaces(in, c)
	if err != nil {
		return nil, err
	}
	pruneNS := bundleNamespaces(in)
	if opts.PruneOwned {
		pruneNS = pruneNS[:0]
		for name, live := range exists {
			if live {
				pruneNS = append(pruneNS, name)
			}
		}
		sort.Strings(pruneNS)
	} else if !opts.Prune {
		pruneNS = nil
	}
	c.missing = func(kind, ns, name string) error {
		if exists[orDefault(ns)] {
			return nil
		}
		// kubectl's words, so that scripts and habits carry over.
		return fmt.Errorf("%s/%s: namespaces %q %w", lower(kind), name, orDefault(ns), ErrNotFound)
	}
	for _, t := range tx.kinds {
		if err := t.load(s, pruneNS); err != nil {
			return nil, err
		}
		if err := t.plan(c); err != nil {
			return nil, err
		}
		t.setPlanned(&tx.planned)
	}
	if err := own.err(); err != nil {
		return nil, err
	}
	pruned := map[ObjectRef]bool{}
	if opts.Prune || opts.PruneOwned {
		// Only the applier's objects: `apply --prune` never deletes what
		// a manifests directory manages, nor a directory what apply made.
		prunable := func(ref ObjectRef, l map[string]string, o Ownership) bool {
			ok := !c.applied[ref] && own.owns(ref, o.Manager())
			if !opts.PruneOwned {
				ok = ok && c.visited[ref.Namespace] && (opts.PruneSelector == nil || opts.PruneSelector.Matches(labels.Set(l)))
			}
			pruned[ref] = pruned[ref] || ok
			return ok
		}
		for _, t := range pruneOrder(tx.kinds) {
			t.prune(c, prunable)
		}
	}
	if opts.PruneOwned {
		if err := tx.pruneNamespaces(stored, c, pruned, own); err != nil {
			return nil, err
		}
	}
	return c.results, nil
}

// applyNamespaces plans the bundle's namespaces, and returns the stored
// ones and which exist once the bundle is stored.
func (tx *applyTx) applyNamespaces(in *prepared, c *planCtx) (map[string]*NamespaceRecord, map[string]bool, error) {
	s, opts := tx.s, c.own.opts
	stored, err := s.namespaceRecords()
	if err != nil {
		return nil, nil, err
	}
	exists := map[string]bool{manifests.DefaultNamespace: true}
	for name, r := range stored {
		exists[name] = exists[name] || !r.Deleted
	}
	for _, n := range in.namespaces {
		name := n.ns.Metadata.Name
		old := stored[name]
		// The implicit default has no record, hence no manager.
		live := old != nil && !old.Deleted
		if old == nil && name == manifests.DefaultNamespace {
			old = s.implicitDefault()
		}
		ref := ObjectRef{Kind: KindNamespace, Name: name}
		file, err := withZeros(n.all, in.zeros[ref])
		if err != nil {
			return nil, nil, fmt.Errorf("namespace %q: %w", name, err)
		}
		var liveNS *manifests.Namespace
		var last json.RawMessage
		var oldOwn Ownership
		if live {
			liveNS, last, oldOwn = &old.Namespace, old.LastApplied, old.Ownership
		}
		n, err := mergeNormalized(KindNamespace, name, opts, liveNS, last, n, file, normalizeNamespace,
			func(n normNamespace) []byte { return n.all }, manifests.ValidateNamespace)
		if err != nil {
			return nil, nil, err
		}
		rec, act, err := planNamespace(old, n, tx.now)
		if err != nil {
			return nil, nil, err
		}
		exists[name] = true
		c.applied[ref] = true
		tx.planned.Namespaces = append(tx.planned.Namespaces, &n.ns)
		if rec = planOne(c, ref, act, 0, live, oldOwn, old, rec, file,
			func(r *NamespaceRecord) *Ownership { return &r.Ownership }, func(r *NamespaceRecord) *Applied { return &r.Applied }); rec != nil {
			tx.namespaces = append(tx.namespaces, rec)
		}
	}
	return stored, exists, nil
}

// pruneNamespaces tombstones the applier's namespaces that the bundle no
// longer holds, but one that still holds a live object the apply keeps
// (another manager's, or one it applies): deleting the namespace would
// delete it too.
func (tx *applyTx) pruneNamespaces(stored map[string]*NamespaceRecord, c *planCtx, pruned map[ObjectRef]bool, own *ownerCheck) error {
	kept := map[string]bool{}
	for _, t := range tx.kinds {
		t.each(func(ref ObjectRef, live bool) {
			if (live && !pruned[ref]) || c.applied[ref] {
				kept[ref.Namespace] = true
			}
		})
	}
	names := make([]string, 0, len(stored))
	for name := range stored {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rec := stored[name]
		ref := ObjectRef{Kind: KindNamespace, Name: name}
		if rec.Deleted || c.applied[ref] || kept[name] || name == manifests.DefaultNamespace || !own.owns(ref, rec.Manager()) {
			continue
		}
		if err := tx.deleteNamespace(name, pruned); err != nil {
			return err
		}
		c.results = append(c.results, ApplyResult{ObjectRef: ref, Action: Pruned})
	}
	return nil
}

// claim applies the ownership rules to rec, just planned over a record
// whose ownership was old (live: not a tombstone): a conflict is noted in
// c, and the ownership to store set in rec (a copy when rec is the
// unchanged record itself). It returns whether rec must be written.
func claim[R any](c *ownerCheck, ref ObjectRef, live bool, old Ownership, rec *R, act Action, ownOf func(*R) *Ownership) (*R, bool) {
	c.check(ref, live, old)
	o, changed := c.next(ref, old, act)
	if !changed {
		return rec, act != Unchanged
	}
	if act == Unchanged {
		cp := *rec
		rec = &cp
	}
	*ownOf(rec) = o
	return rec, true
}

func sortedRefs[T any](m map[ObjectRef]T) []ObjectRef {
	refs := make([]ObjectRef, 0, len(m))
	for r := range m {
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool { return lessKey(refs[i].Namespace, refs[i].Name, refs[j].Namespace, refs[j].Name) })
	return refs
}

// current reads the current records of a kind (kindTx.load): a record
// that cannot be read fails the apply, as overwriting it would lose its
// generation, and pruning past it could leave an object the user meant to
// delete.
//
// current reads the records of refs (those that exist) and every record
// of the namespaces nss (where a prune looks), keyed by their ObjectRef
// (namespace "default" for default).
func current[R any](list func(ns string) ([]R, error), read func(ns, name string) (R, error), refOf func(R) ObjectRef,
	refs []ObjectRef, nss []string) (map[ObjectRef]R, error) {
	cur := map[ObjectRef]R{}
	{
		for _, ns := range nss {
			recs, err := list(ns)
			if err != nil {
				return nil, err
			}
			for _, r := range recs {
				cur[refOf(r)] = r
			}
		}
	}
	for _, ref := range refs {
		rec, err := read(ref.Namespace, ref.Name)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		cur[refOf(rec)] = rec
	}
	return cur, nil
}

// bundleNamespaces are the namespaces of the bundle's objects (but
// Namespaces): where a prune looks.
func bundleNamespaces(in *prepared) []string {
	set := map[string]bool{}
	for _, t := range in.kinds {
		t.namespaces(set)
	}
	out := make([]string, 0, len(set))
	for ns := range set {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// commit writes what the transaction computed (the caller holds the write
// lock). Every temporary file is written before the first rename, so an
// error while writing changes nothing; the renames go namespaces first,
// then the stored kinds in the order of storedKinds, then the tombstones
// of deleted namespaces, so that a crash in between never leaves an object in a
// namespace that does not exist, nor a live object in a deleted one.
func (tx *applyTx) commit() error {
	s := tx.s
	dirs := map[string]bool{}
	for _, r := range tx.namespaces {
		dirs[r.Namespace.Metadata.Name] = true
	}
	for _, t := range tx.kinds {
		t.touched(dirs)
	}
	for ns := range dirs {
		if err := s.ensureNamespaceDirs(ns); err != nil {
			return err
		}
	}
	for _, t := range tx.kinds {
		if err := t.beforeWrite(s); err != nil {
			return err
		}
	}
	var pending []pendingWrite
	prep := func(rel string, data []byte, err error) error {
		if err == nil {
			var p pendingWrite
			p, err = prepareWrite(s.dirOf(rel), baseOf(rel), data)
			pending = append(pending, p)
		}
		if err != nil {
			abortWrites(pending)
			return fmt.Errorf("state directory %s: %w", s.dir, err)
		}
		return nil
	}
	for _, r := range tx.namespaces {
		data, err := encodeNamespace(r)
		if err := prep(namespacePath(r.Namespace.Metadata.Name), data, err); err != nil {
			return err
		}
	}
	for _, t := range tx.kinds {
		if err := t.write(prep); err != nil {
			return err
		}
	}
	for _, r := range tx.deletedNamespaces {
		data, err := encodeNamespace(r)
		if err := prep(namespacePath(r.Namespace.Metadata.Name), data, err); err != nil {
			return err
		}
	}
	if err := commitWrites(pending); err != nil {
		return fmt.Errorf("state directory %s: %w", s.dir, err)
	}
	return nil
}

// DeleteResult is the outcome of deleting one object: Err is nil when it
// was tombstoned (by this call: a namespace's objects are deleted with
// it), wraps ErrNotFound when it has no live record, or says why it may
// not be deleted (the default namespace).
type DeleteResult struct {
	ObjectRef
	Err error
}

// DeleteObjects tombstones the live objects refs name, in one write
// transaction: deployments, services, ConfigMaps, Secrets and claims are
// marked deleted (the controller removes their containers, helpers and
// volumes), and a Namespace is marked deleted together with every live
// object in it,
// as Kubernetes deletes a namespace's content with it. Results come in the
// order of refs, one each. An object that has no live record does not stop
// the others (kubectl delete -f reports it and goes on); an error reading
// the state does, and then nothing is written. What the objects own goes
// with them (the garbage collector's background cascade); see
// DeleteObjectsWith for orphaning it.
func (s *Store) DeleteObjects(refs []ObjectRef) ([]DeleteResult, error) {
	return s.DeleteObjectsWith(refs, DeleteOptions{})
}

// DeleteObjectsWith is DeleteObjects with opts (orphans.go).
func (s *Store) DeleteObjectsWith(refs []ObjectRef, opts DeleteOptions) ([]DeleteResult, error) {
	if s.readOnly {
		return nil, ErrReadOnly
	}
	refs = unscopedRefs(refs)
	for _, r := range refs {
		var err error
		switch {
		case r.Kind == KindNamespace:
			err = checkName(KindNamespace, r.Name)
		case kindNamed(r.Kind) != nil:
			err = checkObject(r.Kind, r.Namespace, r.Name)
		default:
			err = fmt.Errorf("delete: unknown kind %q", r.Kind)
		}
		if err != nil {
			return nil, err
		}
	}
	var results []DeleteResult
	err := s.transaction(func() error {
		results = results[:0]
		tx := newTx(s, storeNow())
		done := map[ObjectRef]bool{} // tombstoned by this transaction
		for _, r := range refs {
			res := DeleteResult{ObjectRef: r}
			res.Namespace = orDefault(r.Namespace)
			if r.Kind == KindNamespace {
				res.Namespace = ""
			}
			var err error
			switch {
			case done[res.ObjectRef]:
				// Already deleted with its namespace, earlier in refs.
			case r.Kind == KindNamespace:
				err = tx.deleteNamespace(r.Name, done)
			default:
				err = tx.kindTx(r.Kind).remove(s, r, tx.now, opts.Orphan)
				if err == nil && opts.Orphan {
					err = tx.release(res.ObjectRef, done)
				}
			}
			if err == nil && r.Kind != KindNamespace {
				done[res.ObjectRef] = true
			}
			if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, errForbidden) {
				return err // the state cannot be read: nothing is written
			}
			res.Err = err
			results = append(results, res)
		}
		return tx.commit()
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// errForbidden marks a deletion that is refused, as the default
// namespace's.
var errForbidden = errors.New("forbidden")

// deleteNamespace tombstones namespace name and every live object in it.
func (tx *applyTx) deleteNamespace(name string, done map[ObjectRef]bool) error {
	if name == manifests.DefaultNamespace {
		// As the API server refuses it.
		return fmt.Errorf("namespaces %q is %w: this namespace may not be deleted", name, errForbidden)
	}
	rec, err := tx.s.readNamespace(name)
	if err == nil && rec.Deleted {
		err = fmt.Errorf("namespaces %q %w", name, ErrNotFound)
	}
	if err != nil {
		return err
	}
	for _, t := range tx.kinds {
		if err := t.removeIn(tx.s, name, tx.now, done); err != nil {
			return err
		}
	}
	t := *rec
	t.Deleted = true
	t.Applied = Applied{}
	tx.deletedNamespaces = append(tx.deletedNamespaces, &t)
	done[ObjectRef{Kind: KindNamespace, Name: name}] = true
	return nil
}

// deleteOne is DeleteObjects for one object, its result as the error.
func (s *Store) deleteOne(ref ObjectRef) error {
	res, err := s.DeleteObjects([]ObjectRef{ref})
	if err != nil {
		return err
	}
	return res[0].Err
}
