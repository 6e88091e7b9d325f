package dataplane

import (
	"net"
	"net/http"
	"net/url"
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
	return matchRoute(port, &routeRequest{method: r.Method, host: r.Host, path: r.URL.Path, rawQuery: r.URL.RawQuery, header: r.Header})
}

// routeRequest is what a route matches on, whether the request was parsed
// by net/http or by the gateway's HTTP/1.1 fast path (gateway_fast.go):
// one matcher for both, so that they cannot route a request differently.
type routeRequest struct {
	method   string
	host     string // the Host header as sent
	path     string // unescaped, as url.URL's Path
	rawQuery string
	header   interface{ Get(name string) string }
}

// matchRoute is MatchGatewayRoute of a routeRequest.
func matchRoute(port *helperapi.GatewayPort, r *routeRequest) *helperapi.GatewayRoute {
	host := requestHost(r.host)
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

func firstRoute(h *helperapi.GatewayHost, r *routeRequest) *helperapi.GatewayRoute {
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

func routeMatches(rt *helperapi.GatewayRoute, r *routeRequest) bool {
	if !PathMatches(rt.Path, r.path) {
		return false
	}
	if rt.Method != "" && rt.Method != r.method {
		return false
	}
	for _, h := range rt.Headers {
		if r.header.Get(h.Name) != h.Value {
			return false
		}
	}
	if len(rt.QueryParams) > 0 {
		q, _ := url.ParseQuery(r.rawQuery) // as url.URL's Query: what parses
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
