package dataplane

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// rawBackend is an HTTP/1.1 server on 127.0.0.1 that answers each request
// with what respond returns, byte for byte, and records each request's
// head as received (header names as sent: net/http's path canonicalises
// them, the fast path forwards them as the client wrote them).
type rawBackend struct {
	addr    *net.TCPAddr
	respond func(r *http.Request) (resp string, closeAfter bool)
	conns   atomic.Int64
	closed  chan struct{} // one value per connection it closed after answering
	eof     chan struct{} // one value per connection whose peer closed it

	mu    sync.Mutex
	heads []string
}

func newRawBackend(t *testing.T, respond func(r *http.Request) (string, bool)) *rawBackend {
	t.Helper()
	b := &rawBackend{respond: respond, closed: make(chan struct{}, 100), eof: make(chan struct{}, 100)}
	addr, err := net.ResolveTCPAddr("tcp", server(t, func(c net.Conn) {
		b.conns.Add(1)
		b.serve(c)
	}))
	if err != nil {
		t.Fatal(err)
	}
	b.addr = addr
	return b
}

func (b *rawBackend) serve(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		var head strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				b.eof <- struct{}{}
				return
			}
			head.WriteString(line)
			if line == "\r\n" {
				break
			}
		}
		r, err := http.ReadRequest(bufio.NewReader(io.MultiReader(strings.NewReader(head.String()), br)))
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		b.mu.Lock()
		b.heads = append(b.heads, head.String())
		b.mu.Unlock()
		resp, closeAfter := b.respond(r)
		if _, err := io.WriteString(c, resp); err != nil {
			return
		}
		if closeAfter {
			b.closed <- struct{}{}
			return
		}
	}
}

func (b *rawBackend) lastHead() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.heads) == 0 {
		return ""
	}
	return b.heads[len(b.heads)-1]
}

func (b *rawBackend) requests() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.heads)
}

func (b *rawBackend) endpoint() helperapi.Endpoint { return endpointOf(b.addr) }

// ok200 answers "ok" with its length, kept alive.
func ok200(*http.Request) (string, bool) {
	return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false
}

// rawClient is one client connection to the gateway.
type rawClient struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr net.Addr) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{t: t, c: c, br: bufio.NewReader(c)}
}

// do sends req as is and reads one response (method tells whether it has
// a body); the body is read whole.
func (c *rawClient) do(method, req string) (*http.Response, string) {
	c.t.Helper()
	if _, err := io.WriteString(c.c, req); err != nil {
		c.t.Fatalf("send: %v", err)
	}
	resp, err := http.ReadResponse(c.br, &http.Request{Method: method})
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 {
		resp, err = http.ReadResponse(c.br, &http.Request{Method: method}) // 100 Continue, 103 Early Hints
	}
	if err != nil {
		c.t.Fatalf("%s: read the response: %v", strings.SplitN(req, "\r\n", 2)[0], err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s: read the body: %v", strings.SplitN(req, "\r\n", 2)[0], err)
	}
	return resp, string(body)
}

// closedByPeer: the gateway closed the connection (EOF on the next read).
func (c *rawClient) closedByPeer() bool {
	_, err := c.br.ReadByte()
	return err == io.EOF
}

// gatewayServing is a gateway serving the endpoint at addr as
// fastAndNetHTTP does.
func gatewayServing(t *testing.T, addr string) *Gateway {
	t.Helper()
	tcp, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := newTestGateway(t, 1)
	mustApplyGateway(t, g, fastAndNetHTTP(1, endpointOf(tcp)))
	return g
}

// fastAndNetHTTP is a config serving be on /fast (no filter: the fast
// path) and on /nethttp (a response header filter that changes nothing the
// tests look at: net/http's server and ReverseProxy).
func fastAndNetHTTP(gen int64, eps ...helperapi.Endpoint) helperapi.GatewayConfig {
	viaNetHTTP := prefix("/nethttp", backendOf("web", 1, eps...))
	viaNetHTTP.Filters.ResponseHeaders = &helperapi.GatewayHeaderModifier{Remove: []string{"X-Unused"}}
	return helperapi.GatewayConfig{Generation: gen, Ports: []helperapi.GatewayPort{httpPort(
		helperapi.GatewayHost{Routes: []helperapi.GatewayRoute{viaNetHTTP, prefix("/", backendOf("web", 1, eps...))}})}}
}

// The fast path's request reaches the same route as net/http's would:
// one matcher, fed by either parser.
func TestGatewayFastPathRoutesAsNetHTTP(t *testing.T) {
	route := func(src string, path helperapi.GatewayPathMatch, mod func(*helperapi.GatewayRoute)) helperapi.GatewayRoute {
		rt := helperapi.GatewayRoute{Source: src, Path: path, Backends: []helperapi.GatewayBackend{backendOf("web", 1)}}
		if mod != nil {
			mod(&rt)
		}
		return rt
	}
	exact := func(v string) helperapi.GatewayPathMatch {
		return helperapi.GatewayPathMatch{Type: helperapi.PathExact, Value: v}
	}
	pfx := func(v string) helperapi.GatewayPathMatch {
		return helperapi.GatewayPathMatch{Type: helperapi.PathPrefix, Value: v}
	}
	port := &helperapi.GatewayPort{Port: 80, Protocol: helperapi.GatewayHTTP, Hosts: []helperapi.GatewayHost{
		{Hostname: "shop.example.com", Routes: []helperapi.GatewayRoute{
			route("post-api", pfx("/api"), func(r *helperapi.GatewayRoute) { r.Method = "POST" }),
			route("canary", pfx("/api"), func(r *helperapi.GatewayRoute) {
				r.Headers = []helperapi.GatewayValueMatch{{Name: "X-Canary", Value: "yes"}}
			}),
			route("v2", pfx("/api"), func(r *helperapi.GatewayRoute) {
				r.QueryParams = []helperapi.GatewayValueMatch{{Name: "v", Value: "2"}}
			}),
			route("api", pfx("/api"), nil),
			route("exact", exact("/a b"), nil),
		}},
		{Hostname: "*.example.com", Routes: []helperapi.GatewayRoute{route("wildcard", pfx("/"), nil)}},
		{Routes: []helperapi.GatewayRoute{route("catch-all", pfx("/static"), nil)}},
	}}
	for _, head := range []string{
		"GET /api/x HTTP/1.1\r\nHost: shop.example.com\r\n\r\n",
		"POST /api/x HTTP/1.1\r\nHost: shop.example.com\r\nContent-Length: 0\r\n\r\n",
		"GET /api HTTP/1.1\r\nHost: SHOP.example.com.:8080\r\nx-canary: yes\r\n\r\n",
		"GET /api?v=2&v=3 HTTP/1.1\r\nHost: shop.example.com\r\n\r\n",
		"GET /api?v=3&v=2 HTTP/1.1\r\nHost: shop.example.com\r\n\r\n",
		"GET /api?v=%zz HTTP/1.1\r\nHost: shop.example.com\r\n\r\n",
		"GET /a%20b HTTP/1.1\r\nHost: shop.example.com\r\n\r\n",
		"GET /apis HTTP/1.1\r\nHost: shop.example.com\r\n\r\n",
		"GET /static/app.js HTTP/1.1\r\nHost: shop.example.com\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: a.b.example.com\r\n\r\n",
		"GET /static/x HTTP/1.1\r\nHost: 10.0.0.1:80\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: other\r\n\r\n",
	} {
		name := strings.SplitN(head, "\r\n", 2)[0]
		t.Run(name, func(t *testing.T) {
			r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(head)))
			if err != nil {
				t.Fatal(err)
			}
			want := MatchGatewayRoute(port, r)
			var fr fastRequest
			if complete, fast := parseRequestHead([]byte(head), &fr); !complete || !fast {
				t.Fatalf("not for the fast path: complete %v, fast %v", complete, fast)
			}
			fc := &fastConn{req: fr}
			rr, ok := fc.routeRequest()
			if !ok {
				t.Fatal("routeRequest refused it")
			}
			if got := matchRoute(port, &rr); got != want {
				t.Errorf("fast path's route %v, net/http's %v", sourceOf(got), sourceOf(want))
			}
		})
	}
}

func sourceOf(rt *helperapi.GatewayRoute) string {
	if rt == nil {
		return "none"
	}
	return rt.Source
}

// The request the backend receives and the answer the client gets are
// the same through the fast path as through net/http's ReverseProxy, but
// for header names' case and order (the fast path forwards them as sent).
func TestGatewayFastPathForwardsAsReverseProxy(t *testing.T) {
	be := newRawBackend(t, func(r *http.Request) (string, bool) {
		return "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\nX-Backend: raw\r\nKeep-Alive: timeout=5\r\nConnection: keep-alive, X-Hop\r\nX-Hop: secret\r\n\r\nhello", false
	})
	g, _ := newTestGateway(t, 1)
	mustApplyGateway(t, g, fastAndNetHTTP(1, be.endpoint()))
	type seen struct {
		method, uri, host string
		header            http.Header
		status            int
		respHeader        http.Header
		body              string
	}
	send := func(path string) seen {
		c := dialRaw(t, g.Addr(80))
		resp, body := c.do("GET", "GET "+path+"?q=1 HTTP/1.1\r\nHost: shop.example.com:80\r\nUser-Agent: test\r\n"+
			"X-Forwarded-For: 10.0.0.1\r\nX-Forwarded-For: 10.0.0.2\r\nX-Forwarded-Host: evil\r\nX-Forwarded-Proto: https\r\n"+
			"Forwarded: for=evil\r\nProxy-Connection: keep-alive\r\nKeep-Alive: 300\r\nProxy-Authorization: Basic eA==\r\nCookie: a=b\r\n\r\n")
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(be.lastHead())))
		if err != nil {
			t.Fatalf("%s: the backend's request: %v", path, err)
		}
		resp.Header.Del("Date")
		return seen{r.Method, strings.Replace(r.RequestURI, path, "PATH", 1), r.Host, r.Header, resp.StatusCode, resp.Header, body}
	}
	fast, slow := send("/fast"), send("/nethttp")
	if fast.method != slow.method || fast.uri != slow.uri || fast.host != slow.host {
		t.Errorf("request line and Host: fast %s %s %s, net/http %s %s %s", fast.method, fast.uri, fast.host, slow.method, slow.uri, slow.host)
	}
	for _, h := range []http.Header{fast.header, slow.header, fast.respHeader, slow.respHeader} {
		slices.Sort(h["X-Forwarded-For"])
	}
	if a, b := headerString(fast.header), headerString(slow.header); a != b {
		t.Errorf("the backend's request headers:\nfast path %s\nnet/http  %s", a, b)
	}
	if fast.status != slow.status || fast.body != slow.body || headerString(fast.respHeader) != headerString(slow.respHeader) {
		t.Errorf("the answer:\nfast path %d %s %q\nnet/http  %d %s %q", fast.status, headerString(fast.respHeader), fast.body,
			slow.status, headerString(slow.respHeader), slow.body)
	}
	if got := fast.header.Get("X-Forwarded-For"); got != "10.0.0.1, 10.0.0.2, 127.0.0.1" {
		t.Errorf("X-Forwarded-For %q, want the client appended", got)
	}
}

func headerString(h http.Header) string {
	b, _ := json.Marshal(h)
	return string(b)
}

// Requests the fast path does not relay itself are answered by net/http,
// on the same connection, with the bytes the fast path had read.
func TestGatewayFastPathHandsOverWhatItDoesNotRelay(t *testing.T) {
	be := newRawBackend(t, ok200)
	g, _ := newTestGateway(t, 1)
	mustApplyGateway(t, g, fastAndNetHTTP(1, be.endpoint()))
	for _, tc := range []struct {
		name, method, req string
		status            int
		viaNetHTTP        bool // the backend saw canonical header names
	}{
		{"a plain GET stays on the fast path", "GET", "GET / HTTP/1.1\r\nHost: x\r\nx-probe: 1\r\n\r\n", 200, false},
		{"HTTP/1.0", "GET", "GET / HTTP/1.0\r\nHost: x\r\nx-probe: 1\r\n\r\n", 200, true},
		{"Expect: 100-continue", "POST", "POST / HTTP/1.1\r\nHost: x\r\nx-probe: 1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabc", 200, true},
		{"a chunked request body", "POST", "POST / HTTP/1.1\r\nHost: x\r\nx-probe: 1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 200, true},
		{"a head over 4 KiB", "GET", "GET / HTTP/1.1\r\nHost: x\r\nx-probe: 1\r\nCookie: " + strings.Repeat("a", 5000) + "\r\n\r\n", 200, true},
		{"an absolute-form target", "GET", "GET http://x/ HTTP/1.1\r\nHost: x\r\nx-probe: 1\r\n\r\n", 200, true},
		{"a route with a filter", "GET", "GET /nethttp HTTP/1.1\r\nHost: x\r\nx-probe: 1\r\n\r\n", 200, true},
		{"two Content-Lengths: 400", "POST", "POST / HTTP/1.1\r\nHost: x\r\nx-probe: 1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400, false},
		{"no Host: 400", "GET", "GET / HTTP/1.1\r\nx-probe: 1\r\n\r\n", 400, false},
		{"an obs-fold", "GET", "GET / HTTP/1.1\r\nHost: x\r\nx-probe: 1\r\nx-fold: a\r\n b\r\n\r\n", 200, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := be.requests()
			c := dialRaw(t, g.Addr(80))
			resp, _ := c.do(tc.method, tc.req)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.status != 200 {
				if be.requests() != before {
					t.Error("a request net/http refused reached the backend")
				}
				return
			}
			head := be.lastHead()
			if got := strings.Contains(head, "\r\nX-Probe: 1\r\n"); got != tc.viaNetHTTP {
				t.Errorf("served by net/http: %v, want %v (the backend received %q)", got, tc.viaNetHTTP, head)
			}
			if tc.viaNetHTTP && !resp.Close {
				// The connection stays net/http's: the next request too.
				c.do("GET", "GET / HTTP/1.1\r\nHost: x\r\nx-probe: 1\r\n\r\n")
				if head := be.lastHead(); !strings.Contains(head, "\r\nX-Probe: 1\r\n") {
					t.Errorf("the next request left net/http: %q", head)
				}
			}
		})
	}
}

// The fast path answers what route answers itself (no route, no
// endpoint, an unreachable one) as net/http's path does.
func TestGatewayFastPathAnswersErrorsAsNetHTTP(t *testing.T) {
	g, _ := newTestGateway(t, 1)
	mustApplyGateway(t, g, helperapi.GatewayConfig{Generation: 1, Ports: []helperapi.GatewayPort{httpPort(
		helperapi.GatewayHost{Hostname: "web", Routes: []helperapi.GatewayRoute{
			prefix("/none", backendOf("none", 1)),
			prefix("/dead", backendOf("dead", 1, deadEndpoint(t))),
			prefix("/zero", backendOf("zero", 0, deadEndpoint(t))),
		}})}})
	for _, tc := range []struct {
		path   string
		status int
		body   string
	}{
		{"/other", 404, "no route\n"},
		{"/none", 503, "no ready endpoint\n"},
		{"/zero", 500, "no backend\n"},
		{"/dead", 502, ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			c := dialRaw(t, g.Addr(80))
			resp, body := c.do("GET", "GET "+tc.path+" HTTP/1.1\r\nHost: web\r\n\r\n")
			if resp.StatusCode != tc.status || body != tc.body || resp.Header.Get("Date") == "" {
				t.Errorf("%d %q (Date %q), want %d %q with a Date", resp.StatusCode, body, resp.Header.Get("Date"), tc.status, tc.body)
			}
			// The connection stays open for the next request.
			if resp, _ := c.do("GET", "GET /other HTTP/1.1\r\nHost: web\r\n\r\n"); resp.StatusCode != 404 {
				t.Errorf("the next request: %d", resp.StatusCode)
			}
		})
	}
}

// A client's requests on one connection reuse one pooled connection to
// the endpoint.
func TestGatewayFastPathKeepsBothConnectionsAlive(t *testing.T) {
	be := newRawBackend(t, ok200)
	g, _ := newTestGateway(t, 1)
	mustApplyGateway(t, g, fastAndNetHTTP(1, be.endpoint()))
	c := dialRaw(t, g.Addr(80))
	for range 3 {
		if resp, body := c.do("GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
	}
	if n := be.conns.Load(); n != 1 {
		t.Errorf("%d connections to the backend, want 1", n)
	}
	// Requests pipelined in one write are answered in order.
	resp, _ := c.do("GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("first pipelined: %d", resp.StatusCode)
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil || resp.StatusCode != 200 || !resp.Close {
		t.Fatalf("second pipelined: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	if !c.closedByPeer() {
		t.Error("the connection was not closed after Connection: close")
	}
}

// Once Apply returned, a removed endpoint gets no new request through the
// fast path, and its pooled connections are closed rather than reused.
func TestGatewayFastPathRemovedEndpointGetsNoNewRequest(t *testing.T) {
	a, b := newRawBackend(t, ok200), newRawBackend(t, ok200)
	g, _ := newTestGateway(t, 1)
	mustApplyGateway(t, g, fastAndNetHTTP(1, a.endpoint()))
	c := dialRaw(t, g.Addr(80))
	if resp, _ := c.do("GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || a.requests() != 1 {
		t.Fatalf("%d, a served %d", resp.StatusCode, a.requests())
	}
	mustApplyGateway(t, g, fastAndNetHTTP(2, b.endpoint()))
	<-a.eof // the pooled connection to a is closed by the Apply
	for range 3 {
		if resp, _ := c.do("GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	if a.requests() != 1 || b.requests() != 3 {
		t.Errorf("a served %d, b %d after the Apply; want 1 and 3", a.requests(), b.requests())
	}
}

// Shutdown closes the fast path's idle connections (a new one that sent
// nothing yet too) and waits for a request in flight, whose answer says
// Connection: close.
func TestGatewayFastPathShutdownDrains(t *testing.T) {
	arrived, finish := make(chan struct{}), make(chan struct{})
	be := newRawBackend(t, func(r *http.Request) (string, bool) {
		if r.URL.Path == "/slow" {
			close(arrived)
			<-finish
		}
		return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false
	})
	g := NewGateway(GatewayOptions{ListenAddr: func(int) string { return "127.0.0.1:0" }, Log: testLog(t)})
	mustApplyGateway(t, g, fastAndNetHTTP(1, be.endpoint()))
	idle, busy, fresh := dialRaw(t, g.Addr(80)), dialRaw(t, g.Addr(80)), dialRaw(t, g.Addr(80))
	idle.do("GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	g.mu.Lock()
	fs := g.servers[80].fast
	g.mu.Unlock()
	waitFor(t, "the gateway to accept the three connections", func() bool {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		return len(fs.conns) == 3
	})
	answered := make(chan *http.Response, 1)
	go func() {
		io.WriteString(busy.c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(busy.br, nil)
		if err != nil {
			t.Errorf("the request in flight: %v", err)
		}
		answered <- resp
	}()
	<-arrived
	stopped := make(chan error, 1)
	go func() { stopped <- g.Shutdown(context.Background()) }()
	if !idle.closedByPeer() {
		t.Error("the idle connection was not closed")
	}
	if !fresh.closedByPeer() {
		t.Error("the new connection was not closed")
	}
	select {
	case err := <-stopped:
		t.Fatalf("Shutdown returned (%v) with a request in flight", err)
	default:
	}
	close(finish)
	if resp := <-answered; resp == nil || resp.StatusCode != 200 || !resp.Close {
		t.Errorf("the drained request's answer: %+v, want 200 with Connection: close", resp)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// An h2c client with prior knowledge (gRPC without TLS) sends HTTP/2's
// preface: handed over with it, net/http's server speaks HTTP/2.
func TestGatewayFastPathHandsOverH2CPriorKnowledge(t *testing.T) {
	be := newRawBackend(t, ok200)
	g, _ := newTestGateway(t, 1)
	mustApplyGateway(t, g, fastAndNetHTTP(1, be.endpoint()))
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	for range 2 {
		resp, err := (&http.Client{Transport: tr}).Get("http://" + g.Addr(80).String() + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Proto != "HTTP/2.0" || string(body) != "ok" {
			t.Errorf("%s %d %q, want HTTP/2.0 200 ok", resp.Proto, resp.StatusCode, body)
		}
	}
}

// Answers that net/http's Transport accepts are relayed by the fast path
// too, and one it cannot relay is answered 502 as ReverseProxy answers
// it, never with a connection closed and nothing said.
func TestGatewayFastPathAnswersWhatReverseProxyAnswers(t *testing.T) {
	bigHeader := "X-Big: " + strings.Repeat("a", 5000) + "\r\n" // a large CSP or Set-Cookie
	answers := map[string]string{
		"/bigheader":   "HTTP/1.1 200 OK\r\n" + bigHeader + "Content-Length: 2\r\n\r\nok",
		"/barelf":      "HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
		"/garbage":     "HTTP/1.1 200 OK\r\nno colon here\r\nContent-Length: 2\r\n\r\nok",
		"/partialhead": "HTTP/1.1 200 OK\r\nContent-Len",
	}
	be := newRawBackend(t, func(r *http.Request) (string, bool) {
		path := strings.TrimPrefix(r.URL.Path, "/nethttp")
		return answers[path], path == "/partialhead"
	})
	g, _ := newTestGateway(t, 1)
	mustApplyGateway(t, g, fastAndNetHTTP(1, be.endpoint()))
	for _, path := range []string{"/bigheader", "/barelf", "/garbage", "/partialhead"} {
		t.Run(path, func(t *testing.T) {
			want, _ := dialRaw(t, g.Addr(80)).do("GET", "GET /nethttp"+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
			c := dialRaw(t, g.Addr(80))
			if _, err := io.WriteString(c.c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(c.br, nil)
			if err != nil {
				t.Fatalf("fast path: %v; net/http's path answered %d", err, want.StatusCode)
			}
			resp.Body.Close()
			if resp.StatusCode != want.StatusCode {
				t.Errorf("fast path %d, net/http's path %d", resp.StatusCode, want.StatusCode)
			}
		})
	}
}

// A client that goes away while its request waits for the endpoint (a long
// poll) cancels that request, as net/http's server cancels the request's
// context and ReverseProxy the backend request: no goroutine, backend
// connection or drain of Shutdown waits for an answer nobody reads; also
// once the endpoint sent an informational answer (103 Early Hints), as
// net/http's server watches the connection for the whole request.
func TestGatewayFastPathClientGoneCancelsTheBackendRequest(t *testing.T) {
	arrived, cancelled, stop := make(chan string, 4), make(chan string, 4), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/hints") {
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
		}
		arrived <- r.URL.Path
		select {
		case <-r.Context().Done():
			cancelled <- r.URL.Path
		case <-stop: // the test is over: answer, so that nothing hangs
		}
	}))
	t.Cleanup(srv.Close)
	g, _ := newTestGateway(t, 1)
	t.Cleanup(func() { close(stop) })
	mustApplyGateway(t, g, fastAndNetHTTP(1, endpointOf(srv.Listener.Addr())))
	for _, path := range []string{"/nethttp/poll", "/poll", "/nethttp/hints", "/hints"} {
		t.Run(path, func(t *testing.T) {
			c := dialRaw(t, g.Addr(80))
			if _, err := io.WriteString(c.c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			<-arrived
			if strings.HasSuffix(path, "/hints") {
				if resp, err := http.ReadResponse(c.br, nil); err != nil || resp.StatusCode != http.StatusEarlyHints {
					t.Fatalf("want the 103 relayed first: %v", err)
				}
			}
			c.c.Close()
			select {
			case p := <-cancelled:
				if p != path {
					t.Fatalf("cancelled %s, want %s", p, path)
				}
			case <-time.After(deadline / 2):
				t.Fatalf("the backend request of a client gone was not cancelled in %v", deadline/2)
			}
		})
	}
}

// The fast path keeps the latest request's Host string while a connection
// sends the same one: a connection that changes its Host (a client reusing
// one connection for two virtual hosts, or another case, or a port) has each
// request routed by its own Host, never by the one before.
func TestGatewayFastPathRoutesEachRequestOfAConnectionByItsOwnHost(t *testing.T) {
	answer := func(name string) func(*http.Request) (string, bool) {
		return func(*http.Request) (string, bool) {
			return "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(name)) + "\r\n\r\n" + name, false
		}
	}
	a, b := newRawBackend(t, answer("a")), newRawBackend(t, answer("b"))
	g, _ := newTestGateway(t, 1)
	mustApplyGateway(t, g, helperapi.GatewayConfig{Generation: 1, Ports: []helperapi.GatewayPort{httpPort(
		helperapi.GatewayHost{Hostname: "a.example", Routes: []helperapi.GatewayRoute{prefix("/", backendOf("a", 1, a.endpoint()))}},
		helperapi.GatewayHost{Hostname: "b.example", Routes: []helperapi.GatewayRoute{prefix("/", backendOf("b", 1, b.endpoint()))}},
	)}})
	c := dialRaw(t, g.Addr(80))
	for i, tc := range []struct{ host, want string }{
		{"a.example", "a"}, {"a.example", "a"}, {"b.example", "b"}, {"a.example", "a"}, {"B.EXAMPLE", "b"},
		{"b.example", "b"}, {"a.example:8080", "a"}, {"a.example:8080", "a"}, {"b.example:8080", "b"}, {"other", ""},
		{"a.example", "a"},
	} {
		resp, body := c.do("GET", "GET / HTTP/1.1\r\nHost: "+tc.host+"\r\n\r\n")
		if tc.want == "" {
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("request %d, Host %s: %d %q, want 404", i, tc.host, resp.StatusCode, body)
			}
			continue
		}
		if resp.StatusCode != 200 || body != tc.want {
			t.Errorf("request %d, Host %s: %d from %q, want 200 from %q", i, tc.host, resp.StatusCode, body, tc.want)
		}
	}
}

// A WebSocket upgrade on a connection that was served by the fast path
// first is handed over to net/http with no read deadline of the fast
// path's left: the upgraded connection carries data both ways.
func TestGatewayFastPathHandsOverAnUpgradeAfterFastRequests(t *testing.T) {
	addr := requestServer(t, nil, func(c net.Conn, br *bufio.Reader, r *http.Request) bool {
		if r.Header.Get("Upgrade") == "" {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			return true
		}
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
		// Echo, as a WebSocket server echoes frames.
		io.Copy(c, br)
		return false
	})
	g := gatewayServing(t, addr)
	c := dialRaw(t, g.Addr(80))
	for range 3 {
		if resp, body := c.do("GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("%d %q, want 200 \"ok\"", resp.StatusCode, body)
		}
	}
	io.WriteString(c.c, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v, want 101", resp, err)
	}
	for _, msg := range []string{"ping", "pong"} {
		io.WriteString(c.c, msg)
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c.br, got); err != nil || string(got) != msg {
			t.Fatalf("echo: %q (%v), want %q", got, err, msg)
		}
	}
}

// Shutdown while clients keep sending: every answer a client gets is
// whole (an idle connection is closed between answers, never in one), and
// Shutdown returns once the requests in flight are answered.
func TestGatewayFastPathShutdownAmidRequestsCutsNoAnswer(t *testing.T) {
	be := newRawBackend(t, func(r *http.Request) (string, bool) {
		if r.URL.Path == "/late" {
			time.Sleep(2 * fastWatchClientAfter)
		}
		return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false
	})
	g := NewGateway(GatewayOptions{ListenAddr: func(int) string { return "127.0.0.1:0" }, Log: testLog(t)})
	mustApplyGateway(t, g, fastAndNetHTTP(1, be.endpoint()))
	var wg sync.WaitGroup
	var answered atomic.Int32
	for client := range 8 {
		c := dialRaw(t, g.Addr(80))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				path := []string{"/", "/late"}[(client+i)%2]
				if _, err := io.WriteString(c.c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
					return
				}
				resp, err := http.ReadResponse(c.br, nil)
				if err != nil {
					if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
						t.Errorf("client %d: %v, want an answer or the connection closed before it", client, err)
					}
					return
				}
				body, err := io.ReadAll(resp.Body)
				if err != nil || resp.StatusCode != 200 || string(body) != "ok" {
					t.Errorf("client %d: %d %q (%v): an answer cut", client, resp.StatusCode, body, err)
					return
				}
				answered.Add(1)
				if resp.Close {
					return
				}
			}
		}()
	}
	waitFor(t, "100 answers", func() bool { return answered.Load() >= 100 })
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := g.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	wg.Wait()
}

// requestServer is a backend on a raw connection: it reads each request
// of a connection (its body drained) and calls answer, which writes the
// answer on c (br is the connection's reader, for an upgrade) and
// returns false to end the connection. conns, when set, counts the
// connections.
func requestServer(t testing.TB, conns *atomic.Int32, answer func(c net.Conn, br *bufio.Reader, r *http.Request) bool) string {
	return server(t, func(c net.Conn) {
		if conns != nil {
			conns.Add(1)
		}
		br := bufio.NewReader(c)
		for {
			r, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, r.Body)
			if !answer(c, br, r) {
				return
			}
		}
	})
}
