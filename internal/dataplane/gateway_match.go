package dataplane

import (
	"net"
	"net/http"
	"strings"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// MatchGatewayRoute returns the route of port that serves r, or nil (404):
// the first host (in the config's order) whose name matches r's host, the
// first of its routes that matches r; with none, the catch-all host's
// first matching route. The order is the route table's
// (internal/gatewayroutes), so the first match is the specifications'
// most precise one.
func MatchGatewayRoute(port *helperapi.GatewayPort, r *http.Request) *helperapi.GatewayRoute {
	host := requestHost(r.Host)
	for i := range port.Hosts {
		h := &port.Hosts[i]
		if h.Hostname == "" || !hostMatches(h, host) {
			continue
		}
		if rt := firstRoute(h, r); rt != nil {
			return rt
		}
		// The most specific host serves, or the catch-all: a less
		// specific wildcard does not take what a more specific host's
		// routes left (Ingress and Gateway API alike).
		break
	}
	for i := range port.Hosts {
		if h := &port.Hosts[i]; h.Hostname == "" {
			return firstRoute(h, r)
		}
	}
	return nil
}

func firstRoute(h *helperapi.GatewayHost, r *http.Request) *helperapi.GatewayRoute {
	for i := range h.Routes {
		if routeMatches(&h.Routes[i], r) {
			return &h.Routes[i]
		}
	}
	return nil
}

// requestHost is the Host header without port or final dot, lower case.
func requestHost(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// hostMatches: an exact name, or a wildcard "*.example.com" matching names
// with more labels ("a.example.com"; with SingleLabel exactly one more, as
// an Ingress's wildcard).
func hostMatches(h *helperapi.GatewayHost, host string) bool {
	suffix, wildcard := strings.CutPrefix(h.Hostname, "*")
	if !wildcard {
		return h.Hostname == host
	}
	label, ok := strings.CutSuffix(host, suffix)
	return ok && label != "" && (!h.SingleLabel || !strings.Contains(label, "."))
}

func routeMatches(rt *helperapi.GatewayRoute, r *http.Request) bool {
	if !PathMatches(rt.Path, r.URL.Path) {
		return false
	}
	if rt.Method != "" && rt.Method != r.Method {
		return false
	}
	for _, h := range rt.Headers {
		if r.Header.Get(h.Name) != h.Value {
			return false
		}
	}
	if len(rt.QueryParams) > 0 {
		q := r.URL.Query()
		for _, m := range rt.QueryParams {
			if vs, ok := q[m.Name]; !ok || vs[0] != m.Value {
				return false
			}
		}
	}
	return true
}

// PathMatches applies a path match. A prefix matches element-wise, as both
// specifications say: "/foo" matches "/foo" and "/foo/bar", never "/foobar".
func PathMatches(m helperapi.GatewayPathMatch, path string) bool {
	if path == "" {
		path = "/"
	}
	if m.Type == helperapi.PathExact {
		return path == m.Value
	}
	prefix := strings.TrimSuffix(m.Value, "/")
	return prefix == "" || path == prefix || strings.HasPrefix(path, prefix+"/")
}
