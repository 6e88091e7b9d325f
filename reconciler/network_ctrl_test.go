package reconciler

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/internal/podtest"
	"github.com/dockctl/dockctl/store"
)

// createRecorder keeps the CreateRequests the engine receives.
type createRecorder struct {
	mu   sync.Mutex
	reqs map[string]dockerx.CreateRequest // by container name
}

func recordCreates(h *harness) *createRecorder {
	r := &createRecorder{reqs: map[string]dockerx.CreateRequest{}}
	h.engine.OnCreate = func(req dockerx.CreateRequest) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.reqs[req.Name] = req
		return nil
	}
	return r
}

func (r *createRecorder) get(name string) (dockerx.CreateRequest, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	req, ok := r.reqs[name]
	return req, ok
}

func (h *harness) network(name string) *dockerx.Network {
	nets, err := h.engine.ListNetworks(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	for i := range nets {
		if nets[i].Name == name {
			return &nets[i]
		}
	}
	return nil
}

// listed returns deployment name's containers as the list reports them,
// with their networks (Snapshot has none).
func (h *harness) listed(name string) []dockerx.Container {
	cs, err := h.engine.ListDeploymentContainers(context.Background(), "i", name)
	if err != nil {
		h.t.Fatal(err)
	}
	return cs
}

// onNetwork reports whether every container of cs is connected to network
// with an address in subnet.
func onNetwork(cs []dockerx.Container, network, subnet string) bool {
	p := netip.MustParsePrefix(subnet)
	for _, c := range cs {
		a, err := netip.ParseAddr(c.Networks[network])
		if err != nil || !p.Contains(a) {
			return false
		}
	}
	return len(cs) > 0
}

// TestPodsOnTheInstanceNetwork: the controller creates its instance's
// network with the first free candidate subnet and creates every pod's
// network owner on it with a pod's resolver settings — a replica without
// holder and a holder, never a member (it is in its holder's namespace),
// never a hostNetwork pod — without touching template hashes.
func TestPodsOnTheInstanceNetwork(t *testing.T) {
	h := newHarness(t, Options{Allow: manifests.Policy{HostNamespaces: true}})
	reqs := recordCreates(h)
	host := testDeployment("host", 1, "x")
	host.Spec.Template.Spec.HostNetwork = true
	h.apply(testDeployment("web", 2, "x"), twoContainerPod("pod", 1), host)
	h.start()
	h.waitReplicas("web", 2)
	h.waitReplicas("pod", 3)
	hostCs := h.waitReplicas("host", 1)
	web, pod := h.listed("web"), h.listed("pod")

	n := h.network("dockctl_i")
	want := dockerx.Network{ID: n.ID, Name: "dockctl_i", Labels: map[string]string{dockerx.LabelInstance: "i", dockerx.LabelRole: dockerx.RoleNetwork},
		Subnet: "10.222.0.0/20", IPRange: "10.222.0.0/21", Gateway: "10.222.0.1"}
	if !reflect.DeepEqual(*n, want) {
		t.Fatalf("instance network %+v, want %+v", *n, want)
	}
	rec, err := h.store.ReadNetwork()
	wantRec := store.NetworkStatus{Name: "dockctl_i", Subnet: "10.222.0.0/20", IPRange: "10.222.0.0/21", Gateway: "10.222.0.1", DNSIP: "10.222.8.0"}
	if rec != nil {
		wantRec.Version = rec.Version // the file format's
	}
	if err != nil || rec == nil || *rec != wantRec {
		t.Fatalf("network record %+v, %v; want %+v", rec, err, wantRec)
	}
	resolver := &dockerx.PodNetwork{Name: "dockctl_i", DNS: []string{"10.222.8.0"},
		DNSSearch: []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local"}, DNSOptions: []string{"ndots:5"}}
	for _, c := range append(web, pod...) {
		req, ok := reqs.get(c.Name)
		owner := c.Role == dockerx.RoleHolder || c.PodUID == ""
		switch {
		case !ok:
			t.Fatalf("no create recorded for %s", c.Name)
		case owner && !reflect.DeepEqual(req.Network, resolver):
			t.Fatalf("%s created with network %+v, want %+v", c.Name, req.Network, resolver)
		case !owner && req.Network != nil:
			t.Fatalf("member %s created with a network of its own: %+v", c.Name, req.Network)
		case owner && !onNetwork([]dockerx.Container{c}, "dockctl_i", "10.222.0.0/21"):
			t.Fatalf("%s is not on the instance network's dynamic range: %v", c.Name, c.Networks)
		}
		rec, _ := h.store.Get("", c.Deployment)
		if c.TemplateHash != manifests.TemplateHash(&rec.Deployment.Spec.Template) {
			t.Fatalf("%s: template hash %s changed", c.Name, c.TemplateHash)
		}
	}
	if req, _ := reqs.get(hostCs[0].Name); req.Network != nil {
		t.Fatalf("hostNetwork pod created with a network: %+v", req.Network)
	}
	if n := h.engine.Calls()["network:connect"]; n != 0 {
		t.Fatalf("%d connects for pods created on the network", n)
	}
}

// TestExistingPodsConnectedInPlace: pods made before the instance network
// (by an earlier release) are connected to it in place — the same
// containers, none re-created — holders and replicas, not members; and a
// pod disconnected by hand is connected again at the next resync.
func TestExistingPodsConnectedInPlace(t *testing.T) {
	h := newHarness(t, Options{ResyncPeriod: 50 * time.Millisecond})
	old := h.opts
	old.NetworkDocker = nil // an earlier release: no instance network
	h.ctrl = New(h.engine, h.store, old)
	h.apply(testDeployment("web", 2, "x"), twoContainerPod("pod", 1))
	h.start()
	before := append(h.waitReplicas("web", 2), h.waitReplicas("pod", 3)...)
	h.stop()
	if h.network("dockctl_i") != nil {
		t.Fatal("an earlier release made a network")
	}
	creates := h.engine.Calls()["create"]

	h.ctrl = New(h.engine, h.store, h.opts)
	h.start()
	owners := func() []dockerx.Container {
		var out []dockerx.Container
		for _, name := range []string{"web", "pod"} {
			for _, c := range h.listed(name) {
				if c.Role == dockerx.RoleHolder || c.PodUID == "" {
					out = append(out, c)
				}
			}
		}
		return out
	}
	h.waitFor("every pod connected to the instance network", func() bool { return onNetwork(owners(), "dockctl_i", "10.222.0.0/21") })
	after := append(h.listed("web"), h.listed("pod")...)
	if len(after) != len(before) || h.engine.Calls()["create"] != creates {
		t.Fatalf("pods re-created: before %s, after %s", summary(before), summary(after))
	}
	for _, c := range before {
		if !hasID(after, c.ID) {
			t.Fatalf("%s was replaced", c.Name)
		}
	}
	for _, c := range after {
		if c.Role == dockerx.RoleReplica && c.PodUID != "" && len(c.Networks) != 0 {
			t.Fatalf("member %s has networks of its own: %v", c.Name, c.Networks)
		}
	}
	if n := h.engine.Calls()["network:connect"]; n != 3 {
		t.Fatalf("%d connects, want 3 (two replicas, one holder)", n)
	}

	// Drift: disconnected by hand, connected again.
	victim := h.ours("web")[0]
	if err := h.engine.DisconnectNetwork("dockctl_i", victim.ID); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the disconnected pod connected again", func() bool {
		for _, c := range h.listed("web") {
			if c.ID == victim.ID {
				return onNetwork([]dockerx.Container{c}, "dockctl_i", "10.222.0.0/21")
			}
		}
		return false
	})
	if !hasID(h.ours("web"), victim.ID) {
		t.Fatal("the disconnected pod was replaced rather than connected")
	}
}

// TestInstanceNetworkNameTaken: a network of the instance network's name
// that this instance did not make is never used nor adopted: the conflict
// is reported, and deployments run as before, on Docker's default bridge.
func TestInstanceNetworkNameTaken(t *testing.T) {
	obs := &modeRecorder{}
	h := newHarness(t, Options{Observer: obs})
	if err := h.engine.AddNetwork(dockerx.Network{Name: "dockctl_i", Subnet: "10.99.0.0/24", Labels: map[string]string{"owner": "someone"}}); err != nil {
		t.Fatal(err)
	}
	reqs := recordCreates(h)
	h.apply(testDeployment("web", 2, "x"))
	h.start()
	h.waitReplicas("web", 2)
	for _, c := range h.listed("web") {
		if req, _ := reqs.get(c.Name); req.Network != nil {
			t.Fatalf("%s created on the foreign network: %+v", c.Name, req.Network)
		}
		if _, on := c.Networks["dockctl_i"]; on {
			t.Fatalf("%s joined the foreign network", c.Name)
		}
	}
	if _, conflict := obs.last(); conflict == nil || !*conflict {
		t.Fatal("the conflict was not reported")
	}
	if n := h.network("dockctl_i"); n.Labels["owner"] != "someone" || len(n.Labels) != 1 || h.engine.Calls()["network:connect"] != 0 {
		t.Fatalf("the foreign network was touched: %+v, %v", n, h.engine.Calls())
	}
}

// TestInstanceNetworkSubnetTaken: a --subnet that overlaps another
// network creates nothing, and says so on the deployment.
func TestInstanceNetworkSubnetTaken(t *testing.T) {
	h := newHarness(t, Options{Subnet: "192.168.77.0/24"})
	if err := h.engine.AddNetwork(dockerx.Network{Name: "lab", Subnet: "192.168.0.0/16"}); err != nil {
		t.Fatal(err)
	}
	h.apply(testDeployment("web", 1, "x"))
	h.start()
	h.waitFor("a ReplicaFailure naming the overlap", func() bool {
		return h.failureSays("web", `--subnet 192.168.77.0/24 overlaps Docker network "lab" (192.168.0.0/16)`)
	})
	if n := len(h.ours("web")); n != 0 || h.network("dockctl_i") != nil {
		t.Fatalf("%d containers and network %+v with an overlapping subnet", n, h.network("dockctl_i"))
	}
}

// TestInstanceNetworkRecreated: the network removed by hand (Docker allows
// it once no running container uses it) is created again at the next
// resync, with the subnet it had — the store's record, which a restarted
// controller reads too — and pods go on it again.
func TestInstanceNetworkRecreated(t *testing.T) {
	h := newHarness(t, Options{ResyncPeriod: 50 * time.Millisecond, Subnet: "192.168.77.0/24"})
	d := testDeployment("web", 1, "x")
	h.apply(d)
	h.start()
	h.waitReplicas("web", 1)
	d.Spec.Replicas = ptrTo[int32](0)
	h.apply(d)
	h.waitFor("scaled to 0", func() bool { return len(h.ours("web")) == 0 })
	first := h.network("dockctl_i")
	remove := func() {
		if err := h.engine.RemoveNetwork(context.Background(), "dockctl_i"); err != nil {
			t.Fatal(err)
		}
	}
	remove()
	var again *dockerx.Network
	h.waitFor("the network created again", func() bool { again = h.network("dockctl_i"); return again != nil && again.ID != first.ID })
	if again.Subnet != first.Subnet {
		t.Fatalf("re-created with subnet %s, had %s", again.Subnet, first.Subnet)
	}

	// A controller started without --subnet keeps the recorded one.
	h.stop()
	remove()
	o := h.opts
	o.Subnet = ""
	h.ctrl = New(h.engine, h.store, o)
	h.start()
	h.waitFor("the network created by the restarted controller", func() bool { n := h.network("dockctl_i"); return n != nil && n.ID != again.ID })
	if n := h.network("dockctl_i"); n.Subnet != "192.168.77.0/24" {
		t.Fatalf("restarted controller made subnet %s, want the recorded 192.168.77.0/24", n.Subnet)
	}
	d.Spec.Replicas = ptrTo[int32](1)
	h.apply(d)
	if h.waitReplicas("web", 1); !onNetwork(h.listed("web"), "dockctl_i", "192.168.77.0/25") {
		t.Fatalf("pod not on the re-created network: %v", h.listed("web")[0].Networks)
	}
}

// addDNSHelper puts in a running DNS helper of instance i, as the
// Service reconciler makes it.
func addDNSHelper(h *harness) string {
	id, err := h.engine.Add(dockerx.Container{Name: "i_dns", Image: testImage, State: dockerx.StateRunning,
		Labels: map[string]string{dockerx.LabelInstance: "i", dockerx.LabelRole: dockerx.RoleDNS}}, "start")
	if err != nil {
		h.t.Fatal(err)
	}
	return id
}

// startWithReadiness starts h with one replica of web whose readiness is
// probed (httpGet on 8080).
func startWithReadiness(h *harness) *manifests.Deployment {
	d := testDeployment("web", 1, "x")
	d.Spec.Template.Spec.Containers[0].ReadinessProbe = fastProbe()
	h.apply(d)
	h.start()
	return d
}

func readyReplicas(h *harness, d *manifests.Deployment) int32 {
	st, _ := h.store.ReadStatus("", d.Metadata.Name)
	s, _ := View(recordOf(d), st, nil, h.ours(d.Metadata.Name), time.Now())
	return s.ReadyReplicas
}

// TestProbesRelayedThroughTheDNSHelper: when the controller cannot reach
// the instance network (its dial of the DNS server fails), httpGet probes
// run in the DNS helper through the exec API, aimed at the pod's address
// on the instance network, and the relay's exit code is the verdict.
func TestProbesRelayedThroughTheDNSHelper(t *testing.T) {
	obs := &modeRecorder{}
	h := newHarness(t, Options{Observer: obs})
	// Nothing on the instance network is reachable from here, the DNS
	// server (the route's check) as little as a pod (a probe made before
	// the route is decided).
	unreachable := &podtest.ScriptedDial{Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ENETUNREACH}}
	h.ctrl.route.Dial = unreachable.Dial
	h.ctrl.probeRunner.Dial = unreachable.Dial
	helper := addDNSHelper(h)
	var mu sync.Mutex
	var specs []helperapi.ProbeSpec
	var in []string
	healthy := true
	h.engine.HandleExec(func(id string, cmd []string) (int, []byte) {
		var spec helperapi.ProbeSpec
		if len(cmd) != 5 || cmd[2] != helperapi.ModeProbe || json.Unmarshal([]byte(cmd[4]), &spec) != nil {
			return helperapi.ExitUsage, []byte("bad command")
		}
		mu.Lock()
		defer mu.Unlock()
		specs, in = append(specs, spec), append(in, id)
		if healthy {
			return helperapi.ExitOK, []byte("HTTP 200")
		}
		return helperapi.ExitFailed, []byte("HTTP 503")
	})
	d := startWithReadiness(h)
	h.waitFor("the replica ready through the relay", func() bool { return readyReplicas(h, d) == 1 })
	if mode, _ := obs.last(); mode != ProbeRelay {
		t.Fatalf("probe mode %q, want relay", mode)
	}
	addr := h.listed("web")[0].Networks["dockctl_i"]
	mu.Lock()
	spec, where := specs[0], in[0]
	mu.Unlock()
	if where != helper || spec.Kind != "http" || spec.Address != addr || spec.Port != 8080 || spec.Path != "/" {
		t.Fatalf("relayed %+v in %s; want an http probe of %s:8080 in the DNS helper %s", spec, where, addr, helper)
	}
	mu.Lock()
	healthy = false
	mu.Unlock()
	dials := unreachable.Count()
	h.waitFor("the replica not ready once the relay says the probe fails", func() bool { return readyReplicas(h, d) == 0 })
	if n := unreachable.Count(); n != dials {
		t.Fatalf("%d dials once the route was decided: relay mode dials nothing", n-dials)
	}
}

// TestProbesDirectOnTheInstanceNetwork: a controller that reaches the
// instance network (its dial of the DNS server answers) probes pods
// itself, at their address on that network, and never execs the relay.
func TestProbesDirectOnTheInstanceNetwork(t *testing.T) {
	obs := &modeRecorder{}
	h := newHarness(t, Options{Observer: obs})
	h.ctrl.route.Dial = (&podtest.ScriptedDial{}).Dial
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	var mu sync.Mutex
	var dialed []string
	h.ctrl.probeRunner.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, addr)
		mu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, network, srv.Listener.Addr().String()) // the pod, wherever it is
	}
	addDNSHelper(h)
	execs := 0
	h.engine.HandleExec(func(string, []string) (int, []byte) { execs++; return 0, nil })
	d := startWithReadiness(h)
	h.waitFor("the replica ready", func() bool { return readyReplicas(h, d) == 1 })
	if mode, _ := obs.last(); mode != ProbeDirect {
		t.Fatalf("probe mode %q, want direct", mode)
	}
	want := net.JoinHostPort(h.listed("web")[0].Networks["dockctl_i"], "8080")
	mu.Lock()
	defer mu.Unlock()
	if len(dialed) == 0 || dialed[len(dialed)-1] != want {
		t.Fatalf("probes dialed %q, want the pod's instance-network address %s", dialed, want)
	}
	if execs != 0 || h.engine.Calls()["exec:output"] != 0 {
		t.Fatalf("%d relayed probes in direct mode", execs)
	}
}

// TestInstanceNetworkRemovedThenMadeAgain: once everything is deleted the
// network goes and idle sweeps make no new one; its record stays, so that
// the next deployment brings it back with the same subnet (a subnet the
// controller would not choose afresh: the record wins), pods on it.
func TestInstanceNetworkRemovedThenMadeAgain(t *testing.T) {
	h := newHarness(t, Options{ResyncPeriod: 30 * time.Millisecond})
	const recorded = "10.222.48.0/20"
	rec, err := networkLayout("dockctl_i", netip.MustParsePrefix(recorded))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.store.WriteNetwork(&rec); err != nil {
		t.Fatal(err)
	}
	h.apply(testDeployment("web", 1, "x"))
	h.start()
	h.waitReplicas("web", 1)
	if err := h.store.Delete("", "web"); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the instance network removed", func() bool { return h.network("dockctl_i") == nil })
	creates := h.engine.Calls()["network:create"]
	lists := h.engine.Calls()["network:list"]
	h.waitFor("three more sweeps", func() bool { return h.engine.Calls()["network:list"] >= lists+3 })
	if n := h.engine.Calls()["network:create"]; n != creates || h.network("dockctl_i") != nil {
		t.Fatalf("idle sweeps with nothing wanted made the network again (%d creates, had %d)", n, creates)
	}
	if st, err := h.store.ReadNetwork(); err != nil || st == nil || st.Subnet != recorded {
		t.Fatalf("network record after the removal: %+v, %v; want it kept (subnet %s)", st, err, recorded)
	}

	h.apply(testDeployment("api", 1, "y"))
	h.waitReplicas("api", 1)
	n := h.network("dockctl_i")
	if n == nil || n.Subnet != recorded {
		t.Fatalf("network made again: %+v; want subnet %s", n, recorded)
	}
	for _, c := range h.listed("api") {
		if c.Networks["dockctl_i"] == "" {
			t.Fatalf("pod %s not on the re-created network: %v", c.Name, c.Networks)
		}
	}
}

// modeRecorder is a NetworkObserver.
type modeRecorder struct {
	nopObserver
	mu        sync.Mutex
	modes     []string
	conflicts []bool
}

func (m *modeRecorder) ProbeMode(mode string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.modes = append(m.modes, mode)
}

func (m *modeRecorder) InstanceNetworkConflict(c bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.conflicts = append(m.conflicts, c)
}

func (m *modeRecorder) last() (mode string, conflict *bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.modes) > 0 {
		mode = m.modes[len(m.modes)-1]
	}
	if len(m.conflicts) > 0 {
		conflict = &m.conflicts[len(m.conflicts)-1]
	}
	return mode, conflict
}
