package services

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/gatewayroutes"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/reconcile"
	"github.com/dockctl/dockctl/store"
)

// The gateway's data plane (docs/design.md §10, the gateway): one gateway
// helper per instance (INSTANCE_gateway, role gateway), a helper like a
// proxy (serviceplan.go), publishing the ports of the compiled table on
// the service address. The gateway controller (reconciler/gateway) hands
// it each compiled table (ServeGateway); this side resolves the table's
// backends to the ready endpoints of their Services straight from the
// Tracker (no hop through the Services' proxies) and its certificate
// names to kubernetes.io/tls Secrets, and pushes the result. The helper
// runs while the table serves a route, and is removed once none is left.
//
// The gateway follows each backend Service under a key of its own,
// GatewayKey+"ns/name", in the Tracker: a change of a backend's pods
// queues it (and a sync re-pushes), and a pod's drain waits until the
// gateway acknowledged a config without it, as it waits for proxies.
//
// The config holds TLS keys: the helper is created with the stub config
// (nothing to serve) and every config travels on the push's stdin only.

// GatewayKey is the gateway's key on the services loop, and the prefix
// of its backends' keys in the Tracker (":" is in no namespace, so no
// Service key can take either form).
const GatewayKey = "gateway:"

// gatewayName is the container name of the instance's gateway helper.
func gatewayName(instance string) string { return instance + "_gateway" }

// gatewayState is what the controller knows of the gateway.
type gatewayState struct {
	table       *gatewayroutes.Table // nil: none handed yet
	tableGen    int64                // the table's generation (the gateway controller's)
	acked       int64                // the table generation the helper acknowledged last; 0: none
	gen         int64                // the helper's config generation
	backends    map[string]bool      // Service keys the last table names
	refused     string               // why no helper runs though routes exist ("": none refused)
	taken       string               // the ports left out, another publishing them ("": none)
	unavailable map[int]string       // each port left out (refused, taken, or not bound by the helper): why
	published   []int                // the ports the helper serves on the host, for the Services' allocation
	hostHeld    []int                // the ports it could not bind, a process of the host holding them: its claim still
	recorded    []int                // hostHeld as the store records it (recallGatewayHostHeld)
	bindRetry   time.Duration        // the wait before ports the helper could not bind are tried again
	notify      func()               // called after an ack of a new table generation
	// known: published is this controller's own judgement, made by a
	// sync with a table handed; until then (a controller that just
	// started) a publishing Service waits while a gateway helper runs
	// (awaitGatewayPorts), and waiters are the Services that did, synced
	// again once it is known.
	known   bool
	waiters map[string]bool
	// looked: runs says whether a gateway helper held its ports when
	// last listed while they are not known — by the gateway's own sync,
	// which its helper's events queue, or else once by a Service's wait
	// — so that the Services' syncs of the wait do not list each.
	looked, runs bool
}

// gatewayPortsWait bounds how long, after the controller started, a
// publishing Service waits for the gateway's ports (awaitGatewayPorts):
// the gateway controller hands its first table at its start, but a
// controller with none to hand (or failing to) must not keep the
// Services' host ports unjudged for ever.
const gatewayPortsWait = 30 * time.Second

// awaitGatewayPorts is how long a publishing Service's host ports are to
// wait for the gateway's (0: not at all), docs/design.md §10 (published
// ports, the gateway): both bind on the host themselves, so each learns
// the other's ports from this controller's memory only, which a restart
// empties. A gateway helper that runs then still holds its ports, and a
// Service synced before the gateway's first sync would take one of them
// (first come: the gateway came first), then lose it again. So while a
// gateway helper of the instance runs (or is paused) and its ports are
// not known, the Service's host ports wait — their allocation, its
// published ports and the conditions about them left as they are, the
// publisher serving its last config — until the gateway's first sync
// queues it, or gatewayPortsWait after the start. The rest of its sync
// (its proxy, endpoints, DNS record, drains) does not wait. The gateway never waits for the Services (it reads
// the ports of those not synced yet from their stored status,
// unseenPublishedHolders), so neither waits on the other.
func (s *Controller) awaitGatewayPorts(ctx context.Context, key string) (time.Duration, error) {
	s.mu.Lock()
	known, looked := s.gw.known, s.gw.looked
	s.mu.Unlock()
	left := s.started.Add(gatewayPortsWait).Sub(s.cfg.Now())
	if known || left <= 0 {
		return 0, nil
	}
	if !looked {
		helpers, err := s.listHelpers(ctx, dockerx.RoleGateway)
		if err != nil {
			return 0, err
		}
		s.noteGatewayHelpers(helpers, false)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gw.known || !s.gw.runs {
		// Known since (its waiters were queued already), or no gateway
		// helper holds a port.
		return 0, nil
	}
	if s.gw.waiters == nil {
		s.gw.waiters = map[string]bool{}
	}
	if !s.gw.waiters[key] {
		s.gw.waiters[key] = true
		s.log.Info("waiting for the gateway's first sync: its host ports are not known since the start", "service", key, "at most", left.Round(time.Second))
	}
	return left, nil
}

// noteGatewayHelpers records whether one of the gateway helpers listed
// holds its host ports (awaitGatewayPorts): one that runs, or is paused
// (its sockets stay bound); one that exited, or was only created, holds
// none. fresh: a list of the gateway's own sync, which replaces what was
// recorded; else it is kept if recorded already.
func (s *Controller) noteGatewayHelpers(helpers []dockerx.Container, fresh bool) {
	runs := slices.ContainsFunc(helpers, holdsHostPorts)
	s.mu.Lock()
	defer s.mu.Unlock()
	if fresh || !s.gw.looked {
		s.gw.looked, s.gw.runs = true, runs
	}
}

// ServeGateway hands the gateway's data plane a compiled table of
// generation gen and queues its sync; notify is called (outside any lock)
// once the helper acknowledged a table generation for the first time, so
// that the gateway controller reports it Programmed.
func (s *Controller) ServeGateway(t *gatewayroutes.Table, gen int64, notify func()) {
	s.mu.Lock()
	s.gw.table, s.gw.tableGen, s.gw.notify = t, gen, notify
	s.mu.Unlock()
	s.loop.Add(reconcile.Request{Key: GatewayKey})
}

// GatewayProgrammed reports whether the gateway helper serves the table of
// generation gen (or a later one).
func (s *Controller) GatewayProgrammed(gen int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return gen > 0 && s.gw.acked >= gen
}

// GatewayRefused says why no gateway helper runs although routes exist
// ("": none refused): a port below 1024 without --allow-host-ports.
func (s *Controller) GatewayRefused() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gw.refused
}

// GatewayUnavailable are the ports the gateway helper does not publish,
// with why: below 1024 without --allow-host-ports (then no helper runs),
// or published by another.
func (s *Controller) GatewayUnavailable() map[int]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.gw.unavailable)
}

// servesRoutes reports whether a table serves any route.
func servesRoutes(t *gatewayroutes.Table) bool {
	if t == nil {
		return false
	}
	for _, p := range t.Config.Ports {
		for _, h := range p.Hosts {
			if len(h.Routes) > 0 {
				return true
			}
		}
	}
	return false
}

// gatewayPorts judges each port of the table before the gateway binds it
// on the service address. A port below 1024 passes the host-port gate
// first (§13, --allow-host-ports), as a host port does: refused names the
// ports that did not. A port another already publishes there (a Service
// of this instance, any container of the daemon, a deployment's hostPort:
// holders) is left out, named in taken: the one that publishes it first
// keeps it, as between Services. unavailable maps each port left out to
// why, for its listeners' status; the helper serves the others.
func (s *Controller) gatewayPorts(cfg helperapi.GatewayConfig, holders []portHolder) (refused, taken []string, unavailable map[int]string) {
	unavailable = map[int]string{}
	for _, p := range cfg.Ports {
		if p.Port < 1024 && !s.cfg.Allow.AllowsHostPort(p.Port) {
			refused = append(refused, fmt.Sprintf("port %d needs %s", p.Port, manifests.FlagAllowHostPorts))
			unavailable[p.Port] = refused[len(refused)-1]
			continue
		}
		hp := hostPort{IP: s.address, Port: int32(p.Port), Protocol: helperapi.TCP}
		if i := slices.IndexFunc(holders, func(h portHolder) bool { return h.Port.overlaps(hp) }); i >= 0 {
			taken = append(taken, fmt.Sprintf("host port %s is published by %s", hp, holders[i].Owner))
			unavailable[p.Port] = taken[len(taken)-1]
		}
	}
	return refused, taken, unavailable
}

// gatewayEndpoints resolves a backend to the ready endpoints of its
// Service's port, from the Tracker; it also watches the Service under the
// gateway's key, before reading, so that no change falls between.
func (s *Controller) gatewayEndpoints(watched map[string]trackedService) func(gatewayroutes.BackendRef) []helperapi.Endpoint {
	return func(ref gatewayroutes.BackendRef) []helperapi.Endpoint {
		rec, err := s.store.LookupService(ref.Namespace, ref.Name)
		if err != nil || rec.Deleted {
			return []helperapi.Endpoint{}
		}
		svc := defaultService(&rec.Service)
		key := GatewayKey + serviceKey(svc)
		s.tracker.watch(key, svc)
		watched[key] = trackedServiceOf(svc)
		idx := slices.IndexFunc(svc.Spec.Ports, func(p manifests.ServicePort) bool { return p.Port == ref.Port })
		if idx < 0 {
			return []helperapi.Endpoint{}
		}
		sp := svc.Spec.Ports[idx]
		ready, _, _ := s.tracker.endpointsAt(svc)
		eps := []helperapi.Endpoint{}
		for _, ep := range ready {
			for _, p := range ep.Ports {
				if p.Name == sp.Name && p.Protocol == sp.Protocol {
					eps = append(eps, helperapi.Endpoint{IP: ep.IP, Port: int(p.Port), Pod: ep.Pod})
				}
			}
		}
		return eps
	}
}

// gatewayCertificate reads a kubernetes.io/tls Secret's chain and key.
func (s *Controller) gatewayCertificate(ref gatewayroutes.ObjectRef) ([]byte, []byte, bool) {
	if s.cfg.Secrets == nil {
		return nil, nil, false
	}
	sec, err := s.cfg.Secrets(ref.Namespace, ref.Name)
	if err != nil || sec == nil || sec.Type != manifests.SecretTypeTLS {
		return nil, nil, false
	}
	cert, key := sec.Data[manifests.SecretTLSCertKey], sec.Data[manifests.SecretTLSPrivateKeyKey]
	if len(cert) == 0 || len(key) == 0 {
		return nil, nil, false
	}
	return cert, key, true
}

// The gateway's claims on ports a process of the host holds (hostHeld)
// are in the store (gateway.json), as a Service's are in its status: the
// gateway helper's state file is on a tmpfs, and a helper that exited
// holds nothing, so after a restart that finds it exited no Service
// waits for the gateway's first sync (awaitGatewayPorts), and a
// Service that came after the gateway would take the port for itself
// (docs/design.md §10: a port the gateway claimed first that a process
// of the host holds stays its claim). The recorded claims are the
// gateway's holders until its first sync judges them again.

// recallGatewayHostHeld reads the gateway's recorded claims, at the
// controller's start. One that cannot be read claims nothing: the
// gateway's first sync finds its unbound ports again.
func (s *Controller) recallGatewayHostHeld() {
	g, err := s.store.ReadGateway()
	if err != nil {
		s.log.Warn("unreadable gateway status: its claims on ports the host holds are found again at its first sync", "err", err)
		return
	}
	if g == nil || len(g.HostHeld) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gw.hostHeld, s.gw.recorded = slices.Clone(g.HostHeld), slices.Clone(g.HostHeld)
}

// recordGatewayHostHeld records the gateway's claims its sync judged.
func (s *Controller) recordGatewayHostHeld(ports []int) {
	if err := s.store.WriteGateway(&store.GatewayStatus{HostHeld: ports}); err != nil {
		s.log.Error("write gateway status", "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gw.recorded = ports
}

// syncGateway is one observe → plan → execute pass for the gateway helper.
func (s *Controller) syncGateway(ctx context.Context) (reconcile.Result, error) {
	if !s.tracker.Synced() {
		return reconcile.Result{}, nil // the first feed queues a sweep, which queues the gateway
	}
	observed, err := s.listHelpers(ctx, dockerx.RoleGateway)
	if err != nil {
		return reconcile.Result{}, err
	}
	s.noteGatewayHelpers(observed, true)
	s.mu.Lock()
	table, tableGen := s.gw.table, s.gw.tableGen
	pushed := s.pushed[GatewayKey]
	gen := max(s.gw.gen, s.floor[GatewayKey])
	if pushed != nil {
		gen = max(gen, pushed.Generation)
	}
	s.mu.Unlock()
	if table == nil {
		// No table handed yet (a controller that just started): what
		// runs is left as it is, serving its last config, until the
		// gateway controller's first sync says what to serve.
		return reconcile.Result{}, nil
	}

	watched := map[string]trackedService{}
	pin := helperPlanInput{Observed: observed, Pushed: pushed, Generation: gen, Unwanted: "no route is served"}
	var refused, taken []string
	var unavailable map[int]string
	var version int64
	if servesRoutes(table) {
		// Every other publisher of the daemon, this gateway excepted
		// (this instance's proxies included: a Service's port is its own).
		holders, err := s.portHolders(ctx, dockerx.RoleGateway)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("gateway: %w", err)
		}
		// The version before the endpoints are read: an ack covers it.
		version = s.tracker.currentVersion()
		cfg := table.Resolve(0, gatewayroutes.Resolver{Endpoints: s.gatewayEndpoints(watched), Certificate: s.gatewayCertificate})
		refused, taken, unavailable = s.gatewayPorts(cfg, holders)
		if len(refused) == 0 {
			// It binds on the host what it serves: not a port left out.
			cfg.Ports = slices.DeleteFunc(cfg.Ports, func(p helperapi.GatewayPort) bool { _, out := unavailable[p.Port]; return out })
			content, render := renderer(cfg, func(c *helperapi.GatewayConfig, g int64) { c.Generation = g })
			pin.Want = s.hostHelperWant(gatewayName(s.cfg.Instance), dockerx.RoleGateway, helperapi.ModeGateway, content, render,
				renderStub(helperapi.GatewayConfig{Ports: []helperapi.GatewayPort{}}), "routes, endpoints or certificates changed", &pin)
			pin.Want.Hash, pin.Want.StubAlways = gatewayConfigHash(s.address), true
		} else {
			pin.Unwanted = "ports refused: " + strings.Join(refused, ", ")
		}
	}
	resolved := maps.Clone(watched)
	if pin.Want == nil {
		// No gateway routes to any pod: no drain is to wait for it.
		clear(watched)
	}
	plan, done, wait, execErr := s.runHelperPlan(ctx, GatewayKey, pin)
	s.mu.Lock()
	var notify func()
	if done != nil {
		s.gw.gen = max(s.gw.gen, done.Generation)
	}
	// The ports the helper could not bind (a process of the host holds
	// them), as its last ack said; the others it serves.
	var unbound []helperapi.UnboundPort
	if p := s.pushed[GatewayKey]; pin.Want != nil && p != nil && p.Content != "" {
		unbound = p.Unbound
	}
	for _, u := range unbound {
		if unavailable == nil {
			unavailable = map[int]string{}
		}
		unavailable[u.Port] = fmt.Sprintf("host port %s:%d cannot be bound (a process of the host holds it?): %s", s.address, u.Port, u.Error)
	}
	gave := slices.Concat(s.gw.published, s.gw.hostHeld)
	if pin.Want == nil || plan.Serves {
		// Else its helper is being replaced or restarted: it gave up
		// no port, and its claims stand until it serves again.
		s.gw.published, s.gw.hostHeld = nil, nil
		if pin.Want != nil {
			s.gw.published = servedPorts(table.Config, unavailable)
		}
		for _, u := range unbound {
			// Not a port a Service was given since the holders were read:
			// the publisher may be what holds it, and that Service's it is.
			if !s.servicePublishesLocked(u.Port) {
				s.gw.hostHeld = append(s.gw.hostHeld, u.Port)
			}
		}
	}
	gave = slices.DeleteFunc(gave, func(p int) bool {
		return slices.Contains(s.gw.published, p) || slices.Contains(s.gw.hostHeld, p)
	})
	var waiters []string
	if !s.gw.known && execErr == nil && !wait {
		// Its ports are this sync's judgement: the Services waiting
		// for them (awaitGatewayPorts) may publish now.
		s.gw.known = true
		waiters = slices.Sorted(maps.Keys(s.gw.waiters))
		s.gw.waiters = nil
	}
	retry := time.Duration(0)
	if len(unbound) > 0 {
		s.gw.bindRetry = min(max(2*s.gw.bindRetry, gatewayBindRetry), gatewayBindRetryMax)
		retry = s.gw.bindRetry
	} else {
		s.gw.bindRetry = 0
	}
	if execErr == nil && !wait && plan.Serves && tableGen > s.gw.acked {
		s.gw.acked, notify = tableGen, s.gw.notify
	}
	if pin.Want == nil && execErr == nil {
		delete(s.pushed, GatewayKey)
		if s.gw.acked != 0 {
			s.gw.acked, notify = 0, s.gw.notify // nothing serves: no longer Programmed
		}
	}
	record, changed := slices.Clone(s.gw.hostHeld), !slices.Equal(s.gw.hostHeld, s.gw.recorded)
	wasRefused, wasTaken := s.gw.refused, s.gw.taken
	s.gw.refused = strings.Join(refused, ", ")
	s.gw.taken = strings.Join(taken, "; ")
	nowTaken := s.gw.taken
	if !maps.Equal(unavailable, s.gw.unavailable) {
		// The listeners' status changes: the gateway controller reports it.
		s.gw.unavailable, notify = unavailable, s.gw.notify
	}
	old := s.gw.backends
	s.gw.backends = map[string]bool{}
	for k := range watched {
		s.gw.backends[strings.TrimPrefix(k, GatewayKey)] = true
	}
	s.mu.Unlock()
	if changed {
		s.recordGatewayHostHeld(record)
	}
	if s.gw.refused != "" && s.gw.refused != wasRefused {
		s.log.Warn("gateway not run: a port below 1024 is a privileged host port", "refused", s.gw.refused)
	}
	if len(unbound) > 0 {
		s.log.Warn("gateway ports not served: they cannot be bound on the host; tried again", "ports", unboundList(unbound), "retry_in", retry)
	}
	if nowTaken != "" && nowTaken != wasTaken {
		s.log.Warn("gateway ports not published: another publishes them", "taken", nowTaken)
	}
	for k := range old {
		resolved[GatewayKey+k] = trackedService{}
	}
	for k := range resolved {
		if _, ok := watched[k]; !ok {
			s.tracker.forget(k)
		}
	}
	if execErr == nil && !wait && plan.Serves {
		for k := range watched {
			s.tracker.ack(k, version)
		}
	}
	if len(gave) > 0 {
		// A port it gave up may be a waiting Service's or deployment's
		// now, as when a Service gives one up (allocator.release).
		services, deployments := s.alloc.waitingForPorts()
		waiters = append(waiters, services...)
		for _, k := range deployments {
			s.cfg.QueueDeployment(k)
		}
	}
	for _, k := range waiters {
		s.loop.Add(reconcile.Request{Key: k})
	}
	if notify != nil {
		notify()
	}
	if wait {
		return reconcile.Result{RequeueAfter: nameRetry}, nil
	}
	if execErr != nil {
		return reconcile.Result{}, fmt.Errorf("gateway: %w", execErr)
	}
	return reconcile.Result{RequeueAfter: retry}, nil
}

// gatewayBindRetry is the first wait before the gateway is pushed again
// to bind the ports it could not; it doubles up to gatewayBindRetryMax
// while one stays held. Short, since the usual holder is the container it
// replaced, whose port Docker is releasing.
const (
	gatewayBindRetry    = time.Second
	gatewayBindRetryMax = 5 * time.Minute
)

// hostHelperArgs are the serving flags of a helper on the host's network
// (the gateway, the publisher; docs/design.md §10): its ports on the
// service address only, a port it cannot bind reported rather than
// failing the push, and its control socket a file of its own container
// (an abstract socket of the host's namespace would take pushes from any
// process of the host).
func hostHelperArgs(address string) []string {
	return []string{"--listen-host", address, "--host-ports", "--control-socket", helperapi.HostControlSocket}
}

// unboundList renders unbound ports for a log or a cause: "80/TCP, 443/TCP".
func unboundList(u []helperapi.UnboundPort) string {
	parts := make([]string, len(u))
	for i, p := range u {
		parts[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
	}
	return strings.Join(parts, ", ")
}

// holdsHostPorts reports whether a helper on the host's network holds its
// sockets: one that runs, or is paused (its process and sockets stay); one
// that exited, restarts, or was only created holds none.
func holdsHostPorts(c dockerx.Container) bool {
	return c.State == dockerx.StateRunning || c.State == dockerx.StatePaused
}

// servicePublishesLocked reports whether a Service's last sync gave it
// TCP host port port (notePublished); under s.mu.
func (s *Controller) servicePublishesLocked(port int) bool {
	for _, bs := range s.pub.bindings {
		if slices.ContainsFunc(bs, func(b dockerx.PortBinding) bool {
			return b.HostPort == port && protocolOf(b.Protocol) == manifests.ProtocolTCP
		}) {
			return true
		}
	}
	return false
}

// servedPorts are the table's ports the gateway binds: not left out.
func servedPorts(cfg helperapi.GatewayConfig, unavailable map[int]string) []int {
	var out []int
	for _, p := range cfg.Ports {
		if _, out2 := unavailable[p.Port]; !out2 {
			out = append(out, p.Port)
		}
	}
	return out
}

// gatewayConfigHash covers what the gateway helper is created with and
// cannot change while it runs: the host's network, the service address
// its ports listen on, and the helper protocol. Not its ports, routes,
// endpoints or certificates: pushed (it binds its ports itself).
func gatewayConfigHash(address string) string {
	return configHash(struct {
		Protocol int
		Gateway  int
		Role     string
		Network  string
		Address  string
	}{Protocol: helperProtocolVersion, Gateway: gatewayProtocolVersion, Role: dockerx.RoleGateway, Network: dockerx.NetworkModeHost, Address: address})
}

// gatewayProtocolVersion is the gateway helper's own part of the helper
// protocol (helperProtocolVersion): bumped when only its config's meaning
// changes, so that only the gateway is replaced. 2: it answers ACME
// HTTP-01 challenges (GatewayConfig.ACMEChallenges, docs/design.md §10).
// 3: it runs on the host's network and binds its ports on the service
// address itself, its control socket a file (hostHelperArgs).
const gatewayProtocolVersion = 3
