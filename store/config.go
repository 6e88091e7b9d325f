package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

// ConfigMaps, Secrets and PersistentVolumeClaims (docs/design.md §5): stored
// per namespace as Services are, with the same tombstones, in
// configmaps/<name>.json, secrets/<name>.json and claims/<name>.json.
// Their names are DNS-1123 subdomains (dots allowed, as Kubernetes allows
// them for these kinds) of at most manifests.MaxStoredNameLength
// characters. A Secret's file, like every state file, is 0600; its values
// are never in an error of this package.

// The configuration and storage kinds, as ObjectRef.Kind and ParseWatchKey
// name them.
const (
	KindConfigMap             = manifests.KindConfigMap
	KindSecret                = manifests.KindSecret
	KindPersistentVolumeClaim = manifests.KindPersistentVolumeClaim
)

const (
	configMapsDir = "configmaps"
	secretsDir    = "secrets"
	claimsDir     = "claims"

	configMapPrefix = "configmap:"
	secretPrefix    = "secret:"
	claimPrefix     = "pvc:"
)

// ConfigMapKey is the watch key of a ConfigMap: "configmap:namespace/name".
func ConfigMapKey(namespace, name string) string { return configMapPrefix + Key(namespace, name) }

// SecretKey is the watch key of a Secret: "secret:namespace/name".
func SecretKey(namespace, name string) string { return secretPrefix + Key(namespace, name) }

// ClaimKey is the watch key of a PersistentVolumeClaim: "pvc:namespace/name".
func ClaimKey(namespace, name string) string { return claimPrefix + Key(namespace, name) }

// ObjectRecord is the stored state of one ConfigMap, Secret or claim, live
// or tombstoned, with the rules of a ServiceRecord: Generation is 1 on
// creation, +1 on every change of what is not metadata (data, type,
// spec) and on deletion, and keeps increasing across delete and re-apply;
// Deleted marks a tombstone (a ConfigMap's or Secret's without its values,
// see objectKind.bury). Object is the object as applied, defaulted
// as the API server stores it (a Secret's stringData merged into data, a
// claim without status), its metadata.creationTimestamp filled from
// Created and its metadata.namespace "" for default. Kubernetes sets no
// metadata.generation on these kinds, and neither does the store.
type ObjectRecord[T any] struct {
	Object     T         `json:"object"`
	Generation int64     `json:"generation"`
	Deleted    bool      `json:"deleted,omitempty"`
	Created    time.Time `json:"createdAt"`
	Updated    time.Time `json:"updatedAt"`
	// Ownership is who manages the object (ownership.go).
	Ownership
	// Applied is what its applier last applied (merge.go).
	Applied
	// Revisions is the pod template history of a kind that keeps one
	// (objectKind.revision: a StatefulSet's, a DaemonSet's), as
	// Record.Revisions is a Deployment's: oldest first, the last current
	// (workloads.go). Absent on the other kinds, and on records written
	// before it was kept.
	Revisions []Revision `json:"revisions,omitempty"`
	// Orphaned are the incarnations of this kind and name (their uids,
	// OwnerUID) whose pods a deletion with --cascade=orphan left running
	// ownerless (orphans.go): set on the tombstone of such a deletion,
	// carried by the object applied again over it, which adopts those of
	// them its selector matches; cleared when its namespace is deleted
	// (its pods go with it). Absent on the kinds that own no pods.
	Orphaned []string `json:"orphaned,omitempty"`
}

type (
	ConfigMapRecord = ObjectRecord[manifests.ConfigMap]
	SecretRecord    = ObjectRecord[manifests.Secret]
	ClaimRecord     = ObjectRecord[manifests.PersistentVolumeClaim]
)

type objectFile[T any] struct {
	Version int `json:"version"`
	ObjectRecord[T]
}

// objectKind is the registration of a generic stored kind (kinds.go):
// its record is an ObjectRecord[T], and these hooks are all that tells
// one such kind from another.
type objectKind[T any] struct {
	kind string
	dir  string
	// bundle is the kind's objects in a Bundle.
	bundle func(*Bundle) *[]*T
	meta   func(*T) *manifests.ObjectMeta
	// clean does to an object what the API server does before storing
	// it: defaults, and what is not the user's (a status) dropped.
	clean func(*T)
	// validate is the kind's manifests validation (no values in errors).
	validate func(*T) error
	// update checks storing next over live (immutability); started is
	// what the kind's started hook tells of live.
	update func(next, live *T, started bool) error
	// started tells whether the controller has started the live object
	// of ref (created at created): a Job's status.startTime, which some
	// of a Job's refusals depend on. Nil: never asked, started is false.
	started func(s *Store, ref ObjectRef, created time.Time) bool
	// bury drops from an object what its tombstone must not keep: a
	// deleted ConfigMap's or Secret's values (and kubectl's
	// last-applied-configuration annotation, which holds them too) are
	// gone, as they are from etcd. Nil keeps the object whole.
	bury func(*T)
	// spec is the part of an object whose change bumps the generation
	// (nil: everything but the metadata).
	spec func(*T) any
	// generation makes metadata.generation the record's, as Kubernetes
	// sets it on the kinds that have a spec (a Service); the others have
	// none.
	generation bool
	// subdomain: names are DNS-1123 subdomains, not labels.
	subdomain bool
	// rank is the kind's pruneRank.
	rank int
	// prefix is the kind's watchPrefix.
	prefix string
	// file is the kind's file format; nil is objectFile (the record
	// under "object").
	file *fileFormat[T]
	// revision is the pod template an object of a kind that keeps a
	// revision history is rolled out from (ObjectRecord.Revisions);
	// nil: the kind keeps none.
	revision func(*T) revisionSource
	// orphans, when set, makes the kind's objects own pods that a
	// deletion with --cascade=orphan leaves running
	// (ObjectRecord.Orphaned), and gives the labels an object adopts an
	// orphan by (nil: it adopts none, as a Job whose selector is the one
	// the Job controller generates from its uid).
	orphans *orphanPolicy[T]
}

// fileFormat is the on-disk form of a kind's records whose files predate
// ObjectRecord (a Service's names its object "service").
type fileFormat[T any] struct {
	// encode is the value whose JSON is rec's file.
	encode func(rec *ObjectRecord[T]) any
	// decode returns a value to decode a file into, where its format
	// version lands, and the record it holds once decoded.
	decode func() (v any, version *int, rec func() *ObjectRecord[T])
}

// lastAppliedAnnotation is kubectl's annotation holding the whole applied
// object, values included.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// buryMeta drops the annotation that holds a copy of the object's values.
func buryMeta(m *manifests.ObjectMeta) {
	if _, ok := m.Annotations[lastAppliedAnnotation]; !ok {
		return
	}
	ann := make(map[string]string, len(m.Annotations)-1)
	for k, v := range m.Annotations {
		if k != lastAppliedAnnotation {
			ann[k] = v
		}
	}
	if len(ann) == 0 {
		ann = nil
	}
	m.Annotations = ann
}

var (
	configMapKind = &objectKind[manifests.ConfigMap]{
		kind: KindConfigMap, dir: configMapsDir, prefix: configMapPrefix, subdomain: true, rank: 2,
		bundle:   func(b *Bundle) *[]*manifests.ConfigMap { return &b.ConfigMaps },
		meta:     func(c *manifests.ConfigMap) *manifests.ObjectMeta { return &c.Metadata },
		clean:    func(*manifests.ConfigMap) {},
		validate: manifests.ValidateConfigMap,
		update:   ignoreStarted(manifests.ValidateConfigMapUpdate),
		bury: func(c *manifests.ConfigMap) {
			c.Data, c.BinaryData = nil, nil
			buryMeta(&c.Metadata)
		},
	}
	secretKind = &objectKind[manifests.Secret]{
		kind: KindSecret, dir: secretsDir, prefix: secretPrefix, subdomain: true, rank: 2,
		bundle:   func(b *Bundle) *[]*manifests.Secret { return &b.Secrets },
		meta:     func(s *manifests.Secret) *manifests.ObjectMeta { return &s.Metadata },
		clean:    manifests.SetSecretDefaults,
		validate: manifests.ValidateSecret,
		update:   ignoreStarted(manifests.ValidateSecretUpdate),
		bury: func(s *manifests.Secret) {
			s.Data, s.StringData = nil, nil
			buryMeta(&s.Metadata)
		},
	}
	claimKind = &objectKind[manifests.PersistentVolumeClaim]{
		kind: KindPersistentVolumeClaim, dir: claimsDir, prefix: claimPrefix, subdomain: true, rank: 2,
		bundle: func(b *Bundle) *[]*manifests.PersistentVolumeClaim { return &b.Claims },
		meta:   func(p *manifests.PersistentVolumeClaim) *manifests.ObjectMeta { return &p.Metadata },
		clean: func(p *manifests.PersistentVolumeClaim) {
			p.Status = nil
			manifests.SetPVCDefaults(p)
		},
		validate: manifests.ValidatePVC,
		update:   ignoreStarted(manifests.ValidatePVCUpdate),
	}
)

// ignoreStarted is the update hook of a kind whose refusals do not depend
// on its controller's status.
func ignoreStarted[T any](f func(next, live *T) error) func(next, live *T, started bool) error {
	return func(next, live *T, _ bool) error { return f(next, live) }
}

// isConfigKind tells the kinds whose names are DNS-1123 subdomains.
func isConfigKind(kind string) bool {
	k := kindNamed(kind)
	return k != nil && k.subdomainNames()
}

// dnsSubdomainRE is a DNS-1123 subdomain: never "." or "..", never a
// '/', so it cannot escape its directory either.
var dnsSubdomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

func isStoredSubdomain(s string) bool {
	return len(s) <= manifests.MaxStoredNameLength && dnsSubdomainRE.MatchString(s)
}

func (k *objectKind[T]) path(ns, name string) string {
	return filepath.Join(nsRoot(ns), k.dir, name+".json")
}

func (k *objectKind[T]) decoder() (any, *int, func() *ObjectRecord[T]) {
	if k.file != nil {
		return k.file.decode()
	}
	f := &objectFile[T]{}
	return f, &f.Version, func() *ObjectRecord[T] { return &f.ObjectRecord }
}

// readObject reads the record of name in namespace ns, tombstones
// included, or an error wrapping ErrNotFound.
func readObject[T any](s *Store, k *objectKind[T], ns, name string) (*ObjectRecord[T], error) {
	rel := k.path(ns, name)
	v, version, recOf := k.decoder()
	found, err := s.readState(rel, v, version)
	switch {
	case !found:
		return nil, fmt.Errorf("%s %q: %w", lower(k.kind), name, ErrNotFound)
	case err != nil:
		return nil, err
	}
	rec := recOf()
	m := k.meta(&rec.Object)
	switch {
	case m.Name != name || m.NamespaceOrDefault() != orDefault(ns):
		err = fmt.Errorf("%w: records %s %q, expected %q", ErrCorrupt, lower(k.kind), display(m.Namespace, m.Name), display(ns, name))
	case rec.Generation < 1:
		err = fmt.Errorf("%w: generation %d", ErrCorrupt, rec.Generation)
	}
	if err != nil {
		return nil, fmt.Errorf("state file %s: %w", rel, err)
	}
	return rec, nil
}

// lookupLive is the ConfigStore lookup: a live object, checked with the
// rules of apply (a record is not trusted), or an error wrapping
// ErrNotFound for one deleted or never known.
func lookupLive[T any](s *Store, k *objectKind[T], ns, name string) (*ObjectRecord[T], error) {
	if err := checkObject(k.kind, ns, name); err != nil {
		return nil, err
	}
	rec, err := readObject(s, k, ns, name)
	if err != nil {
		return nil, err
	}
	if rec.Deleted {
		return nil, fmt.Errorf("%s %q: %w (deleted)", lower(k.kind), display(ns, name), ErrNotFound)
	}
	if err := k.validate(&rec.Object); err != nil {
		return nil, fmt.Errorf("state file %s: invalid %s: %w", k.path(ns, name), lower(k.kind), err)
	}
	return rec, nil
}

func listObjectsIn[T any](s *Store, k *objectKind[T], ns string) ([]*ObjectRecord[T], error) {
	var recs []*ObjectRecord[T]
	errs := s.eachObjectIn(ns, k.dir, k.kind, func(ns, name string) error {
		r, err := readObject(s, k, ns, name)
		if err == nil {
			recs = append(recs, r)
		}
		return err
	})
	return recs, errors.Join(errs...)
}

// listObjects returns every record of kind k of every namespace, live and
// tombstoned, sorted by namespace and name; a file that cannot be read
// yields one error naming it and does not hide the others.
func listObjects[T any](s *Store, k *objectKind[T]) ([]*ObjectRecord[T], []error) {
	var recs []*ObjectRecord[T]
	errs := s.eachObject(k.dir, k.kind, func(ns, name string) error {
		r, err := readObject(s, k, ns, name)
		if err == nil {
			recs = append(recs, r)
		}
		return err
	})
	sort.SliceStable(recs, func(i, j int) bool {
		a, b := k.meta(&recs[i].Object), k.meta(&recs[j].Object)
		return lessKey(a.NamespaceOrDefault(), a.Name, b.NamespaceOrDefault(), b.Name)
	})
	return recs, errs
}

// normObject is an object as the store compares it: a deep copy cleaned
// and without server-set metadata, and its canonical encodings (spec:
// everything but the metadata).
type normObject[T any] struct {
	obj       T
	spec, all []byte
}

func normalizeObject[T any](k *objectKind[T], obj *T) (normObject[T], error) {
	c, spec, all, err := canonical(obj, func(c *T) (*manifests.ObjectMeta, any) {
		k.clean(c)
		if k.spec != nil {
			return k.meta(c), k.spec(c)
		}
		return k.meta(c), nil
	})
	if err != nil {
		return normObject[T]{}, fmt.Errorf("%s: %w", lower(k.kind), err)
	}
	if k.spec != nil {
		return normObject[T]{obj: c, spec: spec, all: all}, nil
	}
	bare := c
	if err := roundTrip(&c, &bare); err != nil {
		return normObject[T]{}, err
	}
	*k.meta(&bare) = manifests.ObjectMeta{}
	spec, err = json.Marshal(bare)
	if err != nil {
		return normObject[T]{}, fmt.Errorf("%s: encoding: %w", lower(k.kind), err)
	}
	return normObject[T]{obj: c, spec: spec, all: all}, nil
}

// planObject computes the record that storing n over old (nil: never
// known) gives, refusing what Kubernetes refuses on an update (an
// immutable object's data, a Secret's type, a claim's spec).
// inUse tells the revisions the history keeps past its limit
// (recordObjectRevision); started gives the kind's started hook's answer
// for old, asked only of a change.
func planObject[T any](k *objectKind[T], old *ObjectRecord[T], n normObject[T], now time.Time, inUse func(hash string) bool, started func() bool) (*ObjectRecord[T], Action, error) {
	var rec ObjectRecord[T]
	var act Action
	switch {
	case old == nil:
		rec = ObjectRecord[T]{Generation: 1, Created: now}
		act = Created
	case old.Deleted:
		// A new object; the pods its predecessors left are its to adopt
		// (orphans.go).
		rec = ObjectRecord[T]{Generation: old.Generation + 1, Created: now, Orphaned: old.Orphaned}
		act = Created
	default:
		m := k.meta(&old.Object)
		prev, err := normalizeObject(k, &old.Object)
		if err != nil {
			return nil, "", fmt.Errorf("%s %q: stored copy: %w", lower(k.kind), display(m.Namespace, m.Name), err)
		}
		if bytes.Equal(prev.all, n.all) {
			return old, Unchanged, nil
		}
		if err := k.update(&n.obj, &prev.obj, started()); err != nil {
			// kubectl's words: The ConfigMap "x" is invalid: …
			return nil, "", fmt.Errorf("the %s %q is invalid: %w", k.kind, display(m.Namespace, m.Name), err)
		}
		rec = *old
		if !bytes.Equal(prev.spec, n.spec) {
			rec.Generation++
		}
		act = Configured
	}
	if k.revision != nil {
		rec.Revisions = append([]Revision(nil), rec.Revisions...)
		if old != nil && !old.Deleted && len(rec.Revisions) == 0 {
			// A record of a release that kept no history: its template is
			// the first revision.
			recordObjectRevision(&rec.Revisions, k.revision(&old.Object), old.Updated, inUse)
		}
		recordObjectRevision(&rec.Revisions, k.revision(&n.obj), now, inUse)
	}
	rec.Updated = now
	rec.Object = n.obj
	stampObject(k, &rec)
	return &rec, act, nil
}

// tombstoneObject returns old marked deleted, without what k.bury drops
// (a ConfigMap's or Secret's values: the tombstone only keeps the
// generation and metadata). A claim's tombstone keeps the claim whole.
func tombstoneObject[T any](k *objectKind[T], old *ObjectRecord[T], now time.Time) *ObjectRecord[T] {
	rec := *old
	// A ConfigMap's or Secret's last-applied configuration holds its
	// values too; and a revival is a new object.
	rec.Applied = Applied{}
	if k.bury != nil {
		// bury replaces fields and maps, never writes into them: old
		// (shared with the caller) is left as it was.
		k.bury(&rec.Object)
	}
	rec.Deleted = true
	rec.Updated = now
	rec.Generation++
	stampObject(k, &rec)
	return &rec
}

func stampObject[T any](k *objectKind[T], rec *ObjectRecord[T]) {
	created := rec.Created
	m := k.meta(&rec.Object)
	m.Generation = 0
	if k.generation {
		m.Generation = rec.Generation
	}
	m.CreationTimestamp = &created
}

func encodeObject[T any](k *objectKind[T], rec *ObjectRecord[T]) ([]byte, error) {
	var v any = objectFile[T]{Version: formatVersion, ObjectRecord: *rec}
	if k.file != nil {
		v = k.file.encode(rec)
	}
	return encodeState(v, lower(k.kind), k.meta(&rec.Object).Name)
}

// The kind's registration (storedKind) and its part of a transaction
// (objectApply, a kindTx).

func (k *objectKind[T]) Kind() string         { return k.kind }
func (k *objectKind[T]) subdomainNames() bool { return k.subdomain }
func (k *objectKind[T]) pruneRank() int       { return k.rank }
func (k *objectKind[T]) recordsDir() string   { return k.dir }
func (k *objectKind[T]) watchPrefix() string  { return k.prefix }

func (k *objectKind[T]) begin(b *Bundle, once func(kind, ns, name string) error) (kindTx, error) {
	in, err := prepareEach(k.kind, *k.bundle(b), k.meta, func(o *T) (normObject[T], error) { return normalizeObject(k, o) }, once)
	if err != nil {
		return nil, err
	}
	return &objectApply[T]{k: k, in: in}, nil
}

func (k *objectKind[T]) liveCopy(s *Store, ref ObjectRef) (*manifests.ObjectMeta, func() error, Bundle, error) {
	var b Bundle
	rec, err := lookupLive(s, k, ref.Namespace, ref.Name)
	if err != nil {
		return nil, nil, b, err
	}
	var o T
	if err := roundTrip(&rec.Object, &o); err != nil {
		return nil, nil, b, err
	}
	*k.bundle(&b) = []*T{&o}
	return k.meta(&o), func() error { return k.validate(&o) }, b, nil
}

func (k *objectKind[T]) metas(b *Bundle) []*manifests.ObjectMeta {
	return metasOf(*k.bundle(b), k.meta)
}

func (k *objectKind[T]) each(b *Bundle, f func(kind string, obj any, m *manifests.ObjectMeta) error) error {
	return eachCopy(k.kind, *k.bundle(b), k.meta, f)
}

func (k *objectKind[T]) filter(b *Bundle, keep func(*manifests.ObjectMeta) bool) {
	*k.bundle(b) = filterObjects(*k.bundle(b), k.meta, keep)
}

func (k *objectKind[T]) storedObject(r *ObjectRecord[T]) *StoredObject {
	o := r.Object
	if k.generation {
		k.meta(&o).Generation = r.Generation
	}
	so := &StoredObject{Object: &o, Meta: k.meta(&o), Generation: r.Generation, Created: r.Created, Deleted: r.Deleted, Updated: r.Updated, Ownership: r.Ownership,
		Revisions: r.Revisions, Orphaned: r.Orphaned}
	if k.orphans != nil && k.orphans.selector != nil {
		so.adopts = k.orphans.selector(&o)
	}
	return so
}

func (k *objectKind[T]) lookup(s *Store, ns, name string) (*StoredObject, error) {
	r, err := readObject(s, k, ns, name)
	if err != nil {
		return nil, err
	}
	return k.storedObject(r), nil
}

func (k *objectKind[T]) list(s *Store) ([]*StoredObject, []error) {
	recs, errs := listObjects(s, k)
	out := make([]*StoredObject, len(recs))
	for i, r := range recs {
		out[i] = k.storedObject(r)
	}
	return out, errs
}

// objectApply is a generic kind's part of a transaction (kindTx).
type objectApply[T any] struct {
	k       *objectKind[T]
	in      []normObject[T]
	cur     map[ObjectRef]*ObjectRecord[T]
	written []*ObjectRecord[T]
	// planned are the objects of in as stored, merged with the live ones.
	planned []*T
}

func (a *objectApply[T]) refOf(r *ObjectRecord[T]) ObjectRef {
	m := a.k.meta(&r.Object)
	return ObjectRef{Kind: a.k.kind, Namespace: m.NamespaceOrDefault(), Name: m.Name}
}

func (a *objectApply[T]) load(s *Store, nss []string) error {
	refs := make([]ObjectRef, len(a.in))
	for i := range a.in {
		m := a.k.meta(&a.in[i].obj)
		refs[i] = ObjectRef{Kind: a.k.kind, Namespace: m.Namespace, Name: m.Name}
	}
	cur, err := current(func(ns string) ([]*ObjectRecord[T], error) { return listObjectsIn(s, a.k, ns) },
		func(ns, name string) (*ObjectRecord[T], error) { return readObject(s, a.k, ns, name) },
		a.refOf, refs, nss)
	a.cur = cur
	return err
}

func (a *objectApply[T]) plan(c *planCtx) error {
	for _, n := range a.in {
		m := a.k.meta(&n.obj)
		ref, file, err := c.fileOf(a.k.kind, m.Namespace, m.Name, n.all)
		if err != nil {
			return err
		}
		old := a.cur[ref]
		live, oldOwn := old != nil && !old.Deleted, Ownership{}
		var liveObj *T
		if live {
			oldOwn, liveObj = old.Ownership, &old.Object
		}
		n, err := mergeNormalized(a.k.kind, display(m.Namespace, m.Name), c.own.opts, liveObj, lastApplied(live, old.appliedOrZero()), n, file,
			func(x *T) (normObject[T], error) { return normalizeObject(a.k, x) }, func(n normObject[T]) []byte { return n.all }, a.k.validate)
		if err != nil {
			return err
		}
		// The controller's status is read only when planObject asks: an
		// object applied unchanged (a re-apply's common case) needs none.
		inUse := func(string) bool { return false }
		if live && a.k.revision != nil {
			inUse = c.s.workloadRevisionsInUse(ref, old.Created)
		}
		started := func() bool { return live && a.k.started != nil && a.k.started(c.s, ref, old.Created) }
		rec, act, err := planObject(a.k, old, n, c.now, inUse, started)
		if err != nil {
			return err
		}
		a.planned = append(a.planned, &n.obj)
		if rec = planOne(c, ref, act, rec.Generation, live, oldOwn, old, rec, file,
			func(r *ObjectRecord[T]) *Ownership { return &r.Ownership }, func(r *ObjectRecord[T]) *Applied { return &r.Applied }); rec != nil {
			a.written = append(a.written, rec)
		}
	}
	return nil
}

// appliedOrZero is r's Applied, none for no record.
func (r *ObjectRecord[T]) appliedOrZero() Applied {
	if r == nil {
		return Applied{}
	}
	return r.Applied
}

func (a *objectApply[T]) prune(c *planCtx, prunable func(ObjectRef, map[string]string, Ownership) bool) {
	for _, ref := range sortedRefs(a.cur) {
		if rec := a.cur[ref]; rec != nil && !rec.Deleted && prunable(ref, a.k.meta(&rec.Object).Labels, rec.Ownership) {
			t := tombstoneObject(a.k, rec, c.now)
			c.results = append(c.results, ApplyResult{ObjectRef: ref, Action: Pruned, Generation: t.Generation})
			a.written = append(a.written, t)
		}
	}
}

func (a *objectApply[T]) each(f func(ref ObjectRef, live bool)) {
	for ref, r := range a.cur {
		f(ref, !r.Deleted)
	}
}

func (a *objectApply[T]) namespaces(set map[string]bool) {
	for i := range a.in {
		set[a.k.meta(&a.in[i].obj).NamespaceOrDefault()] = true
	}
}

func (a *objectApply[T]) remove(s *Store, ref ObjectRef, now time.Time, orphan bool) error {
	rec, err := readObject(s, a.k, ref.Namespace, ref.Name)
	if err != nil {
		return err
	}
	if rec.Deleted {
		return fmt.Errorf("%s %q: %w (deleted)", lower(a.k.kind), ref.Name, ErrNotFound)
	}
	t := tombstoneObject(a.k, rec, now)
	if orphan && a.k.orphans != nil {
		t.Orphaned = orphanedBy(t.Orphaned, rec.Created)
	}
	a.written = append(a.written, t)
	return nil
}

func (a *objectApply[T]) removeIn(s *Store, ns string, now time.Time, done map[ObjectRef]bool) error {
	recs, err := listObjectsIn(s, a.k, ns)
	if err != nil {
		return err
	}
	for _, r := range recs {
		ref := ObjectRef{Kind: a.k.kind, Namespace: ns, Name: a.k.meta(&r.Object).Name}
		switch {
		case done[ref]:
		case !r.Deleted:
			t := tombstoneObject(a.k, r, now)
			// Kubernetes' namespace controller deletes every pod of
			// the namespace, the ownerless ones included: no pod of
			// the name is an orphan any more (orphans.go), all go.
			t.Orphaned = nil
			a.written = append(a.written, t)
			done[ref] = true
		case len(r.Orphaned) > 0:
			// A tombstone whose pods an orphaning deletion left:
			// they go with the namespace too. When it was deleted
			// (Updated) stays.
			t := *r
			t.Orphaned = nil
			a.written = append(a.written, &t)
			done[ref] = true
		}
	}
	return nil
}

func (a *objectApply[T]) touched(set map[string]bool) {
	for _, r := range a.written {
		set[a.k.meta(&r.Object).NamespaceOrDefault()] = true
	}
}

func (a *objectApply[T]) beforeWrite(*Store) error { return nil }

func (a *objectApply[T]) write(prep func(rel string, data []byte, err error) error) error {
	for _, r := range a.written {
		m := a.k.meta(&r.Object)
		data, err := encodeObject(a.k, r)
		if err := prep(a.k.path(m.Namespace, m.Name), data, err); err != nil {
			return err
		}
	}
	return nil
}

func (a *objectApply[T]) setPlanned(b *Bundle) { *a.k.bundle(b) = a.planned }

// The API of the kinds: the reconciler's ConfigStore (LookupConfigMap,
// LookupSecret, LookupClaim), and records for the commands.

// LookupConfigMap returns the live ConfigMap name of namespace ns,
// validated, or an error wrapping ErrNotFound (deleted, or never known).
func (s *Store) LookupConfigMap(ns, name string) (*manifests.ConfigMap, error) {
	rec, err := lookupLive(s, configMapKind, ns, name)
	if err != nil {
		return nil, err
	}
	return &rec.Object, nil
}

// LookupSecret is LookupConfigMap for a Secret: its stringData merged into
// data. Its values must never reach a log, an error or a status.
func (s *Store) LookupSecret(ns, name string) (*manifests.Secret, error) {
	rec, err := lookupLive(s, secretKind, ns, name)
	if err != nil {
		return nil, err
	}
	return &rec.Object, nil
}

// LookupClaim returns claim name of namespace ns: live (deleted false), a
// tombstone (deleted true, with the claim as it was: its volume goes once
// no container uses it), or an error wrapping ErrNotFound for a claim this
// state directory never knew (its volume is never removed). Any other
// error means the answer is unknown and the caller must not act.
func (s *Store) LookupClaim(ns, name string) (claim *manifests.PersistentVolumeClaim, deleted bool, err error) {
	if err := checkObject(KindPersistentVolumeClaim, ns, name); err != nil {
		return nil, false, err
	}
	rec, err := readObject(s, claimKind, ns, name)
	if err != nil {
		return nil, false, err
	}
	if !rec.Deleted {
		if err := claimKind.validate(&rec.Object); err != nil {
			return nil, false, fmt.Errorf("state file %s: invalid persistentvolumeclaim: %w", claimKind.path(ns, name), err)
		}
	}
	return &rec.Object, rec.Deleted, nil
}

// LookupConfigMapRecord returns the record of ConfigMap name of namespace
// ns, tombstones included, or an error wrapping ErrNotFound.
func (s *Store) LookupConfigMapRecord(ns, name string) (*ConfigMapRecord, error) {
	if err := checkObject(KindConfigMap, ns, name); err != nil {
		return nil, err
	}
	return readObject(s, configMapKind, ns, name)
}

// LookupSecretRecord is LookupConfigMapRecord for a Secret.
func (s *Store) LookupSecretRecord(ns, name string) (*SecretRecord, error) {
	if err := checkObject(KindSecret, ns, name); err != nil {
		return nil, err
	}
	return readObject(s, secretKind, ns, name)
}

// LookupClaimRecord is LookupConfigMapRecord for a claim.
func (s *Store) LookupClaimRecord(ns, name string) (*ClaimRecord, error) {
	if err := checkObject(KindPersistentVolumeClaim, ns, name); err != nil {
		return nil, err
	}
	return readObject(s, claimKind, ns, name)
}

// ListConfigMaps returns every ConfigMap record of every namespace, live
// and tombstoned, sorted by namespace and name; a file that cannot be
// read yields one error naming it and does not hide the others.
func (s *Store) ListConfigMaps() ([]*ConfigMapRecord, []error) {
	return listObjects(s, configMapKind)
}

// ListSecrets is ListConfigMaps for Secrets.
func (s *Store) ListSecrets() ([]*SecretRecord, []error) { return listObjects(s, secretKind) }

// ListClaims is ListConfigMaps for PersistentVolumeClaims.
func (s *Store) ListClaims() ([]*ClaimRecord, []error) { return listObjects(s, claimKind) }

// DeleteConfigMap tombstones the live ConfigMap name of namespace ns; an
// error wraps ErrNotFound if there is none.
func (s *Store) DeleteConfigMap(ns, name string) error {
	return s.deleteOne(ObjectRef{Kind: KindConfigMap, Namespace: ns, Name: name})
}

// DeleteSecret is DeleteConfigMap for a Secret.
func (s *Store) DeleteSecret(ns, name string) error {
	return s.deleteOne(ObjectRef{Kind: KindSecret, Namespace: ns, Name: name})
}

// DeleteClaim is DeleteConfigMap for a claim: the controller removes its
// volume once no container uses it.
func (s *Store) DeleteClaim(ns, name string) error {
	return s.deleteOne(ObjectRef{Kind: KindPersistentVolumeClaim, Namespace: ns, Name: name})
}
