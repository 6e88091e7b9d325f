package services

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/gatewayroutes"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// gatewayTable is a compiled table serving host a.test on an HTTP port
// and an HTTPS port (certificate default/tls), both to default/web:80.
func gatewayTable(httpPort, httpsPort int) *gatewayroutes.Table {
	host := []helperapi.GatewayHost{{Hostname: "a.test", Routes: []helperapi.GatewayRoute{{
		Path:     helperapi.GatewayPathMatch{Type: helperapi.PathPrefix, Value: "/"},
		Backends: []helperapi.GatewayBackend{{Service: "default/web:80", Weight: 1}},
	}}}}
	return &gatewayroutes.Table{Config: helperapi.GatewayConfig{Ports: []helperapi.GatewayPort{
		{Port: httpPort, Protocol: helperapi.GatewayHTTP, Hosts: host},
		{Port: httpsPort, Protocol: helperapi.GatewayHTTPS, Certificates: []string{"default/tls"}, Hosts: host},
	}}}
}

// gatewayServes returns the endpoints the gateway helper serves for its
// first route, and its certificates' names.
func (r *svcRig) gatewayServes() (string, string) {
	r.t.Helper()
	var cfg helperapi.GatewayConfig
	if _, ok := r.docker.Serving("i_gateway", &cfg); !ok {
		r.t.Fatal("no gateway helper serving a config")
	}
	if len(cfg.Ports) == 0 {
		return "", ""
	}
	var eps, certs []string
	for _, ep := range cfg.Ports[0].Hosts[0].Routes[0].Backends[0].Endpoints {
		eps = append(eps, fmt.Sprintf("%s=%s:%d", ep.Pod, ep.IP, ep.Port))
	}
	for _, c := range cfg.Certificates {
		certs = append(certs, c.Name+"/"+string(c.KeyPEM))
	}
	return strings.Join(eps, " "), strings.Join(certs, " ")
}

// gatewayPorts are the ports of the config the gateway helper serves:
// those it binds on the host.
func (r *svcRig) gatewayPorts() string {
	r.t.Helper()
	var cfg helperapi.GatewayConfig
	if _, ok := r.docker.Serving("i_gateway", &cfg); !ok {
		r.t.Fatal("no gateway helper serving a config")
	}
	var ports []string
	for _, p := range cfg.Ports {
		ports = append(ports, fmt.Sprint(p.Port))
	}
	return strings.Join(ports, " ")
}

// gatewayHelpers are the gateway helpers Docker has, not being removed.
func (r *svcRig) gatewayHelpers() []dockerx.Container {
	var out []dockerx.Container
	for _, c := range r.docker.Snapshot() {
		if c.Role == dockerx.RoleGateway && c.State != dockerx.StateRemoving {
			out = append(out, c)
		}
	}
	return out
}

// newPublishingGatewayRig is a rig whose NodePort Service default/web
// (nodePort 30080, two ready pods) is the backend of the gateway, which
// serves its table (ports 18080, 18443).
func newPublishingGatewayRig(t *testing.T) *svcRig {
	r := newSvcRig(t)
	r.feed(webPods(2, 2))
	r.svcs.put(webService("NodePort", 30080))
	r.reconcile("default/web")
	r.ctrl.ServeGateway(gatewayTable(18080, 18443), 1, nil)
	r.reconcile(GatewayKey)
	return r
}

// newRoutedWebRig is a rig whose ClusterIP Service default/web selects
// pods and whose gateway serves ports 18080 and 18443, routing to it.
func newRoutedWebRig(t *testing.T, pods []PodEndpoint) *svcRig {
	r := newSvcRig(t)
	r.feed(pods)
	r.svcs.put(webService("", 0))
	r.reconcile("default/web")
	r.ctrl.ServeGateway(gatewayTable(18080, 18443), 1, nil)
	r.reconcile(GatewayKey)
	return r
}

// restartIntoTheGatewayWait restarts the controller with a clock the
// test moves (advance), and syncs default/web, which waits for the
// gateway's first sync (awaitGatewayPorts).
func (r *svcRig) restartIntoTheGatewayWait() (advance func(time.Duration)) {
	r.t.Helper()
	advance = r.withClock()
	r.feed(webPods(2, 2))
	if res := r.reconcile("default/web"); res.RequeueAfter == 0 {
		r.t.Fatalf("result %+v: expected the Service to wait for the gateway", res)
	}
	return advance
}

// wantGatewayLeavesOut checks that the gateway binds 18443 only, 18080
// being left out as holder's.
func (r *svcRig) wantGatewayLeavesOut(when, holder string) {
	r.t.Helper()
	if got := r.gatewayPorts(); got != "18443" {
		r.t.Errorf("%s, the gateway binds %q, want 18443 (18080 is %s's)", when, got, holder)
	}
	if u := r.ctrl.GatewayUnavailable(); !strings.Contains(u[18080], holder) {
		r.t.Errorf("%s, unavailable %v, want 18080 named as %s's", when, u, holder)
	}
}

// TestGatewayHelperLifecycle: the gateway helper is created with the first
// served route (its command carrying no config, the config with its key
// pushed on stdin), serves the ready endpoints of the backend Service
// from the tracker, is pushed again when they change (queued under the
// gateway's key by the tracker, not replaced), is reported Programmed
// once it acknowledged, and is removed with the last route.
func TestGatewayHelperLifecycle(t *testing.T) {
	r := newSvcRig(t)
	r.ctrl.cfg.Secrets = func(ns, name string) (*manifests.Secret, error) {
		return &manifests.Secret{Type: manifests.SecretTypeTLS, Data: map[string][]byte{
			manifests.SecretTLSCertKey: []byte("CERT"), manifests.SecretTLSPrivateKeyKey: []byte("KEY-" + ns + "-" + name)}}, nil
	}
	r.feed(webPods(3, 2))
	r.svcs.put(webService("", 0))
	r.reconcile("default/web")

	notified := 0
	r.ctrl.ServeGateway(gatewayTable(18080, 18443), 1, func() { notified++ })
	if r.ctrl.GatewayProgrammed(1) {
		t.Fatal("Programmed before any helper acknowledged")
	}
	r.reconcile(GatewayKey)
	creates := r.docker.CreatedHelpers()
	gw := creates[len(creates)-1]
	if gw.Name != "i_gateway" || gw.Role != dockerx.RoleGateway {
		t.Fatalf("created %s (role %s), want i_gateway (role gateway)", gw.Name, gw.Role)
	}
	if gw.JoinNetwork != dockerx.NetworkModeHost || len(gw.Ports) != 0 {
		t.Errorf("network %q, Docker publishing %v; want the host's network and no Docker port binding", gw.JoinNetwork, gw.Ports)
	}
	if cmd := strings.Join(gw.Cmd, " "); !strings.Contains(cmd, "--listen-host 127.0.0.1 --host-ports --control-socket "+helperapi.HostControlSocket) {
		t.Errorf("the command %q does not listen on the service address only, binding host ports itself, with a file control socket", cmd)
	}
	if got := r.gatewayPorts(); got != "18080 18443" {
		t.Errorf("the gateway binds %q, want both ports", got)
	}
	if cmd := strings.Join(gw.Cmd, " "); strings.Contains(cmd, "KEY") || strings.Contains(cmd, "a.test") {
		t.Errorf("the create's command carries the config: %s", cmd)
	}
	eps, certs := r.gatewayServes()
	if eps != "web-a-0=10.222.0.2:8080 web-a-1=10.222.0.3:8080" || certs != "default/tls/KEY-default-tls" {
		t.Errorf("gateway serves %q with certificates %q", eps, certs)
	}
	if !r.ctrl.GatewayProgrammed(1) || notified != 1 {
		t.Errorf("after the ack: Programmed(1)=%v, notified %d times; want true, once", r.ctrl.GatewayProgrammed(1), notified)
	}

	// A pod becomes ready: the tracker queues the gateway's key of the
	// Service, whose sync pushes (no new helper).
	r.tracker.Update("default/web", webPods(3, 3))
	if q := r.queued(); !q[GatewayKey+"default/web"] {
		t.Fatalf("an endpoint change queued %v, want %s", q, GatewayKey+"default/web")
	}
	r.reconcile(GatewayKey + "default/web")
	if eps, _ := r.gatewayServes(); eps != "web-a-0=10.222.0.2:8080 web-a-1=10.222.0.3:8080 web-a-2=10.222.0.4:8080" {
		t.Errorf("after the change the gateway serves %q", eps)
	}
	if n := len(r.docker.CreatedHelpers()); n != len(creates) {
		t.Errorf("an endpoint change created a helper (%d creates, want %d)", n, len(creates))
	}
	if n := len(r.gatewayHelpers()); n != 1 {
		t.Fatalf("%d gateway helpers, want 1", n)
	}

	// The last route goes: the helper is removed, nothing is Programmed.
	r.ctrl.ServeGateway(&gatewayroutes.Table{}, 2, func() { notified++ })
	r.reconcile(GatewayKey)
	if n := len(r.gatewayHelpers()); n != 0 {
		t.Errorf("%d gateway helpers with no route, want 0", n)
	}
	if r.ctrl.GatewayProgrammed(1) || r.ctrl.GatewayProgrammed(2) {
		t.Error("Programmed with no helper")
	}
}

// TestGatewayPrivilegedPortGate: a port below 1024 is published only with
// --allow-host-ports covering it, as a hostPort; without, no helper runs
// and the refusal says which flag is missing.
func TestGatewayPrivilegedPortGate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		allow   []manifests.PortRange
		helpers int
		refused string
	}{
		{name: "no gate", helpers: 0, refused: "port 80 needs --allow-host-ports, port 443 needs --allow-host-ports"},
		{name: "one port allowed", allow: []manifests.PortRange{{From: 80, To: 80}}, helpers: 0, refused: "port 443 needs --allow-host-ports"},
		{name: "both allowed", allow: []manifests.PortRange{{From: 1, To: 1023}}, helpers: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSvcRig(t)
			r.allow = manifests.Policy{HostPorts: tc.allow}
			r.restart()
			r.feed(webPods(1, 1))
			r.svcs.put(webService("", 0))
			r.ctrl.ServeGateway(gatewayTable(80, 443), 1, nil)
			r.reconcile(GatewayKey)
			if n := len(r.gatewayHelpers()); n != tc.helpers {
				t.Errorf("%d gateway helpers, want %d", n, tc.helpers)
			}
			if got := r.ctrl.GatewayRefused(); got != tc.refused {
				t.Errorf("refused %q, want %q", got, tc.refused)
			}
			if u := r.ctrl.GatewayUnavailable(); tc.refused != "" && u[443] != "port 443 needs --allow-host-ports" {
				t.Errorf("unavailable %v, want 443 refused", u)
			}
			if got := r.ctrl.GatewayProgrammed(1); got != (tc.helpers == 1) {
				t.Errorf("Programmed %v with %d helpers", got, tc.helpers)
			}
		})
	}
}

// TestGatewayDrainWaitsForTheGateway: a pod the gateway routes to is
// drained only once the gateway acknowledged a config without it.
func TestGatewayDrainWaitsForTheGateway(t *testing.T) {
	r := newRoutedWebRig(t, webPods(2, 2))
	ctx := t.Context()
	done := drainAsync(r.tracker, ctx, "default", "web-a-1")
	for !r.queued()[GatewayKey+"default/web"] {
		time.Sleep(time.Millisecond) // Drain marks the pod and queues its keys
	}
	r.reconcile("default/web") // the proxy's side acknowledges
	select {
	case err := <-done:
		t.Fatalf("drain ended (%v) before the gateway acknowledged", err)
	default:
	}
	r.reconcile(GatewayKey + "default/web")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if eps, _ := r.gatewayServes(); eps != "web-a-0=10.222.0.2:8080" {
		t.Errorf("after the drain the gateway serves %q", eps)
	}
}

// TestGatewayLeavesPortsOthersPublish: a listener's port that a
// LoadBalancer Service of the instance, or another container of the
// daemon, already publishes on the service address is not bound by the
// gateway: the older publisher keeps it, the gateway serves its other
// ports, and the Service sees no conflict of the gateway's making.
func TestGatewayLeavesPortsOthersPublish(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lb     bool
		daemon []dockerx.Container
	}{
		{name: "a LoadBalancer Service's port", lb: true},
		{name: "another container's port", daemon: []dockerx.Container{{ID: "x", Name: "someone_else",
			Ports: []dockerx.Port{{HostIP: "0.0.0.0", HostPort: 18080, Protocol: "tcp"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSvcRig(t)
			r.docker.SetDaemon(tc.daemon)
			r.feed(webPods(1, 1))
			r.svcs.put(webService("", 0))
			r.reconcile("default/web")
			if tc.lb {
				r.svcs.put(&store.ServiceRecord{Created: t0, Service: manifests.Service{Metadata: manifests.ObjectMeta{Name: "lb", Namespace: "shop"},
					Spec: manifests.ServiceSpec{Type: "LoadBalancer", Selector: app("lb"), Ports: []manifests.ServicePort{{Port: 18080}}}}})
				r.reconcile("shop/lb")
			}
			r.ctrl.ServeGateway(gatewayTable(18080, 18443), 1, nil)
			r.reconcile(GatewayKey)
			helpers := r.gatewayHelpers()
			if len(helpers) != 1 {
				t.Fatalf("%d gateway helpers, want 1 serving the free port", len(helpers))
			}
			if got := r.gatewayPorts(); got != "18443" {
				t.Errorf("the gateway binds %q, want only 18443 (18080 is another's)", got)
			}
			if u := r.ctrl.GatewayUnavailable(); len(u) != 1 || !strings.Contains(u[18080], "127.0.0.1:18080/TCP is published by") {
				t.Errorf("unavailable %v, want 18080 named as published by another", u)
			}
			if tc.lb {
				r.reconcile("shop/lb")
				if c := findCondition(r.svcs.status("shop/lb").Conditions, ServicePortConflict); c != nil {
					t.Errorf("the older LoadBalancer lost its port to the gateway: %+v", c)
				}
			}
		})
	}
}

// TestGatewayPortHeldOnTheHostIsReportedAndTriedAgain: the gateway binds
// its ports on the host itself; one a process of the host holds is
// unavailable (its listeners say why), the other served, and the sync
// asks to run again, pushing so that the helper tries the port again,
// until it is bound.
func TestGatewayPortHeldOnTheHostIsReportedAndTriedAgain(t *testing.T) {
	r := newSvcRig(t)
	r.feed(webPods(1, 1))
	r.svcs.put(webService("", 0))
	r.reconcile("default/web")
	r.docker.HoldHostPort(18080, true)
	notified := 0
	r.ctrl.ServeGateway(gatewayTable(18080, 18443), 1, func() { notified++ })
	res := r.reconcile(GatewayKey)
	if u := r.ctrl.GatewayUnavailable(); len(u) != 1 || !strings.Contains(u[18080], "127.0.0.1:18080 cannot be bound") {
		t.Errorf("unavailable %v, want 18080 as not bound", u)
	}
	if !r.ctrl.GatewayProgrammed(1) {
		t.Error("not Programmed while it serves its other port")
	}
	if res.RequeueAfter <= 0 {
		t.Errorf("result %+v, want a retry", res)
	}
	pushes := len(r.docker.Entries())
	r.docker.HoldHostPort(18080, false)
	if res := r.reconcile(GatewayKey); res.RequeueAfter != 0 {
		t.Errorf("result %+v once bound, want no retry", res)
	}
	if len(r.docker.Entries()) != pushes+1 {
		t.Errorf("%d pushes on the retry, want 1", len(r.docker.Entries())-pushes)
	}
	if u := r.ctrl.GatewayUnavailable(); len(u) != 0 {
		t.Errorf("unavailable %v once the port was freed, want none", u)
	}
	if notified < 2 {
		t.Errorf("notified %d times, want the listeners' change reported", notified)
	}
	if n := len(r.docker.CreatedHelpers()); n != 2 {
		t.Errorf("%d helpers created, want 2 (the proxy, the gateway): a retry is a push", n)
	}
}

// TestGatewayPortIsHeldAgainstALaterService: Docker lists no port of the
// gateway, which binds them itself; a LoadBalancer Service applied after
// it still finds the gateway's port taken (the first publisher keeps it).
func TestGatewayPortIsHeldAgainstALaterService(t *testing.T) {
	r := newRoutedWebRig(t, webPods(1, 1))
	r.svcs.put(&store.ServiceRecord{Created: t0, Service: manifests.Service{Metadata: manifests.ObjectMeta{Name: "lb", Namespace: "shop"},
		Spec: manifests.ServiceSpec{Type: "LoadBalancer", Selector: app("lb"), Ports: []manifests.ServicePort{{Port: 18080}}}}})
	r.reconcile("shop/lb")
	c := findCondition(r.svcs.status("shop/lb").Conditions, ServicePortConflict)
	if c == nil || !strings.Contains(c.Message, "i_gateway") {
		t.Errorf("the later LoadBalancer's conflict %+v, want one naming the gateway", c)
	}
}

// TestGatewayPortIsHeldAgainstALaterServiceAcrossARestart: after a
// restart the controller's memory of the gateway's ports is empty, and
// the Services sync before the gateway controller hands its first table:
// a publishing Service waits for the gateway's first sync while a gateway
// helper runs (its status left as the previous controller wrote it), and
// is queued by it; the gateway keeps its port, the Service its conflict.
func TestGatewayPortIsHeldAgainstALaterServiceAcrossARestart(t *testing.T) {
	r := newRoutedWebRig(t, webPods(1, 1))
	r.svcs.put(&store.ServiceRecord{Created: t0, Service: manifests.Service{Metadata: manifests.ObjectMeta{Name: "lb", Namespace: "shop"},
		Spec: manifests.ServiceSpec{Type: "LoadBalancer", Selector: app("lb"), Ports: []manifests.ServicePort{{Port: 18080}}}}})
	r.reconcile("shop/lb")
	r.restart()
	r.feed(webPods(1, 1))
	r.reconcile("shop/lb")
	st := r.svcs.status("shop/lb")
	if c := findCondition(st.Conditions, ServicePortConflict); c == nil || !strings.Contains(c.Message, "i_gateway") {
		t.Errorf("after a restart, the later LoadBalancer's conflict %+v, want one naming the gateway (published %+v)", c, st.Published)
	}
	r.ctrl.ServeGateway(gatewayTable(18080, 18443), 1, nil)
	r.reconcile(GatewayKey)
	if got := r.gatewayPorts(); got != "18080 18443" {
		t.Errorf("after a restart the gateway binds %q, want both its ports", got)
	}
	if !r.queued()["shop/lb"] {
		t.Errorf("the gateway's first sync queued %v, want the waiting shop/lb", r.queued())
	}
	if res := r.reconcile("shop/lb"); res.RequeueAfter != 0 {
		t.Errorf("once the gateway synced, shop/lb's result %+v, want no wait", res)
	}
	st = r.svcs.status("shop/lb")
	if c := findCondition(st.Conditions, ServicePortConflict); c == nil || !strings.Contains(c.Message, "i_gateway") || len(st.Published) != 0 {
		t.Errorf("once the gateway synced, the later LoadBalancer's conflict %+v, published %+v; want the gateway named, nothing published", c, st.Published)
	}
	r.reconcile(GatewayKey)
	if got := r.gatewayPorts(); got != "18080 18443" {
		t.Errorf("once the Service synced, the gateway binds %q, want both its ports", got)
	}
}

// TestServiceWaitForTheGatewayIsBounded: a publishing Service waits for
// the gateway's ports only while a gateway helper runs, and at most
// gatewayPortsWait after the controller started: a controller whose
// gateway controller hands no table (or fails to) still publishes.
func TestServiceWaitForTheGatewayIsBounded(t *testing.T) {
	lb := &store.ServiceRecord{Created: t0, Service: manifests.Service{Metadata: manifests.ObjectMeta{Name: "lb", Namespace: "shop"},
		Spec: manifests.ServiceSpec{Type: "LoadBalancer", Selector: app("lb"), Ports: []manifests.ServicePort{{Port: 18081}}}}}
	t.Run("no gateway helper runs", func(t *testing.T) {
		r := newSvcRig(t)
		r.feed(webPods(1, 1))
		r.svcs.put(lb)
		if res := r.reconcile("shop/lb"); res.RequeueAfter != 0 {
			t.Errorf("result %+v, want no wait", res)
		}
		if st := r.svcs.status("shop/lb"); len(st.Published) != 1 {
			t.Errorf("published %+v, want 18081", st.Published)
		}
	})
	t.Run("a gateway helper runs, no table is handed", func(t *testing.T) {
		r := newSvcRig(t)
		r.feed(webPods(1, 1))
		r.svcs.put(webService("", 0))
		r.ctrl.ServeGateway(gatewayTable(18080, 18443), 1, nil)
		r.reconcile(GatewayKey)
		advance := r.withClock()
		r.feed(webPods(1, 1))
		r.svcs.put(lb)
		res := r.reconcile("shop/lb")
		if res.RequeueAfter != gatewayPortsWait {
			t.Errorf("result %+v at the start, want a wait of %s", res, gatewayPortsWait)
		}
		if st := r.svcs.status("shop/lb"); len(st.Published) != 0 {
			t.Errorf("published %+v while waiting, want nothing judged", st.Published)
		}
		advance(gatewayPortsWait)
		if res := r.reconcile("shop/lb"); res.RequeueAfter != 0 {
			t.Errorf("result %+v once the wait is over, want none", res)
		}
		if st := r.svcs.status("shop/lb"); len(st.Published) != 1 {
			t.Errorf("published %+v once the wait is over, want 18081", st.Published)
		}
	})
}

// TestServicePortIsHeldAgainstTheGatewayAcrossARestart: the symmetric
// case. A LoadBalancer Service publishes a port before the gateway's
// table names it, so the gateway leaves it out; after a restart the
// gateway syncs before the Service: the Service's stored status (its
// published ports, which the previous controller wrote) holds the port
// for it until its own sync, and nothing flips.
func TestServicePortIsHeldAgainstTheGatewayAcrossARestart(t *testing.T) {
	r := newSvcRig(t)
	r.feed(webPods(1, 1))
	r.svcs.put(webService("", 0))
	r.reconcile("default/web")
	r.svcs.put(&store.ServiceRecord{Created: t0, Service: manifests.Service{Metadata: manifests.ObjectMeta{Name: "lb", Namespace: "shop"},
		Spec: manifests.ServiceSpec{Type: "LoadBalancer", Selector: app("lb"), Ports: []manifests.ServicePort{{Port: 18080}}}}})
	r.reconcile("shop/lb")
	r.ctrl.ServeGateway(gatewayTable(18080, 18443), 1, nil)
	r.reconcile(GatewayKey)
	if got := r.gatewayPorts(); got != "18443" {
		t.Fatalf("before the restart the gateway binds %q, want 18443 (18080 is the Service's)", got)
	}
	r.restart()
	r.feed(webPods(1, 1))
	r.ctrl.ServeGateway(gatewayTable(18080, 18443), 1, nil)
	r.reconcile(GatewayKey)
	r.wantGatewayLeavesOut("after a restart, synced first", "service shop/lb")
	r.reconcile("shop/lb")
	st := r.svcs.status("shop/lb")
	if c := findCondition(st.Conditions, ServicePortConflict); c != nil || len(st.Published) != 1 {
		t.Errorf("after a restart the older LoadBalancer has conflict %+v, published %+v; want none, 18080 published", c, st.Published)
	}
	if !r.queued()[GatewayKey] {
		t.Errorf("the Service's first sync queued %v, want the gateway (it left a port out for it)", r.queued())
	}
	r.reconcile(GatewayKey)
	if got := r.gatewayPorts(); got != "18443" {
		t.Errorf("once the Service synced, the gateway binds %q, want 18443", got)
	}
}

// TestServiceWaitForTheGatewayHoldsBackOnlyItsHostPorts: while a
// publishing Service waits for the gateway's first sync after a restart
// (awaitGatewayPorts), only its host ports wait. Its ClusterIP proxy
// still follows its endpoints, and a leaving pod's drain is acknowledged
// once the proxy no longer serves it: as a Kubernetes node's kube-proxy
// keeps a Service's cluster IP rules up to date whatever its nodePorts.
func TestServiceWaitForTheGatewayHoldsBackOnlyItsHostPorts(t *testing.T) {
	r := newPublishingGatewayRig(t)
	r.restartIntoTheGatewayWait()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	done := drainAsync(r.tracker, ctx, "default", "web-a-1")
	for !r.queued()["default/web"] {
		time.Sleep(time.Millisecond)
	}
	res := r.reconcile("default/web")
	if err := <-done; err != nil {
		t.Errorf("drain during the gateway wait (sync result %+v): %v", res, err)
	}
	if pods, _ := r.proxyPods("i_web.default_svc"); pods != "web-a-0=10.222.0.2:8080" {
		t.Errorf("the proxy still serves %q: the leaving pod gets new connections on the ClusterIP during the wait", pods)
	}
}

// TestServiceDoesNotWaitForAnExitedGateway: a gateway helper that exited
// holds no host port, so a Service synced after a restart does not wait
// for the gateway's first sync.
func TestServiceDoesNotWaitForAnExitedGateway(t *testing.T) {
	r := newPublishingGatewayRig(t)
	for _, c := range r.gatewayHelpers() {
		if err := r.docker.StopContainer(context.Background(), c.ID, 0); err != nil {
			t.Fatal(err)
		}
	}
	r.restart()
	r.feed(webPods(2, 2))
	if res := r.reconcile("default/web"); res.RequeueAfter != 0 {
		t.Errorf("result %+v: the Service waits for a gateway helper that is not running", res)
	}
}

// listCounter is a ServiceDocker that counts its lists of a role's
// containers.
type listCounter struct {
	ServiceDocker
	role  string
	lists atomic.Int64
}

func (l *listCounter) ListHelpers(ctx context.Context, instance, role string) ([]dockerx.Container, error) {
	if role == l.role {
		l.lists.Add(1)
	}
	return l.ServiceDocker.ListHelpers(ctx, instance, role)
}

// TestServiceWaitForTheGatewayListsItsHelperOnce: whether a gateway
// helper runs is looked up once in the wait after a restart, not at each
// publishing Service's sync.
func TestServiceWaitForTheGatewayListsItsHelperOnce(t *testing.T) {
	r := newPublishingGatewayRig(t)
	docker := &listCounter{ServiceDocker: r.docker, role: dockerx.RoleGateway}
	r.build(docker, nil)
	r.feed(webPods(2, 2))
	if res := r.reconcile("default/web"); res.RequeueAfter == 0 {
		t.Fatalf("result %+v: expected the Service to wait for the gateway", res)
	}
	for range 3 {
		before := docker.lists.Load()
		if res := r.reconcile("default/web"); res.RequeueAfter == 0 {
			t.Fatalf("result %+v: expected the Service to wait still", res)
		}
		if n := docker.lists.Load() - before; n != 0 {
			t.Errorf("a sync in the wait listed the gateway helper %d times, want none (looked up once in the window)", n)
		}
	}
}

// TestGatewayGivingUpAPortQueuesTheServiceWaitingForIt: a LoadBalancer
// Service left out of a port the gateway publishes (its PortConflict
// names the gateway) takes it as soon as the gateway gives it up — its
// routes moved to another — as it would from another Service
// (allocator.release), not at the next resync, 30 s or more later.
func TestGatewayGivingUpAPortQueuesTheServiceWaitingForIt(t *testing.T) {
	r := newRoutedWebRig(t, webPods(1, 1))
	r.svcs.put(shopLB(18080))
	r.reconcile("shop/lb")
	if c := findCondition(r.svcs.status("shop/lb").Conditions, ServicePortConflict); c == nil || !strings.Contains(c.Message, "i_gateway") {
		t.Fatalf("the later LoadBalancer's conflict %+v, want one naming the gateway", c)
	}
	r.queued()
	r.ctrl.ServeGateway(gatewayTable(18090, 18443), 2, nil)
	r.reconcile(GatewayKey)
	if got := r.gatewayPorts(); got != "18090 18443" {
		t.Fatalf("the gateway binds %q, want 18090 18443", got)
	}
	if !r.queued()["shop/lb"] {
		t.Fatalf("shop/lb not queued when the gateway gave up 18080")
	}
	r.syncPublished("shop/lb", "18080/TCP=0")
	if c := findCondition(r.svcs.status("shop/lb").Conditions, ServicePortConflict); c != nil {
		t.Errorf("conflict %+v after the gateway gave the port up", c)
	}
}

// TestGatewayBeingReplacedKeepsItsPortsFromAWaitingService: while the
// gateway's helper is being replaced (the old container's name still
// being freed: the sync waits), the gateway has given up no port: a
// LoadBalancer Service left out of one of its ports must not be queued
// to take it then (docs/design.md §10, the first publisher keeps a port),
// or the new helper finds its port gone to a younger Service.
func TestGatewayBeingReplacedKeepsItsPortsFromAWaitingService(t *testing.T) {
	r := newRoutedWebRig(t, webPods(1, 1))
	r.svcs.put(shopLB(18080))
	r.reconcile("shop/lb")
	if c := findCondition(r.svcs.status("shop/lb").Conditions, ServicePortConflict); c == nil || !strings.Contains(c.Message, "i_gateway") {
		t.Fatalf("the later LoadBalancer's conflict %+v, want one naming the gateway", c)
	}
	helpers := r.gatewayHelpers()
	if len(helpers) != 1 {
		t.Fatalf("%d gateway helpers, want 1", len(helpers))
	}
	r.queued()
	if err := r.docker.Remove(helpers[0].ID); err != nil { // replaced: its name is being freed
		t.Fatal(err)
	}
	r.reconcile(GatewayKey)
	if r.queued()["shop/lb"] {
		t.Errorf("shop/lb queued while the gateway's helper is being replaced: it gave up no port")
	}
	r.reconcile("shop/lb")
	if c := findCondition(r.svcs.status("shop/lb").Conditions, ServicePortConflict); c == nil || !strings.Contains(c.Message, "i_gateway") {
		t.Errorf("while the gateway's helper is replaced, shop/lb's conflict is %+v: it took the gateway's port", c)
	}
	r.docker.FinishRemovals()
	r.reconcile(GatewayKey)
	if got := r.gatewayPorts(); got != "18080 18443" {
		t.Errorf("the replaced gateway binds %q, want 18080 18443", got)
	}
}
