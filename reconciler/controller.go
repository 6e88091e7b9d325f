package reconciler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/workqueue"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/podruntime/probe"
	"github.com/dockctl/dockctl/reconciler/reconcile"
	"github.com/dockctl/dockctl/reconciler/services"
	"github.com/dockctl/dockctl/store"
)

// Docker is what the controller needs from the Docker Engine. It is owned
// here, the consumer, so that tests substitute an in-memory engine.
type Docker interface {
	ListContainers(ctx context.Context, instance string) ([]dockerx.Container, error)
	ListDeploymentContainers(ctx context.Context, instance, deployment string) ([]dockerx.Container, error)
	CreateContainer(ctx context.Context, req dockerx.CreateRequest) (string, error)
	StartContainer(ctx context.Context, id string) error
	UnpauseContainer(ctx context.Context, id string) error
	RemoveContainer(ctx context.Context, id string) error
	EnsureImage(ctx context.Context, ref, pullPolicy string, secrets []dockerx.RegistryCredential) error
	// ImageUser is the User of a present image (imageuser.go: the
	// runAsNonRoot check, runAsGroup without runAsUser).
	ImageUser(ctx context.Context, ref string) (string, error)
	// Pods with a holder: its image, and their emptyDir volumes.
	EnsureHolderImage(ctx context.Context, instance string) (string, error)
	ListHelperImages(ctx context.Context, instance string) ([]dockerx.Image, error)
	RemoveImage(ctx context.Context, id string) error
	CreateVolume(ctx context.Context, req dockerx.VolumeRequest) (string, error)
	ListVolumes(ctx context.Context, instance string) ([]dockerx.Volume, error)
	RemoveVolume(ctx context.Context, name string) error
	// Claims' volumes (claims.go).
	CreateClaimVolume(ctx context.Context, req dockerx.ClaimVolumeRequest) (string, error)
	Events(ctx context.Context, instance string) <-chan dockerx.Event
	// For controller-run probes and liveness restarts.
	InspectContainer(ctx context.Context, id string) (dockerx.ContainerDetails, error)
	Exec(ctx context.Context, id string, cmd []string, timeout time.Duration) (int, error)
	StopContainer(ctx context.Context, id string, timeout time.Duration) error
}

// Store is what the controller needs from the state directory. Every
// deployment is named by its namespace and name.
type Store interface {
	Lookup(namespace, name string) (*store.Record, error)
	ListAll() ([]*store.Record, []error)
	ReadStatus(namespace, name string) (*store.Status, error)
	WriteStatus(namespace, name string, st *store.Status) error
	Watch(ctx context.Context) (<-chan string, error)
	// The instance network's record (network.go).
	ReadNetwork() (*store.NetworkStatus, error)
	WriteNetwork(*store.NetworkStatus) error
	// The pods users deleted (poddelete.go), cleared once gone.
	PodDeletions(namespace, name string) ([]store.PodDeletion, error)
	ClearPodDeletions(namespace, name string, done []store.PodDeletion) error
}

// Options tune the controller. Zero values take the defaults.
type Options struct {
	Instance     string
	ResyncPeriod time.Duration // default 30s
	// Gateway, when set, is the gateway controller (package
	// reconciler/gateway), run on its own loop (gatewayctl.go).
	Gateway reconcile.Reconciler
	// PruneOrphans removes containers whose deployment this state directory
	// never knew. Off by default so that a wrong or empty state directory
	// can never wipe a host.
	PruneOrphans bool
	// MaxCreatesInFlight caps slow-start creates per deployment (default 8:
	// the engine gains no throughput past that).
	MaxCreatesInFlight int
	Workers            int // deployments synced in parallel, default 4
	// SelfID is the controller's own container ID (or a prefix of it) when it
	// runs in a container: it never manages itself, whatever its labels say.
	SelfID string
	// CrashBackoffBase and CrashBackoffMax bound the delay before a
	// container that keeps exiting is started again (defaults 1s and 5m).
	CrashBackoffBase time.Duration
	CrashBackoffMax  time.Duration
	// SettleTime is how long every new container must have been ready
	// before it counts as available (the settle rule: the effective need is
	// max(minReadySeconds, SettleTime)). Zero takes DefaultSettleTime; a
	// negative value turns the rule off (Kubernetes' behaviour).
	SettleTime time.Duration
	Logger     *slog.Logger
	// Observer receives sync outcomes and counts (metrics); may be nil.
	Observer Observer
	// Recorder receives the events of what the controller does or fails
	// to do (events.go); nil records none.
	Recorder EventRecorder
	// QueueMetrics, when set, receives the work queue's metrics.
	QueueMetrics workqueue.MetricsProvider
	// Allow is what this controller grants (its --allow-* flags); a
	// deployment that needs any other privilege is refused (ReplicaFailure).
	Allow manifests.Policy
	Now   func() time.Time
	// MaxReplicas caps spec.replicas (default DefaultMaxReplicas): a
	// deployment over it is refused with a ReplicaFailure condition.
	MaxReplicas int32
	// MaxGracePeriod bounds terminationGracePeriodSeconds (default
	// DefaultMaxGracePeriod).
	MaxGracePeriod time.Duration
	// ServiceDocker and ServiceStore, when both set, run the Service and
	// DNS reconcilers (services.go) beside the deployments'.
	ServiceDocker services.ServiceDocker
	ServiceStore  services.ServiceStore
	// ServiceAddress is the host address NodePort and LoadBalancer
	// Services publish on (--service-address; default 0.0.0.0).
	ServiceAddress string
	// Subnet is the instance network's subnet (--subnet) when it is
	// created; "" chooses the first free candidate (network.go).
	Subnet string
	// Drainer takes a pod out of every Service's endpoints before its
	// graceful stop (stopdrain.go); nil: stops drain nothing.
	Drainer Drainer
	// NetworkDocker, when set, gives the instance its network: pods are
	// created on it, existing ones connected, probes routed to it
	// (network.go, netconnect.go, route.go). Nil: pods stay on Docker's
	// default bridge, as releases before the instance network left them.
	NetworkDocker NetworkDocker
	// Config reads ConfigMaps, Secrets and claims (podruntime.ConfigStore); nil:
	// every reference to one is missing.
	Config podruntime.ConfigStore
	// FilesDocker writes the file volumes of pods (files.go); nil: pods
	// with file volumes cannot be created.
	FilesDocker FilesDocker
	// StalePortForwardAfter is how long after its creation a port-forward
	// helper that is not running is removed by the sweep (portforward.go;
	// default DefaultStalePortForwardAfter).
	StalePortForwardAfter time.Duration
	// ReservedNameWindow is how long a container name that Docker reserves
	// without showing its container counts as a replica in flight of the
	// deployment whose create met it (conflict.go; default
	// DefaultReservedNameWindow). Past it, the name is blocked.
	ReservedNameWindow time.Duration
}

// orphanSweepKey is queued for a whole-instance pass: it finds orphans and
// deployments that have containers but no live record. It cannot collide
// with a deployment's key, "namespace/name".
const orphanSweepKey = "*"

// Default crash-loop backoff: Options.CrashBackoffBase and CrashBackoffMax
// (--crash-backoff-base and --crash-backoff-max).
const (
	DefaultCrashBackoffBase = time.Second
	DefaultCrashBackoffMax  = 5 * time.Minute
)

// Controller keeps the instance's containers matching the state directory.
type Controller struct {
	docker Docker
	// waits are the failed creates of the syncs in progress (waiting.go).
	waits podruntime.CreateWaits
	store Store
	opts  Options
	log   *slog.Logger
	// deployments is the loop that syncs deployment keys (store.Key:
	// "namespace/name", or orphanSweepKey) through Reconcile; queue is how
	// the controller's own code — the sweep, a sync, the prober, the
	// stopper — queues into it. Every per-deployment memory below is keyed
	// the same way.
	deployments *reconcile.Loop
	queue       deploymentQueue

	mu      sync.Mutex
	orphans map[string]bool   // container IDs already reported
	invalid map[string]string // deployment key → invalid record problems already logged
	// names remembers, by deployment key, the names creates met taken:
	// held by others, or reserved by creates in flight (conflict.go).
	names *podruntime.NameConflicts
	// hasVolumes holds the deployments the last sweep saw pod volumes of.
	hasVolumes map[string]bool
	// claims is the claims' sweep (podruntime.ClaimSweep; claims.go).
	claims *podruntime.ClaimSweep
	// deadHolders holds the holders seen dying (die events): ID →
	// deployment key. Their pods are replaced (holderDied).
	deadHolders map[string]string

	dockerOK atomic.Bool
	// lastPass is when the last whole-instance sweep that listed Docker
	// returned (unix nanoseconds; 0: none yet): LastPass.
	lastPass atomic.Int64
	// helperImages is set while helper images may need collecting: at
	// start, once a sweep saw a holder, and whenever a holder is created.
	helperImages atomic.Bool
	// runtime is the pod runtime's half that runs beside the workers:
	// prober (probes and postStart hooks) and stopper (graceful stops)
	// are its own.
	runtime *podruntime.Runtime
	prober  *podruntime.Prober
	// starting counts the pods being created and started by this
	// controller's runtime and the other workloads' (PodStarts): the
	// Services' helpers wait for them (services/deferral.go).
	starting *podruntime.Starting
	stopper  *podruntime.Stopper
	// probeRunner is the prober's runner (prober.go), which reaches pods
	// as route says.
	probeRunner *probe.Runner
	// tracker follows every deployment's pods for the Services (and is
	// the Drainer the stopper calls); svc runs the Service and DNS
	// reconcilers, nil when not configured.
	tracker *services.Tracker
	svc     *services.Controller
	// gateway is the gateway controller's loop; nil without one.
	gateway *reconcile.Loop
	// The instance network (network.go; nil without
	// Options.NetworkDocker), the Docker calls it needs, and how probes
	// reach pods on it (route.go).
	net       *instanceNetwork
	netDocker NetworkDocker
	route     *probe.Route
	// refs indexes the ConfigMaps and Secrets deployments refer to
	// (envctl.go).
	refs   configRefs
	podIPs podruntime.PodIPs // pods' status.podIP addresses (podip.go)
	// files remembers what was written into pods' file volumes (files.go).
	files filesMemory
	// fileVolumes plans and writes pods' file volumes (files.go).
	fileVolumes *podruntime.FileVolumes
}

// New returns a controller; Run starts it.
func New(docker Docker, st Store, opts Options) *Controller {
	if opts.Instance == "" {
		opts.Instance = "default"
	}
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = 30 * time.Second
	}
	if opts.MaxCreatesInFlight <= 0 {
		opts.MaxCreatesInFlight = 8
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.CrashBackoffBase <= 0 {
		opts.CrashBackoffBase = DefaultCrashBackoffBase
	}
	if opts.CrashBackoffMax <= 0 {
		opts.CrashBackoffMax = DefaultCrashBackoffMax
	}
	switch {
	case opts.SettleTime == 0:
		opts.SettleTime = DefaultSettleTime
	case opts.SettleTime < 0:
		opts.SettleTime = 0
	}
	if opts.StalePortForwardAfter <= 0 {
		opts.StalePortForwardAfter = DefaultStalePortForwardAfter
	}
	if opts.ReservedNameWindow <= 0 {
		opts.ReservedNameWindow = DefaultReservedNameWindow
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	if opts.Recorder == nil {
		opts.Recorder = NopRecorder{}
	}
	if opts.Allow.Host.Resolve == nil {
		// Host paths are judged as they resolve here; never lexically.
		opts.Allow.Host.Resolve = filepath.EvalSymlinks
	}
	// dockctl.io/network may name the instance's own network freely.
	opts.Allow.Host.Network = dockerx.NetworkName(opts.Instance)
	c := &Controller{
		docker:  docker,
		store:   st,
		opts:    opts,
		log:     opts.Logger.With("instance", opts.Instance),
		orphans: map[string]bool{},
	}
	// Read at each use: tests set SelfID once the controller is built.
	c.names = &podruntime.NameConflicts{Window: opts.ReservedNameWindow, Log: c.log,
		Self: func(id string) bool { return c.opts.SelfID != "" && strings.HasPrefix(id, c.opts.SelfID) },
		Now:  func() time.Time { return c.opts.Now() }}
	c.deployments = reconcile.NewLoop(c, reconcile.Config{
		Name:    "deployments",
		KeyAttr: "deployment",
		Workers: opts.Workers,
		// Per deployment: a failing sync is retried 200ms, 400ms, … up to 1m.
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](200*time.Millisecond, time.Minute),
		Metrics:     opts.QueueMetrics,
		Done: func(req reconcile.Request, took time.Duration, err error) {
			if ns, name, ok := store.SplitKey(req.Key); ok { // the sweep is no deployment's sync
				opts.Observer.SyncDone(ns, name, took, err)
			}
		},
		Log: c.log,
	})
	c.queue = deploymentQueue{c.deployments}
	c.helperImages.Store(true)
	c.netDocker = opts.NetworkDocker
	c.route = probe.NewRoute(opts.Instance, c.log, modeObserver(opts.Observer), func() { c.queue.Add(orphanSweepKey) })
	if c.netDocker != nil {
		c.net = newInstanceNetwork(opts.Instance, opts.Subnet, c.netDocker, st, c.log, opts.Observer)
		c.net.made = func() { c.queue.Add(orphanSweepKey) }
		c.net.onRecord = func() {
			if c.svc != nil {
				c.svc.NetworkRecorded()
			}
		}
	}
	c.probeRunner = probe.NewRunner(docker, c.netDocker, c.route)
	// The tracker is the stopper's Drainer when Services run, and asks the
	// stopper whether a drained pod's stop is still in flight.
	c.tracker = services.NewTracker(func(key string) {
		if c.svc != nil {
			c.svc.Loop().Add(reconcile.Request{Key: key})
		}
	}, func(unitID string) bool { return c.stopper.Stopping(unitID) })
	drainer := opts.Drainer
	if drainer == nil && opts.ServiceDocker != nil && opts.ServiceStore != nil {
		drainer = c.tracker
	}
	c.starting = podruntime.NewStarting(func() {
		if c.svc != nil {
			c.svc.PodsStarted()
		}
	})
	c.runtime = podruntime.NewRuntime(podruntime.RuntimeConfig{
		Starting: c.starting,
		Prober: podruntime.ProberConfig{
			Docker: docker, Runner: c.probeRunner, Network: c.route.NetworkName,
			Notify: func(name string) { c.queue.Add(name) }, PodRef: ownerPodRef, Recorder: opts.Recorder, Log: c.log,
		},
		Stopper: podruntime.StopperConfig{Docker: docker, Drainer: drainer, Recorder: opts.Recorder, Log: c.log,
			Done: func(name string, err error) {
				if err != nil {
					c.queue.AddRateLimited(name)
					return
				}
				c.queue.Add(name)
			}},
	})
	c.prober, c.stopper = c.runtime.Prober(), c.runtime.Stopper()
	c.claims = newClaimSweep(c)
	c.fileVolumes = newFileVolumes(c)
	if opts.ServiceDocker != nil && opts.ServiceStore != nil {
		if opts.ServiceAddress == "" {
			opts.ServiceAddress = "0.0.0.0"
			c.opts.ServiceAddress = opts.ServiceAddress
		}
		c.svc = newServices(c, opts.ServiceDocker, opts.ServiceStore, opts.ServiceAddress)
	}
	return c
}

// Ready reports whether the last contact with Docker succeeded.
func (c *Controller) Ready() bool { return c.dockerOK.Load() }

// LastPass is when the controller last finished a whole-instance pass
// over Docker (the sweep every resync runs); zero before the first. The
// heartbeat carries it, so that a controller whose loop is wedged — a
// Docker call that never returns — is told from one making progress, as
// the kubelet's PLEG health check tells a stuck relist (docs/design.md §5).
func (c *Controller) LastPass() time.Time {
	if n := c.lastPass.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// ProbeRunner is the runner this controller's prober reaches pods with,
// directly or through the DNS helper's relay (route.go): the one the
// other workload controllers of the instance probe their pods with
// (docs/design.md §17).
func (c *Controller) ProbeRunner() podruntime.ProbeRunner { return c.probeRunner }

// PodStarts counts the pods being created and started, for the runtime
// of another workload controller of the instance, whose pods the
// Services' helpers wait for as for the Deployments'.
func (c *Controller) PodStarts() *podruntime.Starting { return c.starting }

// ProbeNetwork names the instance network whose address probes target
// ("": none yet), for a prober sharing ProbeRunner.
func (c *Controller) ProbeNetwork() string { return c.route.NetworkName() }

// Run reconciles until ctx is cancelled. It returns after in-flight syncs
// finish; it never stops or removes workloads on the way out.
func (c *Controller) Run(ctx context.Context) error {
	// Subscribe before the first list so that nothing that happens between
	// the two is missed: the subscription's first message is a gap, which
	// queues the initial full sync.
	events := c.docker.Events(ctx, c.opts.Instance)
	changes, err := c.store.Watch(ctx)
	if err != nil {
		return fmt.Errorf("watch state directory: %w", err)
	}

	c.deployments.Start(ctx)
	if c.svc != nil {
		c.svc.Loop().Start(ctx)
	}
	c.startGateway(ctx)
	c.log.Info("controller started", "resync", c.opts.ResyncPeriod, "pruneOrphans", c.opts.PruneOrphans)
	c.queue.Add(orphanSweepKey)
	ticker := time.NewTicker(c.opts.ResyncPeriod)
	defer ticker.Stop()
listen:
	for {
		select {
		case <-ctx.Done():
			break listen
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			c.handleEvent(ev)
		case key, ok := <-changes:
			if !ok {
				changes = nil
				continue
			}
			c.storeChanged(key)
		case <-ticker.C:
			// The periodic resync is what makes the controller level-based:
			// whatever events were lost (a container that died while dockerd
			// was down emits none), the next full pass sees it.
			c.queue.Add(orphanSweepKey)
			if c.svc != nil {
				c.svc.Loop().Add(reconcile.Request{Key: services.SweepKey})
			}
			c.gatewayChanged("")
		}
	}
	c.log.Info("controller stopping: waiting for in-flight syncs; workloads keep running")
	c.deployments.ShutDown()
	if c.svc != nil {
		c.svc.Loop().ShutDown()
	}
	if c.gateway != nil {
		c.gateway.ShutDown()
	}
	c.runtime.Stop()
	return nil
}

// handleEvent keeps the controller's own state in step with the event
// stream (readiness, the gap counter), then queues the deployment keys the
// event maps to.
// holderDied notes that a holder of deployment died: its pod's namespaces
// are gone, so the pod must be replaced even if the holder runs again by
// the time a sync lists it (a `docker restart` of the holder leaves its
// members in the namespaces of the run that died).
func (c *Controller) holderDied(id, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deadHolders == nil {
		c.deadHolders = map[string]string{}
	}
	c.deadHolders[id] = key
}

// diedHolders returns which of the observed containers of the deployment
// key are holders that died, and forgets its died holders that are no
// longer observed.
func (c *Controller) diedHolders(key string, observed []dockerx.Container) map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.deadHolders) == 0 {
		return nil
	}
	out := map[string]bool{}
	for _, ct := range observed {
		if _, ok := c.deadHolders[ct.ID]; ok {
			out[ct.ID] = true
		}
	}
	for id, k := range c.deadHolders {
		if k == key && !out[id] {
			delete(c.deadHolders, id)
		}
	}
	return out
}

func (c *Controller) handleEvent(ev dockerx.Event) {
	if ev.Action == "die" && ev.Role == dockerx.RoleHolder && ev.ContainerID != "" {
		c.holderDied(ev.ContainerID, store.Key(ev.Namespace, ev.Deployment))
	}
	c.route.NoteEvent(ev)
	switch {
	case ev.Down:
		// The daemon is unreachable: say so at once (/readyz) rather than
		// at the next failed list. Nothing to sync until it is back.
		c.dockerOK.Store(false)
	case ev.Gap && ev.Err != nil:
		c.opts.Observer.EventStreamGap()
		c.log.Warn("docker event stream interrupted; full resync follows", "err", ev.Err)
	}
	if ev.Gap {
		// Whatever happened meanwhile went unseen: a holder may have run
		// again (a daemon restart restarts it) with a fresh, empty tmpfs.
		// Every pod's files are written once more; a write of what a
		// volume holds already changes nothing (atomicfiles).
		c.files.ForgetAll()
	}
	for _, req := range deploymentOwners(ev) {
		c.deployments.Add(req)
	}
	if c.svc != nil {
		for _, req := range services.Owners(c.opts.Instance)(ev) {
			c.svc.Loop().Add(req)
		}
	}
}

// storeChanged queues what a state-directory change names (a store.Watch
// key): a deployment's key to the deployments' loop, a Service's to the
// services loop, "" (anything may have changed) to both sweeps. A
// Namespace's deletion reaches its objects as their own tombstones.
func (c *Controller) storeChanged(key string) {
	kind, ns, name := store.ParseWatchKey(key)
	c.gatewayChanged(kind)
	switch {
	case key == "":
		c.queue.Add(orphanSweepKey)
		if c.svc != nil {
			c.svc.Loop().Add(reconcile.Request{Key: services.SweepKey})
		}
	case kind == store.KindDeployment:
		c.queue.Add(key)
	case kind == store.KindPodDeletion:
		c.queue.Add(store.Key(ns, name)) // a pod of that deployment deleted
	case kind == store.KindConfigMap || kind == store.KindSecret:
		c.configChanged(key) // envctl.go
	case kind == store.KindService && c.svc != nil:
		c.svc.Loop().Add(reconcile.Request{Key: store.Key(ns, name)})
	case kind == manifests.KindPersistentVolumeClaim:
		// The sweep binds or releases its volume, and queues the
		// deployments a bound claim lets create (claims.go).
		c.queue.Add(orphanSweepKey)
	}
}

// deploymentOwners is the deployments' OwnerMapper: a container's event
// names its deployment by its labels — deployment, and namespace (absent:
// default, a container of an earlier release) — as the key
// "namespace/name"; what names none goes to the sweep.
func deploymentOwners(ev dockerx.Event) []reconcile.Request {
	switch {
	case ev.Down:
		return nil // nothing to sync until the daemon is back (a gap says so)
	case ev.Gap:
		// A gap means the stream is up again: the sweep's list confirms
		// readiness and repairs whatever happened meanwhile.
		return []reconcile.Request{{Key: orphanSweepKey}}
	case dockerx.IsHelperRole(ev.Role):
		// A Service's helper: the services loop's (services.Owners); a
		// port-forward session's: the CLI's, nobody's here.
		return nil
	}
	key := store.Key(ev.Namespace, ev.Deployment)
	if _, _, ok := splitDeploymentKey(key); !ok {
		// No deployment, or one no record can have: an orphan's event,
		// which only the sweep handles.
		return []reconcile.Request{{Key: orphanSweepKey}}
	}
	return []reconcile.Request{{Key: key}}
}

var _ reconcile.OwnerMapper = deploymentOwners

// Reconcile syncs one deployment key: the sweep key runs the
// whole-instance sweep, any other key that deployment's sync. The
// controller's loop calls it, one key at a time (reconcile.Reconciler).
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Key == orphanSweepKey {
		return reconcile.Result{}, c.sweep(ctx)
	}
	after, err := c.syncDeployment(ctx, req.Key)
	return reconcile.Result{RequeueAfter: after}, err
}

var _ reconcile.Reconciler = (*Controller)(nil)

// deploymentQueue queues deployment keys ("namespace/name") into the
// deployments' loop: reconcile.Request{Key: key}.
type deploymentQueue struct{ l *reconcile.Loop }

func (q deploymentQueue) Add(key string)            { q.l.Add(reconcile.Request{Key: key}) }
func (q deploymentQueue) AddRateLimited(key string) { q.l.AddRateLimited(reconcile.Request{Key: key}) }

// splitDeploymentKey splits a deployment key into a namespace and a name
// that a record can have (DNS-1123 labels, as the store requires): a
// container labelled with any other is an orphan, whatever the state
// directory holds.
func splitDeploymentKey(key string) (namespace, name string, ok bool) {
	namespace, name, ok = store.SplitKey(key)
	if !ok || len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Label(name)) > 0 {
		return "", "", false
	}
	return namespace, name, true
}

// syncDeployment is one observe → plan → execute pass for one deployment,
// by its key "namespace/name".
func (c *Controller) syncDeployment(ctx context.Context, key string) (time.Duration, error) {
	ns, name, ok := splitDeploymentKey(key)
	if !ok {
		c.queue.Add(orphanSweepKey) // its containers are orphans
		return 0, nil
	}
	rec, err := c.store.Lookup(ns, name)
	if errors.Is(err, store.ErrNotFound) {
		// Never known here: its containers, if any, are orphans for the sweep.
		c.prober.Drop(key)
		c.tracker.Delete(key)
		c.queue.Add(orphanSweepKey)
		return 0, nil
	}
	if err != nil {
		// Unreadable record: never guess, and above all never remove.
		return 0, fmt.Errorf("read deployment %s: %w", key, err)
	}
	c.stopper.Listing(key)
	observed, err := c.list(ctx, ns, name)
	if err != nil {
		return 0, err
	}
	c.claimUsersGone(key, observed) // claims.go
	volumes, err := c.podVolumes(ctx, rec, observed)
	if err != nil {
		return 0, err
	}
	now := c.opts.Now()
	if rec.Deleted {
		// What an orphaning deletion left is nobody's: neither stopped
		// nor observed (orphans.go).
		observed, volumes, _ = ownedPods(rec, observed, volumes)
		c.prober.Drop(key) // its containers are going: so are their probes
		c.forgetBlocked(key)
		c.files.Forget(key, nil)
		c.indexRefs(rec, nil)
		units, pods := podruntime.GroupPods(observed, templateLookup(nil, "", rec.Revisions), c.diedHolders(key, observed))
		in := PlanInput{Instance: c.opts.Instance, Namespace: rec.Namespace, Name: name, Containers: units, Pods: pods, Volumes: volumes, Now: now, Revisions: rec.Revisions,
			Deletions: c.podDeletions(ns, name)}
		c.stopInputs(&in, deploymentState{}, nil)
		// Its pods leave every Service (and are drained) as they go.
		c.tracker.Update(rec.Key(), podEndpoints(c.opts.Instance, c.hostAddress(), rec, in, nil, templateLookup(nil, "", rec.Revisions), true))
		plan := ComputePlan(in)
		c.logPlan(key, plan)
		_, execErr := c.execute(ctx, in, plan)
		c.clearPodDeletions(ns, name, plan.DeletionsDone)
		if len(observed) == 0 {
			c.opts.Observer.DeploymentForgotten(ns, name)
			// Nothing is left once the plan — which removes every volume of
			// a deployment without containers — has succeeded: the sweep
			// collects the helper image. Waiting for a sync that sees no
			// volume would wait for the periodic resync, since removing a
			// volume brings no container event.
			if execErr == nil && hasHelpers(rec) {
				c.queue.Add(orphanSweepKey)
			}
		}
		return 0, execErr
	}

	a := c.assess(ctx, rec, observed, volumes, now)
	c.feedTracker(a, false)
	fail := a.refusal
	var execErr error
	if fail.reason == "" {
		c.logPlan(key, a.plan)
		fail, execErr = c.execute(ctx, a.in, a.plan)
		fail = backOffImagePull(fail, a.prev.Conditions)
	} else {
		// Refused: no container of it is created, started or removed, so
		// the running revision keeps serving until the user fixes it —
		// but for the pods a user deleted, which are removed all the same
		// (deletionsOnly), as Kubernetes deletes a pod whatever the state
		// of its ReplicaSet.
		c.log.Warn("deployment refused", "deployment", key, "reason", fail.message)
		c.opts.Recorder.Event(deploymentRef(ns, name), store.EventWarning, fail.reason, fail.message)
		if len(a.plan.Ops) > 0 {
			c.logPlan(key, a.plan)
			_, execErr = c.execute(ctx, a.in, a.plan)
		}
	}
	c.clearPodDeletions(ns, name, a.plan.DeletionsDone)
	a.state.Waiting = c.waitingPods(a, c.waits.Take(key), a.state.Waiting, now) // waiting.go
	recordStarts(&a.state, a.plan, now)
	recordStops(&a.state, a.plan, now)
	if ctx.Err() == nil { // a start cut short by shutdown is no crash
		c.recordStartFailures(&a.state, a.plan, execErr, now)
	}
	if fail.reason == "" {
		fail = a.standingFailure()
	}
	if execErr == nil {
		// Only an executed plan moves the rollout on; after an error the
		// next sync recomputes from what Docker then shows.
		a.state.Rollout = a.plan.State
	}
	next, deadlineIn, err := c.nextStatus(a, fail, now)
	if err == nil && !store.SameStatus(a.prev, next) {
		next.UpdatedAt = now
		if err = c.store.WriteStatus(ns, name, next); err == nil {
			c.recordConditions(ns, name, a.prev.Conditions, next.Conditions) // events.go
		}
	}
	if err != nil {
		c.log.Error("write status", "deployment", key, "err", err)
	}
	if execErr != nil {
		return 0, execErr
	}
	requeue := minPositive(a.plan.RequeueAfter, a.availableIn)
	return minPositive(requeue, deadlineIn), nil
}

// hasHelpers reports whether any template of the record runs with a holder.
func hasHelpers(rec *store.Record) bool {
	if manifests.NeedsHolder(&rec.Deployment.Spec.Template.Spec) {
		return true
	}
	for i := range rec.Revisions {
		if manifests.NeedsHolder(&rec.Revisions[i].Template.Spec) {
			return true
		}
	}
	return false
}
