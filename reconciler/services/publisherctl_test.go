package services

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/internal/helperfake"
	"github.com/dockctl/dockctl/reconciler/reconcile"
	"github.com/dockctl/dockctl/store"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// lbService is a LoadBalancer Service lb publishing port 8443 and
// nodePort 30443 (app=web's pods' http port).
func lbService() *store.ServiceRecord {
	return &store.ServiceRecord{Created: t0, Service: manifests.Service{Metadata: manifests.ObjectMeta{Name: "lb"},
		Spec: manifests.ServiceSpec{Type: "LoadBalancer", Selector: app("web"),
			Ports: []manifests.ServicePort{{Port: 8443, NodePort: 30443, TargetPort: intstr.FromString("http")}}}}}
}

// TestPublisherServesEveryPublishedPortOnTheHostNetwork: one publisher
// per instance, on the host's network with no Docker port binding, binds
// every NodePort and LoadBalancer port of every Service on the service
// address and forwards each straight to the ready endpoints of its
// Service port; the Services' proxies publish nothing; a ClusterIP
// Service's port is not published.
func TestPublisherServesEveryPublishedPortOnTheHostNetwork(t *testing.T) {
	r := newSvcRig(t)
	r.feed(webPods(3, 2))
	r.svcs.put(webService("NodePort", 30080))
	r.svcs.put(lbService())
	internal := webService("", 0)
	internal.Service.Metadata.Name = "internal"
	r.svcs.put(internal)
	for _, k := range []string{"default/web", "default/lb", "default/internal", PublisherKey} {
		r.reconcile(k)
	}
	var pub []dockerx.HelperRequest
	for _, c := range r.docker.CreatedHelpers() {
		switch {
		case c.Role == dockerx.RolePublisher:
			pub = append(pub, c)
		case len(c.Ports) > 0:
			t.Errorf("%s publishes %v through Docker, want nothing", c.Name, c.Ports)
		}
	}
	if len(pub) != 1 || pub[0].Name != "i_publisher" || pub[0].JoinNetwork != dockerx.NetworkModeHost || pub[0].Cmd[2] != helperapi.ModeProxy {
		t.Fatalf("publishers created %+v, want one i_publisher running helper proxy on the host's network", pub)
	}
	if cmd := strings.Join(pub[0].Cmd, " "); !strings.Contains(cmd, "--listen-host 127.0.0.1 --host-ports --control-socket "+helperapi.HostControlSocket) {
		t.Errorf("command %q: want its ports on the service address, bound by itself, a file control socket", cmd)
	}
	if got := r.publisherPorts(); got != "8443/TCP=2 30080/TCP=2 30443/TCP=2" {
		t.Errorf("the publisher serves %q, want the LoadBalancer's port and nodePort and the NodePort, each to the 2 ready pods", got)
	}
	// Each Service's status says what it is published on, for `get
	// services` (a LoadBalancer's EXTERNAL-IP); a ClusterIP one nothing.
	for key, want := range map[string]string{"default/lb": "127.0.0.1:8443/TCP 127.0.0.1:30443/TCP", "default/web": "127.0.0.1:30080/TCP", "default/internal": ""} {
		var got []string
		for _, p := range r.svcs.status(key).Published {
			got = append(got, fmt.Sprintf("%s:%d/%s", p.HostIP, p.Port, p.Protocol))
		}
		if g := strings.Join(got, " "); g != want {
			t.Errorf("%s's status publishes %q, want %q", key, g, want)
		}
	}

	// A pod turns ready: the tracker queues the publisher's key of each
	// Service, whose sync pushes (no new helper).
	r.tracker.Update("default/web", webPods(3, 3))
	if q := r.queued(); !q[PublisherKey+"default/web"] || !q[PublisherKey+"default/lb"] {
		t.Fatalf("an endpoint change queued %v, want the publisher's keys of both Services", q)
	}
	r.reconcile(PublisherKey + "default/web")
	if got := r.publisherPorts(); got != "8443/TCP=3 30080/TCP=3 30443/TCP=3" {
		t.Errorf("after the change the publisher serves %q", got)
	}

	// The last published Service goes NodePort → ClusterIP and the other
	// is deleted: the publisher is removed.
	web := webService("", 0)
	web.Generation++
	r.svcs.put(web)
	lb := lbService()
	lb.Deleted = true
	r.svcs.put(lb)
	r.reconcile("default/web")
	r.reconcile("default/lb")
	r.reconcile(PublisherKey)
	for _, c := range r.docker.Snapshot() {
		if c.Role == dockerx.RolePublisher && c.State != dockerx.StateRemoving {
			t.Errorf("publisher %s left with nothing to publish", c.Name)
		}
	}
}

// TestPublisherKeepsServingUntilEveryPublishedServiceSynced: after a
// controller restart the publisher is left serving its last config until
// every published Service's sync said what it publishes: the first
// Service synced must not take the other's ports away.
func TestPublisherKeepsServingUntilEveryPublishedServiceSynced(t *testing.T) {
	r := newSvcRig(t)
	r.feed(webPods(2, 2))
	r.svcs.put(webService("NodePort", 30080))
	r.svcs.put(lbService())
	for _, k := range []string{"default/web", "default/lb", PublisherKey} {
		r.reconcile(k)
	}
	r.restart()
	r.feed(webPods(2, 2))
	pushes := len(r.docker.Entries())
	r.reconcile("default/web")
	r.reconcile(PublisherKey)
	if n := len(r.docker.Entries()) - pushes; n != 1 { // the proxy's re-push
		t.Errorf("%d pushes before the LoadBalancer's sync, want the proxy's one only", n)
	}
	if got := r.publisherPorts(); got != "8443/TCP=2 30080/TCP=2 30443/TCP=2" {
		t.Errorf("the publisher serves %q", got)
	}
	r.reconcile("default/lb")
	r.reconcile(PublisherKey)
	if got := r.publisherPorts(); got != "8443/TCP=2 30080/TCP=2 30443/TCP=2" {
		t.Errorf("after every sync the publisher serves %q", got)
	}
}

// TestPublisherDrainWaitsForThePublisher: a pod behind a published port
// is drained only once the publisher acknowledged a config without it,
// not only the Service's proxy: zero failed requests through a published
// port during a rolling update.
func TestPublisherDrainWaitsForThePublisher(t *testing.T) {
	r := newSvcRig(t)
	r.feed(webPods(2, 2))
	r.svcs.put(webService("NodePort", 30080))
	r.reconcile("default/web")
	r.reconcile(PublisherKey)
	done := drainAsync(r.tracker, t.Context(), "default", "web-a-1")
	for !r.queued()[PublisherKey+"default/web"] {
		time.Sleep(time.Millisecond) // Drain marks the pod and queues its keys
	}
	r.reconcile("default/web") // the proxy acknowledges
	select {
	case err := <-done:
		t.Fatalf("drain ended (%v) before the publisher acknowledged", err)
	default:
	}
	r.reconcile(PublisherKey + "default/web")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := r.publisherPorts(); got != "30080/TCP=1" {
		t.Errorf("after the drain the publisher serves %q", got)
	}
}

// TestPublisherPortOfAReplacedProxyIsTriedSoon: on an upgrade the
// Service's proxy of an earlier release, publishing the port through
// Docker, is replaced; a publisher that could not bind it meanwhile
// tries again within seconds, and the Service reports no conflict (the
// port is Docker's to release, not a process of the host's).
func TestPublisherPortOfAReplacedProxyIsTriedSoon(t *testing.T) {
	r := newSvcRig(t)
	r.feed(webPods(2, 2))
	r.svcs.put(webService("NodePort", 30080))
	r.docker.HoldHostPort(30080, true)
	img, err := r.docker.EnsureHelperImage(t.Context(), "i")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.docker.CreateHelper(t.Context(), dockerx.HelperRequest{Instance: "i", Namespace: "other", Name: "i_old.other_svc", Role: dockerx.RoleProxy,
		Service: "old", Image: img, Cmd: []string{"/dockctl", "helper", "proxy", "--config", "{}"},
		Network: dockerx.PodNetwork{Name: "dockctl_i", IPv4: "10.222.15.200"},
		Ports:   []dockerx.PortBinding{{HostIP: "127.0.0.1", HostPort: 30080, ContainerPort: 80, Protocol: "TCP"}}}); err != nil {
		t.Fatal(err)
	}
	r.reconcile("default/web")
	res := r.reconcile(PublisherKey)
	if res.RequeueAfter <= 0 || res.RequeueAfter > 2*time.Second {
		t.Errorf("result %+v, want a retry within seconds", res)
	}
	r.reconcile("default/web")
	if c := findCondition(r.svcs.status("default/web").Conditions, ServicePortConflict); c != nil {
		t.Errorf("conflict %+v for a port a replaced proxy releases", c)
	}
	r.docker.HoldHostPort(30080, false)
	if res := r.reconcile(PublisherKey); res.RequeueAfter != 0 {
		t.Errorf("result %+v once bound, want no retry", res)
	}
	if got := r.publisherPorts(); got != "30080/TCP=2" {
		t.Errorf("the publisher serves %q", got)
	}
}

// publisherRefused is a Docker that refuses to create the publisher (a
// daemon that denies the host's network, say) and makes every other
// helper.
type publisherRefused struct {
	*helperfake.Engine
	refuse *atomic.Bool
}

func (d publisherRefused) CreateHelper(ctx context.Context, req dockerx.HelperRequest) (string, error) {
	if req.Role == dockerx.RolePublisher && d.refuse.Load() {
		return "", errors.New("Error response from daemon: host networking is denied by policy")
	}
	return d.Engine.CreateHelper(ctx, req)
}

// TestPublisherFailureIsReportedOnItsServices: a publisher Docker does not
// make serves none of the published ports, so `get services` and the
// events must not show them as served: each Service that publishes one
// reports ProxyFailure naming the publisher, and loses it once the
// publisher serves. A ClusterIP Service reports nothing.
func TestPublisherFailureIsReportedOnItsServices(t *testing.T) {
	r := newSvcRig(t)
	var refuse atomic.Bool
	refuse.Store(true)
	r.build(publisherRefused{r.docker, &refuse}, nil)
	r.feed(webPods(2, 2))
	r.svcs.put(webService("NodePort", 30080))
	r.svcs.put(&store.ServiceRecord{Created: t0, Service: manifests.Service{Metadata: manifests.ObjectMeta{Name: "internal"},
		Spec: manifests.ServiceSpec{Selector: app("web"), Ports: []manifests.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}}}}})
	for range 3 {
		r.reconcile("default/web")
		r.reconcile("default/internal")
		if _, err := r.ctrl.Reconcile(context.Background(), reconcile.Request{Key: PublisherKey}); err == nil {
			t.Fatal("the publisher's sync succeeded with its create refused")
		}
		drainQueue(r)
	}
	r.reconcile("default/web")
	if c := findCondition(r.svcs.status("default/web").Conditions, ServiceProxyFailure); c == nil || c.Reason != ReasonPublisherFailed ||
		!strings.Contains(c.Message, "host networking is denied") {
		t.Errorf("web's conditions %+v: want ProxyFailure %s naming the publisher's failure", r.svcs.status("default/web").Conditions, ReasonPublisherFailed)
	}
	if c := findCondition(r.svcs.status("default/internal").Conditions, ServiceProxyFailure); c != nil {
		t.Errorf("internal publishes nothing, has %+v", c)
	}

	refuse.Store(false)
	r.syncPublished("default/web", "30080/TCP=2")
	if c := findCondition(r.svcs.status("default/web").Conditions, ServiceProxyFailure); c != nil {
		t.Errorf("the publisher serves, web still has %+v", c)
	}
}

// TestPublisherServiceCrossingItsPortsAndNodePorts: a LoadBalancer
// Service may give one port's number as another port's nodePort (valid:
// a cluster's load balancer and its nodes are different hosts), but here
// both are host ports of one address. The second is a PortConflict of
// the Service, and the publisher's config keeps one listener per host
// port: a config listing one twice is refused whole, and every other
// Service's published ports would go unserved with it.
func TestPublisherServiceCrossingItsPortsAndNodePorts(t *testing.T) {
	r := newSvcRig(t)
	r.feed(webPods(2, 2))
	r.svcs.put(webService("NodePort", 30080))
	crossed := &store.ServiceRecord{Created: t0.Add(time.Second), Service: manifests.Service{Metadata: manifests.ObjectMeta{Name: "crossed"},
		Spec: manifests.ServiceSpec{Type: "LoadBalancer", Selector: app("web"), Ports: []manifests.ServicePort{
			{Name: "a", Port: 30090, NodePort: 30091, TargetPort: intstr.FromString("http")},
			{Name: "b", Port: 30091, NodePort: 30090, TargetPort: intstr.FromString("http")}}}}}
	if err := manifests.ValidateService(&crossed.Service); err != nil {
		t.Fatalf("the Service is invalid: %v", err)
	}
	r.svcs.put(crossed)
	r.reconcile("default/crossed")
	r.syncPublished("default/web", "30080/TCP=2 30090/TCP=2 30091/TCP=2")
	if c := findCondition(r.svcs.status("default/crossed").Conditions, ServicePortConflict); c == nil {
		t.Errorf("crossed's conditions %+v: want PortConflict for its nodePorts that are its own ports", r.svcs.status("default/crossed").Conditions)
	}
	for _, np := range r.svcs.status("default/crossed").NodePorts {
		if np.Port == 30091 && !np.Since.IsZero() {
			t.Errorf("nodePort %+v shown as published: its host port serves port 30090", np)
		}
	}
}

// TestPublisherHostPortTakenByAnOlderServiceBeforeTheYoungerResynced: an
// older Service takes a host port a younger one published (the older
// wins); until the younger's sync drops it, both have it. A publisher
// sync between must not push a config listing the port twice, which the
// helper refuses whole, every Service's ports with it: the port goes to
// one of them.
func TestPublisherHostPortTakenByAnOlderServiceBeforeTheYoungerResynced(t *testing.T) {
	r := newSvcRig(t)
	r.feed(webPods(2, 2))
	young := webService("NodePort", 30080)
	young.Created = t0.Add(time.Hour)
	r.svcs.put(young)
	r.svcs.put(lbService())
	r.reconcile("default/lb")
	r.syncPublished("default/web", "8443/TCP=2 30080/TCP=2 30443/TCP=2")

	old := webService("NodePort", 30080)
	old.Service.Metadata.Name = "old"
	r.svcs.put(old)
	r.reconcile("default/old") // takes 30080; web, displaced, is queued
	if _, err := r.ctrl.Reconcile(context.Background(), reconcile.Request{Key: PublisherKey}); err != nil {
		t.Fatalf("the publisher's sync: %v", err)
	}
	if got := r.publisherPorts(); got != "8443/TCP=2 30080/TCP=2 30443/TCP=2" {
		t.Errorf("the publisher serves %q", got)
	}
	r.syncPublished("default/web", "8443/TCP=2 30080/TCP=2 30443/TCP=2")
	var cfg helperapi.ProxyConfig
	r.docker.Serving("i_publisher", &cfg)
	for _, p := range cfg.Ports {
		if p.Port == 30080 && !strings.HasPrefix(p.Name, "default/old:") {
			t.Errorf("30080 serves %s, want default/old's", p.Name)
		}
	}
}

// TestPublisherFailureLeavesNothingPublishedInStatus: a Service whose
// host ports a failing publisher does not serve reports ProxyFailure
// PublisherFailed ("its host ports are not served"), and its status must
// not list them as published either: `get services` shows a
// LoadBalancer's EXTERNAL-IP from them while the publisher container
// runs, and here it runs — only its pushes fail — serving its last
// config, without the Service's ports.
func TestPublisherFailureLeavesNothingPublishedInStatus(t *testing.T) {
	r := newSvcRig(t)
	r.feed(webPods(2, 2))
	r.svcs.put(webService("NodePort", 30080))
	internal := lbService()
	internal.Service.Spec.Type, internal.Service.Spec.Ports[0].NodePort = "", 0
	r.svcs.put(internal)
	r.reconcile("default/lb")
	r.syncPublished("default/web", "30080/TCP=2")

	r.docker.SetExec(func(string, []string) (int, []byte) { return helperapi.ExitFailed, []byte("push refused") })
	lb := lbService()
	lb.Generation = 2
	r.svcs.put(lb) // now a LoadBalancer: its ports are the publisher's
	r.reconcile("default/lb")
	if _, err := r.ctrl.Reconcile(context.Background(), reconcile.Request{Key: PublisherKey}); err == nil {
		t.Fatal("the publisher's sync succeeded with its push refused")
	}
	r.reconcile("default/lb")
	if got := r.publisherPorts(); got != "30080/TCP=2" {
		t.Fatalf("the publisher serves %q, want its last config", got)
	}
	st := r.svcs.status("default/lb")
	if c := findCondition(st.Conditions, ServiceProxyFailure); c == nil || c.Reason != ReasonPublisherFailed {
		t.Fatalf("lb's conditions %+v: want ProxyFailure %s", st.Conditions, ReasonPublisherFailed)
	}
	if len(st.Published) != 0 {
		t.Errorf("lb's status lists %+v as published while the publisher serves none of them", st.Published)
	}

	r.docker.SetExec(nil)
	r.syncPublished("default/lb", "8443/TCP=2 30080/TCP=2 30443/TCP=2")
	if st := r.svcs.status("default/lb"); len(st.Published) != 2 || findCondition(st.Conditions, ServiceProxyFailure) != nil {
		t.Errorf("once served, lb's status: published %+v, conditions %+v", st.Published, st.Conditions)
	}
}

// TestPublisherDrainWaitsForThePublisherDuringTheGatewayWait: after a
// restart, while a NodePort Service's host ports wait for the gateway's
// first sync (awaitGatewayPorts), the publisher still serves its last
// config, the leaving pod among the Service's endpoints on the nodePort.
// A drain of that pod must not end before the publisher no longer sends
// it connections (as TestPublisherDrainWaitsForThePublisher, without a
// restart): else the pod is stopped while the nodePort still routes new
// connections to it.
func TestPublisherDrainWaitsForThePublisherDuringTheGatewayWait(t *testing.T) {
	r := newPublishingGatewayRig(t)
	r.reconcile(PublisherKey)
	if got := r.publisherPorts(); got != "30080/TCP=2" {
		t.Fatalf("before the restart the publisher serves %q", got)
	}
	advance := r.restartIntoTheGatewayWait()
	done := drainAsync(r.tracker, t.Context(), "default", "web-a-1")
	// Past the wait if it does not end in it.
	r.runUntilDrained(done, "30080/TCP=1", func(round int) {
		if round == 100 {
			advance(gatewayPortsWait)
			r.reconcile("default/web")
			r.reconcile(PublisherKey)
		}
	})
}

// runUntilDrained runs what a drain queues, as the controller's loop
// would, until the drain (done) ends; then the publisher must serve
// want, the leaving pod left out. each runs after every round (nil:
// nothing); the test fails after 200 rounds.
func (r *svcRig) runUntilDrained(done <-chan error, want string, each func(round int)) {
	r.t.Helper()
	for round := 0; round < 200; round++ {
		for k := range r.queued() {
			r.reconcile(k)
		}
		select {
		case err := <-done:
			if err != nil {
				r.t.Fatal(err)
			}
			if got := r.publisherPorts(); got != want {
				r.t.Errorf("the drain ended (round %d) while the publisher serves %q, want %q: the leaving pod still gets the host port's connections", round, got, want)
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
		if each != nil {
			each(round)
		}
	}
	r.t.Fatal("the drain never ended")
}

// TestPublisherDrainRightAfterRestartWaitsForThePublisher: a drain that
// begins after a controller restart, before the Service's first sync,
// waits for the publisher as well as for the proxy: the publisher left
// running serves its last config (its state file), the leaving pod among
// the nodePort's endpoints, until its first sync after every published
// Service's. The stored Services are watched for such a drain
// (Tracker.stored); one that publishes a port must be watched under the
// publisher's key too, or the drain ends on the proxy's ack while the
// host port still sends the pod new connections (docs/design.md §10).
func TestPublisherDrainRightAfterRestartWaitsForThePublisher(t *testing.T) {
	r := newSvcRig(t)
	r.feed(webPods(2, 2))
	r.svcs.put(webService("NodePort", 30080))
	r.syncPublished("default/web", "30080/TCP=2")
	r.restart()
	r.tracker.Update("default/web", webPods(2, 2)) // no sweep yet
	done := drainAsync(r.tracker, t.Context(), "default", "web-a-1")
	for !r.queued()["default/web"] {
		time.Sleep(time.Millisecond) // Drain marks the pod and queues its keys
	}
	r.tracker.MarkSynced()
	// The Service's first sync, before the publisher's: its proxy
	// acknowledges a config without the pod.
	r.reconcile("default/web")
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.tracker.Drain(gone, "default", "web-a-1"); err == nil {
		t.Errorf("the drain was over on the proxy's ack while the publisher serves %q", r.publisherPorts())
	}
	r.runUntilDrained(done, "30080/TCP=1", nil)
}

// TestPublisherDrainRightAfterRestartMidTryWaitsForThePublisher: a held
// port being tried is in its Service's hostHeld, not published, until a
// sync after the publisher's ack; the publisher may have bound it (its
// state file serving the port to the Service's pods) when the controller
// restarts before that sync. A drain right after the restart must wait
// for the publisher then too, as for a Service whose status lists the
// port published: else it ends on the proxy's ack while the host port
// still sends the leaving pod new connections (docs/design.md §10).
func TestPublisherDrainRightAfterRestartMidTryWaitsForThePublisher(t *testing.T) {
	r := newSvcRig(t)
	now := t0
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	r.build(r.docker, clock)
	r.blind()
	r.docker.HoldHostPort(30080, true)
	r.feed(webPods(2, 2))
	r.svcs.put(webService("NodePort", 30080))
	for range 3 {
		r.reconcile("default/web")
		r.reconcile(PublisherKey)
		r.docker.FinishRemovals()
	}
	if st := r.svcs.status("default/web"); len(st.HostHeld) != 1 || len(st.Published) != 0 {
		t.Fatalf("host-held %+v, published %+v; want 30080 held", st.HostHeld, st.Published)
	}

	// Freed; tried: the publisher binds it, and the controller restarts
	// before the Service's sync after the ack.
	r.docker.HoldHostPort(30080, false)
	mu.Lock()
	now = now.Add(hostHeldRetry)
	mu.Unlock()
	r.reconcile("default/web")
	r.reconcile(PublisherKey)
	r.docker.FinishRemovals()
	if got := r.publisherPorts(); got != "30080/TCP=2" {
		t.Fatalf("the publisher serves %q at the try, want 30080/TCP=2", got)
	}
	if st := r.svcs.status("default/web"); len(st.HostHeld) != 1 || len(st.Published) != 0 {
		t.Fatalf("before the Service's sync after the ack: host-held %+v, published %+v; want 30080 held still", st.HostHeld, st.Published)
	}
	r.build(r.docker, clock)
	r.blind()
	r.tracker.Update("default/web", webPods(2, 2)) // no sweep yet
	ctx, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	done := drainAsync(r.tracker, ctx, "default", "web-a-1")
	for !r.queued()["default/web"] && ctx.Err() == nil {
		time.Sleep(time.Millisecond) // Drain marks the pod and queues its keys
	}
	r.tracker.MarkSynced()
	r.reconcile("default/web") // its proxy acknowledges a config without the pod
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.tracker.Drain(gone, "default", "web-a-1"); err == nil {
		t.Errorf("the drain was over on the proxy's ack while the publisher serves %q", r.publisherPorts())
	}
	// The publisher's first sync: the port recalled as held, it serves
	// none of the Service's ports, and is removed.
	for k := range r.queued() {
		r.reconcile(k)
	}
	r.reconcile(PublisherKey)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, c := range r.docker.Snapshot() {
		if c.Role == dockerx.RolePublisher && c.State != dockerx.StateRemoving {
			t.Errorf("the drain ended while publisher %s (%s) serves %q", c.Name, c.State, r.publisherPorts())
		}
	}
}
