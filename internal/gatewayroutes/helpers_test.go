package gatewayroutes

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dockctl/dockctl/internal/dataplane"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// decode builds an Input from YAML; the i-th object is created i minutes
// after t0 (the API server's creationTimestamp), so that order in the
// file is age.
func decode(t *testing.T, yaml string) Input {
	t.Helper()
	docs, err := manifests.DecodeRouting("in.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("DecodeRouting: %v", err)
	}
	var in Input
	for i, d := range docs {
		ts := t0.Add(time.Duration(i) * time.Minute)
		m := d.Meta()
		if m.CreationTimestamp == nil {
			m.CreationTimestamp = &ts
		}
		switch {
		case d.Ingress != nil:
			in.Ingresses = append(in.Ingresses, d.Ingress)
		case d.IngressClass != nil:
			in.IngressClasses = append(in.IngressClasses, d.IngressClass)
		case d.GatewayClass != nil:
			in.GatewayClasses = append(in.GatewayClasses, d.GatewayClass)
		case d.Gateway != nil:
			in.Gateways = append(in.Gateways, d.Gateway)
		case d.HTTPRoute != nil:
			in.HTTPRoutes = append(in.HTTPRoutes, d.HTTPRoute)
		case d.ReferenceGrant != nil:
			in.ReferenceGrants = append(in.ReferenceGrants, d.ReferenceGrant)
		}
	}
	return in
}

// services declares Services with ports 80 (http), 8080 (alt) and 9000 (grpc, h2c) each.
func services(names ...string) map[ObjectRef]Service {
	out := map[ObjectRef]Service{}
	for _, n := range names {
		ns, name := "default", n
		for i := range n {
			if n[i] == '/' {
				ns, name = n[:i], n[i+1:]
			}
		}
		out[ObjectRef{ns, name}] = Service{Ports: []ServicePort{{Name: "http", Port: 80}, {Name: "alt", Port: 8080}, {Name: "grpc", Port: 9000, AppProtocol: "kubernetes.io/h2c"}}}
	}
	return out
}

var testOpts = Options{HTTPPort: 80, HTTPSPort: 443}

// served returns the Source of the route a request is served by on port,
// "" for none (404), as the data plane matches it.
func served(t *testing.T, tb *Table, port int, method, target string, headers ...string) string {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	for i := range tb.Config.Ports {
		if tb.Config.Ports[i].Port == port {
			if rt := dataplane.MatchGatewayRoute(&tb.Config.Ports[i], r); rt != nil {
				return rt.Source + " -> " + backendsOf(rt)
			}
			return ""
		}
	}
	t.Fatalf("no port %d in %+v", port, tb.Config.Ports)
	return ""
}

func backendsOf(rt *helperapi.GatewayRoute) string {
	s := ""
	for i, b := range rt.Backends {
		if i > 0 {
			s += ","
		}
		s += b.Service
	}
	if rt.Filters.Redirect != nil {
		s += "redirect"
	}
	return s
}
