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
	namespaces  []normNamespace
	configMaps  []normObject[manifests.ConfigMap]
	secrets     []normObject[manifests.Secret]
	claims      []normObject[manifests.PersistentVolumeClaim]
	services    []normService
	deployments []normalized
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
	var err error
	if p.configMaps, err = prepareObjects(configMapKind, b.ConfigMaps, once); err != nil {
		return nil, err
	}
	if p.secrets, err = prepareObjects(secretKind, b.Secrets, once); err != nil {
		return nil, err
	}
	if p.claims, err = prepareObjects(claimKind, b.Claims, once); err != nil {
		return nil, err
	}
	for i, svc := range b.Services {
		if svc == nil {
			return nil, fmt.Errorf("service #%d is nil", i+1)
		}
		ns, name := svc.Metadata.Namespace, svc.Metadata.Name
		if err := checkObject(KindService, ns, name); err != nil {
			return nil, err
		}
		if err := once(KindService, ns, name); err != nil {
			return nil, err
		}
		n, err := normalizeService(svc)
		if err != nil {
			return nil, fmt.Errorf("service %q: %w", display(ns, name), err)
		}
		p.services = append(p.services, n)
	}
	for i, d := range b.Deployments {
		if d == nil {
			return nil, fmt.Errorf("deployment #%d is nil", i+1)
		}
		ns, name := d.Metadata.Namespace, d.Metadata.Name
		if err := checkObject(KindDeployment, ns, name); err != nil {
			return nil, err
		}
		if err := once(KindDeployment, ns, name); err != nil {
			return nil, err
		}
		n, err := normalize(d)
		if err != nil {
			return nil, fmt.Errorf("deployment %q: %w", display(ns, name), err)
		}
		p.deployments = append(p.deployments, n)
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

	namespaces  []*NamespaceRecord // created, revived or changed
	configMaps  []*ConfigMapRecord
	secrets     []*SecretRecord
	claims      []*ClaimRecord
	services    []*ServiceRecord
	deployments []*Record
	// revived deployments start with a fresh status (see Apply).
	revived []*Record
	// deletedNamespaces are tombstoned after their objects.
	deletedNamespaces []*NamespaceRecord
	// planned is every applied object as it is stored, merged with the
	// live one (Preview).
	planned Bundle
}

// apply computes the results of storing in, and what to write.
func (tx *applyTx) apply(in *prepared, opts ApplyOptions) ([]ApplyResult, error) {
	s := tx.s
	var results []ApplyResult

	// Namespaces first: they decide whether the others may be stored.
	stored, err := s.namespaceRecords()
	if err != nil {
		return nil, err
	}
	exists := map[string]bool{manifests.DefaultNamespace: true}
	for name, r := range stored {
		exists[name] = exists[name] || !r.Deleted
	}
	own := &ownerCheck{opts: opts, now: tx.now}
	applied := map[ObjectRef]bool{}
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
			return nil, fmt.Errorf("namespace %q: %w", name, err)
		}
		var liveNS *manifests.Namespace
		var last json.RawMessage
		if live {
			liveNS, last = &old.Namespace, old.LastApplied
		}
		n, err := mergeNormalized(KindNamespace, name, opts, liveNS, last, n, file, normalizeNamespace,
			func(n normNamespace) []byte { return n.all }, manifests.ValidateNamespace)
		if err != nil {
			return nil, err
		}
		rec, act, err := planNamespace(old, n, tx.now)
		if err != nil {
			return nil, err
		}
		exists[name] = true
		applied[ref] = true
		results = append(results, ApplyResult{ObjectRef: ref, Action: act})
		tx.planned.Namespaces = append(tx.planned.Namespaces, &n.ns)
		var oldOwn Ownership
		if live {
			oldOwn = old.Ownership
		}
		rec, write := claim(own, ref, live, oldOwn, rec, act, func(r *NamespaceRecord) *Ownership { return &r.Ownership })
		if rec, write = remember(opts, old, rec, write, file, func(r *NamespaceRecord) *Applied { return &r.Applied }); write {
			tx.namespaces = append(tx.namespaces, rec)
		}
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
	missing := func(kind, ns, name string) error {
		if exists[orDefault(ns)] {
			return nil
		}
		// kubectl's words, so that scripts and habits carry over.
		return fmt.Errorf("%s/%s: namespaces %q %w", lower(kind), name, orDefault(ns), ErrNotFound)
	}

	visited := map[string]bool{}

	// ConfigMaps, Secrets and claims (config.go): what pods refer to.
	cms := &objectApply[manifests.ConfigMap]{k: configMapKind, in: in.configMaps, own: own, zeros: in.zeros}
	secs := &objectApply[manifests.Secret]{k: secretKind, in: in.secrets, own: own, zeros: in.zeros}
	cls := &objectApply[manifests.PersistentVolumeClaim]{k: claimKind, in: in.claims, own: own, zeros: in.zeros}
	for _, a := range []interface {
		load(*Store, []string) error
		plan(time.Time, func(kind, ns, name string) error, map[ObjectRef]bool, map[string]bool, []ApplyResult) ([]ApplyResult, error)
	}{cms, secs, cls} {
		if err := a.load(s, pruneNS); err != nil {
			return nil, err
		}
		if results, err = a.plan(tx.now, missing, applied, visited, results); err != nil {
			return nil, err
		}
	}

	// Services.
	curSvc, err := tx.currentServices(in, pruneNS)
	if err != nil {
		return nil, err
	}
	for _, n := range in.services {
		ns, name := n.svc.Metadata.Namespace, n.svc.Metadata.Name
		if err := missing(KindService, ns, name); err != nil {
			return nil, err
		}
		ref := ObjectRef{Kind: KindService, Namespace: orDefault(ns), Name: name}
		applied[ref], visited[ref.Namespace] = true, true
		old := curSvc[ref]
		live, oldOwn := old != nil && !old.Deleted, Ownership{}
		file, err := withZeros(n.all, in.zeros[ref])
		if err != nil {
			return nil, fmt.Errorf("service %q: %w", display(ns, name), err)
		}
		var liveSvc *manifests.Service
		var last json.RawMessage
		if live {
			oldOwn, liveSvc, last = old.Ownership, &old.Service, old.LastApplied
		}
		n, err := mergeNormalized(KindService, display(ns, name), opts, liveSvc, last, n, file, normalizeService,
			func(n normService) []byte { return n.all }, manifests.ValidateService)
		if err != nil {
			return nil, err
		}
		rec, act, err := planService(old, n, tx.now)
		if err != nil {
			return nil, err
		}
		results = append(results, ApplyResult{ObjectRef: ref, Action: act, Generation: rec.Generation})
		tx.planned.Services = append(tx.planned.Services, &n.svc)
		rec, write := claim(own, ref, live, oldOwn, rec, act, func(r *ServiceRecord) *Ownership { return &r.Ownership })
		if rec, write = remember(opts, old, rec, write, file, func(r *ServiceRecord) *Applied { return &r.Applied }); write {
			tx.services = append(tx.services, rec)
		}
	}

	// Deployments.
	curDep, err := tx.currentRecords(in, pruneNS)
	if err != nil {
		return nil, err
	}
	for _, n := range in.deployments {
		ns, name := n.d.Metadata.Namespace, n.d.Metadata.Name
		if err := missing(KindDeployment, ns, name); err != nil {
			return nil, err
		}
		ref := ObjectRef{Kind: KindDeployment, Namespace: orDefault(ns), Name: name}
		applied[ref], visited[ref.Namespace] = true, true
		old := curDep[ref]
		var live *manifests.Deployment
		if old != nil && !old.Deleted {
			live = &old.Deployment
		}
		file, err := withZeros(n.all, in.zeros[ref])
		if err != nil {
			return nil, fmt.Errorf("deployment %q: %w", display(ns, name), err)
		}
		d, err := mergeDeployment(live, old, n.d, file, opts)
		if err != nil {
			return nil, err
		}
		if n, err = normalize(&d); err != nil {
			return nil, fmt.Errorf("apply: deployment %q: %w", display(ns, name), err)
		}
		rec, act, err := plan(old, n, tx.now, s.revisionsInUse(ns, name))
		if err != nil {
			return nil, err
		}
		results = append(results, ApplyResult{ObjectRef: ref, Action: act, Generation: rec.Generation})
		tx.planned.Deployments = append(tx.planned.Deployments, &n.d)
		var oldOwn Ownership
		if live != nil {
			oldOwn = old.Ownership
		}
		rec, write := claim(own, ref, live != nil, oldOwn, rec, act, func(r *Record) *Ownership { return &r.Ownership })
		if rec, write = remember(opts, old, rec, write, file, func(r *Record) *Applied { return &r.Applied }); write {
			tx.deployments = append(tx.deployments, rec)
		}
		if old != nil && old.Deleted {
			tx.revived = append(tx.revived, rec)
		}
	}

	if err := own.err(); err != nil {
		return nil, err
	}
	pruned := map[ObjectRef]bool{}
	if opts.Prune || opts.PruneOwned {
		// Only the applier's objects: `apply --prune` never deletes what
		// a manifests directory manages, nor a directory what apply made.
		prunable := func(ref ObjectRef, l map[string]string, o Ownership) bool {
			ok := !applied[ref] && own.owns(ref, o.Manager())
			if !opts.PruneOwned {
				ok = ok && visited[ref.Namespace] && (opts.PruneSelector == nil || opts.PruneSelector.Matches(labels.Set(l)))
			}
			pruned[ref] = pruned[ref] || ok
			return ok
		}
		for _, ref := range sortedRefs(curDep) {
			if rec := curDep[ref]; rec != nil && !rec.Deleted && prunable(ref, rec.Deployment.Metadata.Labels, rec.Ownership) {
				t := tombstone(rec, tx.now)
				results = append(results, ApplyResult{ObjectRef: ref, Action: Pruned, Generation: t.Generation})
				tx.deployments = append(tx.deployments, t)
			}
		}
		for _, ref := range sortedRefs(curSvc) {
			if rec := curSvc[ref]; rec != nil && !rec.Deleted && prunable(ref, rec.Service.Metadata.Labels, rec.Ownership) {
				t := tombstoneService(rec, tx.now)
				results = append(results, ApplyResult{ObjectRef: ref, Action: Pruned, Generation: t.Generation})
				tx.services = append(tx.services, t)
			}
		}
		results = cms.prune(tx.now, prunable, results)
		results = secs.prune(tx.now, prunable, results)
		results = cls.prune(tx.now, prunable, results)
	}
	tx.configMaps, tx.secrets, tx.claims = cms.written, secs.written, cls.written
	tx.planned.ConfigMaps, tx.planned.Secrets, tx.planned.Claims = cms.planned, secs.planned, cls.planned
	if opts.PruneOwned {
		if results, err = tx.pruneNamespaces(stored, applied, pruned, own, results, curDep, curSvc, cms, secs, cls); err != nil {
			return nil, err
		}
	}
	return results, nil
}

// pruneNamespaces tombstones the applier's namespaces that the bundle no
// longer holds, but one that still holds a live object the apply keeps
// (another manager's, or one it applies): deleting the namespace would
// delete it too.
func (tx *applyTx) pruneNamespaces(stored map[string]*NamespaceRecord, applied, pruned map[ObjectRef]bool, own *ownerCheck, results []ApplyResult,
	curDep map[ObjectRef]*Record, curSvc map[ObjectRef]*ServiceRecord, cms *objectApply[manifests.ConfigMap], secs *objectApply[manifests.Secret], cls *objectApply[manifests.PersistentVolumeClaim]) ([]ApplyResult, error) {
	kept := map[string]bool{}
	keep := func(ref ObjectRef, live bool) {
		if (live && !pruned[ref]) || applied[ref] {
			kept[ref.Namespace] = true
		}
	}
	for ref, r := range curDep {
		keep(ref, !r.Deleted)
	}
	for ref, r := range curSvc {
		keep(ref, !r.Deleted)
	}
	for ref, r := range cms.cur {
		keep(ref, !r.Deleted)
	}
	for ref, r := range secs.cur {
		keep(ref, !r.Deleted)
	}
	for ref, r := range cls.cur {
		keep(ref, !r.Deleted)
	}
	names := make([]string, 0, len(stored))
	for name := range stored {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rec := stored[name]
		ref := ObjectRef{Kind: KindNamespace, Name: name}
		if rec.Deleted || applied[ref] || kept[name] || name == manifests.DefaultNamespace || !own.owns(ref, rec.Manager()) {
			continue
		}
		if err := tx.deleteNamespace(name, pruned); err != nil {
			return nil, err
		}
		results = append(results, ApplyResult{ObjectRef: ref, Action: Pruned})
	}
	return results, nil
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

// currentRecords returns the stored deployment records (tombstones
// included) of the applied deployments and, when pruning, of every
// deployment of the namespaces the bundle visits. A record that cannot be
// read fails the apply: overwriting it would lose its generation, and
// pruning past it could leave a deployment running that the user meant to
// delete.
func (tx *applyTx) currentRecords(in *prepared, nss []string) (map[ObjectRef]*Record, error) {
	refs := make([]ObjectRef, len(in.deployments))
	for i, n := range in.deployments {
		refs[i] = ObjectRef{Kind: KindDeployment, Namespace: n.d.Metadata.Namespace, Name: n.d.Metadata.Name}
	}
	return current(tx.s.listNamespace, tx.s.readRecord, func(r *Record) ObjectRef {
		return ObjectRef{Kind: KindDeployment, Namespace: r.NamespaceOrDefault(), Name: r.Name}
	}, refs, nss)
}

// currentServices is currentRecords for services.
func (tx *applyTx) currentServices(in *prepared, nss []string) (map[ObjectRef]*ServiceRecord, error) {
	refs := make([]ObjectRef, len(in.services))
	for i, n := range in.services {
		refs[i] = ObjectRef{Kind: KindService, Namespace: n.svc.Metadata.Namespace, Name: n.svc.Metadata.Name}
	}
	return current(tx.s.listServicesIn, tx.s.readService, func(r *ServiceRecord) ObjectRef {
		return ObjectRef{Kind: KindService, Namespace: r.Service.Metadata.NamespaceOrDefault(), Name: r.Service.Metadata.Name}
	}, refs, nss)
}

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

// bundleNamespaces are the namespaces of the bundle's deployments and
// services: where a prune looks.
func bundleNamespaces(in *prepared) []string {
	set := map[string]bool{}
	for _, n := range in.services {
		set[n.svc.Metadata.NamespaceOrDefault()] = true
	}
	for _, n := range in.deployments {
		set[n.d.Metadata.NamespaceOrDefault()] = true
	}
	(&objectApply[manifests.ConfigMap]{k: configMapKind, in: in.configMaps}).namespaces(set)
	(&objectApply[manifests.Secret]{k: secretKind, in: in.secrets}).namespaces(set)
	(&objectApply[manifests.PersistentVolumeClaim]{k: claimKind, in: in.claims}).namespaces(set)
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
// then services, then deployments, then the tombstones of deleted
// namespaces, so that a crash in between never leaves an object in a
// namespace that does not exist, nor a live object in a deleted one.
func (tx *applyTx) commit() error {
	s := tx.s
	dirs := map[string]bool{}
	for _, r := range tx.namespaces {
		dirs[r.Namespace.Metadata.Name] = true
	}
	for _, r := range tx.services {
		dirs[r.Service.Metadata.NamespaceOrDefault()] = true
	}
	for _, r := range tx.deployments {
		dirs[r.NamespaceOrDefault()] = true
	}
	objectNamespaces(configMapKind, tx.configMaps, dirs)
	objectNamespaces(secretKind, tx.secrets, dirs)
	objectNamespaces(claimKind, tx.claims, dirs)
	for ns := range dirs {
		if err := s.ensureNamespaceDirs(ns); err != nil {
			return err
		}
	}
	// A revived deployment starts with a fresh status: the old one's
	// revision sizes would bring the deleted revisions back. Removed
	// before the records are written, so that a crash in between leaves a
	// tombstone without status, never a revival with the old.
	for _, r := range tx.revived {
		if err := s.resetStatus(r.Namespace, r.Name); err != nil {
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
	if err := prepObjects(configMapKind, tx.configMaps, prep); err != nil {
		return err
	}
	if err := prepObjects(secretKind, tx.secrets, prep); err != nil {
		return err
	}
	if err := prepObjects(claimKind, tx.claims, prep); err != nil {
		return err
	}
	for _, r := range tx.services {
		data, err := encodeService(r)
		if err := prep(servicePath(r.Service.Metadata.Namespace, r.Service.Metadata.Name), data, err); err != nil {
			return err
		}
	}
	for _, r := range tx.deployments {
		data, err := encodeRecord(r)
		if err := prep(recordPath(r.Namespace, r.Name), data, err); err != nil {
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
// the state does, and then nothing is written.
func (s *Store) DeleteObjects(refs []ObjectRef) ([]DeleteResult, error) {
	if s.readOnly {
		return nil, ErrReadOnly
	}
	for _, r := range refs {
		var err error
		switch r.Kind {
		case KindDeployment, KindService, KindConfigMap, KindSecret, KindPersistentVolumeClaim:
			err = checkObject(r.Kind, r.Namespace, r.Name)
		case KindNamespace:
			err = checkName(KindNamespace, r.Name)
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
		tx := &applyTx{s: s, now: storeNow()}
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
			case r.Kind == KindDeployment:
				var rec *Record
				if rec, err = s.Get(r.Namespace, r.Name); err == nil {
					tx.deployments = append(tx.deployments, tombstone(rec, tx.now))
					done[res.ObjectRef] = true
				}
			case r.Kind == KindService:
				var rec *ServiceRecord
				if rec, err = s.readService(r.Namespace, r.Name); err == nil {
					if rec.Deleted {
						err = fmt.Errorf("service %q: %w (deleted)", r.Name, ErrNotFound)
					} else {
						tx.services = append(tx.services, tombstoneService(rec, tx.now))
						done[res.ObjectRef] = true
					}
				}
			case r.Kind == KindConfigMap:
				err = deleteObject(s, configMapKind, r, tx.now, &tx.configMaps)
			case r.Kind == KindSecret:
				err = deleteObject(s, secretKind, r, tx.now, &tx.secrets)
			case r.Kind == KindPersistentVolumeClaim:
				err = deleteObject(s, claimKind, r, tx.now, &tx.claims)
			case r.Kind == KindNamespace:
				err = tx.deleteNamespace(r.Name, done)
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
	deps, err := tx.s.listNamespace(name)
	if err != nil {
		return err
	}
	for _, d := range deps {
		ref := ObjectRef{Kind: KindDeployment, Namespace: name, Name: d.Name}
		if !d.Deleted && !done[ref] {
			tx.deployments = append(tx.deployments, tombstone(d, tx.now))
			done[ref] = true
		}
	}
	svcs, err := tx.s.listServicesIn(name)
	if err != nil {
		return err
	}
	for _, sv := range svcs {
		ref := ObjectRef{Kind: KindService, Namespace: name, Name: sv.Service.Metadata.Name}
		if !sv.Deleted && !done[ref] {
			tx.services = append(tx.services, tombstoneService(sv, tx.now))
			done[ref] = true
		}
	}
	if err := deleteObjectsIn(tx.s, configMapKind, name, tx.now, done, &tx.configMaps); err != nil {
		return err
	}
	if err := deleteObjectsIn(tx.s, secretKind, name, tx.now, done, &tx.secrets); err != nil {
		return err
	}
	if err := deleteObjectsIn(tx.s, claimKind, name, tx.now, done, &tx.claims); err != nil {
		return err
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
