package gatewayroutes

import (
	"strings"
	"testing"
)

func ingress(name, spec string) string {
	return "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: " + name + "}\nspec:\n" + spec + "---\n"
}

func path(p, typ, svc string) string {
	return "      - {path: " + p + ", pathType: " + typ + ", backend: {service: {name: " + svc + ", port: {number: 80}}}}\n"
}

// Ingress precedence as the Ingress specification says: an exact host
// before a wildcard (one label only), Exact before Prefix, the longest
// prefix, prefixes element-wise; the default backend takes the rest.
func TestIngressPrecedence(t *testing.T) {
	in := decode(t, ingress("a", `  defaultBackend: {service: {name: fallback, port: {number: 80}}}
  rules:
  - host: foo.example.com
    http:
      paths:
`+path("/", "Prefix", "root")+path("/api", "Prefix", "api")+path("/api/v2", "Prefix", "api-v2")+path("/api", "Exact", "api-exact")+path("/static/", "ImplementationSpecific", "static")+`  - host: "*.example.com"
    http:
      paths:
`+path("/", "Prefix", "wild")))
	in.Services = services("root", "api", "api-v2", "api-exact", "static", "wild", "fallback")
	tb := Compile(in, testOpts)
	for _, tc := range []struct{ target, want string }{
		{"http://foo.example.com/api", "api-exact"},
		{"http://foo.example.com/api/", "api:"},
		{"http://foo.example.com/api/users", "api:"},
		{"http://foo.example.com/apiary", "root"},
		{"http://foo.example.com/api/v2/x", "api-v2"},
		{"http://foo.example.com/api/v20", "api:"},
		{"http://foo.example.com/static", "static"},
		{"http://foo.example.com/static/app.js", "static"},
		{"http://FOO.example.com:8080/api/v2", "api-v2"},
		{"http://bar.example.com/anything", "wild"},
		{"http://a.bar.example.com/", "fallback"}, // an Ingress wildcard covers one label
		{"http://example.com/", "fallback"},
		{"http://other.test/", "fallback"},
	} {
		got := served(t, tb, 80, "GET", tc.target)
		if !strings.Contains(got, "/"+strings.TrimSuffix(tc.want, ":")+":") {
			t.Errorf("%s served by %q, want %s", tc.target, got, tc.want)
		}
	}
}

// Two Ingresses claiming the same host and path: the oldest is served,
// the other reported (the Ingress specification's conflict rule).
func TestIngressConflictOldestWins(t *testing.T) {
	rule := func(svc string) string {
		return "  rules:\n  - host: a.example.com\n    http:\n      paths:\n" + path("/", "Prefix", svc)
	}
	in := decode(t, ingress("old", rule("old-svc"))+ingress("new", rule("new-svc")))
	in.Services = services("old-svc", "new-svc")
	// Input order must not matter: the younger comes first here.
	in.Ingresses[0], in.Ingresses[1] = in.Ingresses[1], in.Ingresses[0]
	tb := Compile(in, testOpts)
	if got := served(t, tb, 80, "GET", "http://a.example.com/"); !strings.Contains(got, "default/old-svc:80") {
		t.Errorf("served by %q, want the older Ingress's", got)
	}
	st := tb.Status.Ingresses[ObjectRef{"default", "new"}]
	if len(st.Problems) != 1 || !strings.Contains(st.Problems[0], "Conflicted") || !strings.Contains(st.Problems[0], "default/old") {
		t.Errorf("loser's status = %+v", st)
	}
	if p := tb.Status.Ingresses[ObjectRef{"default", "old"}].Problems; len(p) != 0 {
		t.Errorf("winner's problems = %v", p)
	}
}

// dockctl serves Ingresses without a class, of a class it is told to
// serve, or of the default class; others are reported, not served.
func TestIngressClassServed(t *testing.T) {
	class := "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: house, annotations: {ingressclass.kubernetes.io/is-default-class: \"true\"}}\nspec: {controller: example.com/house}\n---\n"
	for _, tc := range []struct {
		name, className string
		served          bool
	}{
		{"no class", "", true},
		{"dockctl's class", "dockctl", true},
		{"the default class", "house", true},
		{"another controller's class", "nginx", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := "  defaultBackend: {service: {name: web, port: {number: 80}}}\n"
			if tc.className != "" {
				spec = "  ingressClassName: " + tc.className + "\n" + spec
			}
			in := decode(t, class+ingress("web", spec))
			in.Services = services("web")
			tb := Compile(in, testOpts)
			st := tb.Status.Ingresses[ObjectRef{"default", "web"}]
			if st.Served != tc.served {
				t.Errorf("served = %v, want %v (%v)", st.Served, tc.served, st.Problems)
			}
			if got := len(tb.Config.Ports) > 0; got != tc.served {
				t.Errorf("config has ports = %v", got)
			}
			if !tc.served && (len(st.Problems) == 0 || !strings.Contains(st.Problems[0], "IngressClassNotServed")) {
				t.Errorf("problems = %v", st.Problems)
			}
		})
	}
}

// Backends resolve by port number or name; a missing Service or port is
// reported and has no endpoints (503), a TLS entry adds the HTTPS port
// with its Secret, an unknown Secret is reported.
func TestIngressBackendsAndTLS(t *testing.T) {
	in := decode(t, ingress("web", `  tls:
  - hosts: [a.example.com]
    secretName: a-tls
  - hosts: [b.example.com]
    secretName: missing-tls
  rules:
  - host: a.example.com
    http:
      paths:
      - {path: /byname, pathType: Prefix, backend: {service: {name: web, port: {name: grpc}}}}
      - {path: /nosvc, pathType: Prefix, backend: {service: {name: gone, port: {number: 80}}}}
      - {path: /noport, pathType: Prefix, backend: {service: {name: web, port: {number: 81}}}}
`))
	in.Services = services("web")
	in.TLSSecrets = map[ObjectRef]bool{{"default", "a-tls"}: true}
	tb := Compile(in, testOpts)
	if got := served(t, tb, 443, "GET", "https://a.example.com/byname"); !strings.HasSuffix(got, "default/web:9000") {
		t.Errorf("by name: %q", got)
	}
	if len(tb.Config.Ports) != 2 || tb.Config.Ports[1].Protocol != "HTTPS" || len(tb.Config.Ports[1].Certificates) != 1 || tb.Config.Ports[1].Certificates[0] != "default/a-tls" {
		t.Errorf("ports = %+v", tb.Config.Ports)
	}
	h2c := tb.Config.Ports[0].Hosts[0].Routes
	for _, r := range h2c {
		if strings.Contains(r.Backends[0].Service, ":9000") && !r.Backends[0].H2C {
			t.Errorf("an h2c appProtocol port is not flagged: %+v", r.Backends[0])
		}
	}
	probs := strings.Join(tb.Status.Ingresses[ObjectRef{"default", "web"}].Problems, "\n")
	for _, want := range []string{"missing-tls", "Service default/gone not found", "has no port 81"} {
		if !strings.Contains(probs, want) {
			t.Errorf("problems %q lack %q", probs, want)
		}
	}
}
