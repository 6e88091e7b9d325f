package dataplane

import (
	"context"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// gatewayFlushInterval bounds how long bytes of a response of known
// length wait in the server's write buffer: a trickling download still
// reaches the client (docs/design.md §10, streaming bodies).
const gatewayFlushInterval = 100 * time.Millisecond

// handler serves one port's requests from the snapshot current when each
// request arrives.
func (g *Gateway) handler(port int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		a := g.route(port, rec, r)
		g.lines.write(&accessEntry{method: r.Method, host: r.Host, path: r.URL.RequestURI(), proto: r.Proto,
			status: rec.statusOr200(), bytes: rec.bytes, duration: time.Since(start), client: r.RemoteAddr, accessInfo: a})
	})
}

// accessInfo is what the access log says of a request's routing.
type accessInfo struct{ route, backend, upstream string }

func (g *Gateway) route(port int, w http.ResponseWriter, r *http.Request) accessInfo {
	snap := g.acquire()
	// pr pins the snapshot until this request has its connection to the
	// chosen endpoint (or fails), as a proxy's dial does, or until it is
	// answered here; released once, whichever comes first.
	pr := &proxied{snap: snap}
	defer pr.release()
	p := snap.ports[port]
	if p != nil && p.Protocol == helperapi.GatewayHTTP && acmeChallenge(snap.cfg.ACMEChallenges, w, r) {
		return accessInfo{route: "acme-challenge"}
	}
	if p == nil {
		http.Error(w, "no route", http.StatusNotFound)
		return accessInfo{}
	}
	rt := MatchGatewayRoute(p, r)
	if rt == nil {
		http.Error(w, "no route", http.StatusNotFound)
		return accessInfo{}
	}
	info := accessInfo{route: rt.Source}
	if rd := rt.Filters.Redirect; rd != nil {
		pr.release()
		redirect(w, r, rt, rd, p.Protocol)
		return info
	}
	be, idx, ok := g.pick(rt.Backends)
	switch {
	case be == nil:
		// No backend, or all of weight 0: the Gateway API answers 500.
		http.Error(w, "no backend", http.StatusInternalServerError)
		return info
	case be.Invalid:
		info.backend = be.Service
		http.Error(w, "backend not resolved", http.StatusInternalServerError)
		return info
	case !ok:
		info.backend = be.Service
		http.Error(w, "no ready endpoint", http.StatusServiceUnavailable)
		return info
	}
	ep := snap.endpointAddr(be, idx)
	info.backend, info.upstream = be.Service, ep
	rp := g.proxy
	if be.H2C {
		rp = g.proxyH2C
	}
	pr.rt, pr.be, pr.ep = rt, be, ep
	pr.trace.GotConn = pr.gotConn
	ctx := context.WithValue(httptrace.WithClientTrace(r.Context(), &pr.trace), proxiedKey{}, pr)
	rp.ServeHTTP(w, r.WithContext(ctx))
	return info
}

// proxied is a request's routing as the gateway's ReverseProxy reads it
// from the request's context: one allocation per request where a
// ReverseProxy and its closures were several.
type proxied struct {
	snap     *gatewaySnapshot
	released atomic.Bool
	rt       *helperapi.GatewayRoute
	be       *helperapi.GatewayBackend
	ep       string // host:port of the chosen endpoint
	trace    httptrace.ClientTrace
}

type proxiedKey struct{}

func proxiedOf(ctx context.Context) *proxied { return ctx.Value(proxiedKey{}).(*proxied) }

// release unpins the snapshot, once.
func (p *proxied) release() {
	if p.released.CompareAndSwap(false, true) {
		p.snap.release()
	}
}

func (p *proxied) gotConn(httptrace.GotConnInfo) { p.release() }

// newReverseProxy is the gateway's proxy over transport, shared by every
// request (its routing comes in the request's context, see proxied).
func (g *Gateway) newReverseProxy(transport http.RoundTripper) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Transport:  transport,
		BufferPool: reverseProxyPool{httpBuffers},
		// Responses of unknown length (chunked: long polls, gRPC) and
		// text/event-stream are flushed at every write, as ReverseProxy
		// does for them whatever this says; one of known length is
		// flushed at most gatewayFlushInterval after a write, so that its
		// headers and a body written at once leave in one write, not one
		// for the headers (the timer's first flush) and one per body read.
		FlushInterval: gatewayFlushInterval,
		Rewrite: func(pr *httputil.ProxyRequest) {
			p := proxiedOf(pr.In.Context())
			target := url.URL{Scheme: "http", Host: p.ep}
			pr.SetURL(&target)
			// X-Forwarded-For: the client appended to what it sent, as
			// proxies chain it; -Host as asked; -Proto https when TLS
			// ended here.
			pr.Out.Header["X-Forwarded-For"] = pr.In.Header["X-Forwarded-For"]
			pr.SetXForwarded()
			pr.Out.Host = pr.In.Host // backends see the name they were asked by
			if m := p.rt.Filters.RequestHeaders; m != nil {
				modifyHeaders(pr.Out.Header, m)
			}
			if rw := p.rt.Filters.Rewrite; rw != nil {
				if rw.Hostname != "" {
					pr.Out.Host = rw.Hostname
				}
				if rw.Path != nil {
					pr.Out.URL.Path = rewritePath(p.rt.Path, pr.In.URL.Path, rw.Path)
					pr.Out.URL.RawPath = ""
				}
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			if m := proxiedOf(resp.Request.Context()).rt.Filters.ResponseHeaders; m != nil {
				modifyHeaders(resp.Header, m)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p := proxiedOf(r.Context())
			p.release()
			if r.Context().Err() == nil {
				g.log.Debug("backend request failed", "backend", p.be.Service, "endpoint", p.ep, "err", err)
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
}

// pick chooses a backend by weight, then one of its endpoints at random
// (its index); ok is false when the backend has no endpoint.
func (g *Gateway) pick(bes []helperapi.GatewayBackend) (*helperapi.GatewayBackend, int, bool) {
	var total int64
	for _, b := range bes {
		total += int64(max(b.Weight, 0))
	}
	if total == 0 {
		return nil, 0, false
	}
	g.rngMu.Lock()
	n := g.rng.Int64N(total)
	var be *helperapi.GatewayBackend
	for i := range bes {
		if n -= int64(max(bes[i].Weight, 0)); n < 0 {
			be = &bes[i]
			break
		}
	}
	var idx int
	if len(be.Endpoints) > 0 {
		idx = g.rng.IntN(len(be.Endpoints))
	}
	g.rngMu.Unlock()
	if be.Invalid || len(be.Endpoints) == 0 {
		return be, 0, false
	}
	return be, idx, true
}

// modifyHeaders applies a header modifier: set, then add, then remove.
func modifyHeaders(h http.Header, m *helperapi.GatewayHeaderModifier) {
	for _, s := range m.Set {
		h.Set(s.Name, s.Value)
	}
	for _, a := range m.Add {
		h.Add(a.Name, a.Value)
	}
	for _, name := range m.Remove {
		h.Del(name)
	}
}

// rewritePath applies a path modifier to path, which match matched: the
// full path replaced, or the matched prefix replaced by another.
func rewritePath(match helperapi.GatewayPathMatch, path string, m *helperapi.GatewayPathModifier) string {
	if m.ReplaceFullPath != nil {
		return *m.ReplaceFullPath
	}
	if m.ReplacePrefixMatch == nil {
		return path
	}
	rest := strings.TrimPrefix(path, strings.TrimSuffix(match.Value, "/"))
	repl := *m.ReplacePrefixMatch
	switch {
	case rest == "":
		return repl
	case strings.HasSuffix(repl, "/"):
		return repl + strings.TrimPrefix(rest, "/")
	}
	return repl + rest
}

// redirect answers a RequestRedirect: the request's URL with the filter's
// scheme, hostname, port and path; the port is left out when it is the
// scheme's default (the Gateway API's rule).
func redirect(w http.ResponseWriter, r *http.Request, rt *helperapi.GatewayRoute, rd *helperapi.GatewayRedirect, protocol string) {
	scheme := "http"
	if protocol == helperapi.GatewayHTTPS {
		scheme = "https"
	}
	host, port := requestHost(r.Host), ""
	if _, p, err := net.SplitHostPort(r.Host); err == nil {
		port = p
	}
	if rd.Scheme != "" && rd.Scheme != scheme {
		scheme = rd.Scheme
		port = "" // a scheme change without a port: the scheme's default
	}
	if rd.Hostname != "" {
		host = rd.Hostname
	}
	if rd.Port != 0 {
		port = strconv.Itoa(rd.Port)
	}
	if scheme == "http" && port == "80" || scheme == "https" && port == "443" {
		port = ""
	}
	u := url.URL{Scheme: scheme, Host: host, Path: r.URL.Path, RawQuery: r.URL.RawQuery}
	if port != "" {
		u.Host = net.JoinHostPort(host, port)
	}
	if rd.Path != nil {
		u.Path = rewritePath(rt.Path, r.URL.Path, rd.Path)
	}
	code := rd.StatusCode
	if code == 0 {
		code = http.StatusFound
	}
	w.Header().Set("Location", u.String())
	w.WriteHeader(code)
}

// recorder counts a response's status and bytes for the access log; it
// unwraps for http.ResponseController (flushes, WebSocket hijacks).
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) statusOr200() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

// acmeChallenge answers an HTTP-01 challenge of the config for the
// request's host (docs/design.md §10, ACME) before any route, as the CA
// requires the key authorization at that path whatever the host routes;
// false: not one of them, routed as usual.
func acmeChallenge(chs []helperapi.GatewayACMEChallenge, w http.ResponseWriter, r *http.Request) bool {
	token, ok := strings.CutPrefix(r.URL.Path, helperapi.ACMEChallengePath)
	if !ok || token == "" || len(chs) == 0 {
		return false
	}
	host := requestHost(r.Host)
	for _, c := range chs {
		if c.Token == token && strings.EqualFold(c.Host, host) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte(c.KeyAuthorization))
			return true
		}
	}
	return false
}
