package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/docker/docker/api/types/container"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// servicesYAML are the Services of the fixture, one of each shape: a
// ClusterIP Service with more than three ready endpoints, a NodePort one
// with a named targetPort, a given nodePort and a port conflict, a
// headless one, a LoadBalancer one that is published, one that is not
// yet, one without a selector, and one in another namespace.
const servicesYAML = `apiVersion: v1
kind: Service
metadata: {name: web, labels: {app: web, tier: front}, annotations: {team: shop}}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: api, labels: {tier: back}}
spec:
  type: NodePort
  selector: {app: api}
  ports:
  - {name: http, port: 80, targetPort: http}
  - {name: metrics, port: 9090, protocol: UDP, nodePort: 32000}
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: v1
kind: Service
metadata: {name: lb, labels: {tier: front}}
spec:
  type: LoadBalancer
  selector: {app: web}
  ports: [{port: 8080, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: lb-new}
spec:
  type: LoadBalancer
  selector: {app: new}
  ports: [{port: 8081}]
---
apiVersion: v1
kind: Service
metadata: {name: external}
spec:
  ports: [{port: 443}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: team}
spec:
  selector: {app: web}
  ports: [{port: 80}]
`

// ep is an endpoint of the fixture: a pod, its address and readiness, its
// ports as NAME=PORT/PROTO.
func ep(pod, ip string, ready bool, ports ...string) store.EndpointStatus {
	e := store.EndpointStatus{Pod: pod, IP: ip, Ready: ready}
	for _, p := range ports {
		var name, proto string
		var port int32
		name, rest, _ := strings.Cut(p, "=")
		if _, err := fmt.Sscanf(strings.Replace(rest, "/", " ", 1), "%d %s", &port, &proto); err != nil {
			panic(p)
		}
		e.Ports = append(e.Ports, store.EndpointPort{Name: name, Port: port, Protocol: proto})
	}
	return e
}

// serviceStatuses are what a controller recorded of the fixture's
// Services (lb-new and external: nothing yet).
func serviceStatuses() map[string]*store.ServiceStatus {
	conflict := store.Condition{Type: "PortConflict", Status: "True", Reason: "HostPortInUse",
		Message: "host port 0.0.0.0:32000/UDP is published by service shop/metrics: not published", LastTransitionTime: now.Add(-time.Hour)}
	return map[string]*store.ServiceStatus{
		"default/web": {ObservedGeneration: 1, ClusterIP: "10.222.8.2", PushedGeneration: 7, Endpoints: []store.EndpointStatus{
			ep("web-0123456789-0", "10.222.0.5", true, "http=8080/TCP"),
			ep("web-0123456789-1", "10.222.0.10", true, "http=8080/TCP"),
			ep("web-0123456789-2", "10.222.0.6", true, "http=8080/TCP"),
			ep("web-0123456789-3", "10.222.0.7", true, "http=8080/TCP"),
			ep("web-0123456789-4", "10.222.0.8", false, "http=8080/TCP"),
			ep("web-0123456789-5", "", false, "http=8080/TCP"), // no address yet: left out
		}},
		"default/api": {ObservedGeneration: 1, ClusterIP: "10.222.8.3", NodePorts: []store.NodePortStatus{{Port: 80, Protocol: "TCP", NodePort: 31234}},
			Endpoints: []store.EndpointStatus{
				ep("api-abcdef0123-0", "10.222.0.20", true, "http=3000/TCP", "metrics=9090/UDP"),
				ep("api-abcdef0123-1", "10.222.0.21", false, "http=3000/TCP", "metrics=9090/UDP"),
				ep("api-v2-fedcba9876-0", "10.222.0.22", true, "metrics=9090/UDP"), // no port named http
			},
			Conditions: []store.Condition{conflict}},
		"default/db": {ObservedGeneration: 1, ClusterIP: "None", Endpoints: []store.EndpointStatus{
			ep("db-5555555555-0", "10.222.0.30", true, "=5432/TCP"),
			ep("db-5555555555-1", "10.222.0.31", false, "=5432/TCP"),
		}},
		"default/lb": {ObservedGeneration: 1, ClusterIP: "10.222.8.4", Endpoints: []store.EndpointStatus{
			ep("web-0123456789-0", "10.222.0.5", true, "=8080/TCP"),
		}},
		"team/web": {ObservedGeneration: 1, ClusterIP: "10.222.8.9"},
	}
}

// serviceFixture is fixture's snapshot with the Services of servicesYAML,
// their statuses, the proxy that publishes lb (on every address, which
// Docker lists once per family) and the DNS server.
func serviceFixture(t *testing.T) *snapshot {
	t.Helper()
	snap, _ := fixture(t)
	docs, err := manifests.Decode("services.yaml", []byte(servicesYAML))
	if err != nil {
		t.Fatal(err)
	}
	statuses := serviceStatuses()
	for i, d := range docs {
		rec := &store.ServiceRecord{Service: *d.Service, Generation: 1, Created: now.Add(-time.Duration(i+1) * time.Hour)}
		if rec.Service.Metadata.Namespace == manifests.DefaultNamespace {
			rec.Service.Metadata.Namespace = "" // as the store keeps it
		}
		snap.services = append(snap.services, serviceEntry{rec: rec, status: statuses[rec.Key()]})
	}
	// As ListServices: by namespace, then name.
	sortEntries(snap.services)
	proxy := dockerx.Container{ID: strings.Repeat("b", 64), Name: "default_lb.default_svc", Instance: "default", Role: dockerx.RoleProxy,
		Service: "lb", State: dockerx.StateRunning, Created: now.Add(-time.Hour), Ports: []dockerx.Port{
			{HostIP: "0.0.0.0", HostPort: 8080, ContainerPort: 8080, Protocol: "tcp"},
			{HostIP: "::", HostPort: 8080, ContainerPort: 8080, Protocol: "tcp"},
		}}
	// team's web proxy publishes nothing (ClusterIP); the DNS server
	// neither.
	teamProxy := dockerx.Container{ID: strings.Repeat("c", 64), Name: "default_web.team_svc", Instance: "default", Role: dockerx.RoleProxy,
		Namespace: "team", Service: "web", State: dockerx.StateRunning, Created: now.Add(-time.Hour)}
	dns := dockerx.Container{ID: strings.Repeat("d", 64), Name: "default_dns", Instance: "default", Role: dockerx.RoleDNS,
		State: dockerx.StateRunning, Created: now.Add(-time.Hour)}
	snap.helpers = []dockerx.Container{proxy, teamProxy, dns}
	return snap
}

func sortEntries(es []serviceEntry) {
	sort.Slice(es, func(i, j int) bool {
		if es[i].namespace() != es[j].namespace() {
			return es[i].namespace() < es[j].namespace()
		}
		return es[i].name() < es[j].name()
	})
}

// inDefault returns the fixture's Services of the default namespace.
func inDefault(snap *snapshot) []serviceEntry {
	return keep(append([]serviceEntry(nil), snap.services...), func(e serviceEntry) bool { return e.namespace() == manifests.DefaultNamespace })
}

// get services and get endpoints, in every output, of -n's namespace and
// of all (-A).
func TestRenderServiceListings(t *testing.T) {
	type render func(io.Writer, *snapshot, []serviceEntry, *printer, bool, bool) error
	withSelector := func(e serviceEntry) bool { return len(e.rec.Service.Spec.Selector) > 0 }
	all := func(serviceEntry) bool { return true }
	for _, tt := range []struct {
		golden, output string
		render         render
		// keep picks the Services listed: get endpoints lists those with a
		// selector.
		keep func(serviceEntry) bool
		all  bool
	}{
		{"get-services-table", "table", renderServices, all, false},
		{"get-services-wide", "wide", renderServices, all, false},
		{"get-services-json", "json", renderServices, all, false},
		{"get-services-yaml", "yaml", renderServices, all, false},
		{"get-services-name", "name", renderServices, all, false},
		{"get-services-all-namespaces", "table", renderServices, all, true},
		{"get-endpoints-table", "table", renderEndpoints, withSelector, false},
		{"get-endpoints-json", "json", renderEndpoints, withSelector, false},
		{"get-endpoints-yaml", "yaml", renderEndpoints, withSelector, false},
		{"get-endpoints-name", "name", renderEndpoints, withSelector, false},
		{"get-endpoints-all-namespaces", "table", renderEndpoints, withSelector, true},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			snap := serviceFixture(t)
			list := inDefault(snap)
			if tt.all {
				list = snap.services
			}
			var buf bytes.Buffer
			if err := tt.render(&buf, snap, keep(list, tt.keep), pr(t, tt.output), false, tt.all); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.golden, buf.Bytes())
		})
	}
}

// Without a running controller, what it recorded is flagged, in get
// endpoints as in get deployments -o wide; what it never recorded is
// unknown.
func TestEndpointsStale(t *testing.T) {
	snap := serviceFixture(t)
	snap.controllerRunning = false
	web, _ := snap.service("default", "web")
	if got, want := snap.endpointsColumn(web), "10.222.0.10:8080,10.222.0.5:8080,10.222.0.6:8080 + 1 more... (stale?)"; got != want {
		t.Errorf("stale endpoints: %q, want %q", got, want)
	}
	fresh, _ := snap.service("default", "lb-new")
	if got := snap.endpointsColumn(fresh); got != "<unknown>" {
		t.Errorf("endpoints never recorded: %q, want <unknown>", got)
	}
	var buf bytes.Buffer
	describeService(&buf, snap, web)
	if !strings.Contains(buf.String(), "(observed: 1, recorded by a controller that is not running now: endpoints and conditions may be stale)") {
		t.Errorf("describe without a controller:\n%s", buf.String())
	}
}

func TestDescribeService(t *testing.T) {
	for _, name := range []string{"web", "api", "db", "lb", "lb-new", "external"} {
		t.Run(name, func(t *testing.T) {
			snap := serviceFixture(t)
			e, ok := snap.service("default", name)
			if !ok {
				t.Fatalf("no service %s in the fixture", name)
			}
			var buf bytes.Buffer
			describeService(&buf, snap, e)
			golden(t, "describe-service-"+name, buf.Bytes())
		})
	}
}

// describe deployment names the Services that select its pods: of its
// namespace only, by its template's labels.
func TestDescribeDeploymentServices(t *testing.T) {
	snap := serviceFixture(t)
	var buf bytes.Buffer
	describe(&buf, snap, snap.deploymentObject(snap.records[0]), true)
	if !regexp.MustCompile(`(?m)^Services: +lb,web$`).MatchString(buf.String()) {
		t.Errorf("describe deployment web, selected by lb and web (and team's web, of another namespace):\n%s", buf.String())
	}
	snap.services = nil
	buf.Reset()
	describe(&buf, snap, snap.deploymentObject(snap.records[0]), true)
	if !regexp.MustCompile(`(?m)^Services: +<none>$`).MatchString(buf.String()) {
		t.Errorf("describe deployment without services:\n%s", buf.String())
	}
}

// What get -o json|yaml prints of Services and Endpoints is what a cluster
// would print: it decodes strictly (no unknown or duplicate field) into
// k8s.io/api's core/v1 types, one object or a v1 List of them, and says
// what the controller recorded.
func TestServiceOutputDecodesStrictlyIntoKubernetesTypes(t *testing.T) {
	snap := serviceFixture(t)
	list := inDefault(snap)
	for _, format := range []string{"json", "yaml"} {
		var buf bytes.Buffer
		if err := renderServices(&buf, snap, list, pr(t, format), false, false); err != nil {
			t.Fatal(err)
		}
		items := strictList(t, format, buf.Bytes())
		if len(items) != len(list) {
			t.Fatalf("%s: %d items for %d services", format, len(items), len(list))
		}
		svcs := map[string]*corev1.Service{}
		for _, raw := range items {
			var s corev1.Service
			strictDecode(t, format, raw, &s)
			svcs[s.Name] = &s
		}
		checks := []struct {
			name string
			ok   func(s *corev1.Service) bool
		}{
			{"web", func(s *corev1.Service) bool {
				return s.Kind == "Service" && s.APIVersion == "v1" && s.Namespace == "default" && s.Spec.ClusterIP == "10.222.8.2" &&
					s.Spec.Type == corev1.ServiceTypeClusterIP && s.Spec.Ports[0].TargetPort == intstr.FromInt32(8080) && len(s.Status.LoadBalancer.Ingress) == 0
			}},
			{"api", func(s *corev1.Service) bool {
				return s.Spec.Ports[0].NodePort == 31234 && s.Spec.Ports[1].NodePort == 32000 && s.Spec.Ports[0].TargetPort == intstr.FromString("http") &&
					len(s.Status.Conditions) == 1 && s.Status.Conditions[0].Type == "PortConflict" && s.Status.Conditions[0].Reason == "HostPortInUse"
			}},
			{"db", func(s *corev1.Service) bool { return s.Spec.ClusterIP == "None" }},
			{"lb", func(s *corev1.Service) bool {
				return s.Spec.ClusterIP == "10.222.8.4" && len(s.Status.LoadBalancer.Ingress) == 1 && s.Status.LoadBalancer.Ingress[0].IP == "0.0.0.0"
			}},
			{"lb-new", func(s *corev1.Service) bool { return s.Spec.ClusterIP == "" && len(s.Status.LoadBalancer.Ingress) == 0 }},
		}
		for _, c := range checks {
			if s := svcs[c.name]; s == nil || !c.ok(s) {
				t.Errorf("%s: service %s as printed: %+v", format, c.name, s)
			}
		}

		buf.Reset()
		eps := keep(list, func(e serviceEntry) bool { return len(e.rec.Service.Spec.Selector) > 0 })
		if err := renderEndpoints(&buf, snap, eps, pr(t, format), false, false); err != nil {
			t.Fatal(err)
		}
		items = strictList(t, format, buf.Bytes())
		byName := map[string]*corev1.Endpoints{}
		for _, raw := range items {
			var e corev1.Endpoints
			strictDecode(t, format, raw, &e)
			byName[e.Name] = &e
		}
		web := byName["web"]
		if web == nil || len(web.Subsets) != 1 || len(web.Subsets[0].Addresses) != 4 || len(web.Subsets[0].NotReadyAddresses) != 1 ||
			web.Subsets[0].NotReadyAddresses[0].TargetRef.Name != "web-0123456789-4" || web.Subsets[0].Ports[0] != (corev1.EndpointPort{Name: "http", Port: 8080, Protocol: "TCP"}) {
			t.Errorf("%s: endpoints web: %+v", format, web)
		}
		// api's pods declare different ports: one subset per port set.
		if api := byName["api"]; api == nil || len(api.Subsets) != 2 {
			t.Errorf("%s: endpoints api: %+v", format, api)
		}
		if db := byName["db"]; db == nil || db.Labels[corev1.IsHeadlessService] != "" || len(db.Labels) != 1 {
			t.Errorf("%s: endpoints db, of a headless service: labels %v", format, db.Labels)
		}
	}
	// One name: the object itself.
	var buf bytes.Buffer
	web, _ := snap.service("default", "web")
	if err := renderServices(&buf, snap, []serviceEntry{web}, pr(t, "json"), true, false); err != nil {
		t.Fatal(err)
	}
	var one corev1.Service
	strictDecode(t, "json", buf.Bytes(), &one)
	if one.Name != "web" {
		t.Errorf("get service web -o json: %s", buf.String())
	}
}

// strictList decodes a v1 List strictly and returns its items.
func strictList(t *testing.T, format string, out []byte) [][]byte {
	t.Helper()
	var l struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
	}
	strictDecode(t, format, out, &l)
	if l.APIVersion != "v1" || l.Kind != "List" {
		t.Fatalf("not a v1 List: %s %s", l.APIVersion, l.Kind)
	}
	items := make([][]byte, len(l.Items))
	for i, it := range l.Items {
		items[i] = it
	}
	return items
}

// strictDecode decodes JSON or YAML, refusing unknown and duplicate fields.
func strictDecode(t *testing.T, format string, data []byte, into any) {
	t.Helper()
	var err error
	if format == "yaml" {
		err = sigsyaml.UnmarshalStrict(data, into)
	} else {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		err = dec.Decode(into)
	}
	if err != nil {
		t.Fatalf("%s: not a Kubernetes %T: %v\n%s", format, into, err, data)
	}
}

func TestFormatEndpoints(t *testing.T) {
	addrs := func(ips ...string) []corev1.EndpointAddress {
		var out []corev1.EndpointAddress
		for _, ip := range ips {
			out = append(out, corev1.EndpointAddress{IP: ip})
		}
		return out
	}
	http := []corev1.EndpointPort{{Name: "http", Port: 8080}}
	two := []corev1.EndpointPort{{Name: "http", Port: 8080}, {Name: "metrics", Port: 9090}}
	tests := []struct {
		name     string
		subsets  []corev1.EndpointSubset
		ports    map[string]bool
		notReady bool
		want     string
	}{
		{"none", nil, nil, false, "<none>"},
		{"only not ready", []corev1.EndpointSubset{{NotReadyAddresses: addrs("10.0.0.1"), Ports: http}}, nil, false, "<none>"},
		{"the not ready", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.2"), NotReadyAddresses: addrs("10.0.0.1"), Ports: http}}, nil, true, "10.0.0.1:8080"},
		{"two", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.5", "10.0.0.6"), Ports: http}}, nil, false, "10.0.0.5:8080,10.0.0.6:8080"},
		{"three", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.5", "10.0.0.6", "10.0.0.7"), Ports: http}}, nil, false, "10.0.0.5:8080,10.0.0.6:8080,10.0.0.7:8080"},
		{"more", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.5", "10.0.0.6", "10.0.0.7", "10.0.0.8", "10.0.0.9"), Ports: http}}, nil, false,
			"10.0.0.5:8080,10.0.0.6:8080,10.0.0.7:8080 + 2 more..."},
		{"each port", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.5", "10.0.0.6"), Ports: two}}, nil, false,
			"10.0.0.5:8080,10.0.0.6:8080,10.0.0.5:9090 + 1 more..."},
		{"one port by name", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.5", "10.0.0.6"), Ports: two}}, map[string]bool{"metrics": true}, false,
			"10.0.0.5:9090,10.0.0.6:9090"},
		{"no ports (headless)", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.5")}}, nil, false, "10.0.0.5"},
		{"subsets add up", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.5"), Ports: http}, {Addresses: addrs("10.0.0.6"), Ports: two}}, map[string]bool{"http": true}, false,
			"10.0.0.5:8080,10.0.0.6:8080"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatEndpoints(&corev1.Endpoints{Subsets: tt.subsets}, tt.ports, tt.notReady); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPortsColumn(t *testing.T) {
	port := func(p, np int32, proto string) manifests.ServicePort {
		return manifests.ServicePort{Port: p, NodePort: np, Protocol: proto}
	}
	tests := []struct {
		name   string
		ports  []manifests.ServicePort
		status *store.ServiceStatus
		want   string
	}{
		{"no ports", nil, nil, "<none>"},
		{"cluster IP", []manifests.ServicePort{port(80, 0, "TCP"), port(53, 0, "UDP")}, nil, "80/TCP,53/UDP"},
		{"nodePort given", []manifests.ServicePort{port(80, 30080, "TCP")}, nil, "80:30080/TCP"},
		{"nodePort allocated", []manifests.ServicePort{port(80, 0, "TCP"), port(80, 0, "UDP")},
			&store.ServiceStatus{NodePorts: []store.NodePortStatus{{Port: 80, Protocol: "UDP", NodePort: 31000}}}, "80/TCP,80:31000/UDP"},
		{"not yet allocated", []manifests.ServicePort{port(80, 0, "TCP")}, &store.ServiceStatus{}, "80/TCP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &manifests.Service{Spec: manifests.ServiceSpec{Ports: tt.ports}}
			if got := portsColumn(svc, tt.status); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// EXTERNAL-IP as kubectl's: <none> but for a LoadBalancer, which is
// <pending> until its proxy publishes it; CLUSTER-IP None for a headless
// Service, <pending> until allocated.
func TestServiceAddresses(t *testing.T) {
	snap := serviceFixture(t)
	tests := []struct{ name, clusterIP, externalIP string }{
		{"web", "10.222.8.2", "<none>"},
		{"api", "10.222.8.3", "<none>"},
		{"db", "None", "<none>"},
		{"lb", "10.222.8.4", "0.0.0.0"},
		{"lb-new", "<pending>", "<pending>"},
	}
	for _, tt := range tests {
		e, _ := snap.service("default", tt.name)
		if c, x := e.clusterIP(), snap.externalIP(e); c != tt.clusterIP || x != tt.externalIP {
			t.Errorf("%s: CLUSTER-IP %q EXTERNAL-IP %q, want %q %q", tt.name, c, x, tt.clusterIP, tt.externalIP)
		}
	}
	// A proxy that stopped publishes nothing.
	snap.helpers[0].State = dockerx.StateExited
	if e, _ := snap.service("default", "lb"); snap.externalIP(e) != "<pending>" {
		t.Errorf("lb with its proxy stopped: %q, want <pending>", snap.externalIP(e))
	}
	// Bound to one address: that one.
	snap.helpers[0].State = dockerx.StateRunning
	snap.helpers[0].Ports = []dockerx.Port{{HostIP: "127.0.0.1", HostPort: 8080, ContainerPort: 8080, Protocol: "tcp"}}
	if e, _ := snap.service("default", "lb"); snap.externalIP(e) != "127.0.0.1" {
		t.Errorf("lb on 127.0.0.1: %q", snap.externalIP(e))
	}
}

// A LoadBalancer of this release is published by the instance's
// publisher, on the host's network with no Docker port binding: its
// EXTERNAL-IP is the address its status says it is published on, while
// the publisher runs; <pending> while none does or nothing is published
// (every port held by another: PortConflict).
func TestLoadBalancerPublishedByThePublisher(t *testing.T) {
	snap := serviceFixture(t)
	snap.helpers[0].Ports = nil // the proxy serves its ClusterIP only
	lb := snap.services[slices.IndexFunc(snap.services, func(e serviceEntry) bool { return e.name() == "lb" && e.namespace() == "default" })]
	lb.status.Published = []store.PublishedPort{{HostIP: "127.0.0.1", Port: 8080, Protocol: "TCP"}}
	publisher := dockerx.Container{ID: "p", Name: "t1_publisher", Role: dockerx.RolePublisher, State: dockerx.StateRunning, NetworkMode: "host"}
	for _, tt := range []struct {
		name       string
		helpers    []dockerx.Container
		published  []store.PublishedPort
		externalIP string
	}{
		{"publisher running", append(slices.Clone(snap.helpers), publisher), lb.status.Published, "127.0.0.1"},
		{"no publisher", slices.Clone(snap.helpers), lb.status.Published, "<pending>"},
		{"every port held by another", append(slices.Clone(snap.helpers), publisher), nil, "<pending>"},
		// A NodePort Service's nodePort, published before it became a
		// LoadBalancer, the controller not synced since: its port 8080
		// is not served.
		{"only ports its spec no longer has", append(slices.Clone(snap.helpers), publisher),
			[]store.PublishedPort{{HostIP: "127.0.0.1", Port: 30080, Protocol: "TCP"}}, "<pending>"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			snap.helpers = tt.helpers
			lb.status.Published = tt.published
			e, _ := snap.service("default", "lb")
			if got := snap.externalIP(e); got != tt.externalIP {
				t.Errorf("EXTERNAL-IP %q, want %q", got, tt.externalIP)
			}
		})
	}
}

// addProxy puts in a running proxy of Service name of namespace ns of
// instance t1, publishing hostPort on hostIP (none when hostPort is 0).
func (d *dockerAPI) addProxy(ns, name, hostIP string, hostPort uint16) {
	id := d.add("t1_"+name+"."+ns+".svc", "running", map[string]string{
		dockerx.LabelInstance: "t1", dockerx.LabelNamespace: ns, dockerx.LabelRole: dockerx.RoleProxy, dockerx.LabelService: name,
	})
	if hostPort == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ctrs[id].summary.Ports = []container.Port{{IP: hostIP, PrivatePort: hostPort, PublicPort: hostPort, Type: "tcp"}}
}

// The Service commands end to end, from what the store holds (Services
// applied, statuses as a controller writes them) and what Docker reports,
// through the real flags: get services and endpoints in every output, -n,
// -A, -l, the short names, describe, and delete.
func TestServiceCommands(t *testing.T) {
	api, base, st := fakeInstance(t)
	docs, err := manifests.Decode("services.yaml", []byte(servicesYAML))
	if err != nil {
		t.Fatal(err)
	}
	b := store.Bundle{Namespaces: []*manifests.Namespace{{Metadata: manifests.ObjectMeta{Name: "team"}}}, Deployments: []*manifests.Deployment{mustDecode(t, webYAML)}}
	for _, d := range docs {
		b.Services = append(b.Services, d.Service)
	}
	if _, err := st.Apply(b, store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	for key, status := range serviceStatuses() {
		ns, name, _ := strings.Cut(key, "/")
		if err := st.WriteServiceStatus(ns, name, status); err != nil {
			t.Fatal(err)
		}
	}
	api.addContainer("t1_web-abc-0", "t1", "web", map[string]string{"app": "web"})
	api.addProxy("default", "lb", "127.0.0.1", 8080)
	api.addProxy("team", "web", "", 0)
	api.add("t1_dns", "running", map[string]string{dockerx.LabelInstance: "t1", dockerx.LabelRole: dockerx.RoleDNS})
	api.add("t1_web-abc-0.default_pf-1a2b3c", "running", map[string]string{dockerx.LabelInstance: "t1", dockerx.LabelNamespace: "default", dockerx.LabelRole: dockerx.RolePortForward})

	row := func(cells ...string) string { return strings.Join(cells, " +") + `\n` }
	header := row("NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", `PORT\(S\)`, "AGE")
	tests := []cliCase{
		{[]string{"get", "services"}, `^` + header + row("api", "NodePort", `10\.222\.8\.3`, "<none>", `80:31234/TCP,9090:32000/UDP`, `\d+s`) +
			row("db", "ClusterIP", "None", "<none>", "5432/TCP", `\d+s`) + row("external", "ClusterIP", "<pending>", "<none>", "443/TCP", `\d+s`) +
			row("lb", "LoadBalancer", `10\.222\.8\.4`, `127\.0\.0\.1`, "8080/TCP", `\d+s`) + row("lb-new", "LoadBalancer", "<pending>", "<pending>", "8081/TCP", `\d+s`) +
			row("web", "ClusterIP", `10\.222\.8\.2`, "<none>", "80/TCP", `\d+s`) + `$`, ""},
		{[]string{"get", "svc", "-n", "team"}, `^` + header + row("web", "ClusterIP", `10\.222\.8\.9`, "<none>", "80/TCP", `\d+s`) + `$`, ""},
		{[]string{"get", "service", "-A", "-l", "tier"}, `^NAMESPACE +NAME .*\ndefault +api .*\ndefault +lb .*\ndefault +web .*\n$`, ""},
		{[]string{"get", "svc", "-l", "tier=front", "-o", "wide"}, `^NAME .* +SELECTOR\nlb .* +app=web\nweb .* +app=web\n$`, ""},
		{[]string{"get", "svc", "web", "-o", "name"}, `^service/web\n$`, ""},
		{[]string{"get", "svc/web", "-n", "team", "-o", "name"}, `^service/web\n$`, ""},
		{[]string{"get", "services", "-A", "-o", "name"}, `^service/api\nservice/db\nservice/external\nservice/lb\nservice/lb-new\nservice/web\nservice/web\n$`, ""},
		{[]string{"get", "svc", "web", "-o", "json"}, `(?s)^\{\n +"kind": "Service",.*"clusterIP": "10\.222\.8\.2",.*\}\n$`, ""},
		{[]string{"get", "svc", "lb", "-o", "yaml"}, `(?s)loadBalancer:\n +ingress:\n +- ip: 127\.0\.0\.1\n`, ""},
		{[]string{"get", "svc", "-l", "tier=back", "-o", "json"}, `(?s)^\{\n +"apiVersion": "v1",\n +"items": \[.*"name": "api".*\],\n +"kind": "List"\n\}\n$`, ""},
		{[]string{"get", "svc", "nope"}, "", `services "nope" not found in instance "t1"`},
		{[]string{"get", "svc", "web", "-A"}, "", "cannot be retrieved by name across all namespaces"},
		{[]string{"get", "svc", "web", "-l", "a=b"}, "", "name cannot be provided when a selector is specified"},
		{[]string{"get", "svc", "-o", "table", "-l", "nope"}, `^$`, ""},
		{[]string{"get", "svc", "-o", "bogus"}, "", `unable to match a printer suitable for the output format "bogus", allowed formats are: ` + allowedFormats},
		// No controller runs here: what it recorded may be stale.
		{[]string{"get", "endpoints"}, `^NAME +ENDPOINTS +AGE\n` + row("api", `10\.222\.0\.20:3000,10\.222\.0\.20:9090,10\.222\.0\.22:9090 \(stale\?\)`, `\d+s`) +
			row("db", `10\.222\.0\.30:5432 \(stale\?\)`, `\d+s`) + row("lb", `10\.222\.0\.5:8080 \(stale\?\)`, `\d+s`) + row("lb-new", "<unknown>", `\d+s`) +
			row("web", `10\.222\.0\.10:8080,10\.222\.0\.5:8080,10\.222\.0\.6:8080 \+ 1 more\.\.\. \(stale\?\)`, `\d+s`) + `$`, ""},
		{[]string{"get", "ep", "-A", "-l", "tier=front"}, `^NAMESPACE +NAME +ENDPOINTS +AGE\ndefault +lb .*\ndefault +web .*\n$`, ""},
		{[]string{"get", "ep", "-n", "team"}, `^NAME +ENDPOINTS +AGE\nweb +<none> \(stale\?\) +\d+s\n$`, ""},
		{[]string{"get", "ep", "-l", "service.kubernetes.io/headless", "-o", "name"}, `^endpoints/db\n$`, ""},
		{[]string{"get", "ep/web", "-o", "yaml"}, `(?s)^apiVersion: v1\nkind: Endpoints\n.*notReadyAddresses:\n  - ip: 10\.222\.0\.8\n    targetRef:\n      kind: Pod\n      name: web-0123456789-4\n      namespace: default\n`, ""},
		// A Service without a selector has no managed endpoints.
		{[]string{"get", "endpoints", "external"}, "", `endpoints "external" not found in instance "t1"`},
		{[]string{"describe", "svc", "web"}, `(?s)^Name: +web\nNamespace: +default\n.*\nEndpoints: +10\.222\.0\.10:8080,10\.222\.0\.5:8080,10\.222\.0\.6:8080 \+ 1 more\.\.\.\nNotReadyEndpoints: +10\.222\.0\.8:8080\n`, ""},
		{[]string{"describe", "service/api"}, `(?s)\nConditions:\n +Type +Status +Reason +Message\n.*\n +PortConflict +True +HostPortInUse +host port`, ""},
		{[]string{"describe", "svc", "web", "-n", "team"}, `(?s)^Name: +web\nNamespace: +team\n`, ""},
		{[]string{"describe", "svc", "nope"}, "", `services "nope" not found in instance "t1"`},
		{[]string{"describe", "deploy", "web"}, `(?m)^Services: +lb,web$`, ""},
		// The helpers (a port-forward session's too) are the instance's
		// containers, neither pods nor orphans.
		{[]string{"get", "pods", "-A"}, `^NAMESPACE +NAME .*\ndefault +web-abc-0 .*\n$`, ""},
		{[]string{"get", "containers", "-A"}, `^NAMESPACE +NAME +READY +STATUS .*\ndefault +t1_dns +\S+ +Running +0 +\S+\ndefault +t1_lb\.default\.svc +\S+ +Running +0 +\S+\ndefault +t1_web-abc-0 .*\n` +
			`default +t1_web-abc-0\.default_pf-1a2b3c +\S+ +Running +0 +\S+\nteam +t1_web\.team\.svc +\S+ +Running +0 +\S+\n$`, ""},
	}
	runCases(t, base, tests)

	// What get prints for one name decodes strictly into core/v1.
	for _, tc := range []struct {
		args []string
		into any
	}{
		{[]string{"get", "svc", "api", "-o", "json"}, &corev1.Service{}},
		{[]string{"get", "svc", "api", "-o", "yaml"}, &corev1.Service{}},
		{[]string{"get", "ep", "api", "-o", "json"}, &corev1.Endpoints{}},
		{[]string{"get", "ep", "api", "-o", "yaml"}, &corev1.Endpoints{}},
	} {
		out, _, err := run(t, "", append(base, tc.args...)...)
		if err != nil {
			t.Fatal(err)
		}
		strictDecode(t, tc.args[len(tc.args)-1], []byte(out), tc.into)
	}

	// delete tombstones the Service: gone from get, its status kept for
	// the controller (which removes its proxy).
	mustRun := runner(t, base)
	if out := mustRun("", "delete", "svc", "web"); out != "service/web deleted\n" {
		t.Fatalf("delete svc web: %q", out)
	}
	if rec, err := st.LookupService("", "web"); err != nil || !rec.Deleted {
		t.Fatalf("web after delete: %+v, %v; want a tombstone", rec, err)
	}
	if _, _, err := run(t, "", append(base, "get", "svc", "web")...); err == nil || err.Error() != `services "web" not found in instance "t1"` {
		t.Fatalf("get of a deleted service: %v", err)
	}
	if _, _, err := run(t, "", append(base, "delete", "service/web")...); err == nil || err.Error() != `services "web" not found in instance "t1"` {
		t.Fatalf("delete of a deleted service: %v", err)
	}
	if out := mustRun("", "delete", "service/web", "-n", "team"); out != "service/web deleted\n" {
		t.Fatalf("delete service/web -n team: %q", out)
	}
	if out := mustRun("", "describe", "deploy/web"); !regexp.MustCompile(`(?m)^Services: +lb$`).MatchString(out) {
		t.Fatalf("describe deployment after web's deletion:\n%s", out)
	}
	out, errOut, err := run(t, "", append(base, "get", "svc", "-n", "team")...)
	if err != nil || out != "" || errOut != "No resources found in team namespace of instance \"t1\".\n" {
		t.Fatalf("get svc -n team, empty: %v %q %q", err, out, errOut)
	}
}

// Short names, as kubectl's, wherever a kind is named.
func TestShortNames(t *testing.T) {
	startFakeDaemon(t)
	base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
	mustRun := runner(t, base)
	svc := "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {app: web}, ports: [{port: 80}]}\n---\n"
	mustRun(svc+webYAML, "apply", "-f", "-")
	mustRun("", "create", "ns", "team")
	for _, tt := range []struct {
		args []string
		want string // a regular expression the output must match
	}{
		{[]string{"get", "deploy"}, `^NAME +READY`},
		{[]string{"get", "deploy/web"}, `\nweb `},
		{[]string{"get", "svc"}, `^NAME +TYPE`},
		{[]string{"get", "svc/web"}, `\nweb +ClusterIP`},
		{[]string{"get", "ep"}, `^NAME +ENDPOINTS`},
		{[]string{"get", "ep/web"}, `\nweb +<unknown>`},
		{[]string{"get", "ns"}, `^NAME +STATUS`},
		{[]string{"get", "ns/team"}, `\nteam +Active`},
		{[]string{"get", "po"}, `^$`},
		{[]string{"describe", "deploy", "web"}, `(?m)^Services: +web$`},
		{[]string{"describe", "svc/web"}, `^Name: +web\n`},
		{[]string{"scale", "deploy/web", "--replicas", "2"}, `^deployment/web scaled\n$`},
		{[]string{"rollout", "history", "deploy", "web"}, `^deployment/web\n`},
		{[]string{"delete", "svc", "web"}, `^service/web deleted\n$`},
		{[]string{"delete", "deploy", "web"}, `^deployment/web deleted\n$`},
		{[]string{"delete", "ns", "team"}, `^namespace/team deleted\n$`},
	} {
		if out := mustRun("", tt.args...); !regexp.MustCompile(tt.want).MatchString(out) {
			t.Errorf("%v:\n%s\nwant it to match %s", tt.args, out, tt.want)
		}
	}
}

// TestEndpointsNameTheirPodsHostname: an endpoint whose pod names its
// hostname in the Service's subdomain shows it in the Endpoints object
// (`get endpoints -o yaml`), as Kubernetes' endpoints controller sets an
// address's hostname.
func TestEndpointsNameTheirPodsHostname(t *testing.T) {
	rec := &store.ServiceRecord{Service: manifests.Service{APIVersion: "v1", Kind: "Service", Metadata: manifests.ObjectMeta{Name: "db"},
		Spec: manifests.ServiceSpec{ClusterIP: manifests.ClusterIPNone, Selector: map[string]string{"app": "db"}}}}
	st := &store.ServiceStatus{Endpoints: []store.EndpointStatus{
		{Pod: "db-0", IP: "10.222.0.5", Ready: true, Hostname: "db-0"},
		{Pod: "other", IP: "10.222.0.6", Ready: true},
	}}
	out := (&snapshot{}).endpointsObject(serviceEntry{rec: rec, status: st})
	if len(out.Subsets) != 1 || len(out.Subsets[0].Addresses) != 2 {
		t.Fatalf("subsets %+v, want one of two addresses", out.Subsets)
	}
	for _, a := range out.Subsets[0].Addresses {
		want := ""
		if a.TargetRef.Name == "db-0" {
			want = "db-0"
		}
		if a.Hostname != want {
			t.Errorf("address of %s: hostname %q, want %q", a.TargetRef.Name, a.Hostname, want)
		}
	}
}
