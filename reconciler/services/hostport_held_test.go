package services

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// shopLB is a LoadBalancer Service shop/lb publishing ports.
func shopLB(ports ...int32) *store.ServiceRecord {
	var sps []manifests.ServicePort
	for _, p := range ports {
		sps = append(sps, manifests.ServicePort{Port: p})
	}
	return &store.ServiceRecord{Created: t0, Service: manifests.Service{Metadata: manifests.ObjectMeta{Name: "lb", Namespace: "shop"},
		Spec: manifests.ServiceSpec{Type: "LoadBalancer", Selector: app("lb"), Ports: sps}}}
}

// withClock rebuilds the controller on a clock that starts at t0 and
// moves only by the advance it returns.
func (r *svcRig) withClock() (advance func(time.Duration)) {
	now := t0
	var mu sync.Mutex
	r.build(r.docker, func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	return func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
}

// blind makes the controller see no listener of the host, as in a
// container: the dial refused, the bind free.
func (r *svcRig) blind() {
	r.ctrl.hostDial = func(context.Context, string, string) error { return syscall.ECONNREFUSED }
	r.ctrl.hostBind = func(string, string) error { return nil }
}

// TestServicePortHeldByTheHostStaysTheServicesAgainstTheGateway: a
// LoadBalancer Service's port a process of the host holds for a while
// (PortConflict, tried again after hostHeldRetry) is still the Service's
// claim (docs/design.md §10: the first publisher keeps a port). The
// gateway, whose table names the port later and which tries its own
// ports every second, leaves it out and names the Service as its holder;
// once the host frees it, the Service publishes it.
func TestServicePortHeldByTheHostStaysTheServicesAgainstTheGateway(t *testing.T) {
	r := newSvcRig(t)
	advance := r.withClock()
	r.blind()
	r.feed(webPods(2, 2))
	r.svcs.put(webService("", 0))
	r.reconcile("default/web")
	r.svcs.put(shopLB(18080, 18081))
	r.docker.HoldHostPort(18080, true)
	r.syncPublished("shop/lb", "18081/TCP=0")
	if c := findCondition(r.svcs.status("shop/lb").Conditions, ServicePortConflict); c == nil {
		t.Fatalf("no PortConflict for the held port")
	}
	r.ctrl.ServeGateway(gatewayTable(18080, 18443), 1, nil)
	r.reconcile(GatewayKey)
	r.wantGatewayLeavesOut("while the host holds the Service's port", "service shop/lb")
	r.docker.HoldHostPort(18080, false) // freed by the host
	advance(2 * time.Second)
	r.reconcile(GatewayKey) // its bind retry
	advance(hostHeldRetry)
	r.syncPublished("shop/lb", "18080/TCP=0 18081/TCP=0") // its try
	st := r.svcs.status("shop/lb")
	if c := findCondition(st.Conditions, ServicePortConflict); c != nil {
		t.Errorf("the older Service lost 18080 to the gateway: %s (gateway binds %q)", c.Message, r.gatewayPorts())
	}
	r.reconcile(GatewayKey)
	if got := r.gatewayPorts(); got != "18443" {
		t.Errorf("once the Service publishes 18080, the gateway binds %q, want 18443", got)
	}
}

// TestServicePortHeldByTheHostStaysTheServicesAcrossARestart: the claim
// is in the Service's status (hostHeld): after a restart the gateway,
// synced before the Service, still leaves the port out for it.
func TestServicePortHeldByTheHostStaysTheServicesAcrossARestart(t *testing.T) {
	r := newWebRig(t)
	r.blind()
	r.svcs.put(shopLB(18080, 18081))
	r.docker.HoldHostPort(18080, true)
	r.syncPublished("shop/lb", "18081/TCP=0")
	r.restart()
	r.blind()
	r.feed(webPods(1, 1))
	r.ctrl.ServeGateway(gatewayTable(18080, 18443), 1, nil)
	r.reconcile(GatewayKey)
	r.wantGatewayLeavesOut("after a restart, synced first", "service shop/lb")
}

// TestGatewayPortHeldByTheHostStaysTheGatewaysAgainstALaterService: the
// converse. A port of the gateway's table that a process of the host
// holds is the gateway's claim: a LoadBalancer Service applied later
// reports it as the gateway's (not the host's), and the gateway binds it
// once the host frees it.
func TestGatewayPortHeldByTheHostStaysTheGatewaysAgainstALaterService(t *testing.T) {
	r := newGatewayClaimRig(t)
	r.svcs.put(shopLB(18080, 18081))
	r.syncPublished("shop/lb", "18081/TCP=0")
	st := r.svcs.status("shop/lb")
	if c := findCondition(st.Conditions, ServicePortConflict); c == nil || !strings.Contains(c.Message, "i_gateway") || len(st.HostHeld) != 0 {
		t.Errorf("the later Service's conflict %+v, host-held %+v; want the gateway named, none held for it", c, st.HostHeld)
	}
	r.docker.HoldHostPort(18080, false)
	r.reconcile(GatewayKey)
	if got := r.gatewayPorts(); got != "18080 18443" {
		t.Errorf("once the host freed it, the gateway binds %q, want both its ports", got)
	}
}

// TestServiceHostHeldPortIsRecalledFromItsStatus: the ports of a Service
// a process of the host holds are recorded in its status (hostHeld),
// from which a restarted controller recalls them: the port stays left
// out, its PortConflict stays. A status an earlier release wrote has no
// hostHeld: they are recalled from its PortConflict's message.
func TestServiceHostHeldPortIsRecalledFromItsStatus(t *testing.T) {
	for _, tc := range []struct {
		name    string
		earlier bool
	}{
		{name: "written by this release"},
		{name: "written by an earlier release", earlier: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSvcRig(t)
			r.blind()
			r.docker.HoldHostPort(30080, true)
			r.feed(webPods(2, 2))
			web := webWithAdmin()
			r.svcs.put(web)
			r.syncPublished("default/web", "30081/TCP=2")
			st := r.svcs.status("default/web")
			if len(st.HostHeld) != 1 || st.HostHeld[0].Port != 30080 {
				t.Fatalf("host-held %+v in the status, want 30080", st.HostHeld)
			}
			if tc.earlier {
				st.HostHeld = nil
				if err := r.svcs.WriteServiceStatus("default", "web", &st); err != nil {
					t.Fatal(err)
				}
			}
			r.restart()
			r.blind()
			r.feed(webPods(2, 2))
			r.reconcile("default/web")
			st = r.svcs.status("default/web")
			if findCondition(st.Conditions, ServicePortConflict) == nil || len(st.HostHeld) != 1 || len(st.Published) != 1 {
				t.Errorf("after a restart, conditions %+v, host-held %+v, published %+v; want the PortConflict, 30080 held, 30081 published",
					st.Conditions, st.HostHeld, st.Published)
			}
		})
	}
}

// newGatewayClaimRig is a web rig blind to the host's listeners whose
// gateway serves ports 18080 and 18443, 18080 held by a process of the
// host: the gateway's claim.
func newGatewayClaimRig(t *testing.T) *svcRig {
	r := newWebRig(t)
	r.blind()
	r.docker.HoldHostPort(18080, true)
	r.ctrl.ServeGateway(gatewayTable(18080, 18443), 1, nil)
	r.reconcile(GatewayKey)
	return r
}

// wantGatewaysClaim checks that shop/lb reports 18080 as the gateway's
// and claims none of its ports itself.
func (r *svcRig) wantGatewaysClaim(when string) {
	r.t.Helper()
	st := r.svcs.status("shop/lb")
	if c := findCondition(st.Conditions, ServicePortConflict); c == nil || !strings.Contains(c.Message, "i_gateway") || len(st.HostHeld) != 0 {
		r.t.Errorf("%s, the later Service's conflict %+v, host-held %+v; want the gateway named, none held for the Service (gateway unavailable %v)",
			when, c, st.HostHeld, r.ctrl.GatewayUnavailable())
	}
}

// TestGatewayPortHeldByTheHostStaysTheGatewaysAcrossARestart: the
// gateway's claim on a port a process of the host holds outlives a
// controller restart, as a Service's does (its status' hostHeld): the
// gateway, synced first after the restart, still claims it, so a
// LoadBalancer Service applied later reports it as the gateway's and
// records no claim of its own (docs/design.md §10: the first publisher
// keeps a port).
func TestGatewayPortHeldByTheHostStaysTheGatewaysAcrossARestart(t *testing.T) {
	r := newGatewayClaimRig(t)
	r.restart()
	r.blind()
	r.feed(webPods(2, 2))
	r.ctrl.ServeGateway(gatewayTable(18080, 18443), 1, nil)
	r.reconcile(GatewayKey)
	r.svcs.put(shopLB(18080, 18081))
	r.syncPublished("shop/lb", "18081/TCP=0")
	r.wantGatewaysClaim("after a restart")
}

// TestGatewayClaimEndsWithItsPort: a port the gateway no longer serves
// (its table changed) is no longer its claim, even while a process of
// the host holds it: a Service applied later claims it itself (hostHeld),
// and its PortConflict names the host, not the gateway.
func TestGatewayClaimEndsWithItsPort(t *testing.T) {
	r := newGatewayClaimRig(t)
	r.ctrl.ServeGateway(gatewayTable(18090, 18443), 2, nil)
	r.reconcile(GatewayKey)
	if got := r.gatewayPorts(); got != "18090 18443" {
		t.Fatalf("the gateway binds %q, want 18090 18443", got)
	}
	r.svcs.put(shopLB(18080, 18081))
	r.syncPublished("shop/lb", "18081/TCP=0")
	st := r.svcs.status("shop/lb")
	if c := findCondition(st.Conditions, ServicePortConflict); c == nil || !strings.Contains(c.Message, "18080/TCP is held by "+hostProcessOwner) || len(st.HostHeld) != 1 {
		t.Errorf("conflict %+v, host-held %+v; want 18080 held by the host and claimed by the Service", c, st.HostHeld)
	}
}

// TestServiceClaimOnAHostHeldPortEndsWithTheService: a Service's claim
// on a port a process of the host holds ends when the Service no longer
// publishes it — deleted, or no longer a LoadBalancer (Kubernetes frees a
// Service's nodePorts when its type becomes ClusterIP): once the host
// frees the port, the gateway binds it.
func TestServiceClaimOnAHostHeldPortEndsWithTheService(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*store.ServiceRecord)
	}{
		{"deleted", func(rec *store.ServiceRecord) { rec.Deleted = true }},
		{"changed to ClusterIP", func(rec *store.ServiceRecord) { rec.Service.Spec.Type = "ClusterIP" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newWebRig(t)
			r.blind()
			r.svcs.put(shopLB(18080, 18081))
			r.docker.HoldHostPort(18080, true)
			r.syncPublished("shop/lb", "18081/TCP=0")
			r.ctrl.ServeGateway(gatewayTable(18080, 18443), 1, nil)
			r.reconcile(GatewayKey)
			r.wantGatewayLeavesOut("while the Service claims 18080", "service shop/lb")
			rec := shopLB(18080, 18081)
			tc.change(rec)
			r.svcs.put(rec)
			r.reconcile("shop/lb")
			r.reconcile(PublisherKey)
			r.docker.FinishRemovals()
			r.docker.HoldHostPort(18080, false)
			r.reconcile(GatewayKey)
			if got := r.gatewayPorts(); got != "18080 18443" {
				t.Errorf("the Service %s, the gateway binds %q, want 18080 18443 (unavailable %v)", tc.name, got, r.ctrl.GatewayUnavailable())
			}
		})
	}
}

// TestServicePortHeldByTheHostStaysTheServicesAcrossAnUpgrade: a status
// an earlier release wrote has no hostHeld, only the PortConflict's
// message naming the port held by the host, from which the Service's own
// sync recalls it (recallHostHeld). The gateway, synced first after the
// upgrade, must read the claim the same way: else it takes the port as
// its own claim, and the Service, synced next, loses it to the gateway
// that came after it (docs/design.md §10: the first publisher keeps a
// port).
func TestServicePortHeldByTheHostStaysTheServicesAcrossAnUpgrade(t *testing.T) {
	r := newWebRig(t)
	r.blind()
	r.svcs.put(shopLB(18080, 18081))
	r.docker.HoldHostPort(18080, true)
	r.syncPublished("shop/lb", "18081/TCP=0")
	st := r.svcs.status("shop/lb")
	st.HostHeld = nil // as an earlier release wrote it
	if err := r.svcs.WriteServiceStatus("shop", "lb", &st); err != nil {
		t.Fatal(err)
	}
	r.restart()
	r.blind()
	r.feed(webPods(2, 2))
	r.ctrl.ServeGateway(gatewayTable(18080, 18443), 1, nil)
	r.reconcile(GatewayKey)
	r.wantGatewayLeavesOut("after an upgrade, synced first", "service shop/lb")
	r.reconcile("shop/lb")
	st = r.svcs.status("shop/lb")
	if c := findCondition(st.Conditions, ServicePortConflict); c == nil || len(st.HostHeld) != 1 {
		t.Errorf("after the upgrade, the Service's conflict %+v, host-held %+v; want 18080 still its claim", c, st.HostHeld)
	}
}

// TestGatewayPortHeldByTheHostStaysTheGatewaysWhenItsHelperStopped: the
// gateway's claim on a port a process of the host holds is in no status:
// after a restart that finds its helper exited (so a Service does not
// wait for the gateway's first sync), a LoadBalancer Service that came
// after the gateway and lost the port to it takes the claim for itself,
// and the gateway, restarted, then leaves its own port out for the later
// Service (docs/design.md §10: a port the gateway claimed first that a
// process of the host holds stays its claim).
func TestGatewayPortHeldByTheHostStaysTheGatewaysWhenItsHelperStopped(t *testing.T) {
	r := newGatewayClaimRig(t)
	r.svcs.put(shopLB(18080, 18081))
	r.syncPublished("shop/lb", "18081/TCP=0")
	if st := r.svcs.status("shop/lb"); len(st.HostHeld) != 0 {
		t.Fatalf("before the restart the later Service claims %+v, want none (the gateway's)", st.HostHeld)
	}
	for _, c := range r.gatewayHelpers() {
		if err := r.docker.StopContainer(context.Background(), c.ID, 0); err != nil {
			t.Fatal(err)
		}
	}
	r.restart()
	r.blind()
	r.feed(webPods(2, 2))
	r.syncPublished("shop/lb", "18081/TCP=0")
	r.ctrl.ServeGateway(gatewayTable(18080, 18443), 1, nil)
	r.reconcile(GatewayKey)
	r.reconcile("shop/lb")
	r.wantGatewaysClaim("after a restart that found the gateway helper exited")
}

// TestServiceHostPortStillHeldAtItsTryDoesNotFlap: a controller in a
// container sees no listener of the host, so each try of a held port is
// a push to the publisher. Until the publisher's ack says it bound the
// port, the port is still the PortConflict's and not published: else
// every try wrote it into the status as published, said a Normal
// PortConflictResolved, and the ack brought the Warning back — an event
// pair at every backoff for as long as the host held the port. Once the
// publisher binds it, the conflict ends, once.
func TestServiceHostPortStillHeldAtItsTryDoesNotFlap(t *testing.T) {
	r := newSvcRig(t)
	advance := r.withClock()
	r.blind()
	var events eventLines
	r.ctrl.cfg.Recorder = &events
	r.docker.HoldHostPort(30080, true)
	r.feed(webPods(2, 2))
	web := webWithAdmin()
	r.svcs.put(web)
	r.syncPublished("default/web", "30081/TCP=2")
	held := func(when string) {
		t.Helper()
		st := r.svcs.status("default/web")
		if c := findCondition(st.Conditions, ServicePortConflict); c == nil || !strings.Contains(c.Message, "30080/TCP is held by "+hostProcessOwner) {
			t.Errorf("%s: conditions %+v, want the PortConflict for 30080", when, st.Conditions)
		}
		if len(st.HostHeld) != 1 || st.HostHeld[0].Port != 30080 || len(st.Published) != 1 || st.Published[0].Port != 30081 {
			t.Errorf("%s: host-held %+v, published %+v; want 30080 held, 30081 alone published", when, st.HostHeld, st.Published)
		}
	}
	held("found held")
	countOf := func(reason string) int {
		n := 0
		for _, e := range events {
			if strings.Contains(e, " "+reason+":") {
				n++
			}
		}
		return n
	}
	warnings := countOf(ReasonHostPortInUse)
	if warnings != 1 {
		t.Fatalf("events %q, want one Warning %s", events, ReasonHostPortInUse)
	}

	for try := range 3 {
		advance(hostHeldRetryMax)
		r.reconcile("default/web") // the try: the port goes to the publisher
		held(fmt.Sprintf("try %d, before the publisher's ack", try+1))
		r.reconcile(PublisherKey) // refused: still held
		for range 3 {
			r.reconcile("default/web")
		}
		held(fmt.Sprintf("try %d, after the publisher's ack", try+1))
	}
	if n := countOf(ServicePortConflict + "Resolved"); n != 0 || countOf(ReasonHostPortInUse) != warnings {
		t.Errorf("events %q: the port never left the host; want no PortConflictResolved and no new Warning", events)
	}

	// Freed: the publisher binds it at the next try, and the conflict
	// ends once.
	r.docker.HoldHostPort(30080, false)
	advance(hostHeldRetryMax)
	r.syncPublished("default/web", "30080/TCP=2 30081/TCP=2")
	st := r.svcs.status("default/web")
	if c := findCondition(st.Conditions, ServicePortConflict); c != nil || len(st.HostHeld) != 0 || len(st.Published) != 2 {
		t.Errorf("freed: conflict %+v, host-held %+v, published %+v; want none, none, both", c, st.HostHeld, st.Published)
	}
	if n := countOf(ServicePortConflict + "Resolved"); n != 1 {
		t.Errorf("events %q: want one PortConflictResolved once the port is bound", events)
	}
}

// TestServiceNodePortChosenAnewIsNotAHeldPortBeingTried: a nodePort
// dockctl chooses is never one in use (allocate), so never a conflict.
// A port the host was found to hold, due for its try, is no free choice:
// the try is the claim of the Service that wanted it, and a controller in
// a container cannot tell the host freed it. A new NodePort Service must
// not be given it, reported in a PortConflict with a Warning for a port
// nobody asked for, until the publisher refuses it and another is chosen.
func TestServiceNodePortChosenAnewIsNotAHeldPortBeingTried(t *testing.T) {
	r := newSvcRig(t)
	advance := r.withClock()
	r.blind()
	var events eventLines
	r.ctrl.cfg.Recorder = &events
	r.docker.HoldHostPort(manifests.NodePortMin, true)
	r.feed(webPods(2, 2))
	r.svcs.put(webService("NodePort", 0))
	// Chosen, refused by the publisher (held), chosen anew.
	r.syncPublished("default/web", fmt.Sprintf("%d/TCP=2", manifests.NodePortMin+1))

	advance(hostHeldRetry) // the held port is due for its try
	other := webService("NodePort", 0)
	other.Service.Metadata.Name = "other"
	r.svcs.put(other)
	r.reconcile("default/other")
	st := r.svcs.status("default/other")
	if c := findCondition(st.Conditions, ServicePortConflict); c != nil {
		t.Errorf("PortConflict %+v for a nodePort dockctl chose", c)
	}
	if len(st.NodePorts) != 1 || st.NodePorts[0].NodePort == manifests.NodePortMin {
		t.Errorf("nodePorts %+v: chose the port the host was found to hold", st.NodePorts)
	}
	for _, e := range events {
		if strings.HasPrefix(e, "Service/other ") && strings.Contains(e, ReasonHostPortInUse) {
			t.Errorf("event %q for a nodePort dockctl chose", e)
		}
	}
}

// TestServiceHostPortBeingTriedIsNotJudgedByItsOwnListener: a controller
// that sees the host's listeners checks a held port before its try; once
// the port is given to the publisher, the listener it then finds there
// may be the publisher's own, bound a moment before its ack is read. A
// sync in between must keep the port in the try, not find it held again
// and take it from the publisher for a whole backoff.
func TestServiceHostPortBeingTriedIsNotJudgedByItsOwnListener(t *testing.T) {
	r := newSvcRig(t)
	advance := r.withClock()
	listening := true
	r.ctrl.hostDial = func(context.Context, string, string) error {
		if listening {
			return nil
		}
		return syscall.ECONNREFUSED
	}
	r.ctrl.hostBind = func(string, string) error {
		if listening {
			return syscall.EADDRINUSE
		}
		return nil
	}
	r.docker.HoldHostPort(30080, true)
	r.feed(webPods(2, 2))
	r.svcs.put(webWithAdmin())
	r.syncPublished("default/web", "30081/TCP=2")
	r.docker.HoldHostPort(30080, false)
	listening = false
	advance(hostHeldRetryMax)
	r.reconcile("default/web") // the try: 30080 goes to the publisher
	listening = true           // the publisher's own listener, its ack not read yet
	r.reconcile("default/web")
	r.ctrl.mu.Lock()
	bindings := publishedOf(r.ctrl.pub.bindings["default/web"])
	r.ctrl.mu.Unlock()
	if !slices.ContainsFunc(bindings, func(hp hostPort) bool { return hp.Port == 30080 }) {
		t.Fatalf("the publisher is to serve %v: the port being tried was taken back on its own listener", bindings)
	}
	r.syncPublished("default/web", "30080/TCP=2 30081/TCP=2")
	if c := findCondition(r.svcs.status("default/web").Conditions, ServicePortConflict); c != nil {
		t.Errorf("bound, the port still has %+v", c)
	}
}
