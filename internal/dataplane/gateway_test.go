package dataplane

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/internal/testcerts"
	"github.com/dockctl/dockctl/internal/testio"
)

// httpBackend is an HTTP server on 127.0.0.1 answering with its name and
// what it received, as JSON; GET /ws upgrades to a line echo (a stand-in
// for a WebSocket: the gateway passes any Upgrade through).
type httpBackend struct {
	name string
	srv  *httptest.Server
}

type echo struct {
	Backend, Method, Host, Path, RawQuery, Proto string
	Header                                       http.Header
}

func newHTTPBackend(t *testing.T, name string, h2c bool) *httpBackend {
	t.Helper()
	b := &httpBackend{name: name}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "websocket" {
			conn, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			defer conn.Close()
			rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
			rw.Flush()
			for {
				line, err := rw.ReadString('\n')
				if err != nil {
					return
				}
				rw.WriteString(name + " " + line)
				rw.Flush()
			}
		}
		w.Header().Set("X-Backend", name)
		w.Header().Set("X-Drop", "secret")
		w.Header().Set("Trailer", "X-Status")
		json.NewEncoder(w).Encode(echo{name, r.Method, r.Host, r.URL.Path, r.URL.RawQuery, r.Proto, r.Header})
		w.Header().Set("X-Status", "done")
	})
	srv := httptest.NewUnstartedServer(h)
	if h2c {
		srv.Config.Protocols = new(http.Protocols)
		srv.Config.Protocols.SetUnencryptedHTTP2(true)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	b.srv = srv
	return b
}

func (b *httpBackend) endpoint() helperapi.Endpoint { return endpointOf(b.srv.Listener.Addr()) }

func newTestGateway(t *testing.T, seed uint64) (*Gateway, *testio.Buffer) {
	t.Helper()
	access := &testio.Buffer{}
	g := NewGateway(GatewayOptions{
		ListenAddr: func(int) string { return "127.0.0.1:0" },
		Rand:       mrand.New(mrand.NewPCG(seed, seed)),
		Log:        testLog(t),
		AccessLog:  access,
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		g.Shutdown(ctx)
	})
	return g, access
}

func backendOf(name string, weight int32, eps ...helperapi.Endpoint) helperapi.GatewayBackend {
	if eps == nil {
		eps = []helperapi.Endpoint{}
	}
	return helperapi.GatewayBackend{Service: "default/" + name + ":80", Weight: weight, Endpoints: eps}
}

func prefix(p string, bes ...helperapi.GatewayBackend) helperapi.GatewayRoute {
	return helperapi.GatewayRoute{Source: "test " + p, Path: helperapi.GatewayPathMatch{Type: helperapi.PathPrefix, Value: p}, Backends: bes}
}

func httpPort(hosts ...helperapi.GatewayHost) helperapi.GatewayPort {
	return helperapi.GatewayPort{Port: 80, Protocol: helperapi.GatewayHTTP, Hosts: hosts}
}

func mustApplyGateway(t *testing.T, g *Gateway, cfg helperapi.GatewayConfig) {
	t.Helper()
	if err := g.Apply(cfg); err != nil {
		t.Fatalf("Apply(generation %d): %v", cfg.Generation, err)
	}
}

// get sends a request to the gateway's port with Host host; it returns
// the status, the response and the backend's echo (if it answered).
func get(t *testing.T, c *http.Client, base, host, path string, hdr ...string) (int, *http.Response, echo) {
	t.Helper()
	req, err := http.NewRequest("GET", base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s%s: %v", host, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var e echo
	if resp.Header.Get("X-Backend") != "" {
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatalf("body %q: %v", body, err)
		}
	}
	return resp.StatusCode, resp, e
}

var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func TestGatewayRoutesByHostAndPath(t *testing.T) {
	a, b := newHTTPBackend(t, "a", false), newHTTPBackend(t, "b", false)
	g, access := newTestGateway(t, 1)
	mustApplyGateway(t, g, helperapi.GatewayConfig{Generation: 1, Ports: []helperapi.GatewayPort{httpPort(
		helperapi.GatewayHost{Hostname: "a.example.com", Routes: []helperapi.GatewayRoute{
			prefix("/api", backendOf("b", 1, b.endpoint())),
			prefix("/empty", backendOf("none", 1)),
			prefix("/invalid", helperapi.GatewayBackend{Service: "default/x:80", Weight: 1, Invalid: true}),
			prefix("/zero", backendOf("a", 0, a.endpoint())),
			prefix("/nobackend"),
			prefix("/", backendOf("a", 1, a.endpoint())),
		}},
		helperapi.GatewayHost{Hostname: "*.example.com", Routes: []helperapi.GatewayRoute{prefix("/", backendOf("b", 1, b.endpoint()))}},
	)}})
	base := "http://" + g.Addr(80).String()
	for _, tc := range []struct {
		host, path string
		status     int
		backend    string
	}{
		{"a.example.com", "/", 200, "a"},
		{"a.example.com", "/api/users", 200, "b"},
		{"a.example.com", "/apiary", 200, "a"},
		{"A.Example.com:80", "/api", 200, "b"},
		{"x.example.com", "/", 200, "b"},
		{"x.y.example.com", "/", 200, "b"},
		{"other.test", "/", 404, ""},
		{"a.example.com", "/empty", 503, ""},
		{"a.example.com", "/invalid", 500, ""},
		{"a.example.com", "/zero", 500, ""},
		{"a.example.com", "/nobackend", 500, ""},
	} {
		status, _, e := get(t, http.DefaultClient, base, tc.host, tc.path)
		if status != tc.status || e.Backend != tc.backend {
			t.Errorf("%s%s: %d from %q, want %d from %q", tc.host, tc.path, status, e.Backend, tc.status, tc.backend)
		}
	}
	// One JSON access log line per request, with the route and backend,
	// written asynchronously.
	var lines []string
	waitFor(t, "11 access log lines", func() bool {
		lines = strings.Split(strings.TrimSpace(access.String()), "\n")
		return len(lines) >= 11
	})
	if len(lines) != 11 {
		t.Fatalf("%d access log lines, want 11:\n%s", len(lines), access.String())
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &line); err != nil {
		t.Fatal(err)
	}
	if line["status"] != float64(200) || line["route"] != "test /api" || line["backend"] != "default/b:80" || line["path"] != "/api/users" || line["upstream"] != b.srv.Listener.Addr().String() {
		t.Errorf("access log line %v", line)
	}
}

// A response is copied through a buffer of the gateway's pool, held while
// the body streams and given back when it ends, and arrives intact
// however many buffers long it is.
func TestGatewayCopiesResponsesThroughPooledBuffers(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 5<<10) // 80 KiB: several buffers
	half := make(chan struct{})
	release := make(chan struct{})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body[:len(body)/2])
		if r.URL.Path == "/slow" {
			http.NewResponseController(w).Flush()
			close(half)
			<-release
		}
		_, _ = w.Write(body[len(body)/2:])
	}))
	t.Cleanup(backend.Close)
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before backend.Close, which waits for the handler
	g, _ := newTestGateway(t, 1)
	// A route with a filter: served by net/http's ReverseProxy, whose
	// buffers these are (the fast path copies through its connections').
	rt := prefix("/", backendOf("big", 1, endpointOf(backend.Listener.Addr())))
	rt.Filters.ResponseHeaders = &helperapi.GatewayHeaderModifier{Set: []helperapi.GatewayValueMatch{{Name: "X-Via", Value: "gateway"}}}
	mustApplyGateway(t, g, helperapi.GatewayConfig{Generation: 1, Ports: []helperapi.GatewayPort{httpPort(
		helperapi.GatewayHost{Routes: []helperapi.GatewayRoute{rt}},
	)}})
	base := "http://" + g.Addr(80).String()
	check := func(path string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Errorf("GET %s: %v", path, err)
			return
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Equal(got, body) {
			t.Errorf("GET %s: %d bytes (%v), want the backend's %d intact", path, len(got), err, len(body))
		}
	}
	for _, path := range []string{"/a", "/b"} {
		check(path)
	}
	done := make(chan struct{})
	go func() { defer close(done); check("/slow") }()
	<-half
	waitFor(t, "the streaming response to hold a pooled buffer", func() bool { return httpBuffers.out.Load() == 1 })
	unblock()
	<-done
	waitFor(t, "the buffers to be given back", func() bool { return httpBuffers.out.Load() == 0 })
}

// Backends are chosen by weight: over many requests each gets its share
// (a seeded source: the same choices every run).
func TestGatewayWeightedSplit(t *testing.T) {
	g, _ := newTestGateway(t, 42)
	ep := helperapi.Endpoint{IP: "10.0.0.1", Port: 80}
	bes := []helperapi.GatewayBackend{backendOf("stable", 90, ep), backendOf("canary", 10, ep), backendOf("off", 0, ep)}
	counts := map[string]int{}
	const n = 10000
	for range n {
		be, _, ok := g.pick(bes)
		if !ok {
			t.Fatal("no pick")
		}
		counts[be.Service]++
	}
	if c := counts["default/canary:80"]; c < n/10-n/50 || c > n/10+n/50 {
		t.Errorf("canary got %d of %d, want 10%% ± 2%%", c, n)
	}
	if counts["default/off:80"] != 0 {
		t.Errorf("a weight-0 backend got %d requests", counts["default/off:80"])
	}
}

// Through the gateway too: a 90/10 split over 1000 requests.
func TestGatewayWeightedSplitOverHTTP(t *testing.T) {
	stable, canary := newHTTPBackend(t, "stable", false), newHTTPBackend(t, "canary", false)
	g, _ := newTestGateway(t, 7)
	mustApplyGateway(t, g, helperapi.GatewayConfig{Generation: 1, Ports: []helperapi.GatewayPort{httpPort(
		helperapi.GatewayHost{Hostname: "", Routes: []helperapi.GatewayRoute{prefix("/", backendOf("stable", 90, stable.endpoint()), backendOf("canary", 10, canary.endpoint()))}})}})
	base := "http://" + g.Addr(80).String()
	counts := map[string]int{}
	for range 1000 {
		_, _, e := get(t, http.DefaultClient, base, "shop", "/")
		counts[e.Backend]++
	}
	if c := counts["canary"]; c < 50 || c > 150 {
		t.Errorf("canary got %d of 1000, want 100 ± 50 (%v)", c, counts)
	}
}

// Accept-Encoding reaches the backend as the client sent it: the gateway
// neither asks for gzip on a client's behalf (to decompress it again,
// turning a response of known length into a chunked one) nor drops it.
func TestGatewayPassesAcceptEncodingAsSent(t *testing.T) {
	a := newHTTPBackend(t, "a", false)
	g, _ := newTestGateway(t, 1)
	mustApplyGateway(t, g, helperapi.GatewayConfig{Generation: 1, Ports: []helperapi.GatewayPort{httpPort(
		helperapi.GatewayHost{Hostname: "", Routes: []helperapi.GatewayRoute{prefix("/", backendOf("a", 1, a.endpoint()))}})}})
	plain := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	t.Cleanup(plain.CloseIdleConnections)
	for _, tc := range []struct {
		name, sent string
		hdr        []string
	}{
		{name: "none sent, none asked", sent: ""},
		{name: "gzip sent, gzip asked", sent: "gzip", hdr: []string{"Accept-Encoding", "gzip"}},
		{name: "br sent, br asked", sent: "br", hdr: []string{"Accept-Encoding", "br"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, e := get(t, plain, "http://"+g.Addr(80).String(), "x", "/", tc.hdr...)
			if got := strings.Join(e.Header.Values("Accept-Encoding"), ","); got != tc.sent {
				t.Errorf("backend saw Accept-Encoding %q, want %q", got, tc.sent)
			}
		})
	}
}

func TestGatewayForwardedHeadersAndHost(t *testing.T) {
	a := newHTTPBackend(t, "a", false)
	g, _ := newTestGateway(t, 1)
	mustApplyGateway(t, g, helperapi.GatewayConfig{Generation: 1, Ports: []helperapi.GatewayPort{httpPort(
		helperapi.GatewayHost{Hostname: "", Routes: []helperapi.GatewayRoute{prefix("/", backendOf("a", 1, a.endpoint()))}})}})
	_, _, e := get(t, http.DefaultClient, "http://"+g.Addr(80).String(), "shop.example.com", "/x?y=1", "X-Forwarded-For", "203.0.113.9")
	if e.Host != "shop.example.com" {
		t.Errorf("backend saw Host %q, want the client's", e.Host)
	}
	if got := e.Header.Get("X-Forwarded-For"); got != "203.0.113.9, 127.0.0.1" {
		t.Errorf("X-Forwarded-For = %q", got)
	}
	if e.Header.Get("X-Forwarded-Proto") != "http" || e.Header.Get("X-Forwarded-Host") != "shop.example.com" {
		t.Errorf("X-Forwarded-Proto/-Host = %q/%q", e.Header.Get("X-Forwarded-Proto"), e.Header.Get("X-Forwarded-Host"))
	}
	if e.RawQuery != "y=1" {
		t.Errorf("query = %q", e.RawQuery)
	}
}

func strp(s string) *string { return &s }

func TestGatewayFilters(t *testing.T) {
	a := newHTTPBackend(t, "a", false)
	g, _ := newTestGateway(t, 1)
	withFilters := func(p string, f helperapi.GatewayFilters, bes ...helperapi.GatewayBackend) helperapi.GatewayRoute {
		r := prefix(p, bes...)
		r.Filters = f
		return r
	}
	be := backendOf("a", 1, a.endpoint())
	mustApplyGateway(t, g, helperapi.GatewayConfig{Generation: 1, Ports: []helperapi.GatewayPort{httpPort(
		helperapi.GatewayHost{Hostname: "", Routes: []helperapi.GatewayRoute{
			withFilters("/to-https", helperapi.GatewayFilters{Redirect: &helperapi.GatewayRedirect{Scheme: "https", StatusCode: 301}}),
			withFilters("/moved", helperapi.GatewayFilters{Redirect: &helperapi.GatewayRedirect{Hostname: "new.example.com", Port: 8080, Path: &helperapi.GatewayPathModifier{ReplacePrefixMatch: strp("/now")}}}),
			withFilters("/old-api", helperapi.GatewayFilters{Rewrite: &helperapi.GatewayRewrite{Hostname: "internal", Path: &helperapi.GatewayPathModifier{ReplacePrefixMatch: strp("/api")}}}, be),
			withFilters("/strip", helperapi.GatewayFilters{Rewrite: &helperapi.GatewayRewrite{Path: &helperapi.GatewayPathModifier{ReplacePrefixMatch: strp("/")}}}, be),
			withFilters("/full", helperapi.GatewayFilters{Rewrite: &helperapi.GatewayRewrite{Path: &helperapi.GatewayPathModifier{ReplaceFullPath: strp("/index.html")}}}, be),
			withFilters("/headers", helperapi.GatewayFilters{
				RequestHeaders:  &helperapi.GatewayHeaderModifier{Set: []helperapi.GatewayValueMatch{{Name: "X-Set", Value: "set"}}, Add: []helperapi.GatewayValueMatch{{Name: "X-Add", Value: "two"}}, Remove: []string{"X-Remove"}},
				ResponseHeaders: &helperapi.GatewayHeaderModifier{Set: []helperapi.GatewayValueMatch{{Name: "X-Served-By", Value: "gateway"}}, Remove: []string{"X-Drop"}},
			}, be),
		}})}})
	base := "http://" + g.Addr(80).String()
	for _, tc := range []struct{ path, status, location string }{
		{"/to-https/a?b=c", "301", "https://shop.example.com/to-https/a?b=c"},
		{"/moved/x", "302", "http://new.example.com:8080/now/x"},
	} {
		status, resp, _ := get(t, noRedirects, base, "shop.example.com", tc.path)
		if strconv.Itoa(status) != tc.status || resp.Header.Get("Location") != tc.location {
			t.Errorf("%s: %d Location %q, want %s %q", tc.path, status, resp.Header.Get("Location"), tc.status, tc.location)
		}
	}
	for _, tc := range []struct{ path, wantPath, wantHost string }{
		{"/old-api/users", "/api/users", "internal"},
		{"/old-api", "/api", "internal"},
		{"/strip/a/b", "/a/b", "shop.example.com"},
		{"/strip", "/", "shop.example.com"},
		{"/full/whatever", "/index.html", "shop.example.com"},
	} {
		_, _, e := get(t, http.DefaultClient, base, "shop.example.com", tc.path)
		if e.Path != tc.wantPath || e.Host != tc.wantHost {
			t.Errorf("%s rewritten to %s%s, want %s%s", tc.path, e.Host, e.Path, tc.wantHost, tc.wantPath)
		}
	}
	_, resp, e := get(t, http.DefaultClient, base, "shop.example.com", "/headers", "X-Add", "one", "X-Remove", "gone", "X-Set", "client")
	if e.Header.Get("X-Set") != "set" || strings.Join(e.Header.Values("X-Add"), ",") != "one,two" || e.Header.Get("X-Remove") != "" {
		t.Errorf("request headers at the backend: %v", e.Header)
	}
	if resp.Header.Get("X-Served-By") != "gateway" || resp.Header.Get("X-Drop") != "" || resp.Trailer.Get("X-Status") != "done" {
		t.Errorf("response headers %v trailers %v", resp.Header, resp.Trailer)
	}
}

// Backends flagged h2c get HTTP/2 without TLS, and an h2c client (gRPC's
// way) gets HTTP/2 from the gateway, trailers included.
func TestGatewayH2CBackend(t *testing.T) {
	a := newHTTPBackend(t, "a", true)
	g, _ := newTestGateway(t, 1)
	be := backendOf("a", 1, a.endpoint())
	be.H2C = true
	mustApplyGateway(t, g, helperapi.GatewayConfig{Generation: 1, Ports: []helperapi.GatewayPort{httpPort(
		helperapi.GatewayHost{Hostname: "", Routes: []helperapi.GatewayRoute{prefix("/", be)}})}})
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	_, resp, e := get(t, &http.Client{Transport: tr}, "http://"+g.Addr(80).String(), "grpc.example.com", "/pkg.Service/Method")
	if e.Proto != "HTTP/2.0" || resp.Proto != "HTTP/2.0" || resp.Trailer.Get("X-Status") != "done" {
		t.Errorf("backend saw %q, client got %q, trailer %q", e.Proto, resp.Proto, resp.Trailer.Get("X-Status"))
	}
}

// An upgraded connection (a WebSocket) stays open and routed where it was
// across a swap that removes its backend; new requests follow the swap.
func TestGatewayWebSocketSurvivesSwap(t *testing.T) {
	a, b := newHTTPBackend(t, "a", false), newHTTPBackend(t, "b", false)
	g, _ := newTestGateway(t, 1)
	cfg := func(gen int64, be *httpBackend) helperapi.GatewayConfig {
		return helperapi.GatewayConfig{Generation: gen, Ports: []helperapi.GatewayPort{httpPort(
			helperapi.GatewayHost{Hostname: "", Routes: []helperapi.GatewayRoute{prefix("/", backendOf(be.name, 1, be.endpoint()))}})}}
	}
	mustApplyGateway(t, g, cfg(1, a))
	conn, err := net.DialTimeout("tcp", g.Addr(80).String(), deadline)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(deadline))
	fmt.Fprint(conn, "GET /ws HTTP/1.1\r\nHost: chat.example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	say := func(msg string) string {
		t.Helper()
		fmt.Fprint(conn, msg+"\n")
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("read after %q: %v", msg, err)
		}
		return strings.TrimSpace(line)
	}
	if got := say("hello"); got != "a hello" {
		t.Fatalf("got %q", got)
	}
	mustApplyGateway(t, g, cfg(2, b))
	if got := say("still there"); got != "a still there" {
		t.Errorf("after the swap: %q", got)
	}
	if _, _, e := get(t, http.DefaultClient, "http://"+g.Addr(80).String(), "chat.example.com", "/"); e.Backend != "b" {
		t.Errorf("a new request reached %q after the swap, want b", e.Backend)
	}
}

// selfSigned makes a certificate for names, PEM encoded.
func selfSigned(t *testing.T, serial int64, names ...string) (certPEM, keyPEM []byte) {
	return testcerts.SelfSigned(t, serial, names...)
}

// HTTPS: the certificate is chosen by SNI from the pushed set; a swap
// reaches new handshakes while an open TLS connection keeps working.
func TestGatewayHTTPSCertificatesBySNIAndSwap(t *testing.T) {
	a := newHTTPBackend(t, "a", false)
	g, _ := newTestGateway(t, 1)
	shop1, shopKey1 := selfSigned(t, 1, "shop.example.com")
	shop2, shopKey2 := selfSigned(t, 2, "shop.example.com")
	wild, wildKey := selfSigned(t, 3, "*.example.com")
	cfg := func(gen int64, shopCert, shopKey []byte) helperapi.GatewayConfig {
		return helperapi.GatewayConfig{Generation: gen,
			Certificates: []helperapi.GatewayCertificate{{Name: "web/shop", CertPEM: shopCert, KeyPEM: shopKey}, {Name: "web/wild", CertPEM: wild, KeyPEM: wildKey}},
			Ports: []helperapi.GatewayPort{{Port: 443, Protocol: helperapi.GatewayHTTPS, Certificates: []string{"web/wild", "web/shop"},
				Hosts: []helperapi.GatewayHost{{Hostname: "", Routes: []helperapi.GatewayRoute{prefix("/", backendOf("a", 1, a.endpoint()))}}}}}}
	}
	mustApplyGateway(t, g, cfg(1, shop1, shopKey1))
	addr := g.Addr(443).String()
	client := func(name string) (*http.Client, *tls.ConnectionState) {
		var state tls.ConnectionState
		var mu sync.Mutex
		tr := &http.Transport{DialTLSContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			c, err := tls.Dial(network, addr, &tls.Config{ServerName: name, InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
			if err == nil {
				mu.Lock()
				state = c.ConnectionState()
				mu.Unlock()
			}
			return c, err
		}, MaxConnsPerHost: 1}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}, &state
	}
	serial := func(s *tls.ConnectionState) int64 { return s.PeerCertificates[0].SerialNumber.Int64() }
	shopClient, shopState := client("shop.example.com")
	if status, _, e := get(t, shopClient, "https://shop.example.com", "shop.example.com", "/"); status != 200 || e.Header.Get("X-Forwarded-Proto") != "https" {
		t.Fatalf("HTTPS request: %d, X-Forwarded-Proto %q", status, e.Header.Get("X-Forwarded-Proto"))
	}
	if serial(shopState) != 1 {
		t.Errorf("shop.example.com got certificate %d, want 1 (by SNI)", serial(shopState))
	}
	otherClient, otherState := client("other.example.com")
	get(t, otherClient, "https://other.example.com", "other.example.com", "/")
	if serial(otherState) != 3 {
		t.Errorf("other.example.com got certificate %d, want the wildcard's 3", serial(otherState))
	}
	// The renewed certificate: the open connection keeps serving, a new
	// handshake presents the new one.
	mustApplyGateway(t, g, cfg(2, shop2, shopKey2))
	if status, _, _ := get(t, shopClient, "https://shop.example.com", "shop.example.com", "/"); status != 200 || serial(shopState) != 1 {
		t.Errorf("the open connection: %d with certificate %d, want 200 on the same connection (1)", status, serial(shopState))
	}
	newClient, newState := client("shop.example.com")
	get(t, newClient, "https://shop.example.com", "shop.example.com", "/")
	if serial(newState) != 2 {
		t.Errorf("a new handshake got certificate %d, want the renewed 2", serial(newState))
	}
}

// A config that cannot be served is refused whole; the previous one keeps
// serving, and no key material reaches the error.
func TestGatewayApplyRefusesInvalidConfig(t *testing.T) {
	a := newHTTPBackend(t, "a", false)
	g, _ := newTestGateway(t, 1)
	good := helperapi.GatewayConfig{Generation: 1, Ports: []helperapi.GatewayPort{httpPort(
		helperapi.GatewayHost{Hostname: "", Routes: []helperapi.GatewayRoute{prefix("/", backendOf("a", 1, a.endpoint()))}})}}
	mustApplyGateway(t, g, good)
	for _, tc := range []struct {
		name string
		cfg  helperapi.GatewayConfig
		want string
	}{
		{"a broken key", helperapi.GatewayConfig{Generation: 2, Certificates: []helperapi.GatewayCertificate{{Name: "web/x", CertPEM: []byte("not a cert"), KeyPEM: []byte("SECRET-KEY")}}}, "certificate web/x"},
		{"an unknown certificate", helperapi.GatewayConfig{Generation: 2, Ports: []helperapi.GatewayPort{{Port: 443, Protocol: "HTTPS", Certificates: []string{"web/none"}}}}, `no certificate "web/none"`},
		{"a protocol", helperapi.GatewayConfig{Generation: 2, Ports: []helperapi.GatewayPort{{Port: 443, Protocol: "TLS"}}}, "unsupported protocol"},
		{"a path match", helperapi.GatewayConfig{Generation: 2, Ports: []helperapi.GatewayPort{httpPort(helperapi.GatewayHost{Routes: []helperapi.GatewayRoute{{Path: helperapi.GatewayPathMatch{Type: "Regex", Value: "/"}}}})}}, "unsupported path match"},
	} {
		err := g.Apply(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	if g.Generation() != 1 {
		t.Errorf("generation %d after refused configs", g.Generation())
	}
	if _, _, e := get(t, http.DefaultClient, "http://"+g.Addr(80).String(), "x", "/"); e.Backend != "a" {
		t.Errorf("the previous config is not serving")
	}
}

// A port left out of the config stops accepting; a request on a
// connection already open to it still gets its answer.
func TestGatewayRemovedPortStopsAccepting(t *testing.T) {
	a := newHTTPBackend(t, "a", false)
	g, _ := newTestGateway(t, 1)
	mustApplyGateway(t, g, helperapi.GatewayConfig{Generation: 1, Ports: []helperapi.GatewayPort{httpPort(
		helperapi.GatewayHost{Hostname: "", Routes: []helperapi.GatewayRoute{prefix("/", backendOf("a", 1, a.endpoint()))}})}})
	addr := g.Addr(80).String()
	tr := &http.Transport{MaxConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	if status, _, _ := get(t, c, "http://"+addr, "x", "/"); status != 200 {
		t.Fatalf("status %d", status)
	}
	mustApplyGateway(t, g, helperapi.GatewayConfig{Generation: 2, Ports: []helperapi.GatewayPort{}})
	if g.Addr(80) != nil {
		t.Error("port 80 still has a server")
	}
	if conn, err := net.Dial("tcp", addr); err == nil {
		conn.Close()
		t.Error("port 80 still accepts")
	}
	// The kept-alive connection is not cut; the port's routes are gone.
	if status, _, _ := get(t, c, "http://"+addr, "x", "/"); status != 404 {
		t.Errorf("on the open connection: %d, want 404", status)
	}
}

// `helper gateway` runs from --config on stdin and takes pushes.
func TestGatewayMode(t *testing.T) {
	socket := testSocket(t)
	state := filepath.Join(t.TempDir(), "config.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr testio.Buffer
	done := make(chan int, 1)
	go func() {
		done <- runGateway(ctx, []string{"--config", "-", "--control-socket", socket, "--state-file", state, "--listen-host", "127.0.0.1"},
			strings.NewReader(`{"generation":1,"ports":[]}`), io.Discard, &stderr)
	}()
	waitFor(t, "the push to be acknowledged", func() bool {
		_, code, _ := Push(socket, []byte(`{"generation":2,"ports":[]}`), deadline)
		return code == helperapi.ExitOK
	})
	if _, code, _ := Push(socket, []byte(`{"generation":3,"service":"default/web","ports":[]}`), deadline); code != helperapi.ExitFailed {
		t.Errorf("a proxy config pushed to the gateway: exit %d", code)
	}
	cancel()
	if code := <-done; code != helperapi.ExitOK {
		t.Fatalf("exit %d; stderr: %s", code, stderr.String())
	}
	if got := readState(t, state); !strings.Contains(got, `"generation":2`) {
		t.Errorf("state file %q", got)
	}
}

func TestPathAndHostMatching(t *testing.T) {
	for _, tc := range []struct {
		typ, value, path string
		want             bool
	}{
		{helperapi.PathPrefix, "/foo", "/foo", true},
		{helperapi.PathPrefix, "/foo", "/foo/", true},
		{helperapi.PathPrefix, "/foo", "/foo/bar", true},
		{helperapi.PathPrefix, "/foo", "/foobar", false},
		{helperapi.PathPrefix, "/foo/", "/foo", true},
		{helperapi.PathPrefix, "/", "/anything", true},
		{helperapi.PathPrefix, "/", "", true},
		{helperapi.PathExact, "/foo", "/foo", true},
		{helperapi.PathExact, "/foo", "/foo/", false},
	} {
		if got := PathMatches(helperapi.GatewayPathMatch{Type: tc.typ, Value: tc.value}, tc.path); got != tc.want {
			t.Errorf("%s %q on %q = %v", tc.typ, tc.value, tc.path, got)
		}
	}
	for _, tc := range []struct {
		host        string
		singleLabel bool
		name        string
		want        bool
	}{
		{"a.example.com", false, "a.example.com", true},
		{"*.example.com", false, "a.example.com", true},
		{"*.example.com", false, "a.b.example.com", true},
		{"*.example.com", true, "a.b.example.com", false},
		{"*.example.com", false, "example.com", false},
		{"*.example.com", false, "aexample.com", false},
	} {
		if got := hostMatches(&helperapi.GatewayHost{Hostname: tc.host, SingleLabel: tc.singleLabel}, tc.name); got != tc.want {
			t.Errorf("%q (single label %v) on %q = %v", tc.host, tc.singleLabel, tc.name, got)
		}
	}
}

// Apply returns only once a request that chose an endpoint from the
// previous config has its connection: once a push removing an endpoint is
// acknowledged, no new request goes to it.
func TestGatewayApplyWaitsForChoicesOfThePreviousConfig(t *testing.T) {
	a, b := newHTTPBackend(t, "a", false), newHTTPBackend(t, "b", false)
	dialing, release := make(chan struct{}), make(chan struct{})
	var events testio.Buffer
	var once sync.Once
	g, _ := newTestGateway(t, 1)
	dialer := &net.Dialer{}
	tr := g.proxy.Transport.(*http.Transport)
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == a.srv.Listener.Addr().String() {
			once.Do(func() { close(dialing) })
			<-release
			fmt.Fprint(&events, "dialled a;")
		}
		return dialer.DialContext(ctx, network, addr)
	}
	g.fastPool.dial = tr.DialContext // the HTTP/1.1 fast path's dials
	cfg := func(gen int64, be *httpBackend) helperapi.GatewayConfig {
		return helperapi.GatewayConfig{Generation: gen, Ports: []helperapi.GatewayPort{httpPort(
			helperapi.GatewayHost{Hostname: "", Routes: []helperapi.GatewayRoute{prefix("/", backendOf(be.name, 1, be.endpoint()))}})}}
	}
	mustApplyGateway(t, g, cfg(1, a))
	base := "http://" + g.Addr(80).String()
	got := make(chan string, 1)
	go func() {
		resp, err := http.Get(base + "/")
		if err != nil {
			got <- err.Error()
			return
		}
		resp.Body.Close()
		got <- resp.Header.Get("X-Backend")
	}()
	<-dialing
	applied := make(chan error, 1)
	go func() {
		err := g.Apply(cfg(2, b))
		fmt.Fprint(&events, "applied;")
		applied <- err
	}()
	waitFor(t, "the new config to be served", func() bool { return g.Generation() == 2 })
	close(release)
	if err := <-applied; err != nil {
		t.Fatal(err)
	}
	if e := events.String(); e != "dialled a;applied;" {
		t.Errorf("events %q: Apply returned before the previous config's dial", e)
	}
	if b := <-got; b != "a" {
		t.Errorf("the request in flight reached %q, want a (chosen before the swap)", b)
	}
}

// On HTTPS the gateway speaks HTTP/2 to clients that offer it (ALPN), as
// gRPC clients do, and HTTP/1.1 to the others.
func TestGatewayHTTPSNegotiatesHTTP2(t *testing.T) {
	a := newHTTPBackend(t, "a", false)
	g, _ := newTestGateway(t, 1)
	cert, key := selfSigned(t, 1, "shop.example.com")
	mustApplyGateway(t, g, helperapi.GatewayConfig{Generation: 1,
		Certificates: []helperapi.GatewayCertificate{{Name: "web/shop", CertPEM: cert, KeyPEM: key}},
		Ports: []helperapi.GatewayPort{{Port: 443, Protocol: helperapi.GatewayHTTPS, Certificates: []string{"web/shop"},
			Hosts: []helperapi.GatewayHost{{Hostname: "shop.example.com", Routes: []helperapi.GatewayRoute{prefix("/", backendOf("a", 1, a.endpoint()))}}}}}})
	for _, h2 := range []bool{true, false} {
		tr := &http.Transport{TLSClientConfig: &tls.Config{ServerName: "shop.example.com", InsecureSkipVerify: true}, ForceAttemptHTTP2: h2}
		if !h2 {
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		}
		status, resp, e := get(t, &http.Client{Transport: tr}, "https://"+g.Addr(443).String(), "shop.example.com", "/")
		tr.CloseIdleConnections()
		want := "HTTP/1.1"
		if h2 {
			want = "HTTP/2.0"
		}
		if status != 200 || resp.Proto != want || e.Backend != "a" {
			t.Errorf("h2 offered %v: %d %s from %q, want 200 %s from a", h2, status, resp.Proto, e.Backend, want)
		}
	}
}

// An HTTP port answers a pending ACME HTTP-01 challenge of its host before
// any route (docs/design.md §10, ACME); another host's, or an unknown
// token, is routed as usual.
func TestGatewayAnswersACMEChallengeBeforeRouting(t *testing.T) {
	a := newHTTPBackend(t, "a", false)
	g, _ := newTestGateway(t, 1)
	mustApplyGateway(t, g, helperapi.GatewayConfig{Generation: 1, Ports: []helperapi.GatewayPort{httpPort(
		helperapi.GatewayHost{Hostname: "shop.example.com", Routes: []helperapi.GatewayRoute{prefix("/", backendOf("a", 1, a.endpoint()))}},
	)}, ACMEChallenges: []helperapi.GatewayACMEChallenge{{Host: "shop.example.com", Token: "tok1", KeyAuthorization: "tok1.thumb"}}})
	base := "http://" + g.Addr(80).String()
	for _, tc := range []struct {
		host, path string
		status     int
		body       string // "" : the backend answered
	}{
		{"shop.example.com", "/.well-known/acme-challenge/tok1", 200, "tok1.thumb"},
		{"SHOP.example.com:80", "/.well-known/acme-challenge/tok1", 200, "tok1.thumb"},
		{"shop.example.com", "/.well-known/acme-challenge/other", 200, ""},
		{"other.example.com", "/.well-known/acme-challenge/tok1", 404, "no route\n"},
	} {
		req, _ := http.NewRequest("GET", base+tc.path, nil)
		req.Host = tc.host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s%s: %v", tc.host, tc.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fromBackend := resp.Header.Get("X-Backend") != ""
		if resp.StatusCode != tc.status || (tc.body == "") != fromBackend || tc.body != "" && string(body) != tc.body {
			t.Errorf("%s%s: %d %q (backend %v), want %d %q", tc.host, tc.path, resp.StatusCode, body, fromBackend, tc.status, tc.body)
		}
	}
}

// The access log never holds a request: answers come while its writer
// (the container's stdout) is stuck; and Shutdown, once the requests it
// drains are done, writes every line, the drained request's included.
func TestGatewayShutdownWritesTheAccessLogLinesOfDrainedRequests(t *testing.T) {
	arrived, finish := make(chan struct{}), make(chan struct{})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(arrived)
			<-finish
		}
		_, _ = io.WriteString(w, r.URL.Path)
	}))
	t.Cleanup(backend.Close)
	stdout := newGatedWriter()
	t.Cleanup(stdout.open)
	g := NewGateway(GatewayOptions{ListenAddr: func(int) string { return "127.0.0.1:0" }, Log: testLog(t), AccessLog: stdout})
	mustApplyGateway(t, g, helperapi.GatewayConfig{Generation: 1, Ports: []helperapi.GatewayPort{httpPort(
		helperapi.GatewayHost{Routes: []helperapi.GatewayRoute{prefix("/", backendOf("web", 1, endpointOf(backend.Listener.Addr())))}},
	)}})
	addr := g.Addr(80).String()
	for _, path := range []string{"/a", "/b", "/c"} {
		if status, _, _ := get(t, http.DefaultClient, "http://"+addr, "x", path); status != 200 {
			t.Fatalf("GET %s: %d", path, status)
		}
	}
	slow := make(chan int, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/slow")
		if err != nil {
			t.Errorf("GET /slow: %v", err)
			slow <- 0
			return
		}
		resp.Body.Close()
		slow <- resp.StatusCode
	}()
	<-arrived
	stopped := make(chan error, 1)
	go func() { stopped <- g.Shutdown(context.Background()) }()
	waitFor(t, "the gateway to stop accepting", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	close(finish)
	if status := <-slow; status != 200 {
		t.Errorf("the drained request: %d, want 200", status)
	}
	stdout.open()
	if err := <-stopped; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	var paths []string
	for _, l := range strings.Split(strings.TrimSpace(stdout.out.String()), "\n") {
		var line struct{ Path string }
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("access log line %q: %v", l, err)
		}
		paths = append(paths, line.Path)
	}
	if got, want := strings.Join(paths, " "), "/a /b /c /slow"; got != want {
		t.Errorf("access log paths %q, want %q", got, want)
	}
}

// The gateway in the host's network namespace (HostPorts) serves the
// ports it can bind and reports the others, which each Apply tries again.
func TestGatewayHostPortsServeTheOthersAndRetryAHeldPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	heldAddr := taken.Addr().String()
	a := newHTTPBackend(t, "a", false)
	g := NewGateway(GatewayOptions{
		HostPorts: true,
		ListenAddr: func(port int) string {
			if port == 81 {
				return heldAddr
			}
			return "127.0.0.1:0"
		},
		Log: testLog(t),
	})
	defer g.Shutdown(context.Background())
	route := helperapi.GatewayHost{Routes: []helperapi.GatewayRoute{prefix("/", backendOf("a", 1, a.endpoint()))}}
	held := httpPort(route)
	held.Port = 81
	cfg := helperapi.GatewayConfig{Generation: 1, Ports: []helperapi.GatewayPort{httpPort(route), held}}
	mustApplyGateway(t, g, cfg)
	if status, _, _ := get(t, http.DefaultClient, "http://"+g.Addr(80).String(), "x", "/"); status != 200 {
		t.Errorf("port 80: status %d, want 200", status)
	}
	if u := g.Unbound(); len(u) != 1 || u[0].Port != 81 || u[0].Error == "" {
		t.Fatalf("unbound %+v, want port 81 with its error", u)
	}
	taken.Close()
	cfg.Generation = 2
	mustApplyGateway(t, g, cfg)
	if u := g.Unbound(); len(u) != 0 {
		t.Errorf("unbound %+v after the port was freed, want none", u)
	}
	if g.Addr(81) == nil {
		t.Error("port 81 has no server after it was freed")
	}
}
