package gatewayroutes

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const gatewayClass = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: dockctl}
spec: {controllerName: dockctl.io/gateway}
---
`

const classAndGateway = gatewayClass + `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: dockctl
  listeners:
  - {name: http, port: 80, protocol: HTTP}
---
`

func httpRoute(name, spec string) string {
	return "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: " + name + "}\nspec:\n  parentRefs: [{name: gw}]\n" + spec + "---\n"
}

func rule(matches, backend string) string {
	return "  - matches: [" + matches + "]\n    backendRefs: [{name: " + backend + ", port: 80}]\n"
}

// HTTPRoute precedence as the Gateway API says: exact path, longest
// prefix, method, most headers, most query parameters, then the oldest
// route, then namespace/name, then rule order.
func TestHTTPRoutePrecedence(t *testing.T) {
	in := decode(t, classAndGateway+
		httpRoute("old", "  rules:\n"+
			rule("{path: {value: /}}", "root")+
			rule("{path: {value: /api}}", "api")+
			rule("{path: {type: Exact, value: /api}}", "api-exact")+
			rule("{path: {value: /api}, method: POST}", "api-post")+
			rule("{path: {value: /api}, headers: [{name: x-a, value: '1'}]}", "api-h1")+
			rule("{path: {value: /api}, headers: [{name: x-a, value: '1'}, {name: x-b, value: '2'}]}", "api-h2")+
			rule("{path: {value: /api}, queryParams: [{name: q, value: '1'}]}", "api-q")+
			rule("{path: {value: /tie}}", "tie-old"))+
		httpRoute("new", "  rules:\n"+
			rule("{path: {value: /tie}}", "tie-new")+
			rule("{path: {value: /api/v2}}", "api-v2")))
	in.Services = services("root", "api", "api-exact", "api-post", "api-h1", "api-h2", "api-q", "tie-old", "tie-new", "api-v2")
	tb := Compile(in, testOpts)
	for _, tc := range []struct {
		method, target string
		headers        []string
		want           string
	}{
		{"GET", "http://any/api", nil, "api-exact"},
		{"GET", "http://any/api/x", nil, "api"},
		{"GET", "http://any/api/v2/x", nil, "api-v2"},
		{"POST", "http://any/api/x", []string{"x-a", "1", "x-b", "2"}, "api-post"},
		{"GET", "http://any/api/x", []string{"x-a", "1", "x-b", "2"}, "api-h2"},
		{"GET", "http://any/api/x", []string{"x-a", "1"}, "api-h1"},
		{"GET", "http://any/api/x?q=1", []string{"x-a", "1"}, "api-h1"},
		{"GET", "http://any/api/x?q=1", nil, "api-q"},
		{"GET", "http://any/tie", nil, "tie-old"},
		{"GET", "http://any/tiex", nil, "root"},
	} {
		got := served(t, tb, 80, tc.method, tc.target, tc.headers...)
		if !strings.HasSuffix(got, "default/"+tc.want+":80") {
			t.Errorf("%s %s %v served by %q, want %s", tc.method, tc.target, tc.headers, got, tc.want)
		}
	}
}

// The hostnames a route serves on a listener: the Gateway API's
// intersection of both sides' names.
func TestHostnameIntersection(t *testing.T) {
	for _, tc := range []struct {
		listener string
		route    []string
		want     []string
	}{
		{"", nil, []string{""}},
		{"", []string{"a.example.com"}, []string{"a.example.com"}},
		{"*.example.com", nil, []string{"*.example.com"}},
		{"*.example.com", []string{"a.example.com", "a.b.example.com", "example.com", "a.other.com"}, []string{"a.b.example.com", "a.example.com"}},
		{"a.example.com", []string{"*.example.com"}, []string{"a.example.com"}},
		{"*.example.com", []string{"*.b.example.com"}, []string{"*.b.example.com"}},
		{"*.b.example.com", []string{"*.example.com"}, []string{"*.b.example.com"}},
		{"a.example.com", []string{"b.example.com"}, nil},
		{"*.example.com", []string{"*.example.com"}, []string{"*.example.com"}},
	} {
		if got := intersect(tc.listener, tc.route); !slices.Equal(got, tc.want) {
			t.Errorf("intersect(%q, %q) = %q, want %q", tc.listener, tc.route, got, tc.want)
		}
	}
}

// A Gateway API wildcard matches any number of labels; exact hosts come
// before wildcards, the more specific wildcard first.
func TestGatewayHostPrecedence(t *testing.T) {
	in := decode(t, classAndGateway+
		httpRoute("wide", "  hostnames: ['*.example.com']\n  rules:\n"+rule("{path: {value: /}}", "wide"))+
		httpRoute("narrow", "  hostnames: ['*.b.example.com']\n  rules:\n"+rule("{path: {value: /}}", "narrow"))+
		httpRoute("exact", "  hostnames: [x.b.example.com]\n  rules:\n"+rule("{path: {value: /only}}", "exact")))
	in.Services = services("wide", "narrow", "exact")
	tb := Compile(in, testOpts)
	for _, tc := range []struct{ target, want string }{
		{"http://a.example.com/", "wide"},
		{"http://a.c.example.com/", "wide"},
		{"http://a.b.example.com/", "narrow"},
		{"http://x.b.example.com/only", "exact"},
		{"http://x.b.example.com/other", ""}, // the most specific host serves or nothing does
		{"http://example.com/", ""},
	} {
		got := served(t, tb, 80, "GET", tc.target)
		if tc.want == "" && got != "" || tc.want != "" && !strings.HasSuffix(got, "default/"+tc.want+":80") {
			t.Errorf("%s served by %q, want %q", tc.target, got, tc.want)
		}
	}
}

// An HTTPRoute's conditions per parent: Accepted (or why not) and
// ResolvedRefs (or the first unresolved reference's reason).
func TestHTTPRouteStatus(t *testing.T) {
	gateways := gatewayClass + `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: dockctl
  listeners:
  - {name: same, port: 80, protocol: HTTP}
  - {name: all, port: 8080, protocol: HTTP, hostname: a.example.com, allowedRoutes: {namespaces: {from: All}}}
  - {name: team, port: 8081, protocol: HTTP, allowedRoutes: {namespaces: {from: Selector, selector: {matchLabels: {team: web}}}}}
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: g, namespace: shared}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: app}]
  to: [{group: "", kind: Service, name: allowed}]
---
`
	route := func(parent, extra, backends string) string {
		return "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: app}\nspec:\n  parentRefs: [" + parent + "]\n" + extra + "  rules:\n  - backendRefs: [" + backends + "]\n"
	}
	const okParent = "{name: gw, namespace: infra, sectionName: all}"
	for _, tc := range []struct {
		name, route                      string
		accepted, acceptedReason, reason string
	}{
		{"accepted and resolved", route(okParent, "", "{name: web, port: 80}"), "True", ReasonAccepted, ReasonResolvedRefs},
		{"no such Service", route(okParent, "", "{name: gone, port: 80}"), "True", ReasonAccepted, ReasonBackendNotFound},
		{"no such port", route(okParent, "", "{name: web, port: 81}"), "True", ReasonAccepted, ReasonBackendNotFound},
		{"another namespace without a grant", route(okParent, "", "{name: web, namespace: other, port: 80}"), "True", ReasonAccepted, ReasonRefNotPermitted},
		{"another namespace with a grant", route(okParent, "", "{name: allowed, namespace: shared, port: 80}"), "True", ReasonAccepted, ReasonResolvedRefs},
		{"a grant naming another Service", route(okParent, "", "{name: web, namespace: shared, port: 80}"), "True", ReasonAccepted, ReasonRefNotPermitted},
		{"not a Service", route(okParent, "", "{name: b, group: example.com, kind: Bucket}"), "True", ReasonAccepted, ReasonInvalidKind},
		{"a listener of the Gateway's namespace only", route("{name: gw, namespace: infra, sectionName: same}", "", "{name: web, port: 80}"), "False", ReasonNotAllowedByListeners, ReasonResolvedRefs},
		{"a namespace selector matching", route("{name: gw, namespace: infra, sectionName: team}", "", "{name: web, port: 80}"), "True", ReasonAccepted, ReasonResolvedRefs},
		{"no hostname in common", route(okParent, "  hostnames: [b.example.com]\n", "{name: web, port: 80}"), "False", ReasonNoMatchingListenerHost, ReasonResolvedRefs},
		{"no such section", route("{name: gw, namespace: infra, sectionName: nope}", "", "{name: web, port: 80}"), "False", ReasonNoMatchingParent, ReasonResolvedRefs},
		{"a port selecting the listener", route("{name: gw, namespace: infra, port: 8080}", "", "{name: web, port: 80}"), "True", ReasonAccepted, ReasonResolvedRefs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := decode(t, gateways+tc.route)
			in.Services = services("app/web", "shared/allowed", "shared/web", "other/web")
			in.NamespaceLabels = map[string]map[string]string{"app": {"team": "web"}}
			tb := Compile(in, testOpts)
			st := tb.Status.HTTPRoutes[ObjectRef{"app", "r"}]
			if len(st) != 1 {
				t.Fatalf("parents = %+v", st)
			}
			a, r := cond(st[0].Conditions, CondAccepted), cond(st[0].Conditions, CondResolvedRefs)
			if a.Status != tc.accepted || a.Reason != tc.acceptedReason || r.Reason != tc.reason {
				t.Errorf("Accepted = %+v, ResolvedRefs = %+v", a, r)
			}
			if r.Reason != ReasonResolvedRefs && a.Status == "True" {
				// The unresolved backend stays, invalid: its share is a 500.
				for _, p := range tb.Config.Ports {
					for _, h := range p.Hosts {
						if be := h.Routes[0].Backends[0]; !be.Invalid {
							t.Errorf("backend %+v is not invalid", be)
						}
					}
				}
			}
		})
	}
}

// A route whose parent is a Gateway of another controller's class gets no
// status from dockctl and serves nothing.
func TestRouteOfAnotherControllersGatewayIsIgnored(t *testing.T) {
	in := decode(t, strings.Replace(classAndGateway, "dockctl.io/gateway", "example.com/other", 1)+httpRoute("r", "  rules:\n"+rule("{path: {value: /}}", "web")))
	tb := Compile(in, testOpts)
	if len(tb.Status.HTTPRoutes) != 0 || len(tb.Status.Gateways) != 0 || len(tb.Status.GatewayClasses) != 0 || len(tb.Config.Ports) != 0 {
		t.Errorf("table = %+v", tb)
	}
}

// A Gateway's conditions: Accepted, Programmed once the helper has
// acknowledged (Pending before), per-listener ResolvedRefs for its
// certificates and the number of routes attached.
func TestGatewayStatus(t *testing.T) {
	in := decode(t, gatewayClass+`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: dockctl
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: ok, port: 443, protocol: HTTPS, hostname: a.example.com, tls: {certificateRefs: [{name: a-tls}]}}
  - {name: missing, port: 443, protocol: HTTPS, hostname: b.example.com, tls: {certificateRefs: [{name: b-tls}]}}
  - {name: foreign, port: 443, protocol: HTTPS, hostname: c.example.com, tls: {certificateRefs: [{name: c-tls, namespace: certs}]}}
  - {name: clash, port: 80, protocol: HTTPS, hostname: d.example.com, tls: {certificateRefs: [{name: a-tls}]}}
---
`+httpRoute("r", "  rules:\n"+rule("{path: {value: /}}", "web")))
	in.Services = services("web")
	in.TLSSecrets = map[ObjectRef]bool{{"default", "a-tls"}: true, {"certs", "c-tls"}: true}
	gw := ObjectRef{"default", "gw"}
	st := Compile(in, testOpts).Status.Gateways[gw]
	if c := cond(st.Conditions, CondProgrammed); c.Status != "False" || c.Reason != ReasonPending {
		t.Errorf("Programmed before the acknowledgement = %+v", c)
	}
	if c := cond(st.Conditions, CondAccepted); c.Status != "True" {
		t.Errorf("Accepted = %+v", c)
	}
	want := map[string][2]string{
		"http":    {ReasonAccepted, ReasonResolvedRefs},
		"ok":      {ReasonAccepted, ReasonResolvedRefs},
		"missing": {ReasonAccepted, ReasonInvalidCertificateRef},
		"foreign": {ReasonAccepted, ReasonRefNotPermitted},
		"clash":   {ReasonPortUnavailable, ReasonResolvedRefs},
	}
	for _, l := range st.Listeners {
		w := want[l.Name]
		if a, r := cond(l.Conditions, CondAccepted), cond(l.Conditions, CondResolvedRefs); a.Reason != w[0] || r.Reason != w[1] {
			t.Errorf("listener %s: Accepted %+v ResolvedRefs %+v, want %v", l.Name, a, r, w)
		}
	}
	if st.Listeners[0].AttachedRoutes != 1 || st.Listeners[1].AttachedRoutes != 1 || st.Listeners[4].AttachedRoutes != 0 {
		t.Errorf("attached routes = %+v", st.Listeners)
	}
	in.Programmed = map[ObjectRef]bool{gw: true}
	st = Compile(in, testOpts).Status.Gateways[gw]
	if c := cond(st.Conditions, CondProgrammed); c.Status != "True" {
		t.Errorf("Programmed after the acknowledgement = %+v", c)
	}
	for _, l := range st.Listeners {
		want := "True"
		if l.Name == "clash" {
			want = "False"
		}
		if c := cond(l.Conditions, CondProgrammed); c.Status != want {
			t.Errorf("listener %s Programmed after the acknowledgement = %+v, want %s", l.Name, c, want)
		}
	}
}

func TestPermitted(t *testing.T) {
	name := "db"
	grants := []*manifests.ReferenceGrant{{Metadata: manifests.ObjectMeta{Namespace: "data"}, Spec: manifests.ReferenceGrantSpec{
		From: []manifests.ReferenceGrantFrom{{Group: manifests.GatewayGroup, Kind: "HTTPRoute", Namespace: "app"}},
		To:   []manifests.ReferenceGrantTo{{Group: "", Kind: "Service", Name: &name}, {Group: "", Kind: "Secret"}},
	}}}
	route := Reference{manifests.GatewayGroup, "HTTPRoute", "app", "r"}
	for _, tc := range []struct {
		name     string
		from, to Reference
		want     bool
	}{
		{"same namespace needs no grant", route, Reference{"", "Service", "app", "x"}, true},
		{"named Service granted", route, Reference{"", "Service", "data", "db"}, true},
		{"other Service not granted", route, Reference{"", "Service", "data", "cache"}, false},
		{"any Secret granted", route, Reference{"", "Secret", "data", "whatever"}, true},
		{"another namespace's route", Reference{manifests.GatewayGroup, "HTTPRoute", "evil", "r"}, Reference{"", "Service", "data", "db"}, false},
		{"another kind", Reference{manifests.GatewayGroup, "Gateway", "app", "gw"}, Reference{"", "Service", "data", "db"}, false},
		{"a grant of another namespace", route, Reference{"", "Service", "other", "db"}, false},
	} {
		if got := Permitted(grants, tc.from, tc.to); got != tc.want {
			t.Errorf("%s: Permitted = %v", tc.name, got)
		}
	}
}

// bundle reads the realistic manifests of manifests/testdata/routing.
func bundle(t *testing.T) Input {
	files, err := filepath.Glob(filepath.Join("..", "..", "manifests", "testdata", "routing", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no bundle: %v", err)
	}
	slices.Sort(files)
	var all strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
		all.WriteString("\n---\n")
	}
	in := decode(t, all.String())
	in.Services = services("web/api", "web/frontend", "web/fallback", "web/tenant", "monitoring/release-grafana", "store/store-v1", "store/store-v2", "search/search")
	in.TLSSecrets = map[ObjectRef]bool{{"web", "shop-tls"}: true, {"infra", "wildcard-tls"}: true}
	return in
}

// The realistic bundle compiles to the golden snapshot (go test -update
// rewrites it after a deliberate change).
func TestGoldenSnapshot(t *testing.T) {
	tb := Compile(bundle(t), Options{HTTPPort: 80, HTTPSPort: 443, IngressClasses: []string{"dockctl"}})
	got, err := json.MarshalIndent(struct {
		Config helperapi.GatewayConfig
		Status Status
	}{tb.Config, tb.Status}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "bundle.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("snapshot differs from %s:\n%s", golden, got)
	}
}

// The same objects in any order give the same table.
func TestCompileIgnoresInputOrder(t *testing.T) {
	in := bundle(t)
	a, err := json.Marshal(Compile(in, testOpts))
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(in.Ingresses)
	slices.Reverse(in.HTTPRoutes)
	slices.Reverse(in.Gateways)
	b, err := json.Marshal(Compile(in, testOpts))
	if err != nil {
		t.Fatal(err)
	}
	if len(a) < 1000 || string(a) != string(b) {
		t.Errorf("input order changed the table")
	}
}

// Resolve fills ready endpoints and certificates, leaving invalid backends
// and the table itself alone.
func TestResolve(t *testing.T) {
	tb := Compile(bundle(t), testOpts)
	before, _ := json.Marshal(tb.Config)
	cfg := tb.Resolve(7, Resolver{
		Endpoints: func(b BackendRef) []helperapi.Endpoint {
			return []helperapi.Endpoint{{IP: "10.0.0.1", Port: int(b.Port) + 1000}}
		},
		Certificate: func(r ObjectRef) ([]byte, []byte, bool) {
			return []byte("cert of " + r.String()), []byte("key"), r.Name != "shop-tls"
		},
	})
	after, _ := json.Marshal(tb.Config)
	if string(before) != string(after) {
		t.Errorf("Resolve changed the table")
	}
	if cfg.Generation != 7 || len(cfg.Certificates) != 1 || cfg.Certificates[0].Name != "infra/wildcard-tls" {
		t.Errorf("generation %d certificates %+v", cfg.Generation, cfg.Certificates)
	}
	for _, p := range cfg.Ports {
		for _, h := range p.Hosts {
			for _, r := range h.Routes {
				for _, b := range r.Backends {
					if !b.Invalid && (len(b.Endpoints) != 1 || b.Endpoints[0].Port < 1000) {
						t.Errorf("backend %+v not resolved", b)
					}
				}
			}
		}
	}
}
