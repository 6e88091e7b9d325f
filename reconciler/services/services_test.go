package services

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/internal/helperfake"
	"github.com/dockctl/dockctl/reconciler/reconcile"
	"github.com/dockctl/dockctl/store"
)

// t0 is the tests' time: Services' and deployments' creations.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// deployment is a defaulted Deployment "web" of replicas pods (image
// img:1) for the deployments' store, whose host ports a test sets.
func deployment(replicas int32) *manifests.Deployment {
	d := &manifests.Deployment{APIVersion: manifests.APIVersion, Kind: manifests.Kind, Metadata: manifests.ObjectMeta{Name: "web"}}
	d.Spec.Replicas = &replicas
	d.Spec.Template.Spec.Containers = []manifests.Container{{Name: "web", Image: "img:1"}}
	manifests.SetDefaults(d)
	return d
}

// svcRig runs a Controller's Service reconciler by hand (no loop): the
// test feeds the tracker as the deployment sync would, and calls
// Reconcile.
type svcRig struct {
	t       *testing.T
	docker  *helperfake.Engine
	svcs    *fakeSvcStore
	deps    *store.Store
	ctrl    *Controller
	tracker *Tracker
	prune   bool
	allow   manifests.Policy // the controller's --allow-… flags
	// starting is Config.PodsStarting (nil: none).
	starting func() bool
}

func newSvcRig(t *testing.T) *svcRig {
	t.Helper()
	deps, err := store.Open(t.TempDir(), "i")
	if err != nil {
		t.Fatal(err)
	}
	r := &svcRig{t: t, docker: helperfake.New(t), svcs: newFakeSvcStore(), deps: deps}
	// Removals end when the test says (FinishRemovals): Docker holds a
	// name, and an address, while it removes a container.
	r.docker.HoldRemovals(true)
	r.restart()
	return r
}

// restart builds a fresh controller on the same Docker and stores, as a
// controller restart does; its tracker is fed again.
func (r *svcRig) restart() { r.build(r.docker, nil) }

// build makes the Service controller on docker d with clock now (nil:
// the time), wired as the deployments' controller wires it, with a fresh
// tracker that queues into its loop.
func (r *svcRig) build(d ServiceDocker, now func() time.Time) {
	var c *Controller
	tracker := NewTracker(func(key string) { c.loop.Add(reconcile.Request{Key: key}) }, nil)
	c = New(Config{Instance: "i", Address: "127.0.0.1", Docker: d, Store: r.svcs, Deployments: r.deps, Allow: r.allow,
		Tracker: tracker, Orphan: r.orphan, Now: now, PodsStarting: r.starting, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	r.ctrl, r.tracker = c, tracker
	r.t.Cleanup(c.loop.ShutDown)
}

// orphan is the deployments' controller's handling of an orphan, as a
// proxy's test sees it: left running, or with prune removed.
func (r *svcRig) orphan(ctx context.Context, ct dockerx.Container, remove func(context.Context, string) error, _, _ string, _ ...any) error {
	if !r.prune {
		return nil
	}
	if err := remove(ctx, ct.ID); err != nil && !errors.Is(err, dockerx.ErrNotFound) {
		return fmt.Errorf("remove orphan %s: %w", ct.Name, err)
	}
	return nil
}

// newWebRig is a rig whose Service default/web (ClusterIP) has a proxy
// serving two ready pods.
func newWebRig(t *testing.T) *svcRig {
	r := newSvcRig(t)
	r.feed(webPods(2, 2))
	r.svcs.put(webService("", 0))
	r.reconcile("default/web")
	return r
}

// feed gives the tracker the pods of deployment default/web as the
// deployments' first sweep would, and marks it fed.
func (r *svcRig) feed(pods []PodEndpoint) {
	r.tracker.Update("default/web", pods)
	r.tracker.MarkSynced()
}

func (r *svcRig) reconcile(key string) reconcile.Result {
	r.t.Helper()
	res, err := r.ctrl.Reconcile(context.Background(), reconcile.Request{Key: key})
	if err != nil {
		r.t.Fatalf("Reconcile(%s): %v", key, err)
	}
	return res
}

// webPods are n pods of deployment web (app=web, port "http" 8080), the
// first ready ones ready.
func webPods(n, ready int) []PodEndpoint {
	var out []PodEndpoint
	for i := range n {
		out = append(out, pe("default", "web", fmt.Sprintf("web-a-%d", i), fmt.Sprintf("10.222.0.%d", i+2), i < ready, app("web"),
			manifests.ContainerPort{Name: "http", ContainerPort: 8080}))
	}
	return out
}

func webService(typ string, nodePort int32) *store.ServiceRecord {
	return &store.ServiceRecord{Created: t0, Service: manifests.Service{APIVersion: "v1", Kind: "Service", Metadata: manifests.ObjectMeta{Name: "web"},
		Spec: manifests.ServiceSpec{Type: typ, Selector: app("web"),
			Ports: []manifests.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), NodePort: nodePort}}}}}
}

// proxyPods returns the pods the proxy of name serves on its first port.
func (r *svcRig) proxyPods(name string) (string, int64) {
	r.t.Helper()
	var cfg helperapi.ProxyConfig
	if _, ok := r.docker.Serving(name, &cfg); !ok {
		r.t.Fatalf("no proxy %s serving a config", name)
	}
	var pods []string
	for _, ep := range cfg.Ports[0].Endpoints {
		pods = append(pods, fmt.Sprintf("%s=%s:%d", ep.Pod, ep.IP, ep.Port))
	}
	return strings.Join(pods, " "), cfg.Generation
}

func TestServiceProxyLifecycle(t *testing.T) {
	r := newSvcRig(t)
	r.tracker.Update("default/web", webPods(3, 3))
	// Before the deployments' first sweep the tracker is not trusted.
	r.svcs.put(webService("NodePort", 0))
	r.reconcile("default/web")
	if r.docker.WriteCount() != 0 {
		t.Fatal("a Service was synced before the tracker was")
	}
	r.tracker.MarkSynced()

	r.reconcile("default/web")
	if len(r.proxyCreates()) != 1 {
		t.Fatalf("creates: %+v", r.docker.CreatedHelpers())
	}
	req := r.docker.CreatedHelpers()[0]
	if req.Name != "i_web.default_svc" || req.Role != dockerx.RoleProxy || req.Service != "web" || req.Namespace != "default" ||
		req.Network.IPv4 != "10.222.15.254" || req.Network.Name != "dockctl_i" || req.Image == "" ||
		len(req.Ports) != 0 || req.Cmd[2] != helperapi.ModeProxy {
		t.Errorf("proxy request %+v: want the ClusterIP only, its port published by the publisher", req)
	}
	if q := r.queued(); !q[PublisherKey] {
		t.Errorf("queued %v, want the publisher", q)
	}
	r.reconcile(PublisherKey)
	if got := r.publisherPorts(); got != "30000/TCP=3" {
		t.Errorf("the publisher serves %q, want the nodePort to the 3 ready pods", got)
	}
	if pods, gen := r.proxyPods("i_web.default_svc"); pods != "web-a-0=10.222.0.2:8080 web-a-1=10.222.0.3:8080 web-a-2=10.222.0.4:8080" || gen != 1 {
		t.Errorf("proxy serves %s (generation %d)", pods, gen)
	}
	st := r.svcs.status("default/web")
	if st.ClusterIP != "10.222.15.254" || npString(st.NodePorts) != "[{80 TCP 30000}]" || len(st.Endpoints) != 3 || st.PushedGeneration != 1 ||
		st.ObservedGeneration != 1 || len(st.Conditions) != 0 {
		t.Errorf("status %+v", st)
	}

	// Converged: no write to Docker, none to the store.
	dw, sw := r.docker.WriteCount(), r.svcs.writeCount()
	r.reconcile("default/web")
	if r.docker.WriteCount() != dw || r.svcs.writeCount() != sw {
		t.Errorf("an idle sync wrote: docker %d→%d, store %d→%d", dw, r.docker.WriteCount(), sw, r.svcs.writeCount())
	}

	// A pod turns unready: pushed without it, no restart.
	r.tracker.Update("default/web", webPods(3, 2))
	r.reconcile("default/web")
	if pods, gen := r.proxyPods("i_web.default_svc"); pods != "web-a-0=10.222.0.2:8080 web-a-1=10.222.0.3:8080" || gen != 2 {
		t.Errorf("after unready: %s (generation %d)", pods, gen)
	}
	if len(r.proxyCreates()) != 1 {
		t.Error("an endpoint change recreated the proxy")
	}
	st = r.svcs.status("default/web")
	if st.PushedGeneration != 2 || len(st.Endpoints) != 3 || st.Endpoints[2].Ready {
		t.Errorf("status after unready: %+v", st)
	}

	// A controller restart pushes once, then is idle again; the address
	// and nodePort are kept.
	r.restart()
	r.feed(webPods(3, 2))
	r.reconcile("default/web")
	if _, gen := r.proxyPods("i_web.default_svc"); gen != 3 {
		t.Errorf("after a restart: generation %d, want a re-push (3)", gen)
	}
	dw = r.docker.WriteCount()
	r.reconcile("default/web")
	if r.docker.WriteCount() != dw || len(r.proxyCreates()) != 1 {
		t.Errorf("the second sync after a restart wrote (%d creates)", len(r.proxyCreates()))
	}
	if st := r.svcs.status("default/web"); st.ClusterIP != "10.222.15.254" || npString(st.NodePorts) != "[{80 TCP 30000}]" {
		t.Errorf("allocations not kept: %+v", st)
	}

	// Removed by hand: created again with the same address, once Docker
	// has freed the name (and the address).
	id, _ := r.docker.Serving("i_web.default_svc", &struct{}{})
	if err := r.docker.RemoveContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if res := r.reconcile("default/web"); res.RequeueAfter <= 0 || len(r.proxyCreates()) != 1 {
		t.Errorf("while the name is held: %+v, %d creates; want a requeue and no create", res, len(r.proxyCreates()))
	}
	r.docker.FinishRemovals()
	r.reconcile("default/web")
	if len(r.proxyCreates()) != 2 || r.proxyCreates()[1].Network.IPv4 != "10.222.15.254" {
		t.Errorf("repair: %+v", r.docker.CreatedHelpers())
	}

	// Deleted: the proxy goes.
	rec := webService("NodePort", 0)
	rec.Deleted = true
	r.svcs.put(rec)
	r.reconcile("default/web")
	r.reconcile(PublisherKey) // nothing left to publish: it goes too
	r.docker.FinishRemovals()
	if cs, _ := r.docker.ListContainers(context.Background(), "i"); len(cs) != 0 {
		t.Errorf("after delete: %v", cs)
	}
}

// TestServiceStalePushRetriedSilently: a proxy that holds a newer
// generation than the status says (a state directory restored from a
// backup, a lost status) refuses the push and names its generation; the
// same sync pushes again with the next one. The controller recovers by
// itself, so nothing is reported: no ProxyFailure, no error, no retry
// later.
func TestServiceStalePushRetriedSilently(t *testing.T) {
	tests := []struct {
		name string
		// status is what the state directory holds when the controller
		// starts; nil: none.
		status func(st store.ServiceStatus) *store.ServiceStatus
	}{
		{name: "status lost", status: func(store.ServiceStatus) *store.ServiceStatus { return nil }},
		{name: "older state directory restored", status: func(st store.ServiceStatus) *store.ServiceStatus {
			st.PushedGeneration = 10
			return &st
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newWebRig(t)
			// The proxy moved on to generation 50 since.
			r.svcs.mu.Lock()
			if st := tt.status(*r.svcs.statuses["default/web"]); st != nil {
				r.svcs.statuses["default/web"] = st
			} else {
				delete(r.svcs.statuses, "default/web")
			}
			r.svcs.mu.Unlock()
			id, _ := r.docker.Serving("i_web.default_svc", &struct{}{})
			r.docker.SetServed(id, `{"generation":50}`)
			r.restart()
			r.feed(webPods(2, 1))
			writes := r.svcs.writeCount()
			if res := r.reconcile("default/web"); res.RequeueAfter != 0 {
				t.Errorf("sync asks to be retried after %v", res.RequeueAfter)
			}
			if pods, gen := r.proxyPods("i_web.default_svc"); gen != 51 || pods != "web-a-0=10.222.0.2:8080" {
				t.Errorf("after a stale push: %s generation %d, want 51", pods, gen)
			}
			if st := r.svcs.status("default/web"); st.PushedGeneration != 51 || findCondition(st.Conditions, ServiceProxyFailure) != nil {
				t.Errorf("status %+v, want generation 51 and no ProxyFailure", st)
			}
			if n := r.svcs.writeCount() - writes; n != 1 {
				t.Errorf("%d status writes, want 1 (no failure written, then cleared)", n)
			}
		})
	}
}

func findCondition(cs []store.Condition, typ string) *store.Condition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}

func TestServicePortConflicts(t *testing.T) {
	r := newSvcRig(t)
	r.allow = manifests.Policy{HostPorts: []manifests.PortRange{{From: 30080, To: 30080}}}
	r.restart()
	r.tracker.MarkSynced()
	db := deployment(1)
	db.Metadata.Name = "db"
	db.Spec.Template.Spec.Containers[0].Ports = []manifests.ContainerPort{{ContainerPort: 5432, HostPort: 30080, Protocol: "TCP"}}
	if _, err := r.deps.Apply(store.Deployments(db), store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	r.docker.SetDaemon([]dockerx.Container{{ID: "x", Name: "someone_else", Ports: []dockerx.Port{{HostIP: "0.0.0.0", HostPort: 8443, Protocol: "tcp"}}}})
	web := webService("NodePort", 30080)
	web.Service.Spec.Ports = append(web.Service.Spec.Ports, manifests.ServicePort{Name: "admin", Port: 81, NodePort: 30081})
	r.svcs.put(web)
	lb := &store.ServiceRecord{Created: t0, Service: manifests.Service{Metadata: manifests.ObjectMeta{Name: "lb", Namespace: "shop"},
		Spec: manifests.ServiceSpec{Type: "LoadBalancer", Selector: app("lb"), Ports: []manifests.ServicePort{{Port: 8443}}}}}
	r.svcs.put(lb)
	r.reconcile("default/web")
	r.reconcile("shop/lb")

	st := r.svcs.status("default/web")
	c := findCondition(st.Conditions, ServicePortConflict)
	if c == nil || !strings.Contains(c.Message, "127.0.0.1:30080/TCP is published by deployment default/db") {
		t.Errorf("web conditions %+v", st.Conditions)
	}
	r.reconcile(PublisherKey)
	if got := r.publisherPorts(); got != "30081/TCP=0" {
		t.Errorf("the publisher serves %q: the conflicting ports must be left out", got)
	}
	st = r.svcs.status("shop/lb")
	if c := findCondition(st.Conditions, ServicePortConflict); c == nil || !strings.Contains(c.Message, "container someone_else") {
		t.Errorf("lb conditions %+v", st.Conditions)
	}
	if st.ClusterIP != "10.222.15.253" {
		t.Errorf("lb's ClusterIP %s, want the next free one", st.ClusterIP)
	}
	// A standing conflict is no change: nothing is written again.
	sw, dw := r.svcs.writeCount(), r.docker.WriteCount()
	r.reconcile("default/web")
	r.reconcile("shop/lb")
	if r.svcs.writeCount() != sw || r.docker.WriteCount() != dw {
		t.Errorf("idle syncs with conflicts wrote: store %d→%d, docker %d→%d", sw, r.svcs.writeCount(), dw, r.docker.WriteCount())
	}
}

// A deployment the controller refuses to run (a hostPort without
// --allow-host-ports, hostNetwork without --allow-host-namespaces) binds
// no host port: it must not take a Service's port, nor be named in its
// PortConflict as publishing it. Containers that still run and publish
// one are seen on the daemon.
func TestServicePortsNotHeldByARefusedDeployment(t *testing.T) {
	tests := []struct {
		name     string
		allow    manifests.Policy
		conflict string // in web's PortConflict; "" none
	}{
		{"refused", manifests.Policy{}, ""},
		{"allowed", manifests.Policy{HostPorts: []manifests.PortRange{{From: 30080, To: 30080}}, HostNamespaces: true},
			"127.0.0.1:30080/TCP is published by deployment default/db; host port 127.0.0.1:30081/TCP is published by deployment default/hostdb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSvcRig(t)
			r.allow = tt.allow
			r.restart()
			r.tracker.MarkSynced()
			db := deployment(1)
			db.Metadata.Name = "db"
			db.Spec.Template.Spec.Containers[0].Ports = []manifests.ContainerPort{{ContainerPort: 5432, HostPort: 30080, HostIP: "127.0.0.1"}}
			hostdb := deployment(1)
			hostdb.Metadata.Name = "hostdb"
			hostdb.Spec.Template.Spec.HostNetwork = true
			hostdb.Spec.Template.Spec.Containers[0].Ports = []manifests.ContainerPort{{ContainerPort: 30081}}
			if _, err := r.deps.Apply(store.Deployments(db, hostdb), store.ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			web := webService("NodePort", 30080)
			web.Service.Spec.Ports = append(web.Service.Spec.Ports, manifests.ServicePort{Name: "admin", Port: 81, NodePort: 30081})
			r.svcs.put(web)
			r.reconcile("default/web")
			c := findCondition(r.svcs.status("default/web").Conditions, ServicePortConflict)
			switch {
			case tt.conflict == "" && c != nil:
				t.Errorf("PortConflict %q: a refused deployment holds no port", c.Message)
			case tt.conflict != "" && (c == nil || !strings.Contains(c.Message, tt.conflict)):
				t.Errorf("PortConflict %+v, want %q", c, tt.conflict)
			}
		})
	}
}

func TestServiceOrphanProxies(t *testing.T) {
	for _, prune := range []bool{false, true} {
		t.Run(fmt.Sprint("prune=", prune), func(t *testing.T) {
			r := newSvcRig(t)
			r.prune = prune
			r.restart()
			r.tracker.MarkSynced()
			img, _ := r.docker.EnsureHelperImage(context.Background(), "i")
			if _, err := r.docker.CreateHelper(context.Background(), dockerx.HelperRequest{Instance: "i", Namespace: "default", Name: "i_gone.default_svc",
				Role: dockerx.RoleProxy, Service: "gone", Image: img, Cmd: []string{"/dockctl", "helper", "proxy", "--config", "{}"},
				Network: dockerx.PodNetwork{Name: "dockctl_i", IPv4: "10.222.8.50"}}); err != nil {
				t.Fatal(err)
			}
			r.reconcile(SweepKey)
			r.reconcile("default/gone")
			r.docker.FinishRemovals()
			cs, _ := r.docker.ListContainers(context.Background(), "i")
			if kept := len(cs) == 1; kept == prune {
				t.Errorf("prune=%v: orphan proxy kept=%v", prune, kept)
			}
		})
	}
}

func TestServiceHeadlessAndDNS(t *testing.T) {
	r := newSvcRig(t)
	r.feed(webPods(3, 2))
	web := webService("", 0)
	r.svcs.put(web)
	headless := webService("", 0)
	headless.Service.Metadata.Name = "web-pods"
	headless.Service.Spec.ClusterIP = manifests.ClusterIPNone
	r.svcs.put(headless)
	r.reconcile("default/web")
	r.reconcile("default/web-pods")
	if len(r.docker.CreatedHelpers()) != 1 {
		t.Fatalf("creates %+v: a headless Service gets no proxy", r.docker.CreatedHelpers())
	}
	if st := r.svcs.status("default/web-pods"); st.ClusterIP != "None" || len(st.Endpoints) != 3 {
		t.Errorf("headless status %+v", st)
	}
	r.reconcile(DNSKey)
	var cfg helperapi.DNSConfig
	if _, ok := r.docker.Serving("i_dns", &cfg); !ok {
		t.Fatal("no DNS server")
	}
	req := r.docker.CreatedHelpers()[1]
	if req.Role != dockerx.RoleDNS || req.Network.IPv4 != "10.222.8.0" || len(req.Ports) != 0 {
		t.Errorf("DNS request %+v", req)
	}
	got, _ := json.Marshal(cfg.Records)
	want := `[{"name":"web-pods.default.svc.cluster.local","ips":["10.222.0.2","10.222.0.3"],"ports":[{"name":"http","protocol":"TCP","port":8080}]},` +
		`{"name":"web.default.svc.cluster.local","ips":["10.222.15.254"],"ports":[{"name":"http","protocol":"TCP","port":80}]}]`
	if string(got) != want || cfg.Domain != "cluster.local" {
		t.Errorf("records %s\nwant    %s", got, want)
	}
	// Readiness moves the headless name; the ClusterIP name stays.
	r.tracker.Update("default/web", webPods(3, 3))
	r.reconcile("default/web-pods")
	r.reconcile(DNSKey)
	r.docker.Serving("i_dns", &cfg)
	if fmt.Sprint(cfg.Records[0].IPs) != "[10.222.0.2 10.222.0.3 10.222.0.4]" {
		t.Errorf("headless after readiness: %v", cfg.Records[0].IPs)
	}
	// Idle: nothing written.
	dw := r.docker.WriteCount()
	r.reconcile(DNSKey)
	if r.docker.WriteCount() != dw {
		t.Error("an idle DNS sync wrote")
	}
	// No Service left, but pods still run: they resolve through the
	// server, which stays.
	for _, rec := range []*store.ServiceRecord{web, headless} {
		rec.Deleted = true
		r.svcs.put(rec)
	}
	r.reconcile(DNSKey)
	if _, ok := r.docker.Serving("i_dns", &cfg); !ok {
		t.Error("DNS server removed while pods still resolve through it")
	}
	// Nothing left: the DNS server goes too.
	r.tracker.Delete("default/web")
	r.reconcile(DNSKey)
	r.docker.FinishRemovals()
	if _, ok := r.docker.Serving("i_dns", &cfg); ok {
		t.Error("DNS server left with nothing to serve")
	}
}

// queued empties the Service loop's queue (nothing runs it in a rig) and
// returns the keys it held.
func (r *svcRig) queued() map[string]bool {
	out := map[string]bool{}
	for _, req := range r.ctrl.loop.Queued() {
		out[req.Key] = true
	}
	return out
}

// TestServiceHeadlessReadinessQueuesDNS: a headless Service's name answers
// with its ready pods (the Kubernetes DNS specification: one A record per
// ready endpoint), so a change of their readiness queues the DNS server at
// once, not at the next resync; a sync that changes no record queues
// nothing.
func TestServiceHeadlessReadinessQueuesDNS(t *testing.T) {
	r := newSvcRig(t)
	r.feed(webPods(3, 2))
	headless := webService("", 0)
	headless.Service.Metadata.Name = "web-pods"
	headless.Service.Spec.ClusterIP = manifests.ClusterIPNone
	r.svcs.put(headless)
	r.reconcile("default/web-pods")
	r.reconcile(DNSKey)
	steps := []struct {
		name    string
		ready   int
		wantDNS bool
		wantIPs string
	}{
		{"a pod turns ready", 3, true, "[10.222.0.2 10.222.0.3 10.222.0.4]"},
		{"nothing changes", 3, false, "[10.222.0.2 10.222.0.3 10.222.0.4]"},
		{"two pods turn not ready", 1, true, "[10.222.0.2]"},
	}
	for _, st := range steps {
		r.queued()
		r.tracker.Update("default/web", webPods(3, st.ready))
		r.reconcile("default/web-pods")
		if got := r.queued()[DNSKey]; got != st.wantDNS {
			t.Fatalf("%s: DNS server queued %v, want %v", st.name, got, st.wantDNS)
		}
		r.reconcile(DNSKey)
		var cfg helperapi.DNSConfig
		if _, ok := r.docker.Serving("i_dns", &cfg); !ok || len(cfg.Records) != 1 {
			t.Fatalf("%s: DNS server serves %+v", st.name, cfg.Records)
		}
		if got := fmt.Sprint(cfg.Records[0].IPs); got != st.wantIPs {
			t.Errorf("%s: web-pods answers %s, want %s", st.name, got, st.wantIPs)
		}
	}
}

// TestServiceDrain: Drain returns once the proxy has acknowledged a
// config without the pod, as a Service sync pushes it.
func TestServiceDrain(t *testing.T) {
	r := newSvcRig(t)
	r.feed(webPods(3, 3))
	r.svcs.put(webService("", 0))
	r.reconcile("default/web")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := drainAsync(r.tracker, ctx, "default", "web-a-2")
	// Once Drain has marked the pod (and queued the Service), its sync
	// pushes.
	svc := defaultService(&webService("", 0).Service)
	for ready, _ := r.tracker.Endpoints(svc); len(ready) == 3; ready, _ = r.tracker.Endpoints(svc) {
		time.Sleep(time.Millisecond)
	}
	r.reconcile("default/web")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if pods, _ := r.proxyPods("i_web.default_svc"); pods != "web-a-0=10.222.0.2:8080 web-a-1=10.222.0.3:8080" {
		t.Errorf("proxy serves %s after the drain", pods)
	}
}

// TestServiceDrainOutlastsAFailedPush: a drain ends only once the proxy
// serves a config without the pod; a push of that config that fails
// leaves the proxy forwarding to the pod, so the drain goes on waiting
// (the pod must stay up while traffic still reaches it, as a Kubernetes
// endpoint is removed before its pod is stopped), and ends with the next
// push that succeeds.
func TestServiceDrainOutlastsAFailedPush(t *testing.T) {
	r := newSvcRig(t)
	r.feed(webPods(3, 3))
	r.svcs.put(webService("", 0))
	r.reconcile("default/web")
	acked := func() int64 {
		r.tracker.mu.Lock()
		defer r.tracker.mu.Unlock()
		return r.tracker.acked["default/web"]
	}
	before := acked()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := drainAsync(r.tracker, ctx, "default", "web-a-2")
	svc := defaultService(&webService("", 0).Service)
	for ready, _ := r.tracker.Endpoints(svc); len(ready) == 3; ready, _ = r.tracker.Endpoints(svc) {
		time.Sleep(time.Millisecond)
	}
	r.docker.SetExec(func(string, []string) (int, []byte) { return helperapi.ExitFailed, []byte("push refused") })
	if _, err := r.ctrl.Reconcile(context.Background(), reconcile.Request{Key: "default/web"}); err == nil {
		t.Fatal("a sync whose push failed returned no error")
	}
	if got := acked(); got != before {
		t.Fatalf("the failed push was acknowledged: version %d, was %d", got, before)
	}
	select {
	case err := <-done:
		t.Fatalf("the drain ended (%v) though the proxy still serves the pod", err)
	default:
	}
	if pods, _ := r.proxyPods("i_web.default_svc"); !strings.Contains(pods, "web-a-2") {
		t.Fatalf("the proxy serves %s: the failed push took effect", pods)
	}

	r.docker.SetExec(nil)
	r.reconcile("default/web")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if pods, _ := r.proxyPods("i_web.default_svc"); pods != "web-a-0=10.222.0.2:8080 web-a-1=10.222.0.3:8080" {
		t.Errorf("proxy serves %s after the drain", pods)
	}
}

func TestServiceWaitsForTheNetwork(t *testing.T) {
	r := newSvcRig(t)
	r.svcs.network = nil
	r.tracker.MarkSynced()
	r.svcs.put(webService("", 0))
	if res := r.reconcile("default/web"); res.RequeueAfter <= 0 {
		t.Errorf("no requeue while the network is unknown: %+v", res)
	}
	if len(r.docker.CreatedHelpers()) != 0 {
		t.Error("a proxy made without a network")
	}
	if res := r.reconcile(DNSKey); res.RequeueAfter <= 0 || len(r.docker.CreatedHelpers()) != 0 {
		t.Errorf("DNS without a network: %+v, %d creates", res, len(r.docker.CreatedHelpers()))
	}
}

func TestServiceOwners(t *testing.T) {
	m := Owners("my_inst")
	tests := []struct {
		ev   dockerx.Event
		want string
	}{
		{dockerx.Event{Role: dockerx.RoleProxy, Name: "my_inst_web.shop_svc"}, "shop/web"},
		{dockerx.Event{Role: dockerx.RoleProxy, Name: "other_web.shop_svc"}, "*"},
		{dockerx.Event{Role: dockerx.RoleDNS, Name: "my_inst_dns"}, "dns/"},
		{dockerx.Event{Gap: true}, "*"},
		{dockerx.Event{Down: true}, ""},
		{dockerx.Event{Role: dockerx.RoleReplica, Deployment: "web"}, ""},
		{dockerx.Event{Role: dockerx.RolePortForward, Name: "my_inst_web-abc-0.shop_pf-1a2b3c", Namespace: "shop"}, ""},
	}
	for _, tt := range tests {
		var keys []string
		for _, r := range m(tt.ev) {
			keys = append(keys, r.Key)
		}
		if strings.Join(keys, ",") != tt.want {
			t.Errorf("%+v → %v, want %q", tt.ev, keys, tt.want)
		}
	}
}

// A proxy started by a sync (stopped by hand) is pushed to once its
// control socket answers: the sync waits a little rather than failing.
func TestServicePushAfterStart(t *testing.T) {
	r := newWebRig(t)
	id, _ := r.docker.Serving("i_web.default_svc", &struct{}{})
	if err := r.docker.KillSilently(id); err != nil { // stopped, as by hand
		t.Fatal(err)
	}
	r.restart() // what it serves is unknown: a start, then a push
	r.feed(webPods(2, 2))
	refused := 0
	r.docker.SetExec(func(id string, cmd []string) (int, []byte) {
		if refused < 2 {
			refused++
			return helperapi.ExitFailed, nil // not listening yet
		}
		r.docker.SetExec(nil)
		return helperapi.ExitOK, []byte(`{"generation":2}`)
	})
	r.reconcile("default/web")
	if refused != 2 || r.docker.ExecHooked() {
		t.Errorf("pushes refused %d, handler left %v: want two refusals, then the ack", refused, r.docker.ExecHooked())
	}
	if st := r.svcs.status("default/web"); st.PushedGeneration != 2 || len(st.Conditions) != 0 {
		t.Errorf("status %+v", st)
	}
}

// TestServiceLargeConfigPushedAfterCreate: a proxy whose config exceeds
// what a command carries starts from the stub and serves every endpoint
// after the push that follows; the next sync has nothing to do.
func TestServiceLargeConfigPushedAfterCreate(t *testing.T) {
	r := newSvcRig(t)
	r.feed(manyPods(3000))
	r.svcs.put(webService("", 0))
	r.reconcile("default/web")
	var cfg helperapi.ProxyConfig
	_, ok := r.docker.Serving("i_web.default_svc", &cfg)
	if !ok || len(cfg.Ports) != 1 {
		t.Fatalf("proxy serves %+v", cfg.Ports)
	}
	if cfg.Generation != 1 || len(cfg.Ports[0].Endpoints) != 3000 {
		t.Fatalf("proxy serves generation %d with %d endpoints, want 1 with 3000", cfg.Generation, len(cfg.Ports[0].Endpoints))
	}
	if st := r.svcs.status("default/web"); st.PushedGeneration != 1 || len(st.Conditions) != 0 {
		t.Errorf("status: pushed %d, conditions %+v", st.PushedGeneration, st.Conditions)
	}
	writes := r.docker.WriteCount()
	r.reconcile("default/web")
	if r.docker.WriteCount() != writes {
		t.Errorf("a converged Service wrote to Docker again")
	}
}

// TestServiceFreedClusterIPRetaken: b asks for the ClusterIP a holds
// (ClusterIPInUse); when a moves to another address, b is queued at once
// and takes it.
func TestServiceFreedClusterIPRetaken(t *testing.T) {
	r := newSvcRig(t)
	r.feed(webPods(2, 2))
	a, b := webService("", 0), webService("", 0)
	a.Service.Metadata.Name, b.Service.Metadata.Name = "a", "b"
	a.Service.Spec.ClusterIP, b.Service.Spec.ClusterIP = "10.222.8.9", "10.222.8.9"
	b.Created = a.Created.Add(time.Minute)
	r.svcs.put(a)
	r.reconcile("default/a")
	r.svcs.put(b)
	r.reconcile("default/b")
	if c := findCondition(r.svcs.status("default/b").Conditions, ServiceProxyFailure); c == nil || c.Reason != ReasonClusterIPInUse {
		t.Fatalf("b: want ClusterIPInUse, status %+v", r.svcs.status("default/b"))
	}
	drainQueue(r)
	a.Service.Spec.ClusterIP = "10.222.8.10"
	r.svcs.put(a)
	r.reconcile("default/a")
	if q := drainQueue(r); !q["default/b"] {
		t.Fatalf("a left 10.222.8.9; queued %v, without b", q)
	}
	r.reconcile("default/b")
	if st := r.svcs.status("default/b"); st.ClusterIP != "10.222.8.9" || len(st.Conditions) != 0 {
		t.Errorf("b after a moved: %+v", st)
	}
}

// TestServiceDrainAfterRestartEndsOnAck: after a controller restart, a
// drain waits for the stored Service (TestDrainAfterRestartWaitsForProxies)
// and ends once its first sync pushed a config without the pod.
func TestServiceDrainAfterRestartEndsOnAck(t *testing.T) {
	r := newWebRig(t)
	r.restart()
	r.feed(webPods(2, 2))
	done := make(chan error, 1)
	go func() { done <- r.tracker.Drain(context.Background(), "default", "web-a-1") }()
	// The drain marks the pod terminating before it waits: sync until the
	// proxy serves without it.
	deadline := time.Now().Add(time.Minute)
	for {
		r.reconcile("default/web")
		if pods, _ := r.proxyPods("i_web.default_svc"); pods == "web-a-0=10.222.0.2:8080" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the proxy never served without the drained pod")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Drain = %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Drain did not end after the push")
	}
}

// TestServiceLoadBalancerPublishesGivenNodePort: a LoadBalancer's given
// nodePort is published as a NodePort Service's is (in Kubernetes a
// LoadBalancer Service is a NodePort Service too), and stays its own
// after a controller restart: a younger Service asking for it is told it
// is taken.
func TestServiceLoadBalancerPublishesGivenNodePort(t *testing.T) {
	r := newSvcRig(t)
	r.tracker.MarkSynced()
	lb := webService("LoadBalancer", 30080)
	lb.Service.Spec.Ports[0].Port = 8080
	r.svcs.put(lb)
	r.reconcile("default/web")
	r.reconcile(PublisherKey)
	if got := r.publisherPorts(); got != "8080/TCP=0 30080/TCP=0" {
		t.Errorf("the LoadBalancer's proxy publishes %s, want its port and its nodePort", got)
	}
	if st := r.svcs.status("default/web"); npString(st.NodePorts) != "[{8080 TCP 30080}]" {
		t.Errorf("status nodePorts %v", st.NodePorts)
	}

	r.restart()
	r.tracker.MarkSynced()
	younger := &store.ServiceRecord{Created: t0.Add(time.Minute), Service: manifests.Service{Metadata: manifests.ObjectMeta{Name: "np"},
		Spec: manifests.ServiceSpec{Type: "NodePort", Selector: app("np"), Ports: []manifests.ServicePort{{Port: 80, NodePort: 30080}}}}}
	r.svcs.put(younger)
	r.reconcile("default/np")
	st := r.svcs.status("default/np")
	if c := findCondition(st.Conditions, ServicePortConflict); c == nil || !strings.Contains(c.Message, "127.0.0.1:30080/TCP is published by service default/web") {
		t.Errorf("the younger Service's conditions %+v: the LoadBalancer's nodePort must stay its own", st.Conditions)
	}
}

// TestServicePortChangePushedNotReplaced: adding, renaming or removing a
// port of a ClusterIP Service changes nothing Docker fixes when it creates
// the proxy (no port is published): the new ports are pushed, as endpoint
// changes are, and the proxy keeps running, so connections open on the
// ports that stayed are not cut (Kubernetes: kube-proxy updates its rules
// for a Service's new ports; established connections keep their path).
// A NodePort Service's new port is published, which Docker fixes at
// creation: that proxy is replaced.
func TestServicePortChangePushedNotReplaced(t *testing.T) {
	tests := []struct {
		name     string
		typ      string
		change   func(ps []manifests.ServicePort) []manifests.ServicePort
		replaced bool
		ports    string // the ports the proxy then serves
	}{
		{name: "a port added", change: func(ps []manifests.ServicePort) []manifests.ServicePort {
			return append(ps, manifests.ServicePort{Name: "metrics", Port: 9100, TargetPort: intstr.FromString("http")})
		}, ports: "http:80 metrics:9100"},
		{name: "a port renamed", change: func(ps []manifests.ServicePort) []manifests.ServicePort {
			ps[0].Name = "web"
			return ps
		}, ports: "web:80"},
		{name: "a port's number changed", change: func(ps []manifests.ServicePort) []manifests.ServicePort {
			ps[0].Port = 8080
			return ps
		}, ports: "http:8080"},
		{name: "a NodePort's port added is published", typ: "NodePort", change: func(ps []manifests.ServicePort) []manifests.ServicePort {
			return append(ps, manifests.ServicePort{Name: "metrics", Port: 9100, TargetPort: intstr.FromString("http")})
		}, ports: "http:80 metrics:9100"}, // its host port is the publisher's: the proxy is not replaced
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSvcRig(t)
			r.feed(webPods(2, 2))
			web := webService(tt.typ, 0)
			r.svcs.put(web)
			r.reconcile("default/web")
			before, _ := r.docker.Serving("i_web.default_svc", &struct{}{})

			web.Service.Spec.Ports = tt.change(web.Service.Spec.Ports)
			web.Generation++
			r.svcs.put(web)
			r.reconcile("default/web")
			r.docker.FinishRemovals()
			r.reconcile("default/web")
			var cfg helperapi.ProxyConfig
			after, ok := r.docker.Serving("i_web.default_svc", &cfg)
			if !ok {
				t.Fatal("no proxy serving")
			}
			if (after != before) != tt.replaced {
				t.Errorf("proxy %s → %s: replaced %v, want %v", before, after, after != before, tt.replaced)
			}
			var got []string
			for _, p := range cfg.Ports {
				got = append(got, fmt.Sprintf("%s:%d", p.Name, p.Port))
				if len(p.Endpoints) != 2 {
					t.Errorf("port %s serves %d endpoints, want 2", p.Name, len(p.Endpoints))
				}
			}
			if strings.Join(got, " ") != tt.ports {
				t.Errorf("the proxy serves ports %v, want %s", got, tt.ports)
			}
			if st := r.svcs.status("default/web"); findCondition(st.Conditions, ServiceProxyFailure) != nil {
				t.Errorf("conditions %+v", st.Conditions)
			}
		})
	}
}

// proxyCreates are the creates of Service proxies, in order.
func (r *svcRig) proxyCreates() []dockerx.HelperRequest {
	var out []dockerx.HelperRequest
	for _, c := range r.docker.CreatedHelpers() {
		if c.Role == dockerx.RoleProxy {
			out = append(out, c)
		}
	}
	return out
}

// publisherPorts are the host ports the publisher serves, with the
// endpoints' count of each ("30080/TCP=2 30081/TCP=2"), or why none.
func (r *svcRig) publisherPorts() string {
	r.t.Helper()
	var cfg helperapi.ProxyConfig
	if _, ok := r.docker.Serving("i_publisher", &cfg); !ok {
		return "no publisher"
	}
	var out []string
	for _, p := range cfg.Ports {
		out = append(out, fmt.Sprintf("%d/%s=%d", p.Port, p.Protocol, len(p.Endpoints)))
	}
	return strings.Join(out, " ")
}

// syncPublished syncs a Service and the publisher (freeing removed names
// between) until the publisher serves want; it returns the Service's
// last result.
func (r *svcRig) syncPublished(key, want string) reconcile.Result {
	r.t.Helper()
	var res reconcile.Result
	for range 5 {
		res = r.reconcile(key)
		r.reconcile(PublisherKey)
		r.docker.FinishRemovals()
		if r.publisherPorts() == want {
			return r.reconcile(key)
		}
	}
	r.t.Fatalf("the publisher serves %q, want %q", r.publisherPorts(), want)
	return res
}

// webWithAdmin is default/web as a NodePort Service of two ports:
// nodePort 30080 for its port 80, 30081 for its admin port 81.
func webWithAdmin() *store.ServiceRecord {
	web := webService("NodePort", 30080)
	web.Service.Spec.Ports = append(web.Service.Spec.Ports, manifests.ServicePort{Name: "admin", Port: 81, NodePort: 30081, TargetPort: intstr.FromString("http")})
	return web
}

// TestServiceHostPortHeldByAHostProcess: a published port a process of
// the host holds (not a container: nothing lists it) cannot be bound by
// the publisher, which serves the others and says so in its ack. The
// Service keeps its ClusterIP and its other ports, and reports the port
// as a PortConflict, not a ProxyFailure; the port is tried again later
// (not while the controller still reaches a listener there), and
// published once it is free. Kubernetes' kube-proxy likewise keeps a
// Service's cluster IP working when it cannot open a nodePort ("can't
// open port, skipping it").
func TestServiceHostPortHeldByAHostProcess(t *testing.T) {
	r := newSvcRig(t)
	now := t0
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	r.build(r.docker, clock)
	r.docker.HoldHostPort(30080, true)
	listening := true // what the controller's dial to the held port finds
	r.ctrl.hostDial = func(ctx context.Context, network, addr string) error {
		if addr != "127.0.0.1:30080" {
			t.Errorf("dialled %s", addr)
		}
		if listening {
			return nil
		}
		return syscall.ECONNREFUSED
	}
	r.ctrl.hostBind = func(network, addr string) error {
		if listening {
			return syscall.EADDRINUSE
		}
		return nil
	}
	r.feed(webPods(2, 2))
	web := webWithAdmin()
	r.svcs.put(web)

	res := r.syncPublished("default/web", "30081/TCP=2")
	if pods, _ := r.proxyPods("i_web.default_svc"); pods != "web-a-0=10.222.0.2:8080 web-a-1=10.222.0.3:8080" {
		t.Errorf("the proxy serves %q", pods)
	}
	st := r.svcs.status("default/web")
	if c := findCondition(st.Conditions, ServicePortConflict); c == nil || !strings.Contains(c.Message, "host port 127.0.0.1:30080/TCP is held by a process of the host") {
		t.Errorf("conditions %+v, want PortConflict for 30080 held by a process of the host", st.Conditions)
	}
	if c := findCondition(st.Conditions, ServiceProxyFailure); c != nil {
		t.Errorf("ProxyFailure %+v: the ClusterIP serves", c)
	}
	if res.RequeueAfter <= 0 {
		t.Errorf("sync result %+v: the held port must be tried again", res)
	}

	// Due, but something still listens there: left out still.
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	r.reconcile("default/web")
	r.reconcile(PublisherKey)
	if got := r.publisherPorts(); got != "30081/TCP=2" {
		t.Errorf("the publisher serves %q while the port is still held", got)
	}

	// Freed: published at the next try.
	r.docker.HoldHostPort(30080, false)
	listening = false
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	r.syncPublished("default/web", "30080/TCP=2 30081/TCP=2")
	st = r.svcs.status("default/web")
	if findCondition(st.Conditions, ServicePortConflict) != nil || findCondition(st.Conditions, ServiceProxyFailure) != nil {
		t.Errorf("conditions %+v after the port was freed", st.Conditions)
	}
}

// TestServiceHostPortHeldBacksOffOncePerTry: the publisher pushes again
// while an ack names a port it could not bind, and before the Service's
// next sync leaves that port out each push is refused again. Those acks
// are one finding, not one per push: the port is tried again after the
// first backoff (30 s), not after one doubled per push — which left a
// freed port unpublished for minutes.
func TestServiceHostPortHeldBacksOffOncePerTry(t *testing.T) {
	r := newSvcRig(t)
	now := t0
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	r.build(r.docker, clock)
	r.docker.HoldHostPort(30080, true)
	r.ctrl.hostDial = func(context.Context, string, string) error { return syscall.ECONNREFUSED }
	r.ctrl.hostBind = func(string, string) error { return nil }
	r.feed(webPods(2, 2))
	r.svcs.put(webService("NodePort", 30080))

	r.reconcile("default/web")
	for range 3 { // pushed again before the Service resyncs
		r.reconcile(PublisherKey)
		r.docker.FinishRemovals()
	}
	r.ctrl.mu.Lock()
	h := r.ctrl.hostHeld[hostPort{IP: "127.0.0.1", Port: 30080, Protocol: "TCP"}]
	var backoff time.Duration
	if h != nil {
		backoff = h.backoff
	}
	r.ctrl.mu.Unlock()
	if backoff != hostHeldRetry {
		t.Fatalf("backoff after one finding pushed three times: %v, want %v", backoff, hostHeldRetry)
	}

	// Freed: the first try, one backoff later, publishes it.
	r.docker.HoldHostPort(30080, false)
	mu.Lock()
	now = now.Add(hostHeldRetry)
	mu.Unlock()
	r.syncPublished("default/web", "30080/TCP=2")
}

// maxArgStrlen is Linux's MAX_ARG_STRLEN (32 pages): execve(2) fails with
// E2BIG for any single argv string longer than this, so a helper whose
// config is longer can neither be started (create) nor be pushed to (exec).
const maxArgStrlen = 32 * 4096

// manyPods are n ready pods of deployment web (app=web, port http 8080),
// with pod names as a deployment gives them.
func manyPods(n int) []PodEndpoint {
	out := make([]PodEndpoint, 0, n)
	for i := range n {
		out = append(out, pe("default", "web", fmt.Sprintf("web-5d8f9c7b6d-%d", i), fmt.Sprintf("10.222.%d.%d", i/250, i%250+2), true, app("web"),
			manifests.ContainerPort{Name: "http", ContainerPort: 8080}))
	}
	return out
}

// TestProxyConfigFitsArgvLimit: the proxy's config (every endpoint) is
// handed over in argv, both in the create's Cmd and in `docker exec …
// helper push`. A Service selecting ~2,500 pods (or 50 ports × 50 pods)
// makes it larger than MAX_ARG_STRLEN if sent as ONE argv string: the
// real daemon fails the exec/start with "argument list too long", the
// Service never gets a proxy, and every later push fails forever. No
// argument may exceed the limit.
func TestProxyConfigFitsArgvLimit(t *testing.T) {
	r := newSvcRig(t)
	r.feed(manyPods(3000))
	r.svcs.put(webService("", 0))
	r.reconcile("default/web")
	creates := r.docker.CreatedHelpers()
	if len(creates) != 1 {
		t.Fatalf("creates %d, want 1", len(creates))
	}
	for i, a := range creates[0].Cmd {
		if len(a) > maxArgStrlen {
			t.Errorf("proxy Cmd[%d] is %d bytes, over Linux's MAX_ARG_STRLEN %d: execve fails with E2BIG", i, len(a), maxArgStrlen)
		}
	}
}

// TestDNSConfigFitsArgvLimit: the DNS server's config is every record of
// every Service of the instance (headless ones with every ready pod
// address); sent as one argv string, one big headless Service would break
// cluster DNS for every namespace.
func TestDNSConfigFitsArgvLimit(t *testing.T) {
	r := newSvcRig(t)
	r.feed(manyPods(9000))
	h := webService("", 0)
	h.Service.Spec.ClusterIP = manifests.ClusterIPNone
	r.svcs.put(h)
	r.reconcile("default/web")
	r.reconcile(DNSKey)
	for _, c := range r.docker.CreatedHelpers() {
		for i, a := range c.Cmd {
			if len(a) > maxArgStrlen {
				t.Errorf("%s Cmd[%d] is %d bytes, over Linux's MAX_ARG_STRLEN %d: execve fails with E2BIG", c.Name, i, len(a), maxArgStrlen)
			}
		}
	}
}

// drainQueue empties the services loop's queue and returns its keys.
func drainQueue(r *svcRig) map[string]bool { return r.queued() }

// TestFreedNodePortRequeuesServiceThatWantsIt: two Services ask for
// nodePort 30080; the older publishes it, the younger gets PortConflict.
// When the older is deleted, the younger must be queued at once: allocate
// reports only the Services it displaces and forget releases the port
// silently, so without it the younger stays unpublished (PortConflict)
// until the next resync.
func TestFreedNodePortRequeuesServiceThatWantsIt(t *testing.T) {
	r := newSvcRig(t)
	r.feed(webPods(2, 2))
	a := webService("NodePort", 30080)
	a.Service.Metadata.Name = "a"
	b := webService("NodePort", 30080)
	b.Service.Metadata.Name = "b"
	b.Created = a.Created.Add(time.Minute)
	r.svcs.put(a)
	r.svcs.put(b)
	r.reconcile("default/a")
	r.reconcile("default/b")
	if findCondition(r.svcs.status("default/b").Conditions, ServicePortConflict) == nil {
		t.Fatalf("b: want PortConflict, status %+v", r.svcs.status("default/b"))
	}
	drainQueue(r)
	a.Deleted = true
	r.svcs.put(a)
	r.reconcile("default/a")
	if q := drainQueue(r); !q["default/b"] {
		t.Errorf("service a deleted, freeing nodePort 30080; queued %v: service b, which wants it, is not synced again", q)
	}
}

// startFails is a Docker whose helper starts fail for a reason that is
// no host port's (a port held on the host is a PortConflict, and the
// proxy is made without it: TestServiceHostPortHeldByAHostProcess).
type startFails struct{ *helperfake.Engine }

func (s startFails) StartContainer(context.Context, string) error {
	return fmt.Errorf("OCI runtime create failed: runc create failed: unable to start container process: exec: \"/dockctl\": permission denied")
}

// TestProxyStartFailureReportedAsCreateFailure: a proxy whose start fails
// is left created; the next sync plans start + push, and the start fails
// again. nextServiceStatus must report the start's failure, not
// ProxyFailure reason PushFailed because the plan merely contains a push:
// no push was tried, and that status would point the user at the data
// plane instead of the start.
func TestProxyStartFailureReportedAsCreateFailure(t *testing.T) {
	r := newSvcRig(t)
	r.build(startFails{r.docker}, nil)
	r.feed(webPods(2, 2))
	r.svcs.put(webService("NodePort", 30080))
	for range 2 {
		if _, err := r.ctrl.Reconcile(context.Background(), reconcile.Request{Key: "default/web"}); err == nil {
			t.Fatal("sync succeeded with a start that fails")
		}
	}
	if r.docker.Calls()["exec:output"] != 0 {
		t.Fatalf("a push was tried")
	}
	c := findCondition(r.svcs.status("default/web").Conditions, ServiceProxyFailure)
	if c == nil || c.Reason != ReasonProxyCreateFailed {
		t.Errorf("condition %+v: the start failed and no push was tried, want reason %s", c, ReasonProxyCreateFailed)
	}
}

// TestServiceHostPortHeldIsNotTriedWhileBound: a port a process of the
// host holds may have no listener the controller can dial — a UDP port,
// or a TCP one the process listens on at another address of the host
// than the one dialled — but its bind is still refused (EADDRINUSE).
// While it is, it is not tried (it stays left out, reported), as for a
// TCP port that still answers.
func TestServiceHostPortHeldIsNotTriedWhileBound(t *testing.T) {
	cases := []struct {
		name     string
		protocol string
		bindNet  string
	}{
		{"udp", manifests.ProtocolUDP, "udp"},
		{"tcp listened on at another address", manifests.ProtocolTCP, "tcp"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newSvcRig(t)
			now := t0
			var mu sync.Mutex
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			r.build(r.docker, clock)
			held := true
			r.docker.HoldHostPort(30053, true)
			r.ctrl.hostDial = func(ctx context.Context, network, addr string) error {
				if tc.protocol == manifests.ProtocolUDP {
					t.Errorf("dialled %s %s: a UDP port has no listener to dial", network, addr)
				}
				return syscall.ECONNREFUSED
			}
			r.ctrl.hostBind = func(network, addr string) error {
				if network != tc.bindNet || addr != "127.0.0.1:30053" {
					t.Errorf("bind probe of %s %s", network, addr)
				}
				if held {
					return syscall.EADDRINUSE
				}
				return nil
			}
			r.feed(webPods(2, 2))
			web := webService("NodePort", 30080)
			web.Service.Spec.Ports = append(web.Service.Spec.Ports, manifests.ServicePort{Name: "dns", Protocol: tc.protocol, Port: 53, NodePort: 30053, TargetPort: intstr.FromInt(53)})
			r.svcs.put(web)
			r.syncPublished("default/web", "30080/TCP=2")
			pushes := len(r.docker.Entries())

			// Due, the port still bound by the host's process: not tried.
			for range 3 {
				mu.Lock()
				now = now.Add(time.Hour)
				mu.Unlock()
				r.reconcile("default/web")
				r.reconcile(PublisherKey)
				if got := r.publisherPorts(); got != "30080/TCP=2" {
					t.Fatalf("the publisher serves %q while 30053 is still held", got)
				}
			}
			if n := len(r.docker.Entries()) - pushes; n != 0 {
				t.Errorf("%d pushes while the port is held, want none", n)
			}
			st := r.svcs.status("default/web")
			if c := findCondition(st.Conditions, ServicePortConflict); c == nil || !strings.Contains(c.Message, "30053/"+tc.protocol+" is held by a process of the host") {
				t.Errorf("conditions %+v, want PortConflict for 30053", st.Conditions)
			}

			// Freed: published at the next try.
			held = false
			r.docker.HoldHostPort(30053, false)
			mu.Lock()
			now = now.Add(time.Hour)
			mu.Unlock()
			want := "30053/" + tc.protocol + "=2 30080/TCP=2"
			r.syncPublished("default/web", want)
		})
	}
}

// TestServiceAllocatedNodePortHeldByAHostProcessIsKept: a nodePort the
// Service was allocated (none given) and published, found held by a
// process of the host when the publisher binds it again (the process
// took it while the daemon restarted), stays the Service's: reported as a
// PortConflict and tried again, not moved to another number, which would
// silently break every client of the old one. On Kubernetes the
// apiserver allocates a nodePort once; kube-proxy failing to open it on a
// node never changes it.
func TestServiceAllocatedNodePortHeldByAHostProcessIsKept(t *testing.T) {
	r := newSvcRig(t)
	r.ctrl.hostDial = func(ctx context.Context, network, addr string) error { return nil }
	r.ctrl.hostBind = func(network, addr string) error { return syscall.EADDRINUSE }
	r.feed(webPods(2, 2))
	r.svcs.put(webService("NodePort", 0))
	r.reconcile("default/web")
	r.reconcile(PublisherKey)
	st := r.svcs.status("default/web")
	if len(st.NodePorts) != 1 || st.NodePorts[0].NodePort == 0 {
		t.Fatalf("nodePorts %+v", st.NodePorts)
	}
	np := st.NodePorts[0].NodePort

	// The daemon restarts: the publisher stops, a process of the host
	// takes its nodePort, the publisher cannot bind it.
	id, _ := r.docker.Serving("i_publisher", &struct{}{})
	if err := r.docker.StopContainer(context.Background(), id, 0); err != nil {
		t.Fatal(err)
	}
	r.docker.HoldHostPort(int(np), true)
	for range 5 {
		r.reconcile(PublisherKey)
		r.reconcile("default/web")
		r.docker.FinishRemovals()
	}
	st = r.svcs.status("default/web")
	if len(st.NodePorts) != 1 || st.NodePorts[0].NodePort != np {
		t.Errorf("nodePorts %+v, want %d kept", st.NodePorts, np)
	}
	if c := findCondition(st.Conditions, ServicePortConflict); c == nil || !strings.Contains(c.Message, "held by a process of the host") {
		t.Errorf("conditions %+v, want PortConflict for %d held by a process of the host", st.Conditions, np)
	}
}

// TestServiceNodePortAllocatedNeverTakesAHeldPort: a nodePort allocated
// (none given) is never one in use. Another instance's publisher on the
// same host (and a process of the host) binds its ports on the host's
// network, where Docker lists none: the allocation tries the bind before
// choosing a number, rather than choosing a port the publisher cannot
// bind and keeping it (a PortConflict for good) as a nodePort once
// published is kept.
func TestServiceNodePortAllocatedNeverTakesAHeldPort(t *testing.T) {
	r := newSvcRig(t)
	held := fmt.Sprint(manifests.NodePortMin)
	r.docker.HoldHostPort(manifests.NodePortMin, true) // the other instance's publisher
	r.ctrl.hostDial = func(ctx context.Context, network, addr string) error {
		if strings.HasSuffix(addr, ":"+held) {
			return nil
		}
		return syscall.ECONNREFUSED
	}
	r.ctrl.hostBind = func(network, addr string) error {
		if strings.HasSuffix(addr, ":"+held) {
			return syscall.EADDRINUSE
		}
		return nil
	}
	r.feed(webPods(2, 2))
	r.svcs.put(webService("NodePort", 0))
	r.syncPublished("default/web", fmt.Sprintf("%d/TCP=2", manifests.NodePortMin+1))
	st := r.svcs.status("default/web")
	if len(st.NodePorts) != 1 || st.NodePorts[0].NodePort != manifests.NodePortMin+1 {
		t.Errorf("nodePorts %+v, want %d: the first free one", st.NodePorts, manifests.NodePortMin+1)
	}
	if c := findCondition(st.Conditions, ServicePortConflict); c != nil {
		t.Errorf("PortConflict %+v for a port dockctl chose", c)
	}
}

// TestServiceNetworkRecordedQueuesWaiters: a Service and the DNS server
// synced before the instance network is recorded (a new instance's first
// apply) wait for it; NetworkRecorded queues them at once, rather than
// leaving them to their retry, including one whose sync read no network
// before the record and noted its wait after the call. A Service synced
// with the network known is not queued.
func TestServiceNetworkRecordedQueuesWaiters(t *testing.T) {
	tests := []struct {
		name string
		// between runs after each sync has read the store and before
		// NetworkRecorded (false: after both syncs ended)
		racing bool
	}{
		{"waiting when the network is recorded", false},
		{"the record made while the syncs ran", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSvcRig(t)
			r.feed(webPods(1, 1))
			known := r.svcs.network
			r.svcs.mu.Lock()
			r.svcs.network = nil
			r.svcs.mu.Unlock()
			r.svcs.put(webService("", 0))
			if tt.racing {
				// The syncs read no network; the record and its call come
				// before they note their wait.
				_, _, seenWeb := r.ctrl.layout()
				_, _, seenDNS := r.ctrl.layout()
				r.svcs.mu.Lock()
				r.svcs.network = known
				r.svcs.mu.Unlock()
				r.ctrl.NetworkRecorded()
				r.queued()
				r.ctrl.noteWaiting("default/web", errors.New("instance network not known yet"), seenWeb)
				r.ctrl.noteWaiting(DNSKey, errors.New("instance network not known yet"), seenDNS)
			} else {
				if res := r.reconcile("default/web"); res.RequeueAfter != networkRetry {
					t.Fatalf("web without the network: requeue after %v, want %v", res.RequeueAfter, networkRetry)
				}
				if res := r.reconcile(DNSKey); res.RequeueAfter != networkRetry {
					t.Fatalf("DNS without the network: requeue after %v, want %v", res.RequeueAfter, networkRetry)
				}
				r.queued()
				r.svcs.mu.Lock()
				r.svcs.network = known
				r.svcs.mu.Unlock()
				r.ctrl.NetworkRecorded()
			}
			if got := r.queued(); !got["default/web"] || !got[DNSKey] {
				t.Fatalf("queued %v, want default/web and %s", got, DNSKey)
			}
			r.reconcile("default/web")
			r.reconcile(DNSKey)
			if pods, _ := r.proxyPods("i_web.default_svc"); pods != "web-a-0=10.222.0.2:8080" {
				t.Errorf("web's proxy serves %q once the network is known, want its ready pod", pods)
			}
			r.queued()
			r.ctrl.NetworkRecorded()
			if got := r.queued(); got["default/web"] || got[DNSKey] {
				t.Errorf("queued %v after they saw the network, want neither", got)
			}
		})
	}
}

// TestServicePushSoonAfterAStartWaitsForTheSocket: the sync after the one
// that created a new Service's proxy (its first endpoint turned ready)
// pushes while the proxy may not listen yet: within the start window it
// tries again, as the starting sync does, rather than failing the sync
// and waiting for its backoff; a helper started longer ago is not waited
// for.
func TestServicePushSoonAfterAStartWaitsForTheSocket(t *testing.T) {
	for _, tt := range []struct {
		name    string
		since   time.Duration // from the proxy's start to the push
		wantErr bool
	}{
		{"just started: tried again", time.Second, false},
		{"started long ago: not waited for", time.Minute, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newSvcRig(t)
			now := t0
			r.build(r.docker, func() time.Time { return now })
			r.feed(webPods(1, 0))
			r.svcs.put(webService("", 0))
			r.reconcile("default/web") // the proxy, created and started, serving nothing
			now = now.Add(tt.since)
			r.tracker.Update("default/web", webPods(1, 1))
			refused := 0
			r.docker.SetExec(func(string, []string) (int, []byte) {
				if refused < 2 {
					refused++
					return helperapi.ExitFailed, nil // not listening yet
				}
				r.docker.SetExec(nil)
				return helperapi.ExitOK, []byte(`{"generation":2}`)
			})
			_, err := r.ctrl.Reconcile(context.Background(), reconcile.Request{Key: "default/web"})
			if (err != nil) != tt.wantErr {
				t.Fatalf("sync error %v, want an error: %v (pushes refused: %d)", err, tt.wantErr, refused)
			}
			if !tt.wantErr {
				if st := r.svcs.status("default/web"); refused != 2 || st.PushedGeneration != 2 || len(st.Conditions) != 0 {
					t.Errorf("pushes refused %d, status %+v: want two refusals, then generation 2 acknowledged", refused, st)
				}
			}
		})
	}
}

// TestServiceHostPortHeldSurvivesARestart: a port a process of the host
// holds is remembered in the controller's memory, and after a restart
// from the Service's PortConflict. Else the first sync after a restart
// publishes it (status listing it, a Normal PortConflictResolved event),
// until the publisher's ack finds it held again and the Warning comes
// back: every restart flapped the condition. A controller in a container
// sees no listener of the host (the dial refused, the bind free), so the
// recalled port waits for its first backoff, as after any finding, and
// is published at that try once freed.
func TestServiceHostPortHeldSurvivesARestart(t *testing.T) {
	r := newSvcRig(t)
	now := t0
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	blind := func() { // as in a container: no listener of the host is seen
		r.ctrl.hostDial = func(context.Context, string, string) error { return syscall.ECONNREFUSED }
		r.ctrl.hostBind = func(string, string) error { return nil }
	}
	r.build(r.docker, clock)
	blind()
	r.docker.HoldHostPort(30080, true)
	r.feed(webPods(2, 2))
	web := webWithAdmin()
	r.svcs.put(web)
	r.syncPublished("default/web", "30081/TCP=2")
	if findCondition(r.svcs.status("default/web").Conditions, ServicePortConflict) == nil {
		t.Fatalf("conditions %+v, want PortConflict", r.svcs.status("default/web").Conditions)
	}

	r.build(r.docker, clock) // restarted
	blind()
	r.feed(webPods(2, 2))
	res := r.reconcile("default/web")
	st := r.svcs.status("default/web")
	if findCondition(st.Conditions, ServicePortConflict) == nil {
		t.Errorf("after a restart, conditions %+v: the port is still held, PortConflict must stay", st.Conditions)
	}
	for _, p := range st.Published {
		if p.Port == 30080 {
			t.Errorf("after a restart, status lists held port 30080 as published: %+v", st.Published)
		}
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > hostHeldRetry {
		t.Errorf("after a restart, result %+v: the recalled port must be tried within %v", res, hostHeldRetry)
	}

	// Freed while the controller was down: published at its first try.
	r.docker.HoldHostPort(30080, false)
	mu.Lock()
	now = now.Add(hostHeldRetry)
	mu.Unlock()
	r.syncPublished("default/web", "30080/TCP=2 30081/TCP=2")
	if c := findCondition(r.svcs.status("default/web").Conditions, ServicePortConflict); c != nil {
		t.Errorf("freed, the port still has %+v", c)
	}
}

// TestServiceHostPortHeldRequeuesOnlyItsService: a held port is tried
// again at its Service's requeue. Another published Service, none of
// whose ports is held, has nothing to try: its sync must not be requeued
// at the held port's retry (every published Service was, and again at
// each retry, for as long as the port stays held).
func TestServiceHostPortHeldRequeuesOnlyItsService(t *testing.T) {
	r := newSvcRig(t)
	r.ctrl.hostDial = func(context.Context, string, string) error { return nil } // still listened on
	r.ctrl.hostBind = func(string, string) error { return syscall.EADDRINUSE }
	r.docker.HoldHostPort(30080, true)
	r.feed(webPods(2, 2))
	web := webWithAdmin()
	r.svcs.put(web)
	other := webService("NodePort", 30090)
	other.Service.Metadata.Name = "other"
	r.svcs.put(other)
	r.reconcile("default/other")
	if res := r.syncPublished("default/web", "30081/TCP=2 30090/TCP=2"); res.RequeueAfter <= 0 {
		t.Fatalf("web's result %+v: its held port must be tried again", res)
	}
	if res := r.reconcile("default/other"); res.RequeueAfter != 0 {
		t.Errorf("other's result %+v: none of its ports is held", res)
	}
}

// A sync asks to run again at the soonest of its waits that are set.
func TestSoonestWait(t *testing.T) {
	for _, tc := range []struct {
		waits []time.Duration
		want  time.Duration
	}{
		{nil, 0},
		{[]time.Duration{0, 0, 0}, 0},
		{[]time.Duration{30 * time.Second, 0, 0}, 30 * time.Second},
		{[]time.Duration{0, 20 * time.Second, 3 * time.Second}, 3 * time.Second},
		{[]time.Duration{30 * time.Second, 20 * time.Second, 0}, 20 * time.Second},
	} {
		if got := soonest(tc.waits...); got != tc.want {
			t.Errorf("soonest(%v) = %v, want %v", tc.waits, got, tc.want)
		}
	}
}
