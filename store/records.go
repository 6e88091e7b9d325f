package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/manifests"
)

// Record is the stored desired state of one deployment, live or tombstoned.
type Record struct {
	Name string `json:"name"`
	// Namespace is the deployment's namespace, "" for default (as records
	// of earlier releases, which had no namespaces, all are). Read it with
	// NamespaceOrDefault.
	Namespace string `json:"namespace,omitempty"`
	// Generation is 1 on creation and increases on every spec change and on
	// deletion; it never decreases, even across delete and re-apply.
	Generation int64     `json:"generation"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
	// Deleted marks a tombstone: the deployment was deleted and its
	// containers must be removed (as opposed to orphans, never known).
	Deleted   bool       `json:"deleted,omitempty"`
	DeletedAt *time.Time `json:"deletedAt,omitempty"`
	// Deployment is the object as applied (defaulted by the caller), with
	// Status nil and the server-set metadata (generation,
	// creationTimestamp) filled from this record so it can be printed as is.
	Deployment manifests.Deployment `json:"deployment"`
	// Revisions is the rollout history, oldest first: one entry per distinct
	// pod template, the last one current. A template that comes back (an
	// undo) moves to the end with a new number, as a Kubernetes ReplicaSet
	// does, so numbers only grow.
	Revisions []Revision `json:"revisions,omitempty"`
	// Ownership is who manages the deployment (ownership.go).
	Ownership
	// Applied is what its applier last applied (merge.go).
	Applied
	// Orphaned are the incarnations of this deployment's name (their
	// uids, OwnerUID) whose pods a deletion with --cascade=orphan left
	// running ownerless, as ObjectRecord.Orphaned is a generic kind's
	// (orphans.go): set on the tombstone, carried by the deployment
	// applied again over it, cleared with its namespace. Absent on
	// records written before deployments could orphan: nothing was.
	Orphaned []string `json:"orphaned,omitempty"`
}

// Revision is one pod template of a deployment's history, kept so that
// `rollout undo` can restore it and the controller can recreate replicas of
// an older revision during a rollout.
type Revision struct {
	Number      int64                     `json:"number"`
	Hash        string                    `json:"hash"`
	Template    manifests.PodTemplateSpec `json:"template"`
	ChangeCause string                    `json:"changeCause,omitempty"`
	CreatedAt   time.Time                 `json:"createdAt"`
}

// NamespaceOrDefault returns the deployment's namespace, "default" for "".
func (r *Record) NamespaceOrDefault() string { return orDefault(r.Namespace) }

// Key returns the deployment's key, "namespace/name".
func (r *Record) Key() string { return Key(r.Namespace, r.Name) }

// Revision returns the revision with the given template hash, or nil.
func (r *Record) Revision(hash string) *Revision { return FindRevision(r.Revisions, hash) }

// FindRevision returns the revision of revs with the given template hash,
// or nil: Record.Revision for callers that hold only the history.
func FindRevision(revs []Revision, hash string) *Revision {
	for i := range revs {
		if revs[i].Hash == hash {
			return &revs[i]
		}
	}
	return nil
}

// CurrentRevision returns the current revision (the last), or nil for a
// record written before revisions existed.
func (r *Record) CurrentRevision() *Revision {
	if len(r.Revisions) == 0 {
		return nil
	}
	return &r.Revisions[len(r.Revisions)-1]
}

// recordRevision appends a revision when the template changed, and trims
// the history to revisionHistoryLimit old revisions plus the current one,
// oldest first, skipping those inUse (see revisionsInUse): like Kubernetes,
// which never deletes a ReplicaSet that still has replicas, so the history
// may run over the limit until their containers are gone.
func recordRevision(rec *Record, now time.Time, inUse func(hash string) bool) {
	d := &rec.Deployment
	recordObjectRevision(&rec.Revisions, revisionSource{template: d.Spec.Template, hash: manifests.TemplateHash(&d.Spec.Template),
		changeCause: d.Metadata.Annotations[manifests.AnnotationChangeCause], limit: d.Spec.RevisionHistoryLimit}, now, inUse)
}

// controllerStateKey is where the controller keeps its per-deployment state
// in Status.Extra (reconciler/state.go). The store reads one thing from it,
// the rollout's target size per revision (template hash), to tell which
// revisions still have containers; reconciler tests hold the format.
const controllerStateKey = "controller"

// revisionsInUse returns which revision hashes the controller last recorded
// with containers or a target size: its rollout sizes list exactly those
// (a revision scaled to 0 stays there until its last container is gone).
// When the status cannot be read every revision counts as in use: a long
// history is harmless, a template the controller still needs is not.
func (s *Store) revisionsInUse(ns, name string) func(hash string) bool {
	all := func(string) bool { return true }
	st, err := s.ReadStatus(ns, name)
	if err != nil {
		return all
	}
	raw, ok := st.Extra[controllerStateKey]
	if !ok {
		return func(string) bool { return false }
	}
	var state struct {
		Rollout struct {
			Sizes map[string]int32 `json:"sizes"`
		} `json:"rollout"`
	}
	if err := json.Unmarshal(raw, &state); err != nil {
		return all
	}
	return func(hash string) bool {
		_, ok := state.Rollout.Sizes[hash]
		return ok
	}
}

// recordFile is the on-disk form of a Record.
type recordFile struct {
	Version int `json:"version"`
	Record
}

// Action is what Apply did (or, with DryRun, would do) to one object. The
// CLI prints it as "deployment/<name> <action>" (service/…, namespace/…).
type Action string

const (
	Created    Action = "created"
	Configured Action = "configured"
	Unchanged  Action = "unchanged"
	// Pruned is reported for an object removed by ApplyOptions.Prune
	// (kubectl's word).
	Pruned Action = "pruned"
)

// ApplyOptions modify Apply.
type ApplyOptions struct {
	// DryRun computes and returns the results without writing anything.
	DryRun bool
	// Prune tombstones every live deployment, service, ConfigMap, Secret
	// and claim absent from the applied set whose metadata.labels match
	// PruneSelector (nil: every one), in the namespaces the bundle's
	// objects (but Namespaces) are in, as kubectl prunes the namespaces it visited. Namespaces are never
	// pruned: deleting one deletes everything in it, which only an explicit
	// delete does. The CLI asks for --all or -l before pruning everything,
	// as kubectl does.
	Prune         bool
	PruneSelector labels.Selector
	// KeepPaused names (by Key) the deployments whose manifest left
	// spec.paused unset: the live value is kept (false on create), as
	// kubectl apply keeps a `rollout pause` made since the last apply.
	KeepPaused map[string]bool

	// Manager is who applies (ownership.go), ManagerApply when "";
	// ManagerOf, when set and not "", names it per object. An object
	// another manager manages is a conflict (*ConflictError, nothing is
	// written) unless ForceConflicts, which takes it over. Owns, when
	// set, says which managers count as the applier's (a directory
	// controller's several paths): their objects are taken over silently.
	Manager        string
	ManagerOf      func(ObjectRef) string
	Owns           func(manager string) bool
	ForceConflicts bool
	// Updater, when set, makes the apply an update by that command
	// (patch, edit): it is recorded, never a conflict, and the manager
	// stays. Its objects are whole (the live object as the command
	// changed it): a field one lacks was removed, nothing of the live
	// object is kept (KeepPaused is ignored), no merge is made.
	Updater string
	// SaveConfig records each applied object's configuration as its
	// last-applied one (merge.go), as `apply -f` and a manifests
	// directory do; a CLI command that stores an object of its own
	// making (create namespace) does not. Whether it is set or not, an
	// applier's object is merged with the live one when the record holds
	// a last-applied configuration.
	SaveConfig bool
	// PruneOwned tombstones every live object of every namespace that
	// the applier owns (Owns, or its Manager) and the bundle no longer
	// holds, Namespaces included — but a namespace that still holds an
	// object of another manager, which deleting the namespace would
	// delete too. It is how a manifests directory deletes what left it;
	// Prune, with it, changes nothing.
	PruneOwned bool
}

// ApplyResult reports the outcome for one object. Its Namespace is the
// object's, "default" included; "" for a Namespace.
type ApplyResult struct {
	ObjectRef
	Action Action
	// Generation is the record's generation after the apply (deployments
	// and services; 0 for a Namespace).
	Generation int64
}

// Get returns the live record of deployment name in namespace ns ("" is
// default). It returns an error wrapping ErrNotFound if the deployment was
// never applied or has been deleted.
func (s *Store) Get(ns, name string) (*Record, error) {
	rec, err := s.Lookup(ns, name)
	if err != nil {
		return nil, err
	}
	if rec.Deleted {
		return nil, fmt.Errorf("deployment %q: %w (deleted)", name, ErrNotFound)
	}
	return rec, nil
}

// Lookup returns the record of deployment name in namespace ns,
// tombstones included: Record.Deleted tells a deleted deployment (remove
// its containers) from a live one, and ErrNotFound a deployment never
// known (its containers are orphans). Any other error means the answer is
// unknown and the caller must not act.
func (s *Store) Lookup(ns, name string) (*Record, error) {
	if err := checkObject(KindDeployment, ns, name); err != nil {
		return nil, err
	}
	return s.readRecord(ns, name)
}

func (s *Store) readRecord(ns, name string) (*Record, error) {
	rel := recordPath(ns, name)
	data, err := s.readFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("deployment %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("state file %s: %w", rel, err)
	}
	rec, err := decodeRecord(ns, name, data)
	if err != nil {
		return nil, fmt.Errorf("state file %s: %w", rel, err)
	}
	return rec, nil
}

func decodeRecord(ns, name string, data []byte) (*Record, error) {
	var f recordFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	switch {
	case f.Version == 0:
		return nil, fmt.Errorf("%w: no format version", ErrCorrupt)
	case f.Version > formatVersion:
		return nil, fmt.Errorf("written in format %d by a newer dockctl (this one reads up to %d)", f.Version, formatVersion)
	case f.Name != name || f.Deployment.Metadata.Name != name:
		return nil, fmt.Errorf("%w: records deployment %q, expected %q", ErrCorrupt, f.Name, name)
	case f.NamespaceOrDefault() != orDefault(ns) || f.Deployment.Metadata.NamespaceOrDefault() != orDefault(ns):
		return nil, fmt.Errorf("%w: records a deployment of namespace %q, expected %q", ErrCorrupt, f.Deployment.Metadata.NamespaceOrDefault(), orDefault(ns))
	case f.Generation < 1:
		return nil, fmt.Errorf("%w: generation %d", ErrCorrupt, f.Generation)
	}
	return &f.Record, nil
}

func encodeRecord(rec *Record) ([]byte, error) {
	return encodeState(recordFile{Version: formatVersion, Record: *rec}, "deployment", rec.Name)
}

// encodeState encodes the content of a state file, indented: the files
// are meant to be readable with cat when debugging.
func encodeState(v any, kind, name string) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding %s %q: %w", kind, name, err)
	}
	return append(data, '\n'), nil
}

// List returns the live records of every namespace, sorted by namespace
// and name. If some state files cannot be read it still returns the
// others, along with an error naming each unreadable file.
func (s *Store) List() ([]*Record, error) {
	all, errs := s.ListAll()
	live := all[:0]
	for _, r := range all {
		if !r.Deleted {
			live = append(live, r)
		}
	}
	return live, errors.Join(errs...)
}

// ListAll returns every record of every namespace, live and tombstoned,
// sorted by namespace and name. A file that cannot be read or decoded
// yields one error naming it ("state file deployments/x.json: …") and does
// not hide the others.
func (s *Store) ListAll() ([]*Record, []error) {
	var recs []*Record
	errs := s.eachObject(deploymentsDir, KindDeployment, func(ns, name string) error {
		rec, err := s.readRecord(ns, name)
		if err == nil {
			recs = append(recs, rec)
		}
		return err
	})
	sort.SliceStable(recs, func(i, j int) bool {
		return lessKey(recs[i].NamespaceOrDefault(), recs[i].Name, recs[j].NamespaceOrDefault(), recs[j].Name)
	})
	return recs, errs
}

// listNamespace returns the records (tombstones included) of one namespace.
func (s *Store) listNamespace(ns string) ([]*Record, error) {
	var recs []*Record
	errs := s.eachObjectIn(ns, deploymentsDir, KindDeployment, func(ns, name string) error {
		rec, err := s.readRecord(ns, name)
		if err == nil {
			recs = append(recs, rec)
		}
		return err
	})
	return recs, errors.Join(errs...)
}

func lessKey(ns1, n1, ns2, n2 string) bool {
	if ns1 != ns2 {
		return ns1 < ns2
	}
	return n1 < n2
}

// eachObject calls read for every object file of sub (deploymentsDir or
// servicesDir) in every namespace, default first, and collects the errors:
// a bad file or directory is reported and does not hide the others. A
// read that reports ErrNotFound (the file went away) is no error.
func (s *Store) eachObject(sub, kind string, read func(ns, name string) error) []error {
	errs := s.eachObjectIn(manifests.DefaultNamespace, sub, kind, read)
	nss, nerrs := s.namespaceDirs()
	errs = append(errs, nerrs...)
	for _, ns := range nss {
		errs = append(errs, s.eachObjectIn(ns, sub, kind, read)...)
	}
	return errs
}

// eachObjectIn is eachObject in one namespace, in file name order.
func (s *Store) eachObjectIn(ns, sub, kind string, read func(ns, name string) error) []error {
	dir := filepath.Join(nsRoot(ns), sub)
	entries, err := os.ReadDir(filepath.Join(s.dir, dir))
	// A namespace directory, or one of a later kind in a state directory
	// of an earlier release, may be missing: nothing was stored there. So
	// may anything of a read-only store: nothing was applied yet.
	if errors.Is(err, fs.ErrNotExist) && (s.readOnly || ns != manifests.DefaultNamespace || sub != deploymentsDir) {
		return nil
	}
	if err != nil {
		return []error{fmt.Errorf("state directory %s: %w", s.dir, err)}
	}
	var errs []error
	for _, e := range entries { // ReadDir sorts by file name, hence by name
		fname := e.Name()
		if e.IsDir() || strings.HasPrefix(fname, ".") || !strings.HasSuffix(fname, ".json") {
			continue // temporary files, editor leftovers
		}
		name := strings.TrimSuffix(fname, ".json")
		if err := checkName(kind, name); err != nil {
			errs = append(errs, fmt.Errorf("state file %s: %w", filepath.Join(dir, fname), err))
			continue
		}
		if err := read(ns, name); err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, err)
		}
	}
	return errs
}

// Bundle is what one Apply stores, all or nothing: Namespaces, Services
// and Deployments, each already decoded, defaulted and validated by the
// caller. An object's metadata.namespace "" is default.
type Bundle struct {
	Namespaces []*manifests.Namespace
	// ConfigMaps, Secrets and Claims (PersistentVolumeClaims) are
	// stored after the Namespaces and before the Services (config.go).
	ConfigMaps  []*manifests.ConfigMap
	Secrets     []*manifests.Secret
	Claims      []*manifests.PersistentVolumeClaim
	Services    []*manifests.Service
	Deployments []*manifests.Deployment
	// The workload kinds beyond Deployment (workloads.go), stored after
	// the Deployments.
	CronJobs     []*manifests.CronJob
	Jobs         []*manifests.Job
	StatefulSets []*manifests.StatefulSet
	DaemonSets   []*manifests.DaemonSet
	ReplicaSets  []*manifests.ReplicaSet
	Pods         []*manifests.Pod
	// The routing kinds (routing.go), stored after what they refer to.
	IngressClasses  []*manifests.IngressClass
	GatewayClasses  []*manifests.GatewayClass
	ReferenceGrants []*manifests.ReferenceGrant
	Gateways        []*manifests.Gateway
	Ingresses       []*manifests.Ingress
	HTTPRoutes      []*manifests.HTTPRoute
	// Zeros are, per object, the boolean and integer fields its file
	// set to false or 0 (manifests.Document.Zeros): the typed objects'
	// JSON leaves them out, and an apply stores them over the live
	// values, as kubectl apply does (merge.go).
	Zeros map[ObjectRef]map[string]any
}

// Deployments is a Bundle of deployments only.
func Deployments(deps ...*manifests.Deployment) Bundle { return Bundle{Deployments: deps} }

// Apply stores the bundle b as the desired state, all or nothing as far as
// the filesystem allows (see the package doc), in the order that makes
// references resolve: Namespaces, then ConfigMaps, Secrets and claims,
// then Services, then Deployments. Results come in that order, each kind
// in the order of b, followed by the pruned deployments, services,
// ConfigMaps, Secrets and claims, each kind sorted by namespace and name. An object appearing twice, or one in a namespace that neither
// exists nor is created by b (`namespaces "x" not found`, as kubectl says
// it, wrapping ErrNotFound), is an error and nothing is written. With
// DryRun, Apply needs no write access and takes no lock: the results are a
// preview of a concurrent world. A deployment whose spec.replicas is nil
// keeps the live count (the default on create), as kubectl apply does with
// a manifest that leaves replicas out.
func (s *Store) Apply(b Bundle, opts ApplyOptions) ([]ApplyResult, error) {
	results, _, err := s.apply(b, opts)
	return results, err
}

// Preview is Apply with DryRun that also returns the bundle's objects as
// Apply would store them, each kind in the order of b: merged with the
// live objects (merge.go), what Apply keeps of them kept, normalized
// (no status, no server-set metadata). diff shows them.
func (s *Store) Preview(b Bundle, opts ApplyOptions) ([]ApplyResult, *Bundle, error) {
	opts.DryRun = true
	return s.apply(b, opts)
}

func (s *Store) apply(b Bundle, opts ApplyOptions) ([]ApplyResult, *Bundle, error) {
	if s.readOnly && !opts.DryRun {
		return nil, nil, ErrReadOnly
	}
	// Validate everything before looking at, let alone writing, anything.
	in, err := prepare(b)
	if err != nil {
		return nil, nil, fmt.Errorf("apply: %w", err)
	}
	var (
		results []ApplyResult
		tx      *applyTx
	)
	run := func() error {
		tx = &applyTx{s: s, now: storeNow()}
		var err error
		if results, err = tx.apply(in, opts); err != nil || opts.DryRun {
			return err
		}
		return tx.commit()
	}
	if opts.DryRun {
		err = run()
	} else {
		err = s.transaction(run)
	}
	if err != nil {
		return nil, nil, err
	}
	return results, &tx.planned, nil
}

// Update applies fn to the live deployment name of namespace ns under the
// write lock (read-modify-write: scale, rollout pause/resume/restart/undo)
// and stores the result. The generation increases when the spec changed;
// when nothing changed nothing is written. fn must not rename the
// deployment or move it to another namespace.
func (s *Store) Update(ns, name string, fn func(*manifests.Deployment) error) (*Record, error) {
	return s.UpdateRecord(ns, name, func(_ *Record, d *manifests.Deployment) error { return fn(d) })
}

// UpdateRecord is Update with the current record at hand (read-only), for
// changes that depend on it, such as `rollout undo` restoring a revision's
// template.
func (s *Store) UpdateRecord(ns, name string, fn func(*Record, *manifests.Deployment) error) (*Record, error) {
	return s.UpdateRecordAs("", ns, name, fn)
}

// UpdateRecordAs is UpdateRecord recorded as a change by updater (a
// command's name: scale, set image, rollout; "" is "update"): the
// deployment's manager stays.
func (s *Store) UpdateRecordAs(updater, ns, name string, fn func(*Record, *manifests.Deployment) error) (*Record, error) {
	if s.readOnly {
		return nil, ErrReadOnly
	}
	if err := checkObject(KindDeployment, ns, name); err != nil {
		return nil, err
	}
	var out *Record
	err := s.transaction(func() error {
		old, err := s.Get(ns, name)
		if err != nil {
			return err
		}
		d, err := deepCopy(&old.Deployment)
		if err != nil {
			return fmt.Errorf("deployment %q: %w", name, err)
		}
		if err := fn(old, &d); err != nil {
			return fmt.Errorf("deployment %q: %w", name, err)
		}
		if d.Metadata.Name != name {
			return fmt.Errorf("deployment %q: update renamed it to %q", name, d.Metadata.Name)
		}
		if d.Metadata.NamespaceOrDefault() != old.NamespaceOrDefault() {
			return fmt.Errorf("deployment %q: update moved it to namespace %q", name, d.Metadata.NamespaceOrDefault())
		}
		if err := keepLive(&old.Deployment, &d, false); err != nil {
			return err
		}
		n, err := normalize(&d)
		if err != nil {
			return fmt.Errorf("deployment %q: %w", name, err)
		}
		now := storeNow()
		rec, act, err := plan(old, n, now, s.revisionsInUse(ns, name))
		if err != nil {
			return err
		}
		if act == Unchanged {
			out = old
			return nil
		}
		rec.Ownership = old.Ownership.updated(updaterName(updater), now)
		out = rec
		return writeRecords(s, rec)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// writeRecords writes deployment records as they are (the caller holds
// the write lock).
func writeRecords(s *Store, recs ...*Record) error {
	tx := newTx(s, time.Time{}) // the records hold their times
	tx.kindTx(KindDeployment).(*deploymentTx).written = recs
	return tx.commit()
}

// Delete tombstones the live deployment name of namespace ns (see the
// package doc). It returns an error wrapping ErrNotFound if there is no
// live record.
func (s *Store) Delete(ns, name string) error {
	return s.deleteOne(ObjectRef{Kind: KindDeployment, Namespace: ns, Name: name})
}

// normalized is a deep copy of a deployment with what the user does not
// own cleared, and its canonical encodings for comparison.
type normalized struct {
	d    manifests.Deployment
	spec []byte // canonical JSON of d.Spec
	all  []byte // canonical JSON of d
}

// normalize deep-copies d and clears Status and the server-set metadata, so
// that `get -o yaml | apply` is unchanged. encoding/json output is canonical
// for equal values (struct field order, sorted map keys), which is what
// makes byte comparison a valid equality test.
func normalize(d *manifests.Deployment) (normalized, error) {
	c, spec, all, err := canonical(d, func(c *manifests.Deployment) (*manifests.ObjectMeta, any) {
		c.Status = nil
		return &c.Metadata, &c.Spec
	})
	if err != nil {
		return normalized{}, fmt.Errorf("deployment: %w", err)
	}
	return normalized{d: c, spec: spec, all: all}, nil
}

// canonical deep-copies obj, clears what the user does not own — what
// clear clears (a status), and the server-set metadata of the metadata it
// returns — and returns the copy with the canonical encodings of the spec
// clear returns and of the whole (see normalize). The namespace is stored
// as canonicalNamespace says.
func canonical[T any](obj *T, clear func(*T) (*manifests.ObjectMeta, any)) (c T, spec, all []byte, err error) {
	if err := roundTrip(obj, &c); err != nil {
		return c, nil, nil, err
	}
	m, s := clear(&c)
	m.Generation = 0
	m.CreationTimestamp = nil
	m.ManagedFields = nil
	m.Namespace = canonicalNamespace(m.Namespace)
	if spec, err = json.Marshal(s); err != nil {
		return c, nil, nil, fmt.Errorf("encoding spec: %w", err)
	}
	if all, err = json.Marshal(c); err != nil {
		return c, nil, nil, fmt.Errorf("encoding: %w", err)
	}
	return c, spec, all, nil
}

func deepCopy(d *manifests.Deployment) (manifests.Deployment, error) {
	var c manifests.Deployment
	err := roundTrip(d, &c)
	return c, err
}

// plan computes the record that storing n over old (nil: never known) gives,
// and the action that describes it.
func plan(old *Record, n normalized, now time.Time, inUse func(hash string) bool) (*Record, Action, error) {
	var rec Record
	var act Action
	switch {
	case old == nil:
		rec = Record{Name: n.d.Metadata.Name, Namespace: n.d.Metadata.Namespace, Generation: 1, CreatedAt: now}
		act = Created
	case old.Deleted:
		// Revival is a new object (new creation time, a history of its
		// own: the deleted templates must not come back through a
		// rollout) but the generation continues, so that a status
		// observed before the deletion never looks current. Apply resets
		// the status file too.
		// The pods its predecessors left are its to adopt (orphans.go).
		rec = Record{Name: old.Name, Namespace: old.Namespace, Generation: old.Generation + 1, CreatedAt: now, Orphaned: old.Orphaned}
		act = Created
	default:
		prev, err := normalize(&old.Deployment)
		if err != nil {
			return nil, "", fmt.Errorf("deployment %q: stored copy: %w", old.Name, err)
		}
		if bytes.Equal(prev.all, n.all) {
			return old, Unchanged, nil
		}
		if err := manifests.ValidateDeploymentUpdate(&n.d, &prev.d); err != nil {
			// The API server's words: The Deployment "x" is invalid: …
			return nil, "", fmt.Errorf("the %s %q is invalid: %w", manifests.Kind, display(old.Namespace, old.Name), err)
		}
		rec = *old
		if !bytes.Equal(prev.spec, n.spec) {
			rec.Generation++ // metadata-only changes keep it, as in Kubernetes
		}
		act = Configured
	}
	rec.UpdatedAt = now
	rec.Deployment = n.d
	rec.Revisions = append([]Revision(nil), rec.Revisions...)
	recordRevision(&rec, now, inUse)
	stamp(&rec)
	return &rec, act, nil
}

// keepLive fills in d, a manifest about to be applied, what kubectl apply
// keeps of the live deployment (nil: none, or deleted — a revival starts
// afresh) when it has no last-applied configuration to merge with
// (merge.go): an unset spec.replicas takes the live count, or the default
// on create; with keepPaused (the manifest left spec.paused out),
// spec.paused takes the live value. d was validated with the default
// count, so a kept count is validated again: it must not store a
// combination that validation forbids (a hostPort with several replicas).
func keepLive(live, d *manifests.Deployment, keepPaused bool) error {
	if keepPaused && live != nil {
		d.Spec.Paused = live.Spec.Paused
	}
	if d.Spec.Replicas != nil {
		return nil
	}
	r := int32(manifests.DefaultReplicas)
	if live != nil {
		r = live.Replicas()
	}
	d.Spec.Replicas = &r
	if r != manifests.DefaultReplicas {
		if err := manifests.Validate(d); err != nil {
			return fmt.Errorf("deployment %q with the live replicas (%d) kept, as spec.replicas is not set: %w", d.Metadata.Name, r, err)
		}
	}
	return nil
}

// tombstone returns old marked deleted. Deletion bumps the generation (as
// setting deletionTimestamp does in Kubernetes) so the controller can tell
// whether it has observed it.
func tombstone(old *Record, now time.Time) *Record {
	rec := *old
	rec.Applied = Applied{} // a revival is a new object
	rec.Deleted = true
	rec.DeletedAt = &now
	rec.UpdatedAt = now
	rec.Generation++
	stamp(&rec)
	return &rec
}

// stamp fills the stored deployment's server-set metadata from the record.
func stamp(rec *Record) {
	created := rec.CreatedAt
	rec.Deployment.Status = nil
	rec.Deployment.Metadata.Generation = rec.Generation
	rec.Deployment.Metadata.CreationTimestamp = &created
}

// deploymentKind is the Deployment's registration (kinds.go). Its record
// is a Record rather than an ObjectRecord: it carries the rollout history,
// which plan extends (the revision hook: recordRevision, with the
// revisions the controller still uses kept), and an apply merges it with
// the rules of mergeDeployment (spec.replicas and spec.paused kept). A
// revived deployment's status is reset before its record is written.
var deploymentKind = deploymentRegistration{}

type deploymentRegistration struct{}

func (deploymentRegistration) Kind() string         { return KindDeployment }
func (deploymentRegistration) subdomainNames() bool { return false }
func (deploymentRegistration) recordsDir() string   { return deploymentsDir }
func (deploymentRegistration) watchPrefix() string  { return "" }

// pruneRank: a deployment refers to everything else.
func (deploymentRegistration) pruneRank() int { return 0 }

func (deploymentRegistration) begin(b *Bundle, once func(kind, ns, name string) error) (kindTx, error) {
	in, err := prepareEach(KindDeployment, b.Deployments, func(d *manifests.Deployment) *manifests.ObjectMeta { return &d.Metadata }, normalize, once)
	if err != nil {
		return nil, err
	}
	return &deploymentTx{in: in}, nil
}

func (deploymentRegistration) liveCopy(s *Store, ref ObjectRef) (*manifests.ObjectMeta, func() error, Bundle, error) {
	var b Bundle
	rec, err := s.Get(ref.Namespace, ref.Name)
	if err != nil {
		return nil, nil, b, err
	}
	d, err := deepCopy(&rec.Deployment)
	if err != nil {
		return nil, nil, b, err
	}
	b.Deployments = []*manifests.Deployment{&d}
	return &d.Metadata, func() error { return manifests.Validate(&d) }, b, nil
}

func deploymentMeta(d *manifests.Deployment) *manifests.ObjectMeta { return &d.Metadata }

func (deploymentRegistration) metas(b *Bundle) []*manifests.ObjectMeta {
	return metasOf(b.Deployments, deploymentMeta)
}

func (deploymentRegistration) each(b *Bundle, f func(kind string, obj any, m *manifests.ObjectMeta) error) error {
	return eachCopy(KindDeployment, b.Deployments, deploymentMeta, f)
}

func (deploymentRegistration) filter(b *Bundle, keep func(*manifests.ObjectMeta) bool) {
	b.Deployments = filterObjects(b.Deployments, deploymentMeta, keep)
}

func deploymentObject(r *Record) *StoredObject {
	d := r.Deployment.DeepCopy()
	// As stamp fills them, whatever release wrote the record.
	d.Status, d.Metadata.Generation = nil, r.Generation
	// Its revisions are its templates' history (rollout history, undo):
	// the templates its pods, orphans included, were made from.
	return &StoredObject{Object: d, Meta: &d.Metadata, Generation: r.Generation, Created: r.CreatedAt, Deleted: r.Deleted, Ownership: r.Ownership,
		Revisions: r.Revisions, Orphaned: r.Orphaned, adopts: matchLabels(d.Spec.Selector), podUID: r.PodUID}
}

// Stored is r as a StoredObject: what the Deployment controller and the
// commands ask PodOwner about a deployment's pod.
func (r *Record) Stored() *StoredObject { return deploymentObject(r) }

func (deploymentRegistration) lookup(s *Store, ns, name string) (*StoredObject, error) {
	r, err := s.readRecord(ns, name)
	if err != nil {
		return nil, err
	}
	return deploymentObject(r), nil
}

func (deploymentRegistration) list(s *Store) ([]*StoredObject, []error) {
	recs, errs := s.ListAll()
	out := make([]*StoredObject, len(recs))
	for i, r := range recs {
		out[i] = deploymentObject(r)
	}
	return out, errs
}

// deploymentTx is the Deployment's part of a transaction (kindTx).
type deploymentTx struct {
	in      []normalized
	cur     map[ObjectRef]*Record
	written []*Record
	// revived deployments start with a fresh status (see Apply).
	revived []*Record
	planned []*manifests.Deployment
}

func deploymentRef(r *Record) ObjectRef {
	return ObjectRef{Kind: KindDeployment, Namespace: r.NamespaceOrDefault(), Name: r.Name}
}

// load reads the current records. A record that cannot be read fails
// the apply: overwriting it would lose its generation, and pruning past it
// could leave a deployment running that the user meant to delete.
func (t *deploymentTx) load(s *Store, nss []string) error {
	refs := make([]ObjectRef, len(t.in))
	for i, n := range t.in {
		refs[i] = ObjectRef{Kind: KindDeployment, Namespace: n.d.Metadata.Namespace, Name: n.d.Metadata.Name}
	}
	cur, err := current(s.listNamespace, s.readRecord, deploymentRef, refs, nss)
	t.cur = cur
	return err
}

func (t *deploymentTx) plan(c *planCtx) error {
	for _, n := range t.in {
		ns, name := n.d.Metadata.Namespace, n.d.Metadata.Name
		ref, file, err := c.fileOf(KindDeployment, ns, name, n.all)
		if err != nil {
			return err
		}
		old := t.cur[ref]
		var live *manifests.Deployment
		var oldOwn Ownership
		if old != nil && !old.Deleted {
			live, oldOwn = &old.Deployment, old.Ownership
		}
		d, err := mergeDeployment(live, old, n.d, file, c.own.opts)
		if err != nil {
			return err
		}
		if n, err = normalize(&d); err != nil {
			return fmt.Errorf("apply: deployment %q: %w", display(ns, name), err)
		}
		rec, act, err := plan(old, n, c.now, c.s.revisionsInUse(ns, name))
		if err != nil {
			return err
		}
		t.planned = append(t.planned, &n.d)
		if w := planOne(c, ref, act, rec.Generation, live != nil, oldOwn, old, rec, file,
			func(r *Record) *Ownership { return &r.Ownership }, func(r *Record) *Applied { return &r.Applied }); w != nil {
			t.written = append(t.written, w)
			rec = w
		}
		if old != nil && old.Deleted {
			t.revived = append(t.revived, rec)
		}
	}
	return nil
}

func (t *deploymentTx) prune(c *planCtx, prunable func(ObjectRef, map[string]string, Ownership) bool) {
	for _, ref := range sortedRefs(t.cur) {
		if rec := t.cur[ref]; rec != nil && !rec.Deleted && prunable(ref, rec.Deployment.Metadata.Labels, rec.Ownership) {
			tb := tombstone(rec, c.now)
			c.results = append(c.results, ApplyResult{ObjectRef: ref, Action: Pruned, Generation: tb.Generation})
			t.written = append(t.written, tb)
		}
	}
}

func (t *deploymentTx) each(f func(ref ObjectRef, live bool)) {
	for ref, r := range t.cur {
		f(ref, !r.Deleted)
	}
}

func (t *deploymentTx) namespaces(set map[string]bool) {
	for _, n := range t.in {
		set[n.d.Metadata.NamespaceOrDefault()] = true
	}
}

func (t *deploymentTx) remove(s *Store, ref ObjectRef, now time.Time, orphan bool) error {
	rec, err := s.Get(ref.Namespace, ref.Name)
	if err != nil {
		return err
	}
	tb := tombstone(rec, now)
	if orphan {
		// Kubernetes orphans the Deployment's ReplicaSets, which keep
		// their pods; there are none here, so its pods are left
		// ownerless themselves (orphans.go), in the tombstone's write.
		tb.Orphaned = orphanedBy(tb.Orphaned, rec.CreatedAt)
	}
	t.written = append(t.written, tb)
	return nil
}

func (t *deploymentTx) removeIn(s *Store, ns string, now time.Time, done map[ObjectRef]bool) error {
	deps, err := s.listNamespace(ns)
	if err != nil {
		return err
	}
	for _, d := range deps {
		ref := ObjectRef{Kind: KindDeployment, Namespace: ns, Name: d.Name}
		switch {
		case done[ref]:
		case !d.Deleted:
			tb := tombstone(d, now)
			// The namespace controller deletes every pod of the
			// namespace, the ownerless ones included (orphans.go).
			tb.Orphaned = nil
			t.written = append(t.written, tb)
			done[ref] = true
		case len(d.Orphaned) > 0:
			// A tombstone whose pods an orphaning deletion left: they
			// go with the namespace too.
			tb := *d
			tb.Orphaned = nil
			t.written = append(t.written, &tb)
			done[ref] = true
		}
	}
	return nil
}

// release: no stored object names a deployment its owner.
func (t *deploymentTx) release(*Store, string, ObjectRef, string, time.Time, map[ObjectRef]bool) error {
	return nil
}

func (t *deploymentTx) touched(set map[string]bool) {
	for _, r := range t.written {
		set[r.NamespaceOrDefault()] = true
	}
}

// beforeWrite: a revived deployment starts with a fresh status, the old
// one's revision sizes would bring the deleted revisions back. Removed
// before the records are written, so that a crash in between leaves a
// tombstone without status, never a revival with the old.
func (t *deploymentTx) beforeWrite(s *Store) error {
	for _, r := range t.revived {
		if err := s.resetStatus(r.Namespace, r.Name); err != nil {
			return err
		}
	}
	return nil
}

func (t *deploymentTx) write(prep func(rel string, data []byte, err error) error) error {
	for _, r := range t.written {
		data, err := encodeRecord(r)
		if err := prep(recordPath(r.Namespace, r.Name), data, err); err != nil {
			return err
		}
	}
	return nil
}

func (t *deploymentTx) setPlanned(b *Bundle) { b.Deployments = t.planned }
