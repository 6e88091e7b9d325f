package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

// The workload kinds beyond Deployment (docs/design.md §17): each a
// generic objectKind, stored per namespace in its own directory
// (jobs/<name>.json…) with the rules of a Service's record (a generation
// on metadata, bumped by a change of the spec). Their status is what
// their controller writes (WriteWorkloadStatus), beside the record in
// workload-status/<kind>.<name>.json, as a deployment's is: the record is
// the user's, the status the controller's.
const (
	KindStatefulSet = manifests.KindStatefulSet
	KindDaemonSet   = manifests.KindDaemonSet
	KindReplicaSet  = manifests.KindReplicaSet
	KindJob         = manifests.KindJob
	KindCronJob     = manifests.KindCronJob
	KindPod         = manifests.KindPod

	workloadStatusDir = "workload-status"
)

// workloadKind is the registration of one workload kind: its record
// directory and watch prefix are its lower-case plural and name.
func workloadKind[T any](kind, plural string, bundle func(*Bundle) *[]*T, meta func(*T) *manifests.ObjectMeta,
	clean func(*T), spec func(*T) any, w func(*T) manifests.Workload) *objectKind[T] {
	return &objectKind[T]{
		kind: kind, dir: plural, prefix: lower(kind) + ":", rank: 0,
		bundle:   bundle,
		meta:     meta,
		clean:    clean,
		validate: func(o *T) error { return manifests.ValidateWorkload(w(o)) },
		// A kind whose updates Kubernetes does not restrict (a CronJob's:
		// ValidateCronJobUpdate validates the new object only) is
		// validated as a whole object; the others are given their
		// manifests.Validate*Update in init.
		update:     func(next, _ *T, _ bool) error { return manifests.ValidateWorkload(w(next)) },
		spec:       spec,
		generation: true,
	}
}

// revisionSource is what a revision of a workload is recorded from: its
// pod template and hash, its change cause, and how many old revisions its
// revisionHistoryLimit keeps (nil: Kubernetes' default, 10).
type revisionSource struct {
	template    manifests.PodTemplateSpec
	hash        string
	changeCause string
	limit       *int32
}

// recordObjectRevision appends src's template to revs when it is not the
// current one, as Kubernetes' controllers create a ControllerRevision for
// a StatefulSet's or DaemonSet's new template (and a Deployment's
// ReplicaSet): a template that comes back (an undo) moves to the end with
// the next number, numbers only grow, and the history is trimmed, oldest
// first, to the limit's old revisions plus the current one, skipping those
// inUse: as Kubernetes' truncateHistory keeps the revisions still in use
// (a StatefulSet's currentRevision and updateRevision, a Deployment's
// ReplicaSets with replicas), the history may run over the limit until
// they are not. The store sees no pods: a pod of a revision trimmed away
// is kept from its set's current template (docs/design.md §17.1).
func recordObjectRevision(revs *[]Revision, src revisionSource, now time.Time, inUse func(hash string) bool) {
	if n := len(*revs); n > 0 && (*revs)[n-1].Hash == src.hash {
		(*revs)[n-1].ChangeCause = src.changeCause
		return
	}
	var next int64 = 1
	out := make([]Revision, 0, len(*revs)+1)
	for _, r := range *revs {
		next = max(next, r.Number+1)
		if r.Hash != src.hash {
			out = append(out, r)
		}
	}
	out = append(out, Revision{Number: next, Hash: src.hash, Template: src.template, ChangeCause: src.changeCause, CreatedAt: now})
	keep := 10
	if src.limit != nil {
		keep = int(*src.limit)
	}
	excess := len(out) - (keep + 1)
	if excess <= 0 {
		*revs = out
		return
	}
	kept := make([]Revision, 0, len(out))
	for i, r := range out {
		if excess > 0 && i < len(out)-1 && !inUse(r.Hash) {
			excess--
			continue
		}
		kept = append(kept, r)
	}
	*revs = kept
}

// workloadRevisionsInUse tells which revisions of workload ref (created
// at created) its controller's status names as its currentRevision or
// updateRevision (NAME-HASH, a StatefulSet's: apps/v1
// StatefulSetStatus): the pods of the current revision are made again
// from its template, so the history keeps it. A DaemonSet's status names
// none. A status that cannot be read keeps every revision: a long history
// is harmless, a template the controller still needs is not. The status
// is read at the first question, once: a history within its limit asks
// none.
func (s *Store) workloadRevisionsInUse(ref ObjectRef, created time.Time) func(hash string) bool {
	type status struct {
		CurrentRevision string `json:"currentRevision"`
		UpdateRevision  string `json:"updateRevision"`
	}
	read := sync.OnceValues(func() (status, error) {
		var st status
		_, err := s.ReadWorkloadStatus(ref, created, &st)
		return st, err
	})
	return func(hash string) bool {
		st, err := read()
		if err != nil {
			return true
		}
		name := ref.Name + "-" + hash
		return name == st.CurrentRevision || name == st.UpdateRevision
	}
}

func workloadRevision(m *manifests.ObjectMeta, t *manifests.PodTemplateSpec, limit *int32) revisionSource {
	var c manifests.PodTemplateSpec
	_ = roundTrip(t, &c) // a copy: the record's template is the object's own
	return revisionSource{template: c, hash: manifests.TemplateHash(t), changeCause: m.Annotations[manifests.AnnotationChangeCause], limit: limit}
}

var (
	statefulSetKind = workloadKind(KindStatefulSet, "statefulsets",
		func(b *Bundle) *[]*manifests.StatefulSet { return &b.StatefulSets },
		func(o *manifests.StatefulSet) *manifests.ObjectMeta { return &o.Metadata },
		manifests.SetStatefulSetDefaults,
		func(o *manifests.StatefulSet) any { return &o.Spec },
		func(o *manifests.StatefulSet) manifests.Workload { return o })
	daemonSetKind = workloadKind(KindDaemonSet, "daemonsets",
		func(b *Bundle) *[]*manifests.DaemonSet { return &b.DaemonSets },
		func(o *manifests.DaemonSet) *manifests.ObjectMeta { return &o.Metadata },
		manifests.SetDaemonSetDefaults,
		func(o *manifests.DaemonSet) any { return &o.Spec },
		func(o *manifests.DaemonSet) manifests.Workload { return o })
	replicaSetKind = workloadKind(KindReplicaSet, "replicasets",
		func(b *Bundle) *[]*manifests.ReplicaSet { return &b.ReplicaSets },
		func(o *manifests.ReplicaSet) *manifests.ObjectMeta { return &o.Metadata },
		manifests.SetReplicaSetDefaults,
		func(o *manifests.ReplicaSet) any { return &o.Spec },
		func(o *manifests.ReplicaSet) manifests.Workload { return o })
	jobKind = workloadKind(KindJob, "jobs",
		func(b *Bundle) *[]*manifests.Job { return &b.Jobs },
		func(o *manifests.Job) *manifests.ObjectMeta { return &o.Metadata },
		manifests.SetJobDefaults,
		func(o *manifests.Job) any { return &o.Spec },
		func(o *manifests.Job) manifests.Workload { return o })
	cronJobKind = workloadKind(KindCronJob, "cronjobs",
		func(b *Bundle) *[]*manifests.CronJob { return &b.CronJobs },
		func(o *manifests.CronJob) *manifests.ObjectMeta { return &o.Metadata },
		manifests.SetCronJobDefaults,
		func(o *manifests.CronJob) any { return &o.Spec },
		func(o *manifests.CronJob) manifests.Workload { return o })
	podKind = workloadKind(KindPod, "pods",
		func(b *Bundle) *[]*manifests.Pod { return &b.Pods },
		func(o *manifests.Pod) *manifests.ObjectMeta { return &o.Metadata },
		manifests.SetPodDefaults,
		func(o *manifests.Pod) any { return &o.Spec },
		func(o *manifests.Pod) manifests.Workload { return o })
)

func init() {
	// The changes of a live workload Kubernetes refuses (a StatefulSet's
	// spec beyond its replicas, template and update settings, a selector,
	// a Job's template) are refused too: the controllers act on pods made
	// from the stored spec, and a Job whose template changed would run
	// pods of two templates.
	statefulSetKind.update = ignoreStarted(manifests.ValidateStatefulSetUpdate)
	daemonSetKind.update = ignoreStarted(manifests.ValidateDaemonSetUpdate)
	replicaSetKind.update = ignoreStarted(manifests.ValidateReplicaSetUpdate)
	jobKind.update = manifests.ValidateJobUpdate
	jobKind.started = (*Store).jobStarted
	// StatefulSets and DaemonSets keep a revision history, as Kubernetes
	// keeps their ControllerRevisions (rollout history and undo).
	statefulSetKind.revision = func(o *manifests.StatefulSet) revisionSource {
		return workloadRevision(&o.Metadata, &o.Spec.Template, o.Spec.RevisionHistoryLimit)
	}
	daemonSetKind.revision = func(o *manifests.DaemonSet) revisionSource {
		return workloadRevision(&o.Metadata, &o.Spec.Template, o.Spec.RevisionHistoryLimit)
	}
}

// jobStarted tells whether the Job controller has started the Job ref
// (its status has a startTime, which the controller clears while the Job
// is suspended, as Kubernetes' does). A status that cannot be read counts
// as started: what a started Job may not change is refused.
func (s *Store) jobStarted(ref ObjectRef, created time.Time) bool {
	var st struct {
		StartTime *string `json:"startTime"`
	}
	if _, err := s.ReadWorkloadStatus(ref, created, &st); err != nil {
		return true
	}
	return st.StartTime != nil
}

// WorkloadKinds are the workload kinds the store keeps beside
// Deployment, in the registry's order.
func WorkloadKinds() []string {
	return []string{KindCronJob, KindJob, KindStatefulSet, KindDaemonSet, KindReplicaSet, KindPod}
}

// isWorkloadKind tells the kinds WriteWorkloadStatus serves.
func isWorkloadKind(kind string) bool {
	for _, k := range WorkloadKinds() {
		if k == kind {
			return true
		}
	}
	return false
}

// WorkloadStatusKey is the key WatchStatus sends when the status of a
// workload of kind changed: "<kind>-status:namespace/name".
func WorkloadStatusKey(kind, ns, name string) string {
	return lower(kind) + "-status:" + Key(ns, name)
}

func workloadStatusPath(kind, ns, name string) string {
	return filepath.Join(nsRoot(ns), workloadStatusDir, lower(kind)+"."+name+".json")
}

// WorkloadStatus is what the controller of a workload kind writes about
// one object: the status in its Kubernetes shape (batchv1.JobStatus…),
// and the record generation it acted on.
type WorkloadStatus struct {
	Version int `json:"version"`
	// ObjectCreated is the creation of the object the status is of (its
	// record's Created): a name deleted and applied again is another
	// object.
	ObjectCreated time.Time `json:"objectCreated"`
	// ObservedGeneration is the record generation the status is of.
	ObservedGeneration int64           `json:"observedGeneration,omitempty"`
	Status             json.RawMessage `json:"status,omitempty"`
	// Containers is the controller's memory of the object's pods'
	// containers that the read commands judge them by (readiness
	// verdicts, restarts), by writer: the owner's sync and the orphan
	// keeper of its kind and name each keep their own entry
	// (WorkloadUpdate). Opaque here; a status written before it has none.
	Containers map[string]json.RawMessage `json:"containers,omitempty"`
	UpdatedAt  time.Time                  `json:"updatedAt"`
}

// WorkloadUpdate is one write of a workload's status file.
type WorkloadUpdate struct {
	// Status, when set, is the kind's status, of record generation
	// Generation; nil keeps the stored one (an orphan keeper's write).
	Status     any
	Generation int64
	// Writer names the entry of WorkloadStatus.Containers this write
	// sets to Containers (nil or empty: drops it); "" touches none. The
	// other writers' entries are kept.
	Writer     string
	Containers json.RawMessage
}

// ReadWorkloadStatus decodes the status the controller wrote for the
// workload ref names, created at created (StoredObject.Created), into
// into, and returns the generation it was of; into is left as it is when
// none was written for that object (a status of an earlier object of the
// same name, deleted since, is none: a new Job starts afresh).
func (s *Store) ReadWorkloadStatus(ref ObjectRef, created time.Time, into any) (int64, error) {
	st, err := s.readWorkloadStatus(ref)
	if err != nil || st == nil || len(st.Status) == 0 || !st.ObjectCreated.Equal(created) {
		return 0, err
	}
	if err := json.Unmarshal(st.Status, into); err != nil {
		return 0, fmt.Errorf("status of %s %q: %w", lower(ref.Kind), display(ref.Namespace, ref.Name), err)
	}
	return st.ObservedGeneration, nil
}

func (s *Store) readWorkloadStatus(ref ObjectRef) (*WorkloadStatus, error) {
	if !isWorkloadKind(ref.Kind) {
		return nil, fmt.Errorf("no workload status of kind %q", ref.Kind)
	}
	if err := checkObject(ref.Kind, ref.Namespace, ref.Name); err != nil {
		return nil, err
	}
	rel := workloadStatusPath(ref.Kind, ref.Namespace, ref.Name)
	data, err := s.readFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state file %s: %w", rel, err)
	}
	var st WorkloadStatus
	if err := decodeVersioned(data, &st, &st.Version); err != nil {
		return nil, fmt.Errorf("state file %s: %w", rel, err)
	}
	return &st, nil
}

// WriteWorkloadStatus stores status (the kind's status type) as the
// status of the workload ref names, created at created and of record
// generation gen, keeping what the controller recorded of its containers
// (UpdateWorkloadStatus).
func (s *Store) WriteWorkloadStatus(ref ObjectRef, created time.Time, gen int64, status any) error {
	return s.UpdateWorkloadStatus(ref, created, WorkloadUpdate{Status: status, Generation: gen})
}

// UpdateWorkloadStatus applies u to the status of the workload ref names,
// created at created: a status of an earlier object of the name is
// replaced whole. As WriteStatus, it writes nothing when only the time
// would change, so an idle controller writes nothing.
func (s *Store) UpdateWorkloadStatus(ref ObjectRef, created time.Time, u WorkloadUpdate) error {
	if s.readOnly {
		return ErrReadOnly
	}
	var raw json.RawMessage
	if u.Status != nil {
		b, err := json.Marshal(u.Status)
		if err != nil {
			return fmt.Errorf("status of %s %q: %w", lower(ref.Kind), display(ref.Namespace, ref.Name), err)
		}
		raw = b
	}
	return s.transaction(func() error {
		old, err := s.readWorkloadStatus(ref)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			return err // a corrupt status is simply replaced
		}
		next := WorkloadStatus{Version: formatVersion, ObjectCreated: created}
		if old != nil && old.ObjectCreated.Equal(created) {
			next.ObservedGeneration, next.Status, next.Containers = old.ObservedGeneration, old.Status, maps.Clone(old.Containers)
		}
		if raw != nil {
			next.ObservedGeneration, next.Status = u.Generation, raw
		}
		if u.Writer != "" {
			if len(u.Containers) == 0 {
				delete(next.Containers, u.Writer)
			} else {
				if next.Containers == nil {
					next.Containers = map[string]json.RawMessage{}
				}
				next.Containers[u.Writer] = u.Containers
			}
		}
		if len(next.Containers) == 0 {
			next.Containers = nil
		}
		if old != nil && sameExceptTime(old, &next, func(x *WorkloadStatus) { x.UpdatedAt = time.Time{} }) {
			return nil
		}
		if old == nil && next.Status == nil && next.Containers == nil {
			return nil // nothing to say of an object never written
		}
		next.UpdatedAt = storeNow()
		if err := s.ensureNamespaceDirs(ref.Namespace); err != nil {
			return err
		}
		return s.writeJSON(workloadStatusPath(ref.Kind, ref.Namespace, ref.Name), next)
	})
}

// ReadWorkloadContainers returns what the controller recorded of the
// containers of the workload ref names, created at created, by writer
// (WorkloadStatus.Containers); none when nothing was recorded for that
// object.
func (s *Store) ReadWorkloadContainers(ref ObjectRef, created time.Time) (map[string]json.RawMessage, error) {
	st, err := s.readWorkloadStatus(ref)
	if err != nil || st == nil || !st.ObjectCreated.Equal(created) {
		return nil, err
	}
	return st.Containers, nil
}

// workloadStatusKey maps the name of a file of workload-status to its
// key.
func workloadStatusKey(ns, file string) (string, bool) {
	kind, name, ok := strings.Cut(file, ".")
	if !ok {
		return "", false
	}
	for _, k := range WorkloadKinds() {
		if lower(k) == kind {
			return WorkloadStatusKey(k, ns, name), true
		}
	}
	return "", false
}
