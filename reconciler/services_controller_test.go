package reconciler

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/internal/helperfake"
	"github.com/dockctl/dockctl/reconciler/internal/podtest"
	"github.com/dockctl/dockctl/reconciler/reconcile"
	"github.com/dockctl/dockctl/reconciler/services"
	"github.com/dockctl/dockctl/store"
)

// newServiceHarness is a controller running deployments and Services on
// one fake engine whose helpers serve what they are given, with the
// instance network in place.
func newServiceHarness(t *testing.T) (*harness, *helperfake.Engine) {
	t.Helper()
	eng := helperfake.New(t, testImage)
	st, err := store.Open(t.TempDir(), "i")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.WriteNetwork(&store.NetworkStatus{Name: "dockctl_i", Subnet: "10.222.0.0/20", IPRange: "10.222.0.0/21",
		Gateway: "10.222.0.1", DNSIP: "10.222.8.0"}); err != nil {
		t.Fatal(err)
	}
	opts := Options{Instance: "i", ResyncPeriod: time.Hour, CrashBackoffBase: 20 * time.Millisecond, SettleTime: 20 * time.Millisecond,
		NetworkDocker: eng, ServiceDocker: eng, ServiceStore: st, ServiceAddress: "127.0.0.1",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if os.Getenv("DEBUG_LOG") != "" {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	h := &harness{t: t, engine: eng.Engine, store: st, opts: opts, ctrl: New(eng, st, opts)}
	return h, eng
}

// servedPods returns the pods a proxy serves on its first port, by name.
func servedPods(eng *helperfake.Engine, proxy string) map[string]string {
	var cfg helperapi.ProxyConfig
	if _, ok := eng.Serving(proxy, &cfg); !ok || len(cfg.Ports) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, ep := range cfg.Ports[0].Endpoints {
		out[ep.Pod] = ep.IP
	}
	return out
}

// webApp is deployment web (app=web, port "http" 8080) and its NodePort
// Service, applied together.
func webApp(t *testing.T, h *harness, replicas int32, readiness *manifests.Probe) {
	t.Helper()
	d := deployment(replicas)
	d.Spec.Template.Metadata.Labels = map[string]string{"app": "web"}
	d.Spec.Template.Spec.Containers[0].Ports = []manifests.ContainerPort{{Name: "http", ContainerPort: 8080}}
	d.Spec.Template.Spec.Containers[0].ReadinessProbe = readiness
	svc := &manifests.Service{APIVersion: "v1", Kind: "Service", Metadata: manifests.ObjectMeta{Name: "web"},
		Spec: manifests.ServiceSpec{Type: manifests.ServiceTypeNodePort, Selector: map[string]string{"app": "web"},
			Ports: []manifests.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}}
	if _, err := h.store.Apply(store.Bundle{Services: []*manifests.Service{svc}, Deployments: []*manifests.Deployment{d}}, store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestServiceController: a deployment of three ready pods and a Service
// selecting them get a proxy at the Service's address forwarding to the
// three; a pod that turns unready is pushed out, without a restart; a
// scale-down stops no pod before the proxy has acknowledged a config
// without it.
func TestServiceController(t *testing.T) {
	h, eng := newServiceHarness(t)
	webApp(t, h, 3, nil)
	h.start()

	h.waitFor("a proxy serving three pods", func() bool { return len(servedPods(eng, "i_web.default_svc")) == 3 })
	pods := servedPods(eng, "i_web.default_svc")
	listed, _ := eng.ListContainers(context.Background(), "i") // with their addresses
	for _, c := range listed {
		if c.Deployment != "web" {
			continue
		}
		if ip := c.Networks["dockctl_i"]; ip == "" || pods[podName("web", &c)] != ip {
			t.Errorf("pod %s (%s) served as %v", c.Name, ip, pods)
		}
	}
	reqs := eng.CreatedHelpers()
	var proxy dockerx.HelperRequest
	for _, r := range reqs {
		if r.Role == dockerx.RoleProxy {
			proxy = r
		}
	}
	if proxy.Network.IPv4 != "10.222.15.254" || len(proxy.Ports) != 0 {
		t.Errorf("proxy request %+v: want the ClusterIP, no port of the host", proxy)
	}
	h.waitFor("the publisher serving the nodePort on the host's network", func() bool {
		var cfg helperapi.ProxyConfig
		_, ok := eng.Serving("i_publisher", &cfg)
		return ok && len(cfg.Ports) == 1 && cfg.Ports[0].Port == 30000 && len(cfg.Ports[0].Endpoints) == 3
	})
	h.waitFor("the Service's status", func() bool {
		st, err := h.store.ReadServiceStatus("default", "web")
		return err == nil && st != nil && st.ClusterIP == "10.222.15.254" && len(st.Endpoints) == 3 && st.PushedGeneration > 0
	})
	h.waitFor("the DNS server", func() bool {
		var cfg helperapi.DNSConfig
		_, ok := eng.Serving("i_dns", &cfg)
		return ok && len(cfg.Records) == 1 && cfg.Records[0].Name == "web.default.svc.cluster.local" && cfg.Records[0].IPs[0] == "10.222.15.254"
	})

	// A pod turns unready: pushed out, the proxy kept.
	victim := h.ours("web")[1]
	if err := eng.SetHealth(victim.ID, dockerx.HealthUnhealthy); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the unready pod pushed out", func() bool {
		p := servedPods(eng, "i_web.default_svc")
		_, has := p[podName("web", &victim)]
		return len(p) == 2 && !has
	})
	if n := len(eng.CreatedHelpers()); n != len(reqs) {
		t.Errorf("helpers created %d, then %d: an endpoint change recreated one", len(reqs), n)
	}

	// Scale down to one: the unready pod and a ready one go, each drained
	// before its stop signal.
	byID := map[string]string{}
	for _, c := range h.ours("web") {
		byID[c.ID] = podName("web", &c)
	}
	if _, err := h.store.Update("default", "web", func(d *manifests.Deployment) error {
		one := int32(1)
		d.Spec.Replicas = &one
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("one pod left, served alone", func() bool {
		return len(h.ours("web")) == 1 && len(servedPods(eng, "i_web.default_svc")) == 1
	})
	served := map[string]bool{} // what the proxy serves, as the journal goes
	stopped := 0
	for _, e := range eng.Entries() {
		kind, rest, _ := strings.Cut(e, " ")
		id, config, _ := strings.Cut(rest, " ")
		switch {
		case kind == "push" && id == proxyID(eng):
			var cfg helperapi.ProxyConfig
			if err := json.Unmarshal([]byte(config), &cfg); err != nil {
				t.Fatal(err)
			}
			served = map[string]bool{}
			for _, ep := range cfg.Ports[0].Endpoints {
				served[ep.Pod] = true
			}
		case kind == "stop" && byID[id] != "":
			stopped++
			if served[byID[id]] {
				t.Errorf("pod %s was stopped while the proxy still served it", byID[id])
			}
		}
	}
	if stopped != 2 {
		t.Errorf("%d pods stopped, want 2; journal %q", stopped, eng.Entries())
	}
}

// proxyID is the ID of the web Service's proxy.
func proxyID(eng *helperfake.Engine) string {
	id, _ := eng.Serving("i_web.default_svc", &struct{}{})
	return id
}

// TestServiceControllerRestart: a restarted controller pushes to the
// proxy with the pods that were ready — never an empty set while the
// readiness probes of its new workers have not run yet — and holds each
// pod's last readiness only until its own probe gives a verdict: a pod
// whose probe then fails leaves the Service, the other stays.
func TestServiceControllerRestart(t *testing.T) {
	h, eng := newServiceHarness(t)
	opened := podtest.GateRunner{Open: make(chan struct{})}
	close(opened.Open)
	h.ctrl.prober.SetRunner(opened)
	webApp(t, h, 2, fastProbe())
	h.start()
	proxy := "i_web.default_svc"
	h.waitFor("a proxy serving both pods", func() bool { return len(servedPods(eng, proxy)) == 2 })
	h.waitFor("the readiness verdicts recorded", func() bool {
		st, err := h.store.ReadServiceStatus("default", "web")
		return err == nil && st != nil && len(st.Endpoints) == 2 && st.Endpoints[0].Ready && st.Endpoints[1].Ready
	})
	h.stop()

	pods := slices.Sorted(maps.Keys(servedPods(eng, proxy)))
	var failing string // the container of pods[1]
	for _, c := range h.ours("web") {
		if "i_"+pods[1] == c.Name {
			failing = c.ID
		}
	}
	if failing == "" {
		t.Fatalf("no container for pod %s in %v", pods[1], h.ours("web"))
	}
	pushes := len(eng.Entries())
	gate := podtest.GateRunner{Open: make(chan struct{}), Failed: make(chan struct{}), FailID: failing}
	defer close(gate.Open)
	h.ctrl = New(eng, h.store, h.opts)
	h.ctrl.prober.SetRunner(gate) // no verdict until told
	h.start()
	served := func() [][]string { // the pods of each push to the proxy since the restart
		var out [][]string
		for _, e := range eng.Entries()[pushes:] {
			var cfg helperapi.ProxyConfig
			_, config, _ := strings.Cut(strings.TrimPrefix(e, "push "), " ")
			if strings.HasPrefix(e, "push ") && json.Unmarshal([]byte(config), &cfg) == nil && cfg.Service == "default/web" {
				var names []string
				for _, ep := range cfg.Ports[0].Endpoints {
					names = append(names, ep.Pod)
				}
				out = append(out, names)
			}
		}
		return out
	}
	h.waitFor("the first push after the restart", func() bool { return len(served()) > 0 })
	h.waitFor("probe workers for both pods", func() bool {
		return len(h.ctrl.prober.Workers("")) == 2
	})
	close(gate.Failed)
	h.waitFor("the proxy serving only "+pods[0], func() bool {
		p := servedPods(eng, proxy)
		return len(p) == 1 && p[pods[0]] != ""
	})
	got := served()
	for i, names := range got {
		want := pods
		if i == len(got)-1 {
			want = pods[:1]
		}
		if !slices.Equal(names, want) {
			t.Errorf("push %d of %d after the restart served %v, want %v", i+1, len(got), names, want)
		}
	}
}

// TestServiceKeepsNodePortAgainstYoungerHostPort: a nodePort the Service
// published before a deployment declared it as a hostPort stays the
// Service's, through its next syncs (the older claim keeps a host port, as
// the README says); the younger deployment creates no replica and says why
// in ReplicaFailure, as a pod whose host port is taken is never scheduled
// on a Kubernetes node. Once the Service is gone, the deployment gets its
// replica.
func TestServiceKeepsNodePortAgainstYoungerHostPort(t *testing.T) {
	h, eng := newServiceHarness(t)
	h.opts.Allow = manifests.Policy{HostPorts: []manifests.PortRange{{From: 30000, To: 30000}}} // --allow-host-ports=30000
	h.ctrl = New(eng, h.store, h.opts)
	webApp(t, h, 1, nil)
	h.start()
	h.waitFor("web's nodePort 30000 published", func() bool {
		st, err := h.store.ReadServiceStatus("default", "web")
		return err == nil && st != nil && len(st.NodePorts) == 1 && st.NodePorts[0].NodePort == 30000 && !st.NodePorts[0].Since.IsZero()
	})
	db := deployment(1)
	db.Metadata.Name = "db"
	db.Spec.Template.Spec.Containers[0].Ports = []manifests.ContainerPort{{ContainerPort: 5432, HostPort: 30000, Protocol: "TCP"}}
	h.apply(db)
	h.waitFor("db's ReplicaFailure naming the Service", func() bool {
		st, err := h.store.ReadStatus("", "db")
		if err != nil || st == nil {
			return false
		}
		for _, c := range st.Conditions {
			if c.Type == manifests.ConditionReplicaFailure && c.Status == "True" && strings.Contains(c.Message, "host port 30000/TCP is the nodePort of service default/web") {
				return true
			}
		}
		return false
	})
	if n := len(h.ours("db")); n != 0 {
		t.Errorf("db has %d containers; want none while the Service holds its host port", n)
	}
	// The Service's next syncs keep the port.
	for range 2 {
		if _, err := h.ctrl.svc.Reconcile(context.Background(), reconcile.Request{Key: "default/web"}); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := h.store.ReadServiceStatus("default", "web"); err != nil || len(st.NodePorts) != 1 || st.NodePorts[0].Port != 80 || st.NodePorts[0].Protocol != "TCP" || st.NodePorts[0].NodePort != 30000 ||
		slices.ContainsFunc(st.Conditions, func(c store.Condition) bool { return c.Type == services.ServicePortConflict }) {
		t.Fatalf("web's status after a resync %+v, %v: its nodePort must stay 30000, with no conflict", st, err)
	}

	if err := h.store.DeleteService("default", "web"); err != nil {
		t.Fatal(err)
	}
	h.waitReplicas("db", 1)
}

// TestDNSServerGoesWithTheLastDeployment: a deployment alone (no Service)
// has the DNS server run for its pods; deleting it removes the server by
// the deletion's own syncs, never waiting for a periodic resync (the
// harness's is an hour), so `delete --wait` leaves the host clean.
func TestDNSServerGoesWithTheLastDeployment(t *testing.T) {
	h, eng := newServiceHarness(t)
	h.apply(deployment(1))
	h.start()
	h.waitFor("the DNS server", func() bool {
		_, ok := eng.Serving("i_dns", &helperapi.DNSConfig{})
		return ok
	})
	h.waitReplicas("web", 1)
	if err := h.store.Delete("default", "web"); err != nil {
		t.Fatal(err)
	}
	h.waitFor("no container of the instance left", func() bool {
		cs, err := eng.ListContainers(context.Background(), "i")
		return err == nil && len(cs) == 0
	})
}
