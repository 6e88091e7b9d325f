package services

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/netlayout"
	"github.com/dockctl/dockctl/store"
)

// svcOf builds a defaulted Service of the default namespace.
func svcOf(name, typ, clusterIP string, ports ...manifests.ServicePort) *manifests.Service {
	return defaultService(&manifests.Service{
		Metadata: manifests.ObjectMeta{Name: name},
		Spec:     manifests.ServiceSpec{Type: typ, ClusterIP: clusterIP, Selector: map[string]string{"app": name}, Ports: ports},
	})
}

func sport(name string, port, nodePort int32) manifests.ServicePort {
	return manifests.ServicePort{Name: name, Port: port, NodePort: nodePort}
}

func testLayout(t *testing.T, subnet string) *netlayout.NetworkLayout {
	t.Helper()
	l, err := netlayout.Of(subnet)
	if err != nil {
		t.Fatal(err)
	}
	return &l
}

func TestAllocateClusterIP(t *testing.T) {
	l := testLayout(t, "10.222.0.0/20")
	small := testLayout(t, "10.1.1.0/28") // ClusterIPs .9-.14
	other := func(key, ip string) serviceAllocation { return serviceAllocation{Key: key, ClusterIP: ip} }
	tests := []struct {
		name      string
		spec      string
		prev      string
		layout    *netlayout.NetworkLayout
		others    []serviceAllocation
		reserved  []string // named by other Services
		want      string
		usable    bool
		condition string
	}{
		// Chosen from the top down (KEP-3070: the bottom is the users').
		{name: "first is the highest", layout: l, want: "10.222.15.254", usable: true},
		{name: "highest free", layout: l, others: []serviceAllocation{other("default/a", "10.222.15.254"), other("default/b", "10.222.15.252")}, want: "10.222.15.253", usable: true},
		{name: "kept", layout: l, prev: "10.222.9.7", others: []serviceAllocation{other("default/a", "10.222.8.1")}, want: "10.222.9.7", usable: true},
		{name: "kept address taken meanwhile", layout: l, prev: "10.222.8.1", others: []serviceAllocation{other("default/a", "10.222.8.1")}, want: "10.222.15.254", usable: true},
		{name: "subnet changed", layout: l, prev: "10.111.8.1", want: "10.222.15.254", usable: true},
		{name: "the DNS address is never given", layout: l, prev: "10.222.8.0", want: "10.222.15.254", usable: true},
		{name: "an address another Service names is never chosen", layout: l, reserved: []string{"10.222.15.254", "10.222.15.253"}, want: "10.222.15.252", usable: true},
		{name: "a kept address another Service names since is kept", layout: l, prev: "10.222.8.1", reserved: []string{"10.222.8.1"}, want: "10.222.8.1", usable: true},
		{name: "explicit named by another too", layout: l, spec: "10.222.8.1", reserved: []string{"10.222.8.1"}, want: "10.222.8.1", usable: true},
		{name: "exhausted with the named ones", layout: small, others: []serviceAllocation{other("d/a", "10.1.1.9"), other("d/b", "10.1.1.10"), other("d/c", "10.1.1.11"),
			other("d/d", "10.1.1.12")}, reserved: []string{"10.1.1.13", "10.1.1.14"}, condition: ReasonClusterIPsExhausted},
		{name: "explicit honoured", layout: l, spec: "10.222.12.34", prev: "10.222.8.1", want: "10.222.12.34", usable: true},
		{name: "explicit outside the static range", layout: l, spec: "10.222.1.5", condition: ReasonClusterIPNotInRange},
		{name: "explicit broadcast", layout: l, spec: "10.222.15.255", condition: ReasonClusterIPNotInRange},
		{name: "explicit garbage", layout: l, spec: "ten", condition: ReasonClusterIPNotInRange},
		{name: "explicit taken", layout: l, spec: "10.222.8.1", others: []serviceAllocation{other("ns/a", "10.222.8.1")}, condition: ReasonClusterIPInUse},
		{name: "headless", layout: l, spec: "None", want: "None"},
		{name: "network unknown keeps", prev: "10.222.8.9", want: "10.222.8.9"},
		{name: "exhausted", layout: small, others: []serviceAllocation{other("d/a", "10.1.1.9"), other("d/b", "10.1.1.10"), other("d/c", "10.1.1.11"),
			other("d/d", "10.1.1.12"), other("d/e", "10.1.1.13"), other("d/f", "10.1.1.14")}, condition: ReasonClusterIPsExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reserved := func() map[netip.Addr]string {
				out := map[netip.Addr]string{}
				for _, a := range tt.reserved {
					out[netip.MustParseAddr(a)] = "default/fixed"
				}
				return out
			}
			a := allocate(allocInput{Key: "default/web", Service: svcOf("web", "", tt.spec, sport("http", 80, 0)),
				Prev: &store.ServiceStatus{ClusterIP: tt.prev}, Layout: tt.layout, Others: tt.others, Reserved: reserved})
			if a.ClusterIP != tt.want || a.Usable != tt.usable {
				t.Errorf("ClusterIP %q usable %v, want %q %v", a.ClusterIP, a.Usable, tt.want, tt.usable)
			}
			var reasons []string
			for _, c := range a.Conditions {
				reasons = append(reasons, c.Reason)
				if c.Type != ServiceProxyFailure || c.Status != "True" || c.Message == "" {
					t.Errorf("condition %+v: want a ProxyFailure with a message", c)
				}
			}
			if strings.Join(reasons, ",") != tt.condition {
				t.Errorf("conditions %v, want %q", reasons, tt.condition)
			}
		})
	}
}

func TestAllocateNodePorts(t *testing.T) {
	l := testLayout(t, "10.222.0.0/20")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	deployment := portHolder{Port: hostPort{Port: 30000, Protocol: "TCP"}, Owner: "deployment default/db"}
	tests := []struct {
		name     string
		svc      *manifests.Service
		prev     []store.NodePortStatus
		others   []serviceAllocation
		holders  []portHolder
		address  string
		want     string // NodePorts
		bindings string
	}{
		{name: "cluster IP publishes nothing", svc: svcOf("web", "", "", sport("http", 80, 0)), want: "[]", bindings: "[]"},
		{name: "allocated lowest free", svc: svcOf("web", "NodePort", "", sport("http", 80, 0), sport("dns", 53, 0)),
			others:  []serviceAllocation{{Key: "default/a", NodePorts: []int32{30001}}},
			holders: []portHolder{deployment}, address: "127.0.0.1",
			want: "[{80 TCP 30002} {53 TCP 30003}]", bindings: "[{127.0.0.1 30002 80 TCP} {127.0.0.1 30003 53 TCP}]"},
		{name: "kept", svc: svcOf("web", "NodePort", "", sport("http", 80, 0)), prev: []store.NodePortStatus{{Port: 80, Protocol: "TCP", NodePort: 31234}},
			want: "[{80 TCP 31234}]", bindings: "[{0.0.0.0 31234 80 TCP}]", address: "0.0.0.0"},
		{name: "kept port now explicit elsewhere is allocated again", svc: svcOf("web", "NodePort", "", sport("http", 80, 0)),
			prev:   []store.NodePortStatus{{Port: 80, Protocol: "TCP", NodePort: 31234}},
			others: []serviceAllocation{{Key: "default/a", Created: t0.Add(time.Hour), NodePorts: []int32{31234}, Published: []hostPort{{Port: 31234, Protocol: "TCP"}}}},
			want:   "[{80 TCP 30000}]", bindings: "[{ 30000 80 TCP}]"},
		{name: "explicit", svc: svcOf("web", "NodePort", "", sport("http", 80, 30080)), want: "[{80 TCP 30080}]", bindings: "[{ 30080 80 TCP}]"},
		// The older claim keeps a host port (README): a nodePort the Service
		// published before a deployment declared it as a hostPort stays.
		{name: "kept against a younger deployment's hostPort", svc: svcOf("web", "NodePort", "", sport("http", 80, 0)),
			prev:    []store.NodePortStatus{{Port: 80, Protocol: "TCP", NodePort: 30000, Since: t0}},
			holders: []portHolder{{Port: hostPort{Port: 30000, Protocol: "TCP"}, Owner: "deployment default/db", Since: t0.Add(time.Hour)}},
			address: "127.0.0.1", want: "[{80 TCP 30000}]", bindings: "[{127.0.0.1 30000 80 TCP}]"},
		{name: "an older deployment's hostPort moves it", svc: svcOf("web", "NodePort", "", sport("http", 80, 0)),
			prev:    []store.NodePortStatus{{Port: 80, Protocol: "TCP", NodePort: 30000, Since: t0}},
			holders: []portHolder{{Port: hostPort{Port: 30000, Protocol: "TCP"}, Owner: "deployment default/db", Since: t0.Add(-time.Hour)}},
			address: "127.0.0.1", want: "[{80 TCP 30001}]", bindings: "[{127.0.0.1 30001 80 TCP}]"},
		{name: "a container holding it moves it", svc: svcOf("web", "NodePort", "", sport("http", 80, 0)),
			prev:    []store.NodePortStatus{{Port: 80, Protocol: "TCP", NodePort: 30000, Since: t0}},
			holders: []portHolder{{Port: hostPort{Port: 30000, Protocol: "TCP"}, Owner: "container x"}},
			address: "127.0.0.1", want: "[{80 TCP 30001}]", bindings: "[{127.0.0.1 30001 80 TCP}]"},
		{name: "load balancer publishes port", svc: svcOf("web", "LoadBalancer", "", sport("http", 8080, 0)), address: "127.0.0.1",
			want: "[]", bindings: "[{127.0.0.1 8080 8080 TCP}]"},
		// A LoadBalancer is a NodePort Service too: its given nodePort is
		// published as a NodePort's is (Kubernetes: "LoadBalancer ... builds
		// on NodePort"), and besides the port the load balancer serves.
		{name: "load balancer publishes its given nodePort too", svc: svcOf("web", "LoadBalancer", "", sport("http", 8080, 30080)), address: "127.0.0.1",
			want: "[{8080 TCP 30080}]", bindings: "[{127.0.0.1 8080 8080 TCP} {127.0.0.1 30080 8080 TCP}]"},
		{name: "headless publishes nothing", svc: svcOf("web", "NodePort", "None", sport("http", 80, 30080)), want: "[]", bindings: "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := allocate(allocInput{Key: "default/web", Service: tt.svc, Created: t0, Prev: &store.ServiceStatus{NodePorts: tt.prev},
				Layout: l, Address: tt.address, Others: tt.others, Holders: tt.holders})
			if got := npString(a.NodePorts); got != tt.want {
				t.Errorf("NodePorts %s, want %s", got, tt.want)
			}
			if got := fmt.Sprint(nonNil(a.Bindings)); got != tt.bindings {
				t.Errorf("bindings %s, want %s", got, tt.bindings)
			}
			if len(a.Conditions) != 0 {
				t.Errorf("conditions %+v, want none", a.Conditions)
			}
		})
	}
}

// npString prints nodePorts as {port protocol nodePort}, without when
// they were first published.
func npString(nps []store.NodePortStatus) string {
	parts := make([]string, len(nps))
	for i, np := range nps {
		parts[i] = fmt.Sprintf("{%d %s %d}", np.Port, np.Protocol, np.NodePort)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func TestAllocatePortConflicts(t *testing.T) {
	l := testLayout(t, "10.222.0.0/20")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	web := svcOf("web", "NodePort", "", sport("http", 80, 30080), sport("admin", 81, 30081))
	publishing := func(key string, created time.Time, ip string, port int32) serviceAllocation {
		return serviceAllocation{Key: key, Created: created, NodePorts: []int32{port}, Published: []hostPort{{IP: ip, Port: port, Protocol: "TCP"}}}
	}
	tests := []struct {
		name      string
		address   string
		others    []serviceAllocation
		holders   []portHolder
		bindings  string
		message   string // "" no conflict
		displaced string
	}{
		{name: "deployment hostPort", address: "127.0.0.1",
			holders:  []portHolder{{Port: hostPort{Port: 30080, Protocol: "TCP"}, Owner: "deployment default/db"}},
			bindings: "[{127.0.0.1 30081 81 TCP}]", message: "host port 127.0.0.1:30080/TCP is published by deployment default/db: not published"},
		{name: "another protocol is no conflict", address: "127.0.0.1",
			holders:  []portHolder{{Port: hostPort{Port: 30080, Protocol: "UDP"}, Owner: "deployment default/db"}},
			bindings: "[{127.0.0.1 30080 80 TCP} {127.0.0.1 30081 81 TCP}]"},
		{name: "another address is no conflict", address: "127.0.0.1",
			holders:  []portHolder{{Port: hostPort{IP: "127.0.0.2", Port: 30080, Protocol: "TCP"}, Owner: "container x"}},
			bindings: "[{127.0.0.1 30080 80 TCP} {127.0.0.1 30081 81 TCP}]"},
		{name: "a container on every address", address: "127.0.0.1",
			holders:  []portHolder{{Port: hostPort{IP: "0.0.0.0", Port: 30081, Protocol: "TCP"}, Owner: "container other_proxy"}},
			bindings: "[{127.0.0.1 30080 80 TCP}]", message: "host port 127.0.0.1:30081/TCP is published by container other_proxy: not published"},
		{name: "an older service keeps it", address: "0.0.0.0",
			others:   []serviceAllocation{publishing("shop/api", t0.Add(-time.Minute), "0.0.0.0", 30080)},
			bindings: "[{0.0.0.0 30081 81 TCP}]", message: "host port 30080/TCP is published by service shop/api: not published"},
		{name: "a younger service gives it up", address: "0.0.0.0",
			others:   []serviceAllocation{publishing("shop/api", t0.Add(time.Minute), "0.0.0.0", 30080)},
			bindings: "[{0.0.0.0 30080 80 TCP} {0.0.0.0 30081 81 TCP}]", displaced: "[shop/api]"},
		{name: "a tie goes to the smaller key", address: "0.0.0.0",
			others:   []serviceAllocation{publishing("aaa/api", t0, "0.0.0.0", 30080)},
			bindings: "[{0.0.0.0 30081 81 TCP}]", message: "host port 30080/TCP is published by service aaa/api: not published"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := allocate(allocInput{Key: "default/web", Service: web, Created: t0, Layout: l, Address: tt.address, Others: tt.others, Holders: tt.holders})
			if got := fmt.Sprint(a.Bindings); got != tt.bindings {
				t.Errorf("bindings %s, want %s", got, tt.bindings)
			}
			var msg string
			for _, c := range a.Conditions {
				if c.Type == ServicePortConflict && c.Status == "True" && c.Reason == ReasonHostPortInUse {
					msg = c.Message
				}
			}
			if msg != tt.message {
				t.Errorf("PortConflict %q, want %q", msg, tt.message)
			}
			if got := fmt.Sprint(nonNil(a.Displaced)); got != fmt.Sprint(nonNil(strings.Fields(strings.Trim(tt.displaced, "[]")))) {
				t.Errorf("displaced %s, want %s", got, tt.displaced)
			}
			// NodePorts are recorded whatever is published: they are the
			// Service's, conflict or not.
			if npString(a.NodePorts) != "[{80 TCP 30080} {81 TCP 30081}]" {
				t.Errorf("NodePorts %v", a.NodePorts)
			}
		})
	}
}

func TestDefaultService(t *testing.T) {
	in := &manifests.Service{Spec: manifests.ServiceSpec{Ports: []manifests.ServicePort{
		{Port: 80}, {Port: 53, Protocol: "UDP", TargetPort: intstr.FromInt32(5353)}, {Port: 443, TargetPort: intstr.FromString("https")}}}}
	out := defaultService(in)
	if out.Spec.Type != manifests.ServiceTypeClusterIP {
		t.Errorf("type %q", out.Spec.Type)
	}
	got := fmt.Sprintf("%v %v %v %v %v", out.Spec.Ports[0].Protocol, out.Spec.Ports[0].TargetPort.IntVal, out.Spec.Ports[1].Protocol, out.Spec.Ports[1].TargetPort.IntVal,
		out.Spec.Ports[2].TargetPort.StrVal)
	if got != "TCP 80 UDP 5353 https" {
		t.Errorf("defaulted ports: %s", got)
	}
	if in.Spec.Type != "" || in.Spec.Ports[0].Protocol != "" || in.Spec.Ports[0].TargetPort.IntVal != 0 {
		t.Errorf("the record was changed: %+v", in.Spec)
	}
}

// TestExplicitClusterIPWinsOverDynamicOfTheSameApply: a Service that names
// its clusterIP gets it whichever of the apply's Services is synced first:
// every explicit address is reserved before a dynamic one is chosen, and
// dynamic ones are taken from the top of the range, away from the low band
// users pick (Kubernetes' KEP-3070, "Reserve Service IP Ranges for dynamic
// and static IP allocation"). The allocator is loaded before the two are
// stored, as when a controller runs while an apply comes in.
func TestExplicitClusterIPWinsOverDynamicOfTheSameApply(t *testing.T) {
	for _, tc := range []struct {
		name     string
		explicit string
		order    []string
		// viaList: the address is named in spec.clusterIPs only, which
		// the API server's defaulting copies to spec.clusterIP.
		viaList bool
	}{
		{name: "highest address named in clusterIPs only, dynamic synced first", explicit: "10.222.15.254", order: []string{"default/dyn", "default/fixed"}, viaList: true},
		{name: "lowest address, dynamic synced first", explicit: "10.222.8.1", order: []string{"default/dyn", "default/fixed"}},
		{name: "lowest address, explicit synced first", explicit: "10.222.8.1", order: []string{"default/fixed", "default/dyn"}},
		{name: "highest address, dynamic synced first", explicit: "10.222.15.254", order: []string{"default/dyn", "default/fixed"}},
		{name: "highest address, explicit synced first", explicit: "10.222.15.254", order: []string{"default/fixed", "default/dyn"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSvcRig(t)
			r.feed(webPods(2, 2))
			early := webService("", 0)
			early.Service.Metadata.Name = "early"
			early.Service.Spec.ClusterIP = manifests.ClusterIPNone
			r.svcs.put(early)
			r.reconcile("default/early") // loads the allocator

			dyn, fixed := webService("", 0), webService("", 0)
			dyn.Service.Metadata.Name, fixed.Service.Metadata.Name = "dyn", "fixed"
			fixed.Service.Spec.ClusterIP = tc.explicit
			if tc.viaList {
				fixed.Service.Spec.ClusterIP, fixed.Service.Spec.ClusterIPs = "", []string{tc.explicit}
			}
			r.svcs.put(dyn)
			r.svcs.put(fixed)
			for _, k := range tc.order {
				r.reconcile(k)
			}
			if st := r.svcs.status("default/fixed"); st.ClusterIP != tc.explicit || len(st.Conditions) != 0 {
				t.Errorf("fixed: ClusterIP %q conditions %+v, want %s and none", st.ClusterIP, st.Conditions, tc.explicit)
			}
			if st := r.svcs.status("default/dyn"); st.ClusterIP == "" || st.ClusterIP == tc.explicit || len(st.Conditions) != 0 {
				t.Errorf("dyn: ClusterIP %q conditions %+v, want another address and none", st.ClusterIP, st.Conditions)
			}
		})
	}
}

// TestClusterIPGivenIsNeverTakenBack: once a Service was given an address,
// a later Service that names it is refused (ClusterIPInUse, as the API
// server refuses an address already allocated), also after a controller
// restart and whichever is synced first: moving the holder would send
// clients with a cached DNS answer to the other Service.
func TestClusterIPGivenIsNeverTakenBack(t *testing.T) {
	for _, order := range [][]string{{"default/dyn", "default/fixed"}, {"default/fixed", "default/dyn"}} {
		t.Run(strings.Join(order, " then "), func(t *testing.T) {
			r := newSvcRig(t)
			r.feed(webPods(2, 2))
			dyn := webService("", 0)
			dyn.Service.Metadata.Name = "dyn"
			r.svcs.put(dyn)
			r.reconcile("default/dyn")
			given := r.svcs.status("default/dyn").ClusterIP
			if given == "" {
				t.Fatalf("dyn: no address: %+v", r.svcs.status("default/dyn"))
			}
			fixed := webService("", 0)
			fixed.Service.Metadata.Name = "fixed"
			fixed.Service.Spec.ClusterIP = given
			fixed.Created = dyn.Created.Add(-time.Hour) // an older record changes nothing
			r.svcs.put(fixed)
			r.reconcile("default/fixed")

			r.restart()
			r.feed(webPods(2, 2))
			for _, k := range order {
				r.reconcile(k)
			}
			if st := r.svcs.status("default/dyn"); st.ClusterIP != given {
				t.Errorf("dyn moved from %s to %q after a restart", given, st.ClusterIP)
			}
			st := r.svcs.status("default/fixed")
			if c := findCondition(st.Conditions, ServiceProxyFailure); st.ClusterIP == given || c == nil || c.Reason != ReasonClusterIPInUse {
				t.Errorf("fixed: ClusterIP %q conditions %+v, want ClusterIPInUse", st.ClusterIP, st.Conditions)
			}
		})
	}
}

// A host port reads as Docker and kubectl write one: the address left out
// when it is every address, an IPv6 address in brackets.
func TestHostPortString(t *testing.T) {
	for _, tc := range []struct {
		hp   hostPort
		want string
	}{
		{hostPort{Port: 80, Protocol: "TCP"}, "80/TCP"},
		{hostPort{IP: "0.0.0.0", Port: 80, Protocol: "TCP"}, "80/TCP"},
		{hostPort{IP: "127.0.0.1", Port: 8080, Protocol: "UDP"}, "127.0.0.1:8080/UDP"},
		{hostPort{IP: "::1", Port: 8080, Protocol: "TCP"}, "[::1]:8080/TCP"},
	} {
		if got := tc.hp.String(); got != tc.want {
			t.Errorf("%#v: %q, want %q", tc.hp, got, tc.want)
		}
	}
}
