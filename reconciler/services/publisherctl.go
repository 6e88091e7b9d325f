package services

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/reconcile"
	"github.com/dockctl/dockctl/store"
)

// The publisher (docs/design.md §10, published ports): one helper per
// instance, INSTANCE_publisher (role publisher), on the host's network,
// listening on the service address for every NodePort and LoadBalancer
// port of every Service and forwarding straight to the ready endpoints of
// that Service port — one userspace hop, as Docker's -p, where publishing
// on the Service's proxy made two (docker-proxy, then the proxy). It is
// `helper proxy` with --host-ports, pushed and acknowledged as a proxy.
// The Services' proxies keep their ClusterIPs and publish nothing.
//
// Each Service's sync allocates its host ports as before (allocate: the
// older publisher keeps a port) and notes them here (notePublished); the
// publisher's sync reads the endpoints of each published Service from
// the Tracker under a key of its own, PublisherKey+"ns/name", so that a
// change of its pods queues the publisher and a pod's drain waits until
// the publisher acknowledged a config without it, as for the proxies.
// A port the helper cannot bind is a port a process of the host holds
// (noteHostHeld: the Service reports a PortConflict and it is tried
// again later), unless the replaced proxy of an earlier release still
// publishes it through Docker: then it is tried again within a second.

// PublisherKey is the publisher's key on the services loop, and the
// prefix of its Services' keys in the Tracker (":" is in no namespace).
const PublisherKey = "publisher:"

// publisherName is the container name of the instance's publisher.
func publisherName(instance string) string { return instance + "_publisher" }

// publisherService names the publisher's config in its logs.
const publisherService = "published ports"

// publisherState is what the controller knows of the publisher, under
// Controller.mu (sync serialises its syncs: the publisher's own key and
// its Services' keys are distinct keys of one helper).
type publisherState struct {
	sync sync.Mutex
	// bindings are, per Service key, the host ports its last sync
	// allocated; seen the Services synced since the controller started:
	// until every published one is, the publisher is left as it serves
	// (its state file: the last config).
	bindings map[string][]dockerx.PortBinding
	seen     map[string]bool
	// hostHeld are, per Service key, its host ports a process of the
	// host holds, as its last sync found them: its claim still, held for
	// it against the gateway (hostport_held.go).
	hostHeld  map[string][]hostPort
	gen       int64           // the publisher's config generation
	watched   map[string]bool // its keys in the Tracker
	bindRetry time.Duration   // the wait before ports it could not bind are tried again
	// failure is why the publisher's last sync could not make it serve
	// ("" it serves): its Services report it (ProxyFailure).
	failure string
}

// publisherFailure is why the publisher does not serve ("": it does).
func (s *Controller) publisherFailure() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pub.failure
}

// notePublished records the host ports a Service's sync allocated (none:
// it publishes nothing, or is gone), and those of its claim a process of
// the host holds, and queues the publisher on a change.
func (s *Controller) notePublished(key string, bindings []dockerx.PortBinding, held []hostPort) {
	s.mu.Lock()
	old, oldHeld, seen := s.pub.bindings[key], s.pub.hostHeld[key], s.pub.seen[key]
	s.pub.seen[key] = true
	if len(bindings) == 0 {
		delete(s.pub.bindings, key)
	} else {
		s.pub.bindings[key] = slices.Clone(bindings)
	}
	if len(held) == 0 {
		delete(s.pub.hostHeld, key)
	} else {
		s.pub.hostHeld[key] = slices.Clone(held)
	}
	changed := !seen || !slices.Equal(old, bindings)
	// Until its first sync the gateway took its stored ports for it
	// (unseenPublishedHolders): a port the gateway left out may be free.
	// A claim a process of the host holds, new or given up, changes what
	// the gateway is to leave out.
	gateway := (!seen && s.gw.taken != "") || (s.gw.table != nil && !slices.Equal(oldHeld, held))
	s.mu.Unlock()
	if changed {
		s.loop.Add(reconcile.Request{Key: PublisherKey})
	}
	if gateway {
		s.loop.Add(reconcile.Request{Key: GatewayKey})
	}
}

// watchPublisherInTheWait makes a drain of svc's pods wait for the
// publisher's acknowledgement too while svc's host ports wait for the
// gateway's first sync (awaitGatewayPorts), if a publisher helper runs:
// it serves its last config (its state file), svc's published ports to
// its endpoints as they were then, and no push reaches it before the
// wait ends (syncPublisher waits for every published Service's sync to
// judge its ports). A drain must not end while a host port still routes
// new connections to the leaving pod (docs/design.md §10: a pod's drain
// waits for the publisher's acknowledgement as for the proxy's). This is
// the simplest correct way: the publisher's sync after the wait pushes
// the current endpoints and acknowledges its key, or forgets it if it no
// longer serves svc; pushing it a config rebuilt from the stored
// statuses during the wait would end such drains sooner, but could drop
// a port its state file serves and a status missed, before the gateway's
// ports are known — what the wait is for. The wait is bounded (30 s).
func (s *Controller) watchPublisherInTheWait(ctx context.Context, key string, svc *manifests.Service) error {
	publishers, err := s.listHelpers(ctx, dockerx.RolePublisher)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(publishers, routesFromItsStateFile) {
		return nil // no publisher routes to its pods
	}
	s.tracker.watch(PublisherKey+key, svc)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pub.watched == nil {
		s.pub.watched = map[string]bool{}
	}
	// The publisher's next complete sync forgets it if it does not serve
	// svc.
	s.pub.watched[PublisherKey+key] = true
	return nil
}

// unseenPublishedHolders are the host ports of the publishing Services
// no sync of this controller judged yet (notePublished: a controller that
// just started), as their stored status lists them published (written by
// the previous controller), for the gateway's conflict check: the
// publisher still serves them from its last config (its state file), so
// they are held until the Service's own sync says what it publishes.
// Else a gateway synced first after a restart would take a port a
// Service published before it (docs/design.md §10, the gateway). A
// status that cannot be read holds nothing: the gateway is not stopped
// for it.
func (s *Controller) unseenPublishedHolders() []portHolder {
	s.mu.Lock()
	seen := maps.Clone(s.pub.seen)
	s.mu.Unlock()
	recs, _ := s.store.ListServices()
	var out []portHolder
	for _, r := range recs {
		if r.Deleted {
			continue
		}
		svc := defaultService(&r.Service)
		key := serviceKey(svc)
		if seen[key] || !publishes(svc) {
			continue
		}
		st, err := s.store.ReadServiceStatus(svc.Metadata.NamespaceOrDefault(), svc.Metadata.Name)
		if err != nil || st == nil {
			continue
		}
		for _, p := range st.Published {
			out = append(out, portHolder{Port: hostPort{IP: s.address, Port: int32(p.Port), Protocol: protocolOr(p.Protocol)}, Owner: "service " + key})
		}
		for _, hp := range s.storedHostHeld(svc, st) {
			out = append(out, portHolder{Port: hp, Owner: "service " + key + hostHeldClaim})
		}
	}
	slices.SortFunc(out, func(a, b portHolder) int { return cmp.Compare(a.Owner, b.Owner) })
	return out
}

// publishedHolders are the host ports the instance's Services publish
// (through the publisher, which Docker lists no port of), and those they
// claimed that a process of the host holds, for another publisher's
// conflict check: the gateway's.
func (s *Controller) publishedHolders() []portHolder {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []portHolder
	for key, bs := range s.pub.bindings {
		for _, hp := range publishedOf(bs) {
			hp.IP = s.address
			out = append(out, portHolder{Port: hp, Owner: "service " + key})
		}
	}
	for key, hps := range s.pub.hostHeld {
		for _, hp := range hps {
			hp.IP = s.address
			out = append(out, portHolder{Port: hp, Owner: "service " + key + hostHeldClaim})
		}
	}
	slices.SortFunc(out, func(a, b portHolder) int { return cmp.Compare(a.Owner, b.Owner) })
	return out
}

// publisherConfig is the publisher's complete config (generation 0): for
// each host port a Service was given, the ready endpoints of the Service
// port it publishes, ordered by port. A host port two Services were
// given goes to the older (created first; its key breaks a tie): each
// Service's bindings are its last sync's, so while an older Service took
// a port from a younger one not synced since, both have it, and the
// helper refuses a config listing a port twice, every port with it.
func publisherConfig(services []publishedService) helperapi.ProxyConfig {
	cfg := helperapi.ProxyConfig{Service: publisherService, Ports: []helperapi.ProxyPort{}}
	services = slices.Clone(services)
	slices.SortStableFunc(services, func(a, b publishedService) int {
		return cmp.Or(a.created.Compare(b.created), cmp.Compare(a.key, b.key))
	})
	taken := map[string]bool{}
	for _, ps := range services {
		for _, pp := range proxyConfig(ps.key, ps.svc, ps.ready).Ports {
			for _, b := range ps.bindings {
				if b.ContainerPort == pp.Port && protocolOf(b.Protocol) == pp.Protocol {
					k := fmt.Sprint(b.HostPort, "/", pp.Protocol)
					if taken[k] {
						continue
					}
					taken[k] = true
					cfg.Ports = append(cfg.Ports, helperapi.ProxyPort{Name: ps.key + ":" + cmp.Or(pp.Name, fmt.Sprint(pp.Port)),
						Protocol: pp.Protocol, Port: b.HostPort, Endpoints: pp.Endpoints})
				}
			}
		}
	}
	slices.SortFunc(cfg.Ports, func(a, b helperapi.ProxyPort) int {
		return cmp.Or(cmp.Compare(a.Port, b.Port), cmp.Compare(a.Protocol, b.Protocol))
	})
	return cfg
}

// publishedService is one Service the publisher serves.
type publishedService struct {
	key      string
	created  time.Time
	svc      *manifests.Service
	bindings []dockerx.PortBinding
	ready    []store.EndpointStatus
}

// syncPublisher is one observe → plan → execute pass for the publisher.
func (s *Controller) syncPublisher(ctx context.Context) (reconcile.Result, error) {
	if !s.tracker.Synced() {
		return reconcile.Result{}, nil // the first feed queues a sweep, which queues the publisher
	}
	s.pub.sync.Lock()
	defer s.pub.sync.Unlock()
	recs, errs := s.store.ListServices()
	if len(errs) > 0 {
		// A Service that cannot be read must not lose its ports.
		return reconcile.Result{}, fmt.Errorf("publisher: %w", errors.Join(errs...))
	}
	observed, err := s.listHelpers(ctx, dockerx.RolePublisher)
	if err != nil {
		return reconcile.Result{}, err
	}
	s.mu.Lock()
	bindings, seen := maps.Clone(s.pub.bindings), maps.Clone(s.pub.seen)
	pushed := s.pushed[PublisherKey]
	gen := max(s.pub.gen, s.floor[PublisherKey])
	if pushed != nil {
		gen = max(gen, pushed.Generation)
	}
	s.mu.Unlock()

	var services []publishedService
	for _, r := range recs {
		if r.Deleted {
			continue
		}
		svc := defaultService(&r.Service)
		key := serviceKey(svc)
		if !publishes(svc) {
			continue
		}
		if !seen[key] {
			// Its host ports are not known yet (the controller just
			// started): what runs serves its last config until every
			// published Service's sync said what it publishes.
			return reconcile.Result{}, nil
		}
		if len(bindings[key]) > 0 {
			services = append(services, publishedService{key: key, created: r.Created, svc: svc, bindings: bindings[key]})
		}
	}
	// Watched before the endpoints are read, and the version before
	// either: an ack covers what was read.
	watched := map[string]bool{}
	for _, ps := range services {
		s.tracker.watch(PublisherKey+ps.key, ps.svc)
		watched[PublisherKey+ps.key] = true
	}
	version := s.tracker.currentVersion()
	for i := range services {
		services[i].ready, _, _ = s.tracker.endpointsAt(services[i].svc)
	}
	cfg := publisherConfig(services)

	pin := helperPlanInput{Observed: observed, Pushed: pushed, Generation: gen, Unwanted: "no Service publishes a port"}
	if len(cfg.Ports) > 0 {
		content, render := renderer(cfg, func(c *helperapi.ProxyConfig, g int64) { c.Generation = g })
		pin.Want = s.hostHelperWant(publisherName(s.cfg.Instance), dockerx.RolePublisher, helperapi.ModeProxy, content, render,
			renderStub(helperapi.ProxyConfig{Service: publisherService, Ports: []helperapi.ProxyPort{}}), "published ports or their endpoints changed", &pin)
		pin.Want.Hash = publisherConfigHash(s.address)
	} else {
		clear(watched) // it routes to no pod: no drain is to wait for it
	}
	plan, done, wait, execErr := s.runHelperPlan(ctx, PublisherKey, pin)
	s.mu.Lock()
	if done != nil {
		s.pub.gen = max(s.pub.gen, done.Generation)
	}
	if pin.Want == nil && execErr == nil {
		delete(s.pushed, PublisherKey)
	}
	var unbound []helperapi.UnboundPort
	if p := s.pushed[PublisherKey]; pin.Want != nil && p != nil && p.Content != "" {
		unbound = p.Unbound
	}
	old := s.pub.watched
	s.pub.watched = watched
	failure := ""
	if execErr != nil {
		failure = execErr.Error() // names the publisher's container
	}
	failed := !wait && s.pub.failure != failure
	if failed {
		s.pub.failure = failure
	}
	s.mu.Unlock()
	if failed {
		// Their status says whether their host ports are served.
		for _, ps := range services {
			s.loop.Add(reconcile.Request{Key: ps.key})
		}
	}
	for k := range old {
		if !watched[k] {
			s.tracker.forget(k)
		}
	}
	serves := execErr == nil && !wait && plan.Serves
	if serves {
		for k := range watched {
			s.tracker.ack(k, version)
		}
	}
	retry, err := s.publisherUnbound(ctx, services, unbound, serves)
	if wait {
		return reconcile.Result{RequeueAfter: nameRetry}, nil
	}
	if execErr != nil {
		return reconcile.Result{}, fmt.Errorf("publisher: %w", execErr)
	}
	return reconcile.Result{RequeueAfter: retry}, err
}

// publisherUnbound handles the ports the publisher could not bind: one
// the replaced proxy of an earlier release still publishes through
// Docker is tried again soon (Docker is releasing it); any other is held
// by a process of the host (noteHostHeld), and its Service synced again
// to report it and leave it out until its next try. The ports it serves
// lose their held marks. It returns how soon to sync again.
func (s *Controller) publisherUnbound(ctx context.Context, services []publishedService, unbound []helperapi.UnboundPort, serves bool) (time.Duration, error) {
	isUnbound := func(b dockerx.PortBinding) bool {
		return slices.ContainsFunc(unbound, func(u helperapi.UnboundPort) bool {
			return u.Port == b.HostPort && u.Protocol == protocolOf(b.Protocol)
		})
	}
	if serves {
		for _, ps := range services {
			if s.publishedHostPorts(slices.DeleteFunc(slices.Clone(ps.bindings), isUnbound)) {
				s.loop.Add(reconcile.Request{Key: ps.key}) // its conflict ends
			}
		}
	}
	if len(unbound) == 0 {
		s.mu.Lock()
		s.pub.bindRetry = 0
		s.mu.Unlock()
		return 0, nil
	}
	proxies, err := s.listHelpers(ctx, dockerx.RoleProxy)
	if err != nil {
		return 0, fmt.Errorf("publisher: %w", err)
	}
	releasing := false
	for _, ps := range services {
		for _, b := range ps.bindings {
			if !isUnbound(b) {
				continue
			}
			hp := publishedOf([]dockerx.PortBinding{b})[0]
			if slices.ContainsFunc(proxies, func(c dockerx.Container) bool {
				return slices.ContainsFunc(c.Ports, func(p dockerx.Port) bool {
					return int(p.HostPort) == b.HostPort && strings.EqualFold(protocolOr(p.Protocol), protocolOr(b.Protocol))
				})
			}) {
				releasing = true
				continue
			}
			s.noteHostHeld(ps.key, hp)
			s.loop.Add(reconcile.Request{Key: ps.key})
		}
	}
	if !releasing {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pub.bindRetry = min(max(2*s.pub.bindRetry, gatewayBindRetry), gatewayBindRetryMax)
	s.log.Info("publisher: ports still published by a replaced proxy; tried again", "ports", unboundList(unbound), "retry_in", s.pub.bindRetry)
	return s.pub.bindRetry, nil
}

// hostHelperWant is a helper on the host's network that binds its ports
// itself (the publisher, the gateway; docs/design.md §10): a push's ack
// names the ports it could not bind, so while one is named every sync
// pushes again (pin.Pushed's content forgotten), for it to try them.
func (s *Controller) hostHelperWant(name, role, mode, content string, render func(int64) string, stub, change string, pin *helperPlanInput) *helperWant {
	if p := pin.Pushed; p != nil && len(p.Unbound) > 0 {
		again := *p
		again.Content, pin.Pushed = "", &again
		change = "try binding " + unboundList(p.Unbound) + " again"
	}
	return &helperWant{Name: name, Mode: mode, Args: hostHelperArgs(s.address), ControlSocket: helperapi.HostControlSocket, HostPorts: true,
		Content: content, Render: render, Change: change, Stub: stub,
		Request: dockerx.HelperRequest{Instance: s.cfg.Instance, Role: role, JoinNetwork: dockerx.NetworkModeHost}}
}

// runHelperPlan plans one helper, logs the plan and carries it out; wait:
// its name is still being freed (a requeue, not an error).
func (s *Controller) runHelperPlan(ctx context.Context, key string, pin helperPlanInput) (plan HelperPlan, done *pushedConfig, wait bool, err error) {
	plan = planHelper(pin)
	s.logPlan(key, plan)
	var content string
	var render func(int64) string
	if pin.Want != nil {
		content, render = pin.Want.Content, pin.Want.Render
	}
	done, err = s.execute(ctx, key, plan, content, render)
	if wait = plan.Wait || errors.Is(err, errNameBeingFreed); wait {
		err = nil
	}
	return plan, done, wait, err
}

// publisherConfigHash covers what the publisher is created with: the
// host's network, the service address its ports listen on, and the helper
// protocol. Not its ports or endpoints: pushed (it binds its ports itself).
func publisherConfigHash(address string) string {
	return configHash(struct {
		Protocol int
		Role     string
		Network  string
		Address  string
	}{Protocol: helperProtocolVersion, Role: dockerx.RolePublisher, Network: dockerx.NetworkModeHost, Address: address})
}
