package services

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/netlayout"
	"github.com/dockctl/dockctl/reconciler/reconcile"
	"github.com/dockctl/dockctl/store"
)

// ServiceDocker is what the Service and DNS reconcilers need from Docker.
type ServiceDocker interface {
	// ListHelpers lists the instance's containers of one role.
	ListHelpers(ctx context.Context, instance, role string) ([]dockerx.Container, error)
	StartContainer(ctx context.Context, id string) error
	UnpauseContainer(ctx context.Context, id string) error
	RemoveContainer(ctx context.Context, id string) error
	CreateHelper(ctx context.Context, req dockerx.HelperRequest) (string, error)
	EnsureHelperImage(ctx context.Context, instance string) (string, error)
	// ExecInput runs a command with stdin: pushes carry the config there,
	// since it may exceed an argument's 128 KiB.
	ExecInput(ctx context.Context, id string, cmd []string, stdin []byte, timeout time.Duration) (exit int, stdout []byte, err error)
}

// daemonContainerLister is what a ServiceDocker may also do: list every
// container of the daemon, whatever its instance, with the ports it
// publishes, so that a host port held outside dockctl is reported as a
// conflict instead of failing the proxy's start.
type daemonContainerLister interface {
	ListAllContainers(ctx context.Context) ([]dockerx.Container, error)
}

// ServiceStore is what the Service and DNS reconcilers need from the state
// directory.
type ServiceStore interface {
	ListServices() ([]*store.ServiceRecord, []error)
	LookupService(ns, name string) (*store.ServiceRecord, error)
	ReadServiceStatus(ns, name string) (*store.ServiceStatus, error)
	WriteServiceStatus(ns, name string, st *store.ServiceStatus) error
	ReadNetwork() (*store.NetworkStatus, error)
	ReadGateway() (*store.GatewayStatus, error)
	WriteGateway(g *store.GatewayStatus) error
}

// Keys of the services loop besides "ns/name".
const (
	SweepKey = "*"
	DNSKey   = "dns/"
)

// pushTimeout bounds one `helper push`.
const pushTimeout = 10 * time.Second

// serviceWorkers is how many Services sync at once: a bundle's Services
// come together, and each sync of a new one creates and starts its proxy
// (Docker's create and start, most of a sync's time), so that a few at a
// time would make the last proxy, and the DNS server queued behind them,
// wait for all the others' (docker-compose creates a bundle's containers
// in parallel too).
const serviceWorkers = 16

// networkRetry is how soon a Service is looked at again while the
// instance network is not known yet.
const networkRetry = 2 * time.Second

// Config is what the Service controller needs from the controller that
// runs it (package reconciler wires it): narrow views of the deployments'
// side, never the deployments' controller itself.
type Config struct {
	// Instance is the instance whose helpers this controller owns.
	Instance string
	// Address is where NodePort and LoadBalancer ports are published
	// (--service-address).
	Address string
	Docker  ServiceDocker
	Store   ServiceStore
	// Deployments lists the deployment records: the host ports they
	// declare, and whether the DNS server has any pod left to serve.
	Deployments DeploymentLister
	// Allow is what the controller grants: a deployment it refuses to run
	// binds no host port.
	Allow manifests.Policy
	// Tracker is the pods' endpoints, which the deployments' syncs feed.
	Tracker *Tracker
	// IsSelf reports whether a container is the controller's own (nil:
	// none is).
	IsSelf func(id string) bool
	// QueueDeployment queues a deployment's sync by its key: one waiting
	// for a host port a Service gave up (nil: none).
	QueueDeployment func(key string)
	// HelperImageInUse tells the deployments' sweep to look at helper
	// images again, so that it does not collect one under a create (nil:
	// nothing to tell).
	HelperImageInUse func()
	// PodsStarting reports whether pods are being created and started:
	// a helper not running yet waits for them (deferral.go; nil: none
	// waits).
	PodsStarting func() bool
	// EnsureNetwork makes the instance network again if the deployments'
	// sweep removed it while nothing was left (nil: nothing to make).
	EnsureNetwork func(ctx context.Context) error
	// Orphan reports, or with PruneOrphans removes, a proxy of a Service
	// this state directory never knew, as the deployments' orphans are.
	Orphan func(ctx context.Context, ct dockerx.Container, remove func(context.Context, string) error, what, owner string, attrs ...any) error
	// Secrets reads a Secret (store.Store.LookupSecret): the gateway's
	// certificates (nil: the gateway presents none).
	Secrets func(ns, name string) (*manifests.Secret, error)
	// Recorder receives the Services' events (default: none recorded).
	Recorder EventRecorder
	Now      func() time.Time
	Log      *slog.Logger
}

// DeploymentLister lists the deployment records: *store.Store.
type DeploymentLister interface {
	ListAll() ([]*store.Record, []error)
}

// Controller runs the Service and DNS reconcilers of an instance.
type Controller struct {
	cfg     Config
	docker  ServiceDocker
	store   ServiceStore
	tracker *Tracker
	loop    *reconcile.Loop
	log     *slog.Logger
	address string
	alloc   allocator

	mu sync.Mutex
	// pushed is, per key (a Service's, or DNSKey), what its helper
	// acknowledged last; floor the least next generation after a helper
	// said it holds a newer one than the controller knew.
	pushed  map[string]*pushedConfig
	floor   map[string]int64
	records map[string]string // per Service key, its DNS record as last seen (JSON)
	waiting map[string]bool   // keys whose wait for the network was logged
	// deferred are the keys whose helper's create waits for the pods
	// being started, since when (deferral.go).
	deferred map[string]time.Time
	// startedAt is when this controller started a helper, by container
	// ID, within the start window (justStarted).
	startedAt map[string]time.Time
	// netRecords counts NetworkRecorded calls (noteWaiting).
	netRecords uint64
	dnsGen     int64 // the DNS server's generation
	// dnsRecords are the records the DNS server acknowledged last.
	dnsRecords []helperapi.DNSRecord
	// hostHeld are the host ports a process of the host holds, as proxy
	// starts found them (hostport_held.go).
	hostHeld map[hostPort]*heldPort
	// unserved are the nodePorts this controller chose that the publisher
	// has not served yet: one found held is chosen again, not kept
	// (portHolder.Unserved, hostport_held.go).
	unserved map[hostPort]bool
	// hostDial connects to a host port and closes the connection at once
	// (tests substitute it): whether something still listens there.
	hostDial func(ctx context.Context, network, addr string) error
	// hostBind binds a host address and closes the socket at once
	// (nil: a real bind); tests fake it.
	hostBind func(network, addr string) error
	// gw is the gateway's data plane (gatewayctl.go), under mu.
	gw gatewayState
	// pub is the publisher of the Services' host ports
	// (publisherctl.go), under mu.
	pub publisherState
	// envWait bounds a create's wait for a Service's address
	// (serviceEnvWait; serviceenv.go).
	envWait time.Duration
	// started is when the controller was made: a Service waits for the
	// gateway's ports at most gatewayPortsWait after (gatewayctl.go).
	started time.Time
}

// New returns the Service controller cfg describes. Its loop accepts keys
// at once (Loop); nothing is synced before the loop starts.
func New(cfg Config) *Controller {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Recorder == nil {
		cfg.Recorder = nopRecorder{}
	}
	if cfg.IsSelf == nil {
		cfg.IsSelf = func(string) bool { return false }
	}
	if cfg.QueueDeployment == nil {
		cfg.QueueDeployment = func(string) {}
	}
	if cfg.HelperImageInUse == nil {
		cfg.HelperImageInUse = func() {}
	}
	if cfg.Orphan == nil {
		cfg.Orphan = func(context.Context, dockerx.Container, func(context.Context, string) error, string, string, ...any) error {
			return nil
		}
	}
	s := &Controller{cfg: cfg, docker: cfg.Docker, store: cfg.Store, tracker: cfg.Tracker, log: cfg.Log, address: cfg.Address,
		alloc:  allocator{held: map[string]serviceAllocation{}, waiting: map[string]bool{}},
		pushed: map[string]*pushedConfig{}, floor: map[string]int64{}, records: map[string]string{}, waiting: map[string]bool{},
		startedAt: map[string]time.Time{}, deferred: map[string]time.Time{},
		// A generation the DNS server cannot have seen: it has no status
		// file to keep one in, and a previous controller counted up from
		// its own start, earlier.
		dnsGen: cfg.Now().UnixMilli(),
		// The same for the gateway, whose state file is on a tmpfs.
		gw: gatewayState{gen: cfg.Now().UnixMilli()},
		// The publisher's state file is kept, but this controller has no
		// record of its generation either.
		pub: publisherState{gen: cfg.Now().UnixMilli(), bindings: map[string][]dockerx.PortBinding{}, seen: map[string]bool{},
			hostHeld: map[string][]hostPort{}},
		envWait: serviceEnvWait,
		started: cfg.Now(),
	}
	s.loop = reconcile.NewLoop(s, reconcile.Config{
		Name:        "services",
		KeyAttr:     "service",
		Workers:     serviceWorkers,
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](200*time.Millisecond, time.Minute),
		Log:         cfg.Log,
	})
	s.recallGatewayHostHeld()
	if s.tracker != nil {
		// The tracker's first complete feed queues the sweep, which queues
		// every Service; a drain waits for the stored Services too.
		s.tracker.mu.Lock()
		s.tracker.onSynced = func() { s.loop.Add(reconcile.Request{Key: SweepKey}) }
		s.tracker.stored = s.storedSelectors
		s.tracker.mu.Unlock()
	}
	return s
}

// Loop is the loop that runs this controller, for its sources: keys
// "namespace/name", SweepKey and DNSKey.
func (s *Controller) Loop() *reconcile.Loop { return s.loop }

// Reconcile syncs one key of the services loop.
func (s *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	switch req.Key {
	case SweepKey:
		return reconcile.Result{}, s.sweep(ctx)
	case DNSKey:
		return s.syncDNS(ctx)
	}
	if strings.HasPrefix(req.Key, PublisherKey) {
		// The publisher, or one of its Services whose pods changed
		// (publisherctl.go): the one helper is synced either way.
		return s.syncPublisher(ctx)
	}
	if strings.HasPrefix(req.Key, GatewayKey) {
		// The gateway, or one of its backends whose pods changed
		// (gatewayctl.go): the one helper is synced either way.
		return s.syncGateway(ctx)
	}
	ns, name, ok := strings.Cut(req.Key, "/")
	if !ok || ns == "" || name == "" {
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("service key %q: not namespace/name", req.Key))
	}
	return s.syncService(ctx, req.Key, ns, name)
}

var _ reconcile.Reconciler = (*Controller)(nil)

// serviceKey is a record's key.
func serviceKey(s *manifests.Service) string {
	return s.Metadata.NamespaceOrDefault() + "/" + s.Metadata.Name
}

// listHelpers lists the instance's helpers of a role, minus the
// controller's own container.
func (s *Controller) listHelpers(ctx context.Context, role string) ([]dockerx.Container, error) {
	cs, err := s.docker.ListHelpers(ctx, s.cfg.Instance, role)
	if err != nil {
		return nil, fmt.Errorf("list %ss: %w", role, err)
	}
	var out []dockerx.Container
	for _, ct := range cs {
		if ct.Instance == s.cfg.Instance && ct.Role == role && !s.cfg.IsSelf(ct.ID) {
			out = append(out, ct)
		}
	}
	return out, nil
}

// proxyKey is the Service key a proxy's labels name.
func proxyKey(c *dockerx.Container) string { return c.Namespace + "/" + c.Service }

// syncService is one observe → plan → execute pass for one Service.
func (s *Controller) syncService(ctx context.Context, key, ns, name string) (reconcile.Result, error) {
	if !s.tracker.Synced() {
		return reconcile.Result{}, nil // the first feed queues a sweep, which queues every Service
	}
	rec, err := s.store.LookupService(ns, name)
	if errors.Is(err, store.ErrNotFound) {
		// Never known here (or gone for good): its proxies, if any, are
		// orphans, for the sweep.
		s.forget(key)
		s.loop.Add(reconcile.Request{Key: SweepKey})
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("read service %s: %w", key, err) // never taken for "deleted"
	}
	proxies, err := s.listHelpers(ctx, dockerx.RoleProxy)
	if err != nil {
		return reconcile.Result{}, err
	}
	var observed []dockerx.Container
	for _, ct := range proxies {
		if proxyKey(&ct) == key {
			observed = append(observed, ct)
		}
	}
	if rec.Deleted {
		s.forget(key)
		plan := planHelper(helperPlanInput{Observed: observed, Unwanted: "service deleted"})
		s.logPlan(key, plan)
		_, err := s.execute(ctx, key, plan, "", nil)
		return reconcile.Result{}, err
	}
	var gatewayWait time.Duration
	if publishes(defaultService(&rec.Service)) {
		// Its host ports are not judged before the gateway's are known,
		// if a gateway runs (docs/design.md §10, the gateway): the first
		// publisher keeps a port. Only they wait: its ClusterIP proxy,
		// endpoints, DNS record and the drains of its pods go on, as a
		// node's kube-proxy keeps a Service's cluster IP rules whatever
		// becomes of its nodePorts.
		if gatewayWait, err = s.awaitGatewayPorts(ctx, key); err != nil {
			return reconcile.Result{}, err
		}
	}
	prev, err := s.store.ReadServiceStatus(ns, name)
	if err != nil || prev == nil {
		if err != nil {
			s.log.Warn("unreadable service status; allocating again", "service", key, "err", err)
		}
		prev = &store.ServiceStatus{}
	}
	layout, netErr, netSeen := s.layout()
	if layout != nil {
		s.mu.Lock()
		delete(s.waiting, key)
		s.mu.Unlock()
	}
	svc := defaultService(&rec.Service)
	// Watched before its endpoints are read: no change falls between.
	s.tracker.watch(key, svc)
	if gatewayWait > 0 {
		if err := s.watchPublisherInTheWait(ctx, key, svc); err != nil {
			return reconcile.Result{}, err
		}
	}
	ready, notReady, version := s.tracker.endpointsAt(svc)

	in := allocInput{Key: key, Service: svc, Created: rec.Created, Prev: prev, Layout: layout, Address: s.address, Now: s.cfg.Now(),
		KeepPorts: gatewayWait > 0}
	var hostRetry time.Duration // when a port a process of the host holds is tried again
	if publishes(svc) && !in.KeepPorts {
		// This instance's proxies are left out: its Services settle among
		// themselves (allocate, the older wins).
		if in.Holders, err = s.portHolders(ctx, dockerx.RoleProxy); err != nil {
			return reconcile.Result{}, err
		}
		var held []portHolder
		s.recallHostHeld(svc, prev)
		held, in.Trying, hostRetry = s.hostHolders(ctx, s.hostPortsOf(svc, prev)) // hostport_held.go
		in.Holders = append(in.Holders, held...)
	}
	a := s.alloc.assign(s.store, in)
	s.noteChosen(a.Chosen)
	for _, k := range append(a.Displaced, a.Freed...) {
		s.loop.Add(reconcile.Request{Key: k})
	}
	for _, k := range a.FreedDeployments {
		s.cfg.QueueDeployment(k)
	}

	s.mu.Lock()
	pushed := s.pushed[key]
	gen := max(prev.PushedGeneration, s.floor[key])
	if pushed != nil && pushed.ContainerID != "" {
		gen = max(gen, pushed.Generation)
	}
	s.mu.Unlock()
	pin := helperPlanInput{Observed: observed, Pushed: pushed, Generation: gen}
	switch {
	case svc.IsHeadless():
		pin.Unwanted = "headless service: DNS answers with its pods"
	case !a.Usable:
		pin.Unwanted = "no cluster IP"
	default:
		network := dockerx.NetworkName(s.cfg.Instance)
		content, render := renderer(proxyConfig(key, svc, ready), func(c *helperapi.ProxyConfig, g int64) { c.Generation = g })
		// Its host ports are the publisher's (publisherctl.go): the proxy
		// serves the ClusterIP only, and its hash is a ClusterIP
		// Service's (no bindings), as an earlier release made it.
		pin.Want = &helperWant{
			Name: proxyName(s.cfg.Instance, ns, name), Hash: proxyConfigHash(network, a.ClusterIP, nil),
			Also: []string{legacyProxyConfigHash(network, a.ClusterIP, svc, nil)},
			Mode: helperapi.ModeProxy, Content: content, Render: render, Change: endpointChange(prev.Endpoints, ready),
			Stub: renderStub(proxyConfig(key, svc, nil)),
			Request: dockerx.HelperRequest{Instance: s.cfg.Instance, Namespace: ns, Role: dockerx.RoleProxy, Service: name,
				Network: dockerx.PodNetwork{Name: network, IPv4: a.ClusterIP}},
		}
	}
	var plan HelperPlan
	planned := layout != nil || svc.IsHeadless()
	if !planned {
		// Nothing can be judged without the network: what runs is left
		// as it is (a store that cannot be read must not remove a proxy).
		s.noteWaiting(key, netErr, netSeen)
	} else {
		plan = planHelper(pin)
	}
	deferFor := s.deferCreate(key, plan, observed) // deferral.go
	if deferFor > 0 {
		plan = HelperPlan{}
	}
	s.logPlan(key, plan)
	var content string
	var render func(int64) string
	if pin.Want != nil {
		content, render = pin.Want.Content, pin.Want.Render
	}
	var published []dockerx.PortBinding
	if planned && !in.KeepPorts {
		// What it publishes is the publisher's to serve: none when it
		// has no cluster IP (a headless Service publishes nothing).
		// While its ports wait for the gateway's, nothing is noted: the
		// publisher serves its last config, and the gateway takes its
		// stored ports for it (unseenPublishedHolders).
		var held []hostPort
		if pin.Want != nil {
			published, held = a.Bindings, a.HostHeld
		}
		s.notePublished(key, published, held)
	}
	done, execErr := s.execute(ctx, key, plan, content, render)
	wait := plan.Wait || errors.Is(execErr, errNameBeingFreed)
	if wait {
		execErr = nil
	}
	if execErr == nil && !wait && planned && (plan.Serves || pin.Want == nil) {
		// Its data plane serves these endpoints (or it has none): a drain
		// waiting on this Service may end.
		s.tracker.ack(key, version)
	}

	publisherFailed := false
	if f := s.publisherFailure(); f != "" && execErr == nil && len(published) > 0 {
		// Its host ports are not served: status and events must not say
		// they are (the publisher queues its Services when this changes).
		publisherFailed = true
		a.Conditions = append(slices.Clone(a.Conditions), store.Condition{Type: ServiceProxyFailure, Status: "True", Reason: ReasonPublisherFailed,
			Message: "its host ports are not served: " + f})
	}
	next := nextServiceStatus(rec, prev, a, append(slices.Clone(ready), notReady...), done, execErr, s.cfg.Now())
	switch {
	case !planned || in.KeepPorts:
		// Nothing judged: what was published, and claimed, stays.
		next.Published, next.HostHeld = prev.Published, prev.HostHeld
	case pin.Want != nil:
		next.HostHeld = hostHeldPorts(a.HostHeld)
		if !publisherFailed {
			// Not while the publisher fails: `get services` would show
			// a LoadBalancer's EXTERNAL-IP from ports nothing serves.
			// Nor a held port being tried, until the publisher binds it.
			next.Published = publishedPorts(slices.DeleteFunc(slices.Clone(a.Bindings), func(b dockerx.PortBinding) bool {
				return slices.Contains(a.Trying, publishedOf([]dockerx.PortBinding{b})[0])
			}))
		}
	}
	if !sameServiceStatus(prev, next) {
		next.Updated = s.cfg.Now()
		if err := s.store.WriteServiceStatus(ns, name, next); err != nil {
			s.log.Error("write service status", "service", key, "err", err)
		} else {
			recordServiceStatus(s.cfg.Recorder, ns, name, prev, next) // events.go
		}
	}
	s.noteRecord(key, serviceDNSRecords(svc, a.ClusterIP, ready))
	if execErr != nil {
		return reconcile.Result{}, execErr
	}
	if wait {
		return reconcile.Result{RequeueAfter: nameRetry}, nil
	}
	if netErr != nil && !svc.IsHeadless() {
		return reconcile.Result{RequeueAfter: networkRetry}, nil
	}
	// The soonest of: a held host port's try, the end of the wait for the
	// gateway, the end of a helper's wait for the pods (PodsStarted may
	// queue it sooner).
	return reconcile.Result{RequeueAfter: soonest(hostRetry, gatewayWait, deferFor)}, nil
}

// soonest is the shortest of the waits that are set (> 0); 0 if none is.
func soonest(waits ...time.Duration) time.Duration {
	var out time.Duration
	for _, w := range waits {
		if w > 0 && (out == 0 || w < out) {
			out = w
		}
	}
	return out
}

// hostHeldPorts are host ports a process of the host holds, as the
// status records them.
func hostHeldPorts(hps []hostPort) []store.PublishedPort {
	var out []store.PublishedPort
	for _, hp := range hps {
		out = append(out, store.PublishedPort{HostIP: hp.IP, Port: int(hp.Port), Protocol: hp.Protocol})
	}
	return out
}

// publishedPorts are the host ports of bindings, as the status records
// them.
func publishedPorts(bindings []dockerx.PortBinding) []store.PublishedPort {
	var out []store.PublishedPort
	for _, b := range bindings {
		out = append(out, store.PublishedPort{HostIP: b.HostIP, Port: b.HostPort, Protocol: protocolOf(b.Protocol)})
	}
	return out
}

// nextServiceStatus is the status a sync leaves: what was allocated, the
// endpoints, the generation the proxy acknowledged, the conditions (a
// failure of the plan's execution becomes ProxyFailure).
func nextServiceStatus(rec *store.ServiceRecord, prev *store.ServiceStatus, a allocation, endpoints []store.EndpointStatus,
	done *pushedConfig, execErr error, now time.Time) *store.ServiceStatus {
	next := &store.ServiceStatus{ObservedGeneration: rec.Generation, ClusterIP: a.ClusterIP, NodePorts: a.NodePorts,
		Endpoints: endpoints, PushedGeneration: prev.PushedGeneration, Conditions: slices.Clone(a.Conditions)}
	if done != nil {
		next.PushedGeneration = done.Generation
	}
	if execErr != nil {
		// The op that failed says where the fault is: a push points at the
		// data plane, anything else (a start refused for a host port) at
		// Docker or the host.
		reason := ReasonProxyCreateFailed
		if opErr := (*helperOpError)(nil); errors.As(execErr, &opErr) && opErr.Kind == HelperPush {
			reason = ReasonProxyPushFailed
		}
		next.Conditions = append(next.Conditions, store.Condition{Type: ServiceProxyFailure, Status: "True", Reason: reason, Message: execErr.Error()})
	}
	slices.SortStableFunc(next.Endpoints, func(a, b store.EndpointStatus) int { return strings.Compare(a.Pod, b.Pod) })
	next.Conditions = carryTransitions(next.Conditions, prev.Conditions, now)
	return next
}

// noteWaiting logs, once per key until the network is known, that a
// helper waits for the instance network: it is looked at again every
// networkRetry, and the log must not repeat that often. seen is the count
// of NetworkRecorded calls when its sync read the network: a record made
// since queues it again at once.
func (s *Controller) noteWaiting(key string, why error, seen uint64) {
	s.mu.Lock()
	first := !s.waiting[key]
	s.waiting[key] = true
	missed := s.netRecords != seen
	s.mu.Unlock()
	if first {
		s.log.Info("waiting for the instance network", "service", key, "why", why)
	}
	if missed {
		s.loop.Add(reconcile.Request{Key: key})
	}
}

// NetworkRecorded is told that the instance network's owner recorded the
// network's address plan (created it, or found it again): the Services
// and the DNS server waiting for it sync now rather than at their next
// networkRetry, so that a new instance's first apply does not wait a
// retry for its proxies, its ClusterIPs, and the creates that wait for
// those addresses (Env). One whose sync read no network before the
// record and notes its wait after this call is queued by noteWaiting.
func (s *Controller) NetworkRecorded() {
	s.mu.Lock()
	s.netRecords++
	keys := slices.Collect(maps.Keys(s.waiting))
	s.mu.Unlock()
	for _, k := range keys {
		s.loop.Add(reconcile.Request{Key: k})
	}
}

// publishes reports whether a Service publishes host ports.
func publishes(s *manifests.Service) bool {
	return !s.IsHeadless() && (s.Spec.Type == manifests.ServiceTypeNodePort || s.Spec.Type == manifests.ServiceTypeLoadBalancer)
}

// layout is the instance network's address plan, nil (with why) while the
// network's owner has not recorded it; seen is the count of
// NetworkRecorded calls before it was read (noteWaiting).
func (s *Controller) layout() (l *netlayout.NetworkLayout, why error, seen uint64) {
	s.mu.Lock()
	seen = s.netRecords
	s.mu.Unlock()
	ns, err := s.store.ReadNetwork()
	if err != nil {
		return nil, fmt.Errorf("read instance network: %w", err), seen
	}
	nl, err := netlayout.FromStatus(ns)
	if err != nil {
		return nil, err, seen
	}
	return &nl, nil, seen
}

// storedSelectors are the selectors of the store's live Services (an
// unreadable record is left out: logged by the sweep).
func (s *Controller) storedSelectors() map[string]trackedService {
	recs, _ := s.store.ListServices()
	out := map[string]trackedService{}
	var published []string
	for _, r := range recs {
		if r.Deleted {
			continue
		}
		svc := defaultService(&r.Service)
		key := serviceKey(svc)
		out[key] = trackedServiceOf(svc)
		if !publishes(svc) {
			continue
		}
		// The publisher left running serves its state file, this
		// Service's published ports to its pods as they were, until its
		// first sync after every published Service's: a drain waits for
		// it too, as for the proxy. Its first complete sync acknowledges
		// the key, or forgets it if it serves the Service no longer.
		// A port in its hostHeld may be one being tried, which the
		// publisher bound before the sync that would list it published.
		if st, err := s.store.ReadServiceStatus(svc.Metadata.NamespaceOrDefault(), svc.Metadata.Name); err == nil && st != nil && len(st.Published)+len(st.HostHeld) > 0 {
			published = append(published, PublisherKey+key)
		}
	}
	if len(published) > 0 && !s.publisherRuns() {
		published = nil // none serves a state file: the proxies alone route
	}
	for _, k := range published {
		out[k] = out[strings.TrimPrefix(k, PublisherKey)]
	}
	if len(published) > 0 {
		s.mu.Lock()
		if s.pub.watched == nil {
			s.pub.watched = map[string]bool{}
		}
		for _, k := range published {
			s.pub.watched[k] = true
		}
		s.mu.Unlock()
	}
	return out
}

// publisherRuns reports whether a publisher helper routes from its state
// file (routesFromItsStateFile); true when the list fails, so that a
// drain waits rather than ends early (the publisher's first sync ends
// that wait).
func (s *Controller) publisherRuns() bool {
	ctx, cancel := context.WithTimeout(context.Background(), storedListTimeout)
	defer cancel()
	cs, err := s.listHelpers(ctx, dockerx.RolePublisher)
	if err != nil {
		s.log.Warn("list the publisher for the stored Services' drains", "err", err)
		return true
	}
	return slices.ContainsFunc(cs, routesFromItsStateFile)
}

// routesFromItsStateFile reports whether a publisher helper sends, or
// will send, connections by its last config: it holds its host sockets
// (running or paused), or Docker is restarting it (policy always), and
// it comes back serving its state file. A drain waits for such a one.
func routesFromItsStateFile(c dockerx.Container) bool {
	return holdsHostPorts(c) || c.State == dockerx.StateRestarting
}

// storedListTimeout bounds publisherRuns' list.
const storedListTimeout = 10 * time.Second

// forget drops what the controller holds for a Service that is deleted
// or unknown: its endpoints' watch, its addresses, its DNS record.
func (s *Controller) forget(key string) {
	s.tracker.forget(key)
	s.notePublished(key, nil, nil)
	svcs, deps := s.alloc.release(key)
	for _, k := range svcs {
		s.loop.Add(reconcile.Request{Key: k})
	}
	for _, k := range deps {
		s.cfg.QueueDeployment(k)
	}
	s.mu.Lock()
	delete(s.pushed, key)
	delete(s.floor, key)
	delete(s.deferred, key)
	s.mu.Unlock()
	s.noteRecord(key, nil)
}

// noteRecord queues the DNS server when a Service's records changed.
func (s *Controller) noteRecord(key string, r []helperapi.DNSRecord) {
	var js string
	if r != nil {
		b, _ := json.Marshal(r)
		js = string(b)
	}
	s.mu.Lock()
	old, had := s.records[key]
	if r == nil {
		delete(s.records, key)
	} else {
		s.records[key] = js
	}
	s.mu.Unlock()
	if old != js || had != (r != nil) {
		s.loop.Add(reconcile.Request{Key: DNSKey})
	}
}

// portHolders lists the host ports held by others than this instance's
// Services: the hostPorts (and host-network ports) of the deployments it
// runs, and every container of the daemon that publishes one (when the
// client can list them), this instance's helpers of role skip excepted.
func (s *Controller) portHolders(ctx context.Context, skip string) ([]portHolder, error) {
	var out []portHolder
	recs, _ := s.cfg.Deployments.ListAll()
	for _, r := range recs {
		if r.Deleted || len(s.cfg.Allow.Refused(&r.Deployment)) > 0 {
			// A deployment this controller refuses to run binds nothing;
			// what of it still runs is seen on the daemon below.
			continue
		}
		owner := "deployment " + r.Key()
		hash := manifests.TemplateHash(&r.Deployment.Spec.Template)
		for _, hp := range templateHostPorts(&r.Deployment.Spec.Template.Spec) {
			out = append(out, portHolder{Port: hp, Owner: owner, Since: hostPortSince(r.Revisions, hash, hp)})
		}
	}
	if skip != dockerx.RoleProxy {
		// The Services' ports are the publisher's, which binds them on
		// the host itself: Docker lists none (docs/design.md §10); those
		// of the Services not synced since the start, as their status
		// says.
		out = append(out, s.publishedHolders()...)
		out = append(out, s.unseenPublishedHolders()...)
	}
	if skip != dockerx.RoleGateway {
		// The gateway binds its ports on the host itself too; one a
		// process of the host holds is its claim still, as a Service's
		// (hostport_held.go).
		s.mu.Lock()
		for _, p := range s.gw.published {
			out = append(out, portHolder{Port: hostPort{IP: s.address, Port: int32(p), Protocol: manifests.ProtocolTCP}, Owner: "container " + gatewayName(s.cfg.Instance)})
		}
		for _, p := range s.gw.hostHeld {
			out = append(out, portHolder{Port: hostPort{IP: s.address, Port: int32(p), Protocol: manifests.ProtocolTCP},
				Owner: "container " + gatewayName(s.cfg.Instance) + hostHeldClaim})
		}
		s.mu.Unlock()
	}
	lister, ok := s.docker.(daemonContainerLister)
	if !ok {
		return out, nil
	}
	cs, err := lister.ListAllContainers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the daemon's containers: %w", err)
	}
	for _, c := range cs {
		if c.Instance == s.cfg.Instance && c.Role == skip {
			continue
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				out = append(out, portHolder{Port: hostPort{IP: p.HostIP, Port: int32(p.HostPort), Protocol: protocolOf(p.Protocol)}, Owner: "container " + c.Name})
			}
		}
	}
	return out, nil
}

// protocolOf is a Docker port's protocol ("tcp", "udp", none) as a
// Service names it.
func protocolOf(dockerProtocol string) string { return protocolOr(strings.ToUpper(dockerProtocol)) }

// protocolOr is a Service port's protocol, TCP when none is given (as
// the apiserver defaults it).
func protocolOr(p string) string {
	if p == "" {
		return manifests.ProtocolTCP
	}
	return p
}

// carryTransitions sets each condition's LastTransitionTime: kept from
// the previous status while its status holds, now when it changed, so
// that an idle controller rewrites nothing.
func carryTransitions(conds, prev []store.Condition, now time.Time) []store.Condition {
	for i := range conds {
		conds[i].LastTransitionTime = now
		for _, p := range prev {
			if p.Type == conds[i].Type && p.Status == conds[i].Status {
				conds[i].LastTransitionTime = p.LastTransitionTime
			}
		}
	}
	return conds
}

// sameServiceStatus reports whether two statuses say the same, whatever
// their write time and format version.
func sameServiceStatus(a, b *store.ServiceStatus) bool {
	norm := func(s store.ServiceStatus) store.ServiceStatus {
		s.Updated, s.Version = time.Time{}, 0
		if len(s.NodePorts) == 0 {
			s.NodePorts = nil
		}
		if len(s.Endpoints) == 0 {
			s.Endpoints = nil
		}
		for i := range s.Endpoints {
			if len(s.Endpoints[i].Ports) == 0 {
				s.Endpoints[i].Ports = nil
			}
		}
		if len(s.Conditions) == 0 {
			s.Conditions = nil
		}
		if len(s.Published) == 0 {
			s.Published = nil
		}
		if len(s.HostHeld) == 0 {
			s.HostHeld = nil
		}
		return s
	}
	x, y := norm(*a), norm(*b)
	x.Endpoints = slices.Clone(x.Endpoints)
	y.Endpoints = slices.Clone(y.Endpoints)
	return reflect.DeepEqual(x, y)
}

// logPlan logs a helper plan's ops.
func (s *Controller) logPlan(key string, plan HelperPlan) {
	for _, op := range plan.Ops {
		s.log.Info("planned", "service", key, "op", op.Kind, "container", op.Name, "reason", op.Reason, "cause", op.Cause, "generation", op.Generation)
	}
}

// execute carries out a helper plan in order, each op one Docker call (a
// create is followed by its start). It returns what the helper now
// acknowledges when a create or a push succeeded. render renders the
// wanted config with a generation: a push the helper refuses as older
// than what it holds is made again at once with the next one.
func (s *Controller) execute(ctx context.Context, key string, plan HelperPlan, content string, render func(int64) string) (*pushedConfig, error) {
	var done *pushedConfig
	started := false // a helper (re)started by this plan: its control socket may not listen yet
	created := ""    // the ID of the helper this plan created
	for _, op := range plan.Ops {
		started = started || op.Kind == HelperStart || op.Kind == HelperUnpause
		if op.Kind == HelperStart || op.Kind == HelperUnpause {
			s.noteStarted(op.ContainerID)
		}
		var err error
		switch op.Kind {
		case HelperRemove:
			if err = s.docker.RemoveContainer(ctx, op.ContainerID); err != nil && !errors.Is(err, dockerx.ErrNotFound) {
				err = fmt.Errorf("remove %s: %w", op.Name, err)
			} else {
				err = nil
			}
		case HelperStart:
			if err = s.docker.StartContainer(ctx, op.ContainerID); err != nil {
				err = fmt.Errorf("start %s: %w", op.Name, err)
			}
		case HelperUnpause:
			if err = s.docker.UnpauseContainer(ctx, op.ContainerID); err != nil {
				err = fmt.Errorf("unpause %s: %w", op.Name, err)
			}
		case HelperCreate:
			var id string
			id, err = s.create(ctx, op)
			if errors.Is(err, dockerx.ErrConflict) && removedName(plan, op) {
				// The container this one replaces still holds the name
				// while Docker removes it.
				return done, errNameBeingFreed
			}
			if err == nil {
				created = id
				s.noteStarted(id)
				done = &pushedConfig{ContainerID: id, Content: content, Generation: op.Generation}
				if op.Stub {
					// It serves nothing yet: the push that follows does.
					done.Content = ""
				}
			}
		case HelperPush:
			if op.ContainerID == "" {
				// To the helper this plan created (with a stub config).
				op.ContainerID, started = created, true
			}
			var ack helperapi.Ack
			ack, err = s.pushAfter(ctx, key, op, started || s.justStarted(op.ContainerID))
			for i := 0; i < staleRetries && render != nil; i++ {
				// The helper holds a newer generation than this controller
				// knew (a status lost, or a state directory restored from a
				// backup): a state the controller recovers from by itself,
				// in this sync, with nothing to report.
				var stale *staleError
				if !errors.As(err, &stale) {
					break
				}
				s.log.Info("helper holds a newer generation than its status; pushing again with the next one", "service", key,
					"container", op.Name, "pushed", op.Generation, "held", stale.held)
				op.Generation = max(op.Generation, stale.held) + 1
				op.Config = render(op.Generation)
				ack, err = s.push(ctx, key, op)
			}
			if err == nil {
				done = &pushedConfig{ContainerID: op.ContainerID, Content: content, Generation: op.Generation, Unbound: ack.Unbound}
			}
		default:
			err = fmt.Errorf("%s %s: unknown op", op.Kind, op.Name)
		}
		if err != nil {
			return done, &helperOpError{Kind: op.Kind, err: err}
		}
		if done != nil {
			s.mu.Lock()
			s.pushed[key] = done
			s.mu.Unlock()
		}
	}
	return done, nil
}

// helperOpError is a helper plan's execution failing at an op of Kind.
type helperOpError struct {
	Kind HelperOpKind
	err  error
}

func (e *helperOpError) Error() string { return e.err.Error() }
func (e *helperOpError) Unwrap() error { return e.err }

// errNameBeingFreed: a create found its name still held by the container
// the plan removed; the key is synced again shortly.
var errNameBeingFreed = errors.New("the name is still being freed")

// nameRetry is how soon a create waiting for a name is tried again.
const nameRetry = 200 * time.Millisecond

// removedName reports whether the plan removed a container of op's name
// before op.
func removedName(plan HelperPlan, op HelperOp) bool {
	for _, o := range plan.Ops {
		if o.ID < op.ID && o.Kind == HelperRemove && o.Name == op.Name {
			return true
		}
	}
	return false
}

// create makes and starts a helper from the plan's request, with the
// helper image.
func (s *Controller) create(ctx context.Context, op HelperOp) (string, error) {
	if op.Request == nil {
		return "", fmt.Errorf("create %s: the plan names no helper", op.Name)
	}
	// As for holders (ensureHolderImage): the sweep must look at helper
	// images again, and must not collect this one under the create.
	s.cfg.HelperImageInUse()
	img, err := s.docker.EnsureHelperImage(ctx, s.cfg.Instance)
	s.cfg.HelperImageInUse()
	if err != nil {
		return "", fmt.Errorf("helper image: %w", err)
	}
	// Made again if the sweep removed it while nothing was left.
	if s.cfg.EnsureNetwork != nil {
		if err := s.cfg.EnsureNetwork(ctx); err != nil {
			return "", err
		}
	}
	req := *op.Request
	req.Image = img
	id, err := s.docker.CreateHelper(ctx, req)
	if errors.Is(err, dockerx.ErrConflict) {
		return "", fmt.Errorf("create %s: the name is held by a container that is not this instance's helper: %w", op.Name, err)
	}
	if err != nil {
		return "", fmt.Errorf("create %s: %w", op.Name, err)
	}
	if err := s.docker.StartContainer(ctx, id); err != nil {
		return "", fmt.Errorf("start %s: %w", op.Name, err)
	}
	return id, nil
}

// startRetries and startRetryDelay bound how long a push to a helper
// just started waits for its control socket.
const (
	startRetries    = 10
	startRetryDelay = 200 * time.Millisecond
)

// noteStarted remembers that this controller started helper id now
// (justStarted); what is older than the start window is forgotten.
func (s *Controller) noteStarted(id string) {
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, at := range s.startedAt {
		if now.Sub(at) > startWindow {
			delete(s.startedAt, k)
		}
	}
	s.startedAt[id] = now
}

// justStarted reports whether this controller started helper id within
// the start window: a sync after the one that started it (the first
// endpoints of a new Service turning ready) may push before its control
// socket listens, and waits for it as the starting sync does, rather
// than failing and waiting for its backoff.
func (s *Controller) justStarted(id string) bool {
	s.mu.Lock()
	at, ok := s.startedAt[id]
	s.mu.Unlock()
	return ok && s.cfg.Now().Sub(at) <= startWindow
}

// startWindow is how long after its start a helper's push is tried again
// while nothing answers: as long as a starting sync tries.
const startWindow = startRetries * startRetryDelay

// pushAfter pushes; to a helper this plan just started, it tries again a
// few times while nothing answers yet, rather than failing the sync (and
// flapping the Service's ProxyFailure condition) on every start.
func (s *Controller) pushAfter(ctx context.Context, key string, op HelperOp, started bool) (helperapi.Ack, error) {
	ack, err := s.push(ctx, key, op)
	for i := 0; started && i < startRetries && errors.Is(err, errNoAnswer); i++ {
		select {
		case <-ctx.Done():
			return ack, err
		case <-time.After(startRetryDelay):
		}
		ack, err = s.push(ctx, key, op)
	}
	return ack, err
}

// staleError is a push the helper refused: it holds generation held, newer
// than the one pushed.
type staleError struct {
	held int64
	err  error
}

func (e *staleError) Error() string { return e.err.Error() }
func (e *staleError) Unwrap() error { return e.err }

// staleRetries bounds the pushes made again in one sync after a helper
// said it holds a newer generation: one suffices unless another writer
// pushes to it meanwhile.
const staleRetries = 3

// errNoAnswer is a push the helper did not apply (helperapi.ExitFailed):
// nothing answered on its control socket, or it refused the config.
var errNoAnswer = errors.New("not applied")

// push execs `helper push --config -` in a running helper, the config on
// stdin (a config of thousands of endpoints exceeds an argument's 128
// KiB: execve would fail with E2BIG); exit 0 is the ack. A
// helper that holds a newer generation than the controller knew (its
// status was lost) says which: the next push uses a later one.
func (s *Controller) push(ctx context.Context, key string, op HelperOp) (helperapi.Ack, error) {
	cmd := []string{helperapi.Binary, "helper", helperapi.ModePush, "--config", "-"}
	if op.ControlSocket != "" {
		cmd = append(cmd, "--control-socket", op.ControlSocket)
	}
	code, out, err := s.docker.ExecInput(ctx, op.ContainerID, cmd, []byte(op.Config), pushTimeout)
	if err != nil {
		return helperapi.Ack{}, fmt.Errorf("push to %s: %w", op.Name, err)
	}
	switch code {
	case helperapi.ExitOK:
		// The ack; a fake or an older helper may print none.
		var ack helperapi.Ack
		_ = json.Unmarshal([]byte(firstLine(out)), &ack)
		return ack, nil
	case helperapi.ExitStale:
		var ack helperapi.Ack // its generation: 0 when it did not say
		if json.Unmarshal([]byte(firstLine(out)), &ack) == nil && ack.Generation > 0 {
			s.mu.Lock()
			s.floor[key] = max(s.floor[key], ack.Generation)
			s.mu.Unlock()
		}
		return helperapi.Ack{}, &staleError{held: ack.Generation, err: fmt.Errorf("push generation %d to %s: it holds a newer one (%s); pushing again with a later one", op.Generation, op.Name, firstLine(out))}
	}
	if code == helperapi.ExitFailed {
		return helperapi.Ack{}, fmt.Errorf("push to %s: %w (%s)", op.Name, errNoAnswer, firstLine(out))
	}
	return helperapi.Ack{}, fmt.Errorf("push to %s: exit %d: %s", op.Name, code, firstLine(out))
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return line
}

// sweep queues every Service of the store (live, or deleted with a
// proxy left) and the DNS server, and reports — or with PruneOrphans
// removes — proxies of Services this state directory never knew.
func (s *Controller) sweep(ctx context.Context) error {
	if !s.tracker.Synced() {
		return nil // the first feed of the tracker queues a sweep
	}
	recs, errs := s.store.ListServices()
	for _, err := range errs {
		s.log.Error("unreadable service record", "err", err)
	}
	proxies, err := s.listHelpers(ctx, dockerx.RoleProxy)
	if err != nil {
		return err
	}
	hasProxy := map[string]bool{}
	for _, p := range proxies {
		hasProxy[proxyKey(&p)] = true
	}
	known := map[string]bool{}
	for _, r := range recs {
		key := serviceKey(&r.Service)
		known[key] = true
		if !r.Deleted || hasProxy[key] {
			s.loop.Add(reconcile.Request{Key: key})
		}
	}
	s.loop.Add(reconcile.Request{Key: DNSKey})
	s.loop.Add(reconcile.Request{Key: GatewayKey})
	s.loop.Add(reconcile.Request{Key: PublisherKey})
	for _, p := range proxies {
		key := proxyKey(&p)
		if known[key] {
			continue
		}
		ns, name, _ := strings.Cut(key, "/")
		if _, err := s.store.LookupService(ns, name); !errors.Is(err, store.ErrNotFound) {
			continue // unreadable, or applied since the list: never an orphan
		}
		if err := s.handleOrphan(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

func (s *Controller) handleOrphan(ctx context.Context, ct dockerx.Container) error {
	return s.cfg.Orphan(ctx, ct, s.docker.RemoveContainer, "proxy", "service", "container", ct.Name, "service", proxyKey(&ct))
}

// serviceOwners maps a helper's event to its key: a proxy's to its
// Service (from its name, INSTANCE_NAME.NS_svc: proxyName), the DNS server's to DNSKey.
func Owners(instance string) reconcile.OwnerMapper {
	return func(ev dockerx.Event) []reconcile.Request {
		switch {
		case ev.Down:
			return nil
		case ev.Gap:
			return []reconcile.Request{{Key: SweepKey}}
		case ev.Role == dockerx.RoleDNS:
			return []reconcile.Request{{Key: DNSKey}}
		case ev.Role == dockerx.RoleGateway:
			return []reconcile.Request{{Key: GatewayKey}}
		case ev.Role == dockerx.RolePublisher:
			return []reconcile.Request{{Key: PublisherKey}}
		case ev.Role == dockerx.RoleProxy:
			rest, ok := strings.CutPrefix(ev.Name, instance+"_")
			rest, ok2 := strings.CutSuffix(rest, "_svc")
			name, ns, ok3 := strings.Cut(rest, ".")
			if ok && ok2 && ok3 && name != "" && ns != "" {
				return []reconcile.Request{{Key: ns + "/" + name}}
			}
			return []reconcile.Request{{Key: SweepKey}}
		}
		return nil
	}
}

// allocator holds every live Service's addresses and host ports, so that
// two are never given the same: loaded from the statuses at first use,
// then kept up to date by each sync under its lock.
type allocator struct {
	mu     sync.Mutex
	loaded bool
	held   map[string]serviceAllocation
	// waiting are the Services refused an address or a port (their last
	// conditions): when another Service frees one, they are synced again
	// at once rather than at the next resync.
	waiting map[string]bool
	// assigned are the Services a sync of this controller allocated for
	// with the network's layout known, and next is closed at the next
	// such allocation (serviceenv.go).
	assigned map[string]bool
	next     chan struct{}
	// portWaiters are the deployments waiting for a host port a Service
	// claimed first (hostPortWaits): synced again when one is released.
	portWaiters map[string]bool
	// envUntil is, per Service without an address, until when creates
	// wait for it (serviceenv.go).
	envUntil map[string]time.Time
}

// waitsForRelease reports whether a Service's conditions say it lacks an
// address or a host port that another Service may free.
func waitsForRelease(conds []store.Condition) bool {
	return slices.ContainsFunc(conds, func(c store.Condition) bool {
		return c.Type == ServicePortConflict || (c.Type == ServiceProxyFailure &&
			(c.Reason == ReasonClusterIPInUse || c.Reason == ReasonClusterIPsExhausted || c.Reason == ReasonNodePortsExhausted))
	})
}

// frees reports whether going from old to next gives up an address or a
// port another Service could take.
func frees(old, next serviceAllocation) bool {
	if old.ClusterIP != "" && old.ClusterIP != manifests.ClusterIPNone && old.ClusterIP != next.ClusterIP {
		return true
	}
	for _, p := range old.NodePorts {
		if !slices.Contains(next.NodePorts, p) {
			return true
		}
	}
	for _, h := range old.Published {
		if !slices.Contains(next.Published, h) {
			return true
		}
	}
	return false
}

// waitingLocked are the Services other than key waiting for a release.
func (a *allocator) waitingLocked(key string) []string {
	var out []string
	for k := range a.waiting {
		if k != key {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// assign allocates for one Service against every other's holdings, and
// records the outcome.
func (a *allocator) assign(st ServiceStore, in allocInput) allocation {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.loadLocked(st)
	in.Others = make([]serviceAllocation, 0, len(a.held))
	for k, h := range a.held {
		if k != in.Key {
			in.Others = append(in.Others, h)
		}
	}
	slices.SortFunc(in.Others, func(x, y serviceAllocation) int { return strings.Compare(x.Key, y.Key) })
	in.Reserved = func() map[netip.Addr]string { return explicitClusterIPs(st, in.Key) }
	out := allocate(in)
	nps := nodePortNumbers(in.Service, nil)
	for _, np := range out.NodePorts {
		nps = append(nps, np.NodePort)
	}
	slices.Sort(nps)
	next := serviceAllocation{Key: in.Key, Created: in.Created, ClusterIP: out.ClusterIP,
		NodePorts: slices.Compact(nps), Published: publishedOf(out.Bindings), Claims: claimsOf(out.NodePorts, in.Address)}
	if old, ok := a.held[in.Key]; ok && in.KeepPorts {
		// Its host ports not judged: what it held is held still.
		next.Published, next.Claims = old.Published, old.Claims
	}
	if old, ok := a.held[in.Key]; ok && frees(old, next) {
		out.Freed = a.waitingLocked(in.Key)
	}
	if old := a.held[in.Key]; releasesClaims(old, next) {
		out.FreedDeployments = a.takePortWaitersLocked()
	}
	a.held[in.Key] = next
	if in.Layout != nil {
		a.noteAssignedLocked(in.Key) // serviceenv.go
	}
	if waitsForRelease(out.Conditions) {
		a.waiting[in.Key] = true
	} else {
		delete(a.waiting, in.Key)
	}
	return out
}

// loadLocked reads every live Service's status once: the addresses and
// ports they were given are theirs before any of them is synced.
func (a *allocator) loadLocked(st ServiceStore) {
	if a.loaded {
		return
	}
	a.loaded = true
	recs, _ := st.ListServices()
	for _, r := range recs {
		if r.Deleted {
			continue
		}
		svc := defaultService(&r.Service)
		key := serviceKey(svc)
		prev, err := st.ReadServiceStatus(svc.Metadata.NamespaceOrDefault(), svc.Metadata.Name)
		if err != nil || prev == nil {
			prev = &store.ServiceStatus{}
		}
		// Only an address given is held: one a Service names but was
		// refused (it is another's) must not make the holder move. Named
		// addresses are kept from new allocations by explicitClusterIPs.
		h := serviceAllocation{Key: key, Created: r.Created, ClusterIP: prev.ClusterIP, NodePorts: nodePortNumbers(svc, prev), Claims: claimsOf(prev.NodePorts, "")}
		if publishes(svc) {
			for _, p := range svc.Spec.Ports {
				ports := []int32{p.Port, p.NodePort} // LoadBalancer: its port and the nodePort given
				if svc.Spec.Type == manifests.ServiceTypeNodePort {
					ports = []int32{p.NodePort}
					for _, np := range prev.NodePorts {
						if ports[0] == 0 && np.Port == p.Port && np.Protocol == p.Protocol {
							ports[0] = np.NodePort
						}
					}
				}
				for _, port := range ports {
					if port != 0 && !slices.Contains(h.Published, hostPort{Port: port, Protocol: p.Protocol}) {
						h.Published = append(h.Published, hostPort{Port: port, Protocol: p.Protocol})
					}
				}
			}
		}
		a.held[key] = h
		if waitsForRelease(prev.Conditions) {
			a.waiting[key] = true
		}
	}
}

// explicitClusterIPs are the addresses the store's live Services other
// than key name in spec.clusterIP, read when an address is to be chosen:
// a Service of the same apply not synced yet reserves its address too.
func explicitClusterIPs(st ServiceStore, key string) map[netip.Addr]string {
	recs, _ := st.ListServices()
	out := map[netip.Addr]string{}
	for _, r := range recs {
		if r.Deleted {
			continue
		}
		// Defaulted as allocate sees it: an address named in
		// spec.clusterIPs only is named too.
		svc := defaultService(&r.Service)
		k := serviceKey(svc)
		if a, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil && k != key {
			out[a] = k
		}
	}
	return out
}

// release forgets a Service's holdings and returns the Services waiting
// for an address or a port, which may now take it, and the deployments
// waiting for a host port it published.
func (a *allocator) release(key string) (services, deployments []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	old, ok := a.held[key]
	delete(a.held, key)
	delete(a.waiting, key)
	// A Service applied again under the name is a new one: creates wait
	// for its address again (serviceenv.go).
	delete(a.assigned, key)
	delete(a.envUntil, key)
	if ok && frees(old, serviceAllocation{}) {
		services = a.waitingLocked(key)
	}
	if releasesClaims(old, serviceAllocation{}) {
		deployments = a.takePortWaitersLocked()
	}
	return services, deployments
}

// waitingForPorts returns the Services waiting for an address or a port
// and the deployments waiting for a host port: another publisher (the
// gateway) gave one up, which they may now take.
func (a *allocator) waitingForPorts() (services, deployments []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.waitingLocked(""), a.takePortWaitersLocked()
}

// clusterIP is a Service's address as allocated ("" none yet).
func (a *allocator) clusterIP(st ServiceStore, key string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.loadLocked(st)
	return a.held[key].ClusterIP
}

// NeedHelpers reports whether helper images may be in use or needed soon
// by the Services (nil: no Services run): the DNS server runs while any
// Service or deployment is live (deployments: the sweep's records).
func (s *Controller) NeedHelpers(deployments []*store.Record) bool {
	if s == nil {
		return false
	}
	for _, d := range deployments {
		if !d.Deleted {
			return true
		}
	}
	recs, errs := s.store.ListServices()
	if len(errs) > 0 {
		return true
	}
	for _, r := range recs {
		if !r.Deleted {
			return true
		}
	}
	return false
}
