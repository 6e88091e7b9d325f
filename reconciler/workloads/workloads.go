package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/reconcile"
	"github.com/dockctl/dockctl/reconciler/workload"
	"github.com/dockctl/dockctl/store"
)

// Docker is what the frame needs of Docker: the instance's containers,
// and what the pod runtime's Sync and Stopper need.
type Docker interface {
	ListContainers(ctx context.Context, instance string) ([]dockerx.Container, error)
	Events(ctx context.Context, instance string) <-chan dockerx.Event
	// ListVolumes lists the instance's volumes: a deleted claim whose
	// volume is still there is Terminating (a StatefulSet's pod waits).
	ListVolumes(ctx context.Context, instance string) ([]dockerx.Volume, error)
	podruntime.SyncDocker
	podruntime.StopDocker
	podruntime.ProbeDocker
}

// Store is what the frame needs of the state directory.
type Store interface {
	LookupObject(ref store.ObjectRef) (*store.StoredObject, error)
	ListObjects(kind string) ([]*store.StoredObject, []error)
	ReadWorkloadStatus(ref store.ObjectRef, created time.Time, into any) (int64, error)
	UpdateWorkloadStatus(ref store.ObjectRef, created time.Time, u store.WorkloadUpdate) error
	ReadWorkloadContainers(ref store.ObjectRef, created time.Time) (map[string]json.RawMessage, error)
	DeleteObjects(refs []store.ObjectRef) ([]store.DeleteResult, error)
	Apply(b store.Bundle, opts store.ApplyOptions) ([]store.ApplyResult, error)
	RecordEvents(evs []store.Event) error
	Watch(ctx context.Context) (<-chan string, error)
	podruntime.ConfigStore
}

// Outcome is what a kind's decision asks of the frame.
type Outcome struct {
	// Status is the kind's status to store (batchv1.JobStatus…).
	Status any
	// Create are pods to create, Delete the names of pods to stop and
	// remove; every other pod the owner has is kept.
	Create []podruntime.PodSpec
	Delete []string
	Events []workload.Event
	// RequeueAt is when to decide again though nothing changes.
	RequeueAt time.Time
	// DeleteOwner: the owner is to be deleted (a Job's TTL ran out).
	DeleteOwner bool
}

// Env is what a decision may read beside its object and pods: the store
// (a CronJob reads and writes its Jobs) and the key of the sync.
type Env struct {
	Store Store
	Ref   store.ObjectRef
	Now   time.Time
	// Volumes lists the instance's volumes (a StatefulSet's claims':
	// a deleted claim is Terminating while its volume is there); nil in
	// a teardown.
	Volumes func() ([]dockerx.Volume, error)
	// OwnerUID is the object's uid (StoredObject.UID): what the objects it
	// creates name in their ownerReferences, so that an object of the
	// same name applied again adopts none of them.
	OwnerUID string
	// History is the object's recorded revisions (recordedHistory):
	// what Kubernetes' ControllerRevisions of a StatefulSet or DaemonSet
	// hold, their one source (docs/design.md §17.1).
	History []workload.Revision
	// DeletedAt is, in a teardown, when the owner was deleted: what it
	// owns is what existed then, as the garbage collector deletes the
	// objects that name the deleted owner; one made later under a name
	// it used is no object of it (zero: not a teardown).
	DeletedAt time.Time
}

// Kind is one kind's registration on the frame.
type Kind struct {
	// Name is the store's kind (store.KindJob…).
	Name string
	// template is the owner's pod template (the spec of the pods it has).
	template func(obj any) *manifests.PodTemplateSpec
	// decide takes the decision on obj, its stored status read by
	// status.
	decide func(env Env, obj *store.StoredObject, status func(into any) error, pods []workload.ObservedPod) (Outcome, error)
	// pods is the most pods obj asks for at once, and the field that
	// says so (nil: one pod).
	pods func(obj any) (int32, string)
	// keep, when set, is the spec the runtime keeps pod (whose holder,
	// or one container, is ct) of obj with, given its stored status read
	// by status and its recorded revisions history (ok false: the owner's
	// template, as any kind's): a StatefulSet's or DaemonSet's pod of an
	// earlier revision runs its revision's template, a ReplicaSet's pod
	// the earlier template its status keeps.
	keep func(obj any, status func(into any) error, history []workload.Revision, pod string, ct dockerx.Container) (podruntime.PodSpec, bool)
	// made, when set, is the spec pod (whose holder, or one container,
	// is ct) of obj was made from: the template its containers' template
	// hash names among obj's own, its recorded revisions (history) and
	// the earlier templates its stored status keeps (status); ok false
	// when none is. The frame takes it only when its hash is ct's. A
	// kind with it can leave orphans (store.PodOrphan), which the orphan
	// keeper runs by it (orphans.go).
	made func(obj any, status func(into any) error, history []workload.Revision, pod string, ct dockerx.Container) (podruntime.PodSpec, bool)
	// teardown, when set, removes what the deleted owner obj owns beside
	// its pods (a StatefulSet's claims), given its pods' names.
	teardown func(env Env, obj any, pods []string) error
	// stableNames: a pod's name is its identity (a StatefulSet's
	// NAME-ORDINAL, a standalone Pod's name), never replaced by
	// another (orphanNames).
	stableNames bool
	// orphansOnly: the frame keeps only the orphans of the kind's
	// objects (their orphan keeper), their own pods being another
	// controller's: a Deployment's are the Deployment controller's
	// (package reconciler), which leaves those a deletion with
	// --cascade=orphan left (docs/design.md §17.1). Its objects' own keys
	// are never queued nor synced here.
	orphansOnly bool
	// background: the owner's missing pods of one container are created
	// in the background (podruntime.SyncInput.CreateInBackground), and
	// its decision counts those being created as its pods
	// (background.go).
	background bool
}

// PodStartBatchPeriod is how long the sync a pod's start asks for waits,
// for a kind whose pods are created in the background (a Job's): the
// period by which Kubernetes' Job controller batches its pod events
// (syncJobBatchPeriod).
const PodStartBatchPeriod = time.Second

// DefaultMaxPods is the replica cap of a Config without one: the
// Deployment controller's default (--max-replicas).
const DefaultMaxPods = 1000

// WithPods is k whose objects ask for pods(obj) pods at once, said by
// field: what the replica cap judges.
func WithPods[T any](k Kind, field string, pods func(*T) int32) Kind {
	k.pods = func(obj any) (int32, string) { return pods(obj.(*T)), field }
	return k
}

// For registers a kind whose objects are *T and whose status is S:
// template gives an object's pod template, decide its decision.
func For[T, S any](kind string, template func(*T) *manifests.PodTemplateSpec,
	decide func(env Env, obj *T, prev S, pods []workload.ObservedPod) (Outcome, error)) Kind {
	return Kind{
		Name:     kind,
		template: func(obj any) *manifests.PodTemplateSpec { return template(obj.(*T)) },
		decide: func(env Env, so *store.StoredObject, status func(any) error, pods []workload.ObservedPod) (Outcome, error) {
			var prev S
			if err := status(&prev); err != nil {
				return Outcome{}, err
			}
			return decide(env, so.Object.(*T), prev, pods)
		},
	}
}

// Config is what a Controller is built from.
type Config struct {
	Instance string
	Docker   Docker
	Store    Store
	Kinds    []Kind
	// Allow is what the controller was started to allow: a template
	// needing more runs no pod (the Deployment controller's gate,
	// manifests.Policy), and its owner gets a FailedCreate event saying
	// which flag would allow it.
	Allow manifests.Policy
	// MaxPods is the controller's replica cap (--max-replicas; 0:
	// DefaultMaxPods): an owner asking for more pods at once (a
	// ReplicaSet's replicas, a Job's parallelism) is refused, as a
	// Deployment of more replicas is, and scales nothing.
	MaxPods int32
	// Endpoints, when set, is fed every owner's pods after each sync so
	// that Services select them (endpoints.go); HostIP is the host's
	// address on the instance network (a host-network pod's address).
	Endpoints Endpoints
	HostIP    func() string
	// Runtime runs the pods (nil: a runtime of the frame's own).
	Runtime *podruntime.Runtime
	// Starting counts the pods the frame's own runtime creates and
	// starts (nil: not counted), with the Deployment controller's.
	Starting *podruntime.Starting
	// ProbeRunner runs the probes and httpGet/tcpSocket hooks of the
	// frame's own runtime (the Deployment controller's, which reaches
	// pods directly or through the DNS helper's relay), and ProbeNetwork
	// names the instance network they target (nil: none). Without a
	// runner every probe attempt fails.
	ProbeRunner  podruntime.ProbeRunner
	ProbeNetwork func() string
	// PodNetwork, when set, is the network the pods of namespace ns are
	// created on, with their resolver (podruntime.SyncInput.Network): the
	// instance network and dockctl's DNS server, as a Deployment's pods
	// are created, so that they resolve Services and each other's names
	// (docs/design.md §10, §17). nil, or nil returned: Docker's default.
	PodNetwork func(ctx context.Context, ns string) (*dockerx.PodNetwork, error)
	// Recorder records the Prober's and Stopper's pod events (Unhealthy,
	// FailedPostStartHook…; nil: none).
	Recorder podruntime.Recorder
	// ResyncPeriod is the period of the full pass (default 30 s).
	ResyncPeriod time.Duration
	Workers      int
	Now          func() time.Time
	Log          *slog.Logger
}

// Controller is the frame: one loop for every registered kind.
type Controller struct {
	cfg     Config
	kinds   map[string]Kind
	loop    *reconcile.Loop
	runtime *podruntime.Runtime
	own     bool
	// exits are the dies of background kinds' pods seen before Docker
	// lists them (exits.go).
	exits exitMemory
	// orphans is what the orphan keepers remember (orphans.go).
	orphans orphanMemory
}

// New returns a controller of cfg's kinds; Run runs it.
func New(cfg Config) *Controller {
	if cfg.Instance == "" {
		cfg.Instance = "default"
	}
	if cfg.ResyncPeriod <= 0 {
		cfg.ResyncPeriod = 30 * time.Second
	}
	if cfg.MaxPods <= 0 {
		cfg.MaxPods = DefaultMaxPods
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	c := &Controller{cfg: cfg, kinds: map[string]Kind{}}
	for _, k := range cfg.Kinds {
		c.kinds[k.Name] = k
	}
	c.loop = reconcile.NewLoop(c, reconcile.Config{Name: "workloads", KeyAttr: "workload", Workers: cfg.Workers, Log: cfg.Log})
	c.runtime = cfg.Runtime
	if c.runtime == nil {
		c.own = true
		c.runtime = podruntime.NewRuntime(podruntime.RuntimeConfig{
			// A probe verdict that changes queues the owner: its Sync key.
			Prober: podruntime.ProberConfig{Docker: cfg.Docker, Runner: cfg.ProbeRunner, Network: cfg.ProbeNetwork, Recorder: cfg.Recorder,
				Notify: func(key string) { c.loop.Add(reconcile.Request{Key: key}) }, Log: cfg.Log},
			Stopper:  podruntime.StopperConfig{Docker: cfg.Docker, Log: cfg.Log, Recorder: cfg.Recorder, Done: c.requeue},
			Created:  c.requeue,
			Starting: cfg.Starting,
		})
	}
	return c
}

// requeue queues owner key again once the runtime's work for it ended
// (a stop, a background create): at once, or after its backoff when it
// failed.
func (c *Controller) requeue(key string, err error) {
	if err != nil {
		c.loop.AddRateLimited(reconcile.Request{Key: key})
		return
	}
	c.loop.Add(reconcile.Request{Key: key})
}

// Loop is the frame's work queue.
func (c *Controller) Loop() *reconcile.Loop { return c.loop }

// Key is the key of the workload of kind: its store watch key,
// "<kind>:namespace/name".
func Key(kind, ns, name string) string { return strings.ToLower(kind) + ":" + store.Key(ns, name) }

// StoreChanged queues what a store watch key names, when it is one of the
// frame's kinds; "" (anything may have changed) queues every object.
func (c *Controller) StoreChanged(key string) {
	if key == "" {
		c.Resync()
		return
	}
	if kind, ns, name := store.ParseWatchKey(key); kind != "" {
		if k, ok := c.kinds[kind]; ok {
			if !k.orphansOnly {
				c.loop.Add(reconcile.Request{Key: key})
			}
			// Its record may list orphans now (a deletion with
			// --cascade=orphan), adopt them, or list none any more
			// (its namespace deleted).
			c.queueOrphans(k, ns, name, true)
		}
	}
}

// Event queues the owner of a container an event is about; a gap in the
// stream queues every object.
func (c *Controller) Event(ev dockerx.Event) {
	switch {
	case ev.Down:
	case ev.Gap:
		c.exits.reset()
		c.Resync()
	default:
		kind, owner := ev.PodOwner()
		if kind == "" || owner == "" {
			return
		}
		if ev.ContainerID != "" && (ev.Action == "start" || ev.Action == "destroy") {
			// Running again, or gone: a die seen unsettled says
			// nothing of it any more.
			c.exits.forget(ev.ContainerID)
		}
		if k, ok := c.kinds[kind]; ok {
			if !ev.Unsettled {
				// The container may be an orphan of the name: its
				// keeper, when it keeps any, looks (a die to restart,
				// a start, a removal by `delete pod`).
				c.queueOrphans(k, ev.Namespace, owner, false)
			}
			key := Key(kind, ev.Namespace, owner)
			switch {
			case k.orphansOnly:
				return
			case ev.Unsettled:
				// A die, sent before Docker lists it: a background
				// kind's owner is queued at once and its sync takes
				// the die from the event (exits.go); any other waits
				// for the settled die.
				if k.background && ev.Action == "die" && ev.ContainerID != "" {
					c.exits.saw(ev.ContainerID, key, ev.ExitCode)
					c.loop.Add(reconcile.Request{Key: key})
				}
				return
			case ev.Action == "die" && ev.ContainerID != "" && c.exits.settled(ev.ContainerID):
				// A sync took this die before it settled: it has
				// nothing more to say.
				return
			case k.background && ev.Action == "create":
				// The frame's own create: its pod is counted as
				// being created until the list after its start
				// event shows it, so a sync now would change
				// nothing and cost a list and a status write.
				return
			case k.background && ev.Action == "start":
				// A start changes the status only (Pending to
				// Running, ready): its syncs are batched, as
				// Kubernetes' Job controller batches its pod
				// events (enqueueSyncJobBatched, 1 s), so that the
				// syncs the pods' exits ask for, at once, do not
				// wait behind one sync per start.
				c.loop.AddAfter(reconcile.Request{Key: key}, PodStartBatchPeriod)
				return
			}
			c.loop.Add(reconcile.Request{Key: key})
		}
	}
}

// Resync queues every stored object of the frame's kinds, tombstones
// included (their pods go).
func (c *Controller) Resync() {
	for _, k := range c.cfg.Kinds {
		objs, errs := c.cfg.Store.ListObjects(k.Name)
		for _, err := range errs {
			c.cfg.Log.Warn("listing workloads", "kind", k.Name, "err", err)
		}
		for _, o := range objs {
			if !k.orphansOnly {
				c.loop.Add(reconcile.Request{Key: Key(k.Name, o.Meta.NamespaceOrDefault(), o.Meta.Name)})
			}
			c.queueOrphans(k, o.Meta.NamespaceOrDefault(), o.Meta.Name, len(o.Orphaned) > 0)
		}
	}
}

// Run syncs until ctx ends: the store watch, the Docker events of the
// instance and the resync feed the loop.
func (c *Controller) Run(ctx context.Context) error {
	events := c.cfg.Docker.Events(ctx, c.cfg.Instance)
	changes, err := c.cfg.Store.Watch(ctx)
	if err != nil {
		return fmt.Errorf("workloads: watch state directory: %w", err)
	}
	c.loop.Start(ctx)
	c.Resync()
	tick := time.NewTicker(c.cfg.ResyncPeriod)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			c.Event(ev)
		case key, ok := <-changes:
			if !ok {
				changes = nil
				continue
			}
			c.StoreChanged(key)
		case <-tick.C:
			c.Resync()
		}
	}
	c.loop.ShutDown()
	if c.own {
		c.runtime.Stop()
	}
	return nil
}

// Reconcile syncs one workload key (reconcile.Reconciler).
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if kind, ns, name, ok := parseOrphansKey(req.Key); ok {
		if k, ok := c.kinds[kind]; ok && k.made != nil {
			return c.keepOrphans(ctx, req.Key, k, ns, name)
		}
		return reconcile.Result{}, nil
	}
	kind, ns, name := store.ParseWatchKey(req.Key)
	k, ok := c.kinds[kind]
	if !ok || k.orphansOnly {
		return reconcile.Result{}, nil
	}
	ref := store.ObjectRef{Kind: kind, Namespace: ns, Name: name}
	obj, err := c.cfg.Store.LookupObject(ref)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return reconcile.Result{}, err
	}
	now := c.cfg.Now()
	// The dies its pods' events told before Docker lists them, taken
	// before the list (exits.go); only a live owner whose pods never run
	// again once exited takes them.
	var exits map[string]int
	if obj != nil && !obj.Deleted && obj.Object != nil && exitsApply(k, k.template(obj.Object)) {
		exits = c.exits.take(req.Key)
	}
	c.runtime.Listing(req.Key)
	all, err := c.cfg.Docker.ListContainers(ctx, c.cfg.Instance)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("listing containers: %w", err)
	}
	all = withExits(all, exits)
	in := podruntime.SyncInput{Instance: c.cfg.Instance, Key: req.Key, Namespace: ns,
		Owner: podruntime.OwnerRef{Kind: kind, Name: name}, Now: now, Config: c.cfg.Store, CreateInBackground: k.background}
	if c.cfg.PodNetwork != nil {
		pn, err := c.cfg.PodNetwork(ctx, ns)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("pod network: %w", err)
		}
		in.Network = pn
	}
	live := obj != nil && !obj.Deleted
	if live {
		in.Owner.UID = obj.UID()
	}
	seen := c.observe(all, kind, name, ns, obj)
	in.Observed = seen.observed
	units, podNames, stale := seen.units, seen.podNames, seen.stale
	if !live || len(stale) > 0 {
		// The owner is gone: so are its pods (background cascade), and
		// from every Service that selected them; what it owns beside
		// them goes by its kind's teardown. A new owner of the name
		// waits until its predecessor's pods are gone, as a pod name is
		// free again only then; the stopper's completion queues the key
		// again. Pods an orphaning deletion left are not observed
		// (observe): their orphan keeper keeps them (orphans.go), and
		// what the owner had beside them (its claims) stays, as the
		// garbage collector orphans every dependent (docs/design.md
		// §17.1).
		gone := in
		if live {
			gone.Observed, gone.Pods = stale, nil
		} else {
			// What is still being created for it is not made, or
			// removed once listed.
			c.runtime.CancelCreates(req.Key, nil)
			c.dropEndpoints(in)
			if obj != nil && obj.Object != nil && k.teardown != nil && !obj.OrphanedOnDeletion() {
				if err := k.teardown(Env{Store: c.cfg.Store, Ref: ref, Now: now, OwnerUID: obj.UID(), DeletedAt: obj.Updated}, obj.Object, podNames); err != nil {
					return reconcile.Result{}, err
				}
			}
		}
		res, err := c.runtime.Sync(ctx, c.cfg.Docker, gone)
		return reconcile.Result{RequeueAfter: res.RequeueAfter}, err
	}
	tmpl := k.template(obj.Object)
	base := "spec.template"
	if w, ok := obj.Object.(manifests.Workload); ok {
		_, base = w.PodTemplate()
	}
	if refused := c.refused(tmpl, base); refused != "" {
		// As the Deployment controller: no container of such a
		// template is created or started.
		c.record(ref, []workload.Event{workload.Warning("FailedCreate", "%s", refused)}, now)
		return reconcile.Result{}, nil
	}
	if k.pods != nil {
		if n, field := k.pods(obj.Object); n > c.cfg.MaxPods {
			// As the Deployment controller's replica cap: nothing is
			// scaled, and the owner says why.
			c.record(ref, []workload.Event{workload.Warning("FailedCreate",
				"%s %d exceeds the controller's cap of %d (--max-replicas); nothing was scaled", field, n, c.cfg.MaxPods)}, now)
			return reconcile.Result{}, nil
		}
	}
	keep := func(pod string) podruntime.PodSpec {
		return podruntime.PodSpec{Namespace: ns, Name: pod, Owner: in.Owner, Template: tmpl, RestartPolicy: tmpl.Spec.RestartPolicy}
	}
	readStatus := func(into any) error {
		_, err := c.cfg.Store.ReadWorkloadStatus(ref, obj.Created, into)
		return err
	}
	history := recordedHistory(obj)
	for i, p := range podNames {
		if k.keep != nil {
			if spec, ok := k.keep(obj.Object, readStatus, history, p, in.Observed[units[i].ct]); ok {
				spec.Owner, spec.Namespace = in.Owner, ns
				in.Pods = append(in.Pods, spec)
				continue
			}
		}
		in.Pods = append(in.Pods, keep(p))
	}
	c.gate(in.Pods, base)
	c.recall(req.Key, WriterPods, ref, obj.Created)
	// First pass: the pods the owner has, kept (restarted as their
	// policy says) and observed.
	res, syncErr := c.runtime.Sync(ctx, c.cfg.Docker, in)
	// Terminating is a removal in flight, never a liveness restart (the
	// kubelet restarts a container in place: its pod stays).
	_, removing := c.runtime.Stopper().InFlight(req.Key)
	pods, unitCts := observedPods(units, in.Observed, res, removing)
	env := Env{Store: c.cfg.Store, Ref: ref, Now: now, OwnerUID: in.Owner.UID, History: history, Volumes: func() ([]dockerx.Volume, error) {
		vols, err := c.cfg.Docker.ListVolumes(ctx, c.cfg.Instance)
		if err != nil {
			return nil, fmt.Errorf("listing volumes: %w", err)
		}
		return vols, nil
	}}
	out, err := k.decide(env, obj, readStatus, withCreating(pods, res.Creating))
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(res.Creating) > 0 && len(out.Delete) > 0 {
		c.runtime.CancelCreates(req.Key, out.Delete)
	}
	// Second pass: what the decision wants.
	del := map[string]bool{}
	for _, n := range out.Delete {
		del[n] = true
	}
	wanted := in.Pods[:0:0]
	for _, p := range in.Pods {
		if !del[p.Name] {
			wanted = append(wanted, p)
		}
	}
	// The tracker gets the pods as judged, before those the decision
	// deletes are stopped (a Service stops routing to them first).
	c.feedEndpoints(in, unitCts, pods, del)
	// A generated name must meet no pod of the owner's, those being
	// created included: no list shows them yet (background.go).
	owned := podNames
	for _, cp := range res.Creating {
		owned = append(owned[:len(owned):len(owned)], cp.Spec.Name)
	}
	taken := seen.orphans
	if len(out.Create) > 0 {
		// Names are unique per namespace, not per kind: a pod of
		// another owner (a DaemonSet's of the name of this
		// ReplicaSet, whose names derive alike) holds its name as an
		// orphan does.
		taken = c.otherPods(all, kind, name, ns, seen.orphans)
	}
	creates, held := orphanNames(out.Create, taken, owned, k.stableNames)
	for _, n := range held {
		why := "a pod of another owner"
		if seen.orphans[n] {
			why = "an orphan its selector does not match"
		}
		out.Events = append(out.Events, workload.Warning("FailedCreate",
			"pod %s exists and is not controlled by %s %s (%s): delete it to let the pod be created", n, kind, name, why))
	}
	c.gate(creates, base)
	wanted = append(wanted, creates...)
	if res.CreatedMembers {
		// The first pass created a holder pod's next member (its app
		// containers once its init containers exited): the second
		// works on what Docker has now, or it would create that member
		// again under a name already in use. Otherwise the first list
		// serves the second pass, as it does for owners without holder
		// pods: the first created nothing the second could create again.
		all, err := c.cfg.Docker.ListContainers(ctx, c.cfg.Instance)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("listing containers: %w", err)
		}
		in.Observed = c.observe(withExits(all, exits), kind, name, ns, obj).observed
	}
	in.Pods = wanted
	res2, err2 := c.runtime.Sync(ctx, c.cfg.Docker, in)
	events := out.Events
	for _, err := range append(res.CreateErrors, res2.CreateErrors...) {
		events = append(events, workload.Warning("FailedCreate", "%v", err))
	}
	if err2 != nil {
		// Say why on the owner (a pod the runtime cannot run yet).
		events = append(events, workload.Warning("FailedCreate", "%v", err2))
	}
	// The status carries the runtime's record of the pods' containers
	// (recorded.go): one write, and none when neither changed.
	u, err := RecordUpdate(WriterPods, c.runtime.Recorded(req.Key, in.Observed))
	if err != nil {
		return reconcile.Result{}, err
	}
	u.Status, u.Generation = out.Status, obj.Generation
	if err := c.cfg.Store.UpdateWorkloadStatus(ref, obj.Created, u); err != nil {
		return reconcile.Result{}, err
	}
	c.record(ref, events, now)
	if out.DeleteOwner {
		if _, err := c.cfg.Store.DeleteObjects([]store.ObjectRef{ref}); err != nil {
			return reconcile.Result{}, err
		}
	}
	after := res.RequeueAfter
	if res2.RequeueAfter > 0 && (after == 0 || res2.RequeueAfter < after) {
		after = res2.RequeueAfter
	}
	if !out.RequeueAt.IsZero() {
		d := max(out.RequeueAt.Sub(now), time.Millisecond)
		if after == 0 || d < after {
			after = d
		}
	}
	if syncErr != nil {
		c.cfg.Log.Warn("workload pods", "workload", req.Key, "err", syncErr)
	}
	return reconcile.Result{RequeueAfter: after}, nil
}

// refused says why the controller's allow policy refuses template t, at
// path base in its object ("": it does not).
func (c *Controller) refused(t *manifests.PodTemplateSpec, base string) string {
	refused := c.cfg.Allow.RefusedTemplate(t, base)
	msgs := make([]string, len(refused))
	for i, p := range refused {
		msgs[i] = p.String()
	}
	return strings.Join(msgs, "; ")
}

// gate marks the pods whose own template the allow policy refuses: the
// gates judge every revision a pod is made or started from, not the
// owner's template alone (docs/design.md §13, "whatever its revision": a
// StatefulSet's pod kept below its partition at an earlier revision).
func (c *Controller) gate(pods []podruntime.PodSpec, base string) {
	for i := range pods {
		if t := pods[i].Template; t != nil {
			pods[i].Refused = c.refused(t, base)
		}
	}
}

// observation is what a list of the instance's containers shows of one
// owner's pods.
type observation struct {
	// podGroup is the owner's pods: observed are its containers
	// (SyncInput.Observed), units its pods, observed whole, and podNames
	// their names in the same order.
	podGroup
	// stale are the containers of an earlier object of the owner's name.
	stale []dockerx.Container
	// orphans are the names of the pods of its kind and name it does not
	// own (store.PodOrphan): names a new pod must not take.
	orphans map[string]bool
	// orphanPods are those pods, observed whole: the pods the orphan
	// keeper of the name keeps (orphans.go).
	orphanPods podGroup
}

// podGroup is a set of pods as a list shows them: a pod is one
// container, or a holder and its members, observed whole, by its holder
// (its unit's container: labels, creation, address), never as whichever
// of its containers the list shows first.
type podGroup struct {
	observed []dockerx.Container
	units    []podUnit
	podNames []string
	unitOf   map[string]int
}

// add adds container ct, of pod pod whose holder (or one container) is
// named base, to g.
func (g *podGroup) add(ct dockerx.Container, pod, base string) {
	g.observed = append(g.observed, ct)
	i, seen := g.unitOf[pod]
	if !seen {
		if g.unitOf == nil {
			g.unitOf = map[string]int{}
		}
		i = len(g.units)
		g.unitOf[pod] = i
		g.units = append(g.units, podUnit{name: pod, ct: len(g.observed) - 1})
		g.podNames = append(g.podNames, pod)
	}
	u := &g.units[i]
	u.ids = append(u.ids, ct.ID)
	u.cts = append(u.cts, len(g.observed)-1)
	if ct.Role == dockerx.RoleHolder && g.observed[u.ct].Role != dockerx.RoleHolder {
		u.ct = len(g.observed) - 1
	}
	if ct.PodUID != "" {
		u.ids = append(u.ids, podruntime.PodKeyPrefix+base+"/"+ct.PodUID)
	}
}

// observe is what all shows of the pods of owner name of kind in
// namespace ns, whose record is obj (nil: none, every pod goes). Its pods
// are those obj owns (store.PodOwner: its own incarnation's, and the
// orphans of an earlier one it adopts); an orphan it does not own is
// nobody's: not its, but the orphan keeper's of its kind and name
// (orphanPods), as the kubelet keeps running a pod whatever owns it; any
// other is an earlier incarnation's, stale while obj is live.
func (c *Controller) observe(all []dockerx.Container, kind, name, ns string, obj *store.StoredObject) observation {
	var o observation
	live := obj != nil && !obj.Deleted
	nsName := ns
	if nsName == "" {
		nsName = manifests.DefaultNamespace
	}
	for _, ct := range all {
		if k, n := dockerx.OwnerOf(ct.Labels); k != kind || n != name || dockerx.ParseNamespace(ct.Labels, ct.Name) != nsName {
			continue
		}
		base := podBase(ct)
		pod, ok := dockerx.PodOf(c.cfg.Instance, ns, base, ct.Labels)
		if !ok {
			continue
		}
		if obj != nil {
			switch obj.ContainerOwner(ct.Labels[dockerx.LabelOwnerUID], ct.Created, ct.Labels) {
			case store.PodOrphan:
				if o.orphans == nil {
					o.orphans = map[string]bool{}
				}
				o.orphans[pod] = true
				o.orphanPods.add(ct, pod, base)
				continue
			case store.PodStale:
				if live {
					// A pod of an earlier object of this name, deleted
					// while no sync saw it: that object's, not this
					// one's.
					o.stale = append(o.stale, ct)
					continue
				}
			}
		}
		o.add(ct, pod, base)
	}
	return o
}

// otherPods is orphans and the names of the pods of namespace ns that all
// shows of any owner but kind/name: names its new pods must not take.
func (c *Controller) otherPods(all []dockerx.Container, kind, name, ns string, orphans map[string]bool) map[string]bool {
	out := maps.Clone(orphans)
	nsName := ns
	if nsName == "" {
		nsName = manifests.DefaultNamespace
	}
	for _, ct := range all {
		if ct.Labels[dockerx.LabelOwnerKind] == kind && ct.Labels[dockerx.LabelOwner] == name || dockerx.ParseNamespace(ct.Labels, ct.Name) != nsName {
			continue
		}
		if pod, ok := dockerx.PodOfContainerName(c.cfg.Instance, ns, podBase(ct)); ok {
			if out == nil {
				out = map[string]bool{}
			}
			out[pod] = true
		}
	}
	return out
}

// orphanNames are the pods of creates whose names no orphan (nor pod of
// another owner: otherPods) holds (owned:
// the names of the owner's pods, those being created included): pod
// names are unique in a namespace, and Kubernetes' generated names never
// meet an orphan's, where the controllers' derived ones here would (a Job
// applied again over its orphans names its pods as they were named). A
// generated name an orphan holds gives way to the next one derived from
// it (workload.GenerateNames, none owned or held); a stable one
// (stableNames: a StatefulSet's NAME-ORDINAL) is not created and returned
// in held, as the StatefulSet controller fails on a pod of its name it
// cannot adopt.
func orphanNames(creates []podruntime.PodSpec, orphans map[string]bool, owned []string, stableNames bool) (out []podruntime.PodSpec, held []string) {
	if len(orphans) == 0 {
		return creates, nil
	}
	taken := maps.Clone(orphans)
	for _, n := range owned {
		taken[n] = true
	}
	for _, p := range creates {
		taken[p.Name] = true
	}
	for _, p := range creates {
		if !orphans[p.Name] {
			out = append(out, p)
			continue
		}
		if stableNames {
			held = append(held, p.Name)
			continue
		}
		p.Name = workload.GenerateNames(p.Name, 1, taken)[0]
		out = append(out, p)
	}
	return out, held
}

// podUnit is one observed pod of an owner: its name, the index in
// SyncInput.Observed of the container that stands for it (its holder, or
// its one container), the IDs a stop of it is known by (its
// containers', its holder pod's unit key), and the indexes of all its
// containers.
type podUnit struct {
	name string
	ct   int
	ids  []string
	cts  []int
}

// observedPods are the pods units (of the containers observed) as a
// runtime Sync reported them in res, a pod with a container being removed
// (removing: the stopper's work in flight) terminating, and the container
// that stands for each.
func observedPods(units []podUnit, observed []dockerx.Container, res podruntime.SyncResult, removing map[string]time.Time) ([]workload.ObservedPod, []dockerx.Container) {
	pods := make([]workload.ObservedPod, len(units))
	cts := make([]dockerx.Container, len(units))
	for i, u := range units {
		ct := observed[u.ct]
		cts[i] = ct
		st := res.Pods[u.name]
		for _, id := range u.ids {
			if _, ok := removing[id]; ok {
				st.Terminating = true
			}
		}
		pods[i] = workload.ObservedPod{Name: u.name, Labels: ct.Labels, Created: ct.Created, Status: st}
	}
	return pods, cts
}

// podBase is the name of the holder (or the one container) of the pod
// container ct is of: a member is named after its holder
// (dockerx.MemberName).
func podBase(ct dockerx.Container) string {
	if ct.Role != dockerx.RoleHolder && ct.ContainerName != "" {
		return strings.TrimSuffix(ct.Name, "."+ct.ContainerName)
	}
	return ct.Name
}

// recordedHistory is obj's recorded revisions (StoredObject.Revisions: a
// StatefulSet's or DaemonSet's, oldest first), named OWNER-HASH as
// Kubernetes names a ControllerRevision; none for the other kinds.
func recordedHistory(obj *store.StoredObject) []workload.Revision {
	out := make([]workload.Revision, len(obj.Revisions))
	for i := range obj.Revisions {
		r := &obj.Revisions[i]
		out[i] = workload.NewRevision(obj.Meta.Name, &r.Template, r.Hash)
	}
	return out
}

// withCurrent is history with cur, the owner's revision as its spec
// stands, first: it is recorded with every template change, but a record
// of a release that kept no history has none.
func withCurrent(cur workload.Revision, history []workload.Revision) []workload.Revision {
	out := make([]workload.Revision, 0, len(history)+1)
	out = append(out, cur)
	for _, r := range history {
		if r.Name != cur.Name {
			out = append(out, r)
		}
	}
	return out
}

// madeFrom is the revision of history the pod of container ct (its
// holder, or its one container) was made from: the one its revision label
// names (a StatefulSet's pods carry the revision's name, a DaemonSet's
// its hash) whose hash is the pod's template hash — a label edited by
// hand names no template of the pod.
func madeFrom(history []workload.Revision, ct dockerx.Container) (workload.Revision, bool) {
	label := ct.Labels[workload.RevisionLabel]
	for _, r := range history {
		if (r.Name == label || r.Hash == label) && r.Hash == ct.TemplateHash && r.Template != nil {
			return r, true
		}
	}
	return workload.Revision{}, false
}

// record records the decision's events on the owner.
func (c *Controller) record(ref store.ObjectRef, evs []workload.Event, now time.Time) {
	if len(evs) == 0 {
		return
	}
	out := make([]store.Event, len(evs))
	for i, e := range evs {
		out[i] = store.Event{Type: e.Type, Reason: e.Reason, Message: e.Message, Source: "dockctl-controller", Count: 1,
			FirstTimestamp: now, LastTimestamp: now,
			InvolvedObject: store.InvolvedObject{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}}
	}
	if err := c.cfg.Store.RecordEvents(out); err != nil {
		c.cfg.Log.Warn("recording events", "workload", ref.String(), "err", err)
	}
}
