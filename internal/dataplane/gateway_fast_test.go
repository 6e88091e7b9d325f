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

func TestGatewayFastPathParseDecidesWhatItRelays(t *testing.T) {
	for _, tc := range []struct {
		name           string
		head           string
		complete, fast bool
	}{
		{"a GET", "GET /a?b=c HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n", true, true},
		{"a POST of known length", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n", true, true},
		{"a body over 64 KiB", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 65537\r\n\r\n", false, false},
		{"Connection: close", "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", true, true},
		{"a head not yet complete", "GET / HTTP/1.1\r\nHost: x\r\n", false, true},
		{"a request line not yet complete", "GET /a", false, true},
		{"HTTP/1.0", "GET / HTTP/1.0\r\nHost: x\r\n\r\n", false, false},
		{"the h2c preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", false, false},
		{"an absolute-form target", "GET http://x/ HTTP/1.1\r\nHost: x\r\n\r\n", false, false},
		{"a WebSocket upgrade", "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", false, false},
		{"an h2c upgrade", "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n", false, false},
		{"Expect: 100-continue", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n", false, false},
		{"a chunked body", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", false, false},
		{"Content-Length and Transfer-Encoding (smuggling)", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", false, false},
		{"two Content-Lengths (smuggling)", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 30\r\n\r\n", false, false},
		{"two equal Content-Lengths", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n", false, false},
		{"a signed Content-Length", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\n", false, false},
		{"a Content-Length not a number", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x3\r\n\r\n", false, false},
		{"an obs-fold", "GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n 2\r\n\r\n", false, false},
		{"a bare LF", "GET / HTTP/1.1\nHost: x\n\n", false, false},
		{"a space before the colon", "GET / HTTP/1.1\r\nHost : x\r\n\r\n", false, false},
		{"a control byte in a value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n", false, false},
		{"no Host", "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", false, false},
		{"two Hosts", "GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", false, false},
		{"an invalid Host", "GET / HTTP/1.1\r\nHost: x/y\r\n\r\n", false, false},
		{"a Connection naming a header", "GET / HTTP/1.1\r\nHost: x\r\nConnection: X-Secret\r\n\r\n", false, false},
		{"TE: trailers", "GET / HTTP/1.1\r\nHost: x\r\nTE: trailers\r\n\r\n", false, false},
		{"a TLS handshake", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r fastRequest
			complete, fast := parseRequestHead([]byte(tc.head), &r)
			if complete != tc.complete || fast != tc.fast {
				t.Errorf("parseRequestHead = complete %v, fast %v; want %v, %v", complete, fast, tc.complete, tc.fast)
			}
		})
	}
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

// The answer is relayed by its framing, and the client's connection is
// kept only when the answer's end is known.
func TestGatewayFastPathRelaysResponsesByFraming(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 10<<10) // 160 KiB
	answers := map[string]string{
		"/length":  "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"/chunked": "HTTP/1.1 200 OK\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 11\r\n\r\n",
		"/both":    "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"/head":    "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",
		"/nocont":  "HTTP/1.1 204 No Content\r\n\r\n",
		"/notmod":  "HTTP/1.1 304 Not Modified\r\nContent-Length: 1000\r\n\r\n",
		"/hints":   "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/close":   "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
		"/eof":     "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end",
		// Larger than the connections' buffers: through pooled ones.
		"/big":        "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(big)) + "\r\n\r\n" + big,
		"/bigchunked": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + strconv.FormatInt(int64(len(big)), 16) + "\r\n" + big + "\r\n1\r\n!\r\n0\r\n\r\n",
		"/bigeof":     "HTTP/1.1 200 OK\r\n\r\n" + big,
	}
	be := newRawBackend(t, func(r *http.Request) (string, bool) {
		resp := answers[r.URL.Path]
		return resp, strings.Contains(resp, "Connection: close") || strings.HasSuffix(r.URL.Path, "eof")
	})
	g, access := newTestGateway(t, 1)
	mustApplyGateway(t, g, fastAndNetHTTP(1, be.endpoint()))
	for _, tc := range []struct {
		name, method, path string
		status             int
		body               string
		trailer            string
		keptAlive          bool
	}{
		{"known length", "GET", "/length", 200, "hello", "", true},
		{"chunked, with trailers", "GET", "/chunked", 200, "hello world", "11", true},
		{"chunked over a Content-Length", "GET", "/both", 200, "hello", "", true},
		{"HEAD", "HEAD", "/head", 200, "", "", true},
		{"204", "GET", "/nocont", 204, "", "", true},
		{"304", "GET", "/notmod", 304, "", "", true},
		{"103 before the answer", "GET", "/hints", 200, "ok", "", true},
		{"the backend closes: the client's connection stays", "GET", "/close", 200, "ok", "", true},
		{"close-delimited: the client's connection closes", "GET", "/eof", 200, "until the end", "", false},
		{"a large body of known length", "GET", "/big", 200, big, "", true},
		{"a large chunk", "GET", "/bigchunked", 200, big + "!", "", true},
		{"a large close-delimited body", "GET", "/bigeof", 200, big, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, g.Addr(80))
			resp, body := c.do(tc.method, tc.method+" "+tc.path+" HTTP/1.1\r\nHost: x\r\n\r\n")
			if resp.StatusCode != tc.status || body != tc.body || resp.Trailer.Get("X-Sum") != tc.trailer {
				t.Errorf("%d %q trailer %q, want %d %q trailer %q", resp.StatusCode, short(body), resp.Trailer.Get("X-Sum"), tc.status, short(tc.body), tc.trailer)
			}
			if resp.Close == tc.keptAlive {
				t.Errorf("Connection: close %v, want %v", resp.Close, !tc.keptAlive)
			}
			if !tc.keptAlive {
				if !c.closedByPeer() {
					t.Error("the client's connection was not closed after a close-delimited answer")
				}
				return
			}
			// The connection serves the next request.
			if resp, body := c.do("GET", "GET /length HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || body != "hello" {
				t.Errorf("the next request: %d %q", resp.StatusCode, body)
			}
		})
	}
	waitFor(t, "the pooled buffers to be given back", func() bool { return httpBuffers.out.Load() == 0 })
	waitFor(t, "an access log line per request", func() bool {
		return strings.Count(access.String(), "\n") == 22 // two per kept-alive case
	})
	var line struct {
		Method, Host, Path, Proto, Client, Route, Backend, Upstream string
		Status                                                      int
		Bytes                                                       int64
	}
	// The chunked answer's line, wherever it is: a line is written once
	// its answer is, so the next case's request may be logged first.
	var found string
	for _, l := range strings.Split(strings.TrimSpace(access.String()), "\n") {
		if strings.Contains(l, `"/chunked"`) {
			found = l
		}
	}
	if err := json.Unmarshal([]byte(found), &line); err != nil {
		t.Fatalf("no access log line of /chunked: %v\n%s", err, access.String())
	}
	if line.Method != "GET" || line.Host != "x" || line.Path != "/chunked" || line.Proto != "HTTP/1.1" || line.Status != 200 ||
		line.Bytes != 11 || line.Route != "test /" || line.Backend != "default/web:80" || line.Upstream != be.addr.String() || line.Client == "" {
		t.Errorf("access log line %s", found)
	}
}

func short(s string) string {
	if len(s) > 40 {
		return s[:20] + "…" + s[len(s)-20:] + " (" + strconv.Itoa(len(s)) + " bytes)"
	}
	return s
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

// A pooled connection that the backend closed between two requests (a
// pod stopping, its idle timeout) fails the next request before any byte
// of an answer: a GET is sent again on a new connection, not failed. One
// that dies once a POST was written to it is not sent that POST again.
func TestGatewayFastPathRetriesAPooledConnectionClosedByTheBackend(t *testing.T) {
	// The backend closes every connection after its answer without
	// saying so (no Connection: close): the gateway pools it. /keep's
	// stays open; a POST's is closed with no answer, after the gateway
	// chose it.
	be := newRawBackend(t, func(r *http.Request) (string, bool) {
		switch {
		case r.Method == "POST":
			return "", true
		case r.URL.Path == "/keep":
			return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false
		}
		return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true
	})
	g, _ := newTestGateway(t, 1)
	mustApplyGateway(t, g, fastAndNetHTTP(1, be.endpoint()))
	c := dialRaw(t, g.Addr(80))
	for i := range 3 {
		if resp, body := c.do("GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("request %d: %d %q, want 200", i, resp.StatusCode, body)
		}
		<-be.closed // closed before the next request goes out
	}
	if n := be.conns.Load(); n != 3 {
		t.Errorf("%d connections to the backend, want 3", n)
	}
	if resp, _ := c.do("GET", "GET /keep HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 {
		t.Fatalf("GET /keep: %d", resp.StatusCode)
	}
	// A POST with a body is not sent twice: 502.
	if resp, _ := c.do("POST", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"); resp.StatusCode != 502 {
		t.Errorf("a POST on a pooled connection closed once chosen: %d, want 502", resp.StatusCode)
	}
	be.mu.Lock()
	posts := 0
	for _, h := range be.heads {
		if strings.HasPrefix(h, "POST ") {
			posts++
		}
	}
	be.mu.Unlock()
	if posts != 1 {
		t.Errorf("the POST reached the backend %d times, want once", posts)
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

// A backend that closes its idle keep-alive connections (Node.js after 5
// s, a pod stopping) loses no request: net/http's Transport sees the
// close on the idle connection and dials anew, so a POST is not failed.
func TestGatewayFastPathPostAfterTheBackendClosedItsIdleConnection(t *testing.T) {
	be := newRawBackend(t, func(*http.Request) (string, bool) {
		return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true
	})
	g, _ := newTestGateway(t, 1)
	mustApplyGateway(t, g, fastAndNetHTTP(1, be.endpoint()))
	c := dialRaw(t, g.Addr(80))
	if resp, _ := c.do("GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	<-be.closed // idle and closed long before the POST
	if resp, _ := c.do("POST", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"); resp.StatusCode != 200 {
		t.Errorf("a POST after the backend closed an idle connection: %d, want 200", resp.StatusCode)
	}
}

// Bytes an endpoint sends on a connection between two requests (a second
// answer, a body after a 204) are no answer to the next request, which may
// be another client's: net/http's Transport closes such a connection
// ("Unsolicited response received on idle HTTP channel").
func TestGatewayFastPathUnsolicitedBytesReachNoOtherClient(t *testing.T) {
	first, more := make(chan struct{}), make(chan struct{})
	addr := server(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for i := 0; ; i++ {
			r, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, r.Body)
			switch {
			case r.URL.Path == "/first":
				io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
				close(first)
				<-more
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nalice's data!")
			default:
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
		}
	})
	g := gatewayServing(t, addr)
	alice := dialRaw(t, g.Addr(80))
	if resp, _ := alice.do("GET", "GET /first HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 204 {
		t.Fatalf("alice: %d", resp.StatusCode)
	}
	<-first
	close(more)
	bob := dialRaw(t, g.Addr(80))
	if resp, body := bob.do("GET", "GET /bob HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || body != "ok" {
		t.Errorf("bob got %d %q, want his own answer 200 \"ok\"", resp.StatusCode, body)
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

// A request body longer than what the connection's first read brings
// overwrites, as it is read, the head the fast path parsed: the access log
// then names a path the client never asked for, and the method that picks
// the response's framing (HEAD: no body) can be the body's bytes.
func TestGatewayFastPathKeepsTheHeadOfALargePost(t *testing.T) {
	be := newRawBackend(t, ok200)
	g, access := newTestGateway(t, 1)
	mustApplyGateway(t, g, fastAndNetHTTP(1, be.endpoint()))
	for i, tc := range []struct {
		name string
		// atRefill is what the body has where the connection's buffer
		// (fastBufSize) ends, the bytes its next read writes first.
		atRefill string
	}{
		{"the path logged", "xxxx"},
		{"the method that frames the answer", "HEAD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := "POST /upload HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 5000\r\n\r\n"
			body := []byte(strings.Repeat("x", 5000))
			copy(body[fastBufSize-len(head):], tc.atRefill)
			c := dialRaw(t, g.Addr(80))
			resp, got := c.do("POST", head+string(body))
			if resp.StatusCode != 200 || got != "ok" {
				t.Errorf("%d %q, want 200 \"ok\"", resp.StatusCode, got)
			}
			waitFor(t, "the access log line", func() bool { return strings.Count(access.String(), "\n") == i+1 })
			var line struct {
				Method, Path string
				Bytes        int
			}
			if err := json.Unmarshal([]byte(strings.Split(access.String(), "\n")[i]), &line); err != nil {
				t.Fatal(err)
			}
			if line.Method != "POST" || line.Path != "/upload" || line.Bytes != 2 {
				t.Errorf("access log: %s %q, %d bytes; want POST /upload, 2 bytes", line.Method, short(line.Path), line.Bytes)
			}
		})
	}
}

// An answer whose last transfer coding is chunked ("gzip, chunked", RFC
// 9112 §6.1) ends with its last chunk, not with the connection: the
// endpoint keeps the connection open, and the request still ends (its
// access log line written, the client's connection free for the next).
func TestGatewayFastPathEndsAnAnswerChunkedLast(t *testing.T) {
	stop := make(chan struct{})
	addr := server(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
		<-stop // kept alive, as a keep-alive endpoint does
	})
	tcp, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	g, access := newTestGateway(t, 1)
	t.Cleanup(func() { close(stop) })
	mustApplyGateway(t, g, fastAndNetHTTP(1, endpointOf(tcp)))
	c := dialRaw(t, g.Addr(80))
	if _, err := io.WriteString(c.c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the request's access log line", func() bool { return strings.Count(access.String(), "\n") == 1 })
}

// An answer head larger than net/http's server limit for request heads
// (1 MB) but within the Transport's MaxResponseHeaderBytes default (10 MB,
// the gateway's Transport sets none) is relayed by ReverseProxy: the fast
// path answers as it does.
func TestGatewayFastPathRelaysAnAnswerHeadAsLargeAsReverseProxyDoes(t *testing.T) {
	heads := map[string]int{"/1mbplus1": 1<<20 + 1, "/2mb": 2 << 20}
	be := newRawBackend(t, func(r *http.Request) (string, bool) {
		size := heads[strings.TrimPrefix(r.URL.Path, "/nethttp")]
		var b strings.Builder
		b.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n")
		for i := 0; b.Len() < size-2; i++ {
			line := "X-Big-" + strconv.Itoa(i) + ": "
			n := min(8000, size-2-b.Len()-len(line)-2)
			if n < 1 {
				line, n = "X: ", max(1, size-2-b.Len()-5)
			}
			b.WriteString(line + strings.Repeat("a", n) + "\r\n")
		}
		b.WriteString("\r\nok")
		return b.String(), false
	})
	g, _ := newTestGateway(t, 1)
	mustApplyGateway(t, g, fastAndNetHTTP(1, be.endpoint()))
	for _, path := range []string{"/1mbplus1", "/2mb"} {
		t.Run(path, func(t *testing.T) {
			want, _ := dialRaw(t, g.Addr(80)).do("GET", "GET /nethttp"+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
			got, _ := dialRaw(t, g.Addr(80)).do("GET", "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
			if got.StatusCode != want.StatusCode {
				t.Errorf("fast path %d, net/http's path %d", got.StatusCode, want.StatusCode)
			}
		})
	}
}

// An answer slower than the fast path's client watch (a backend taking 100
// ms) is relayed whole, on a fresh or a pooled backend connection, with
// the request the client pipelined meanwhile answered next and in order,
// the client's connection kept for a slow upload after it, and each
// request logged with the status it was answered.
func TestGatewayFastPathRelaysSlowAnswersAndWhatWasPipelinedMeanwhile(t *testing.T) {
	arrived := make(chan string, 16)
	be := newRawBackend(t, func(r *http.Request) (string, bool) {
		arrived <- r.URL.Path
		if strings.HasPrefix(r.URL.Path, "/slow") {
			time.Sleep(100 * time.Millisecond)
		}
		body := r.URL.Path
		return "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body, false
	})
	g, access := newTestGateway(t, 1)
	mustApplyGateway(t, g, fastAndNetHTTP(1, be.endpoint()))
	c := dialRaw(t, g.Addr(80))
	read := func(method, want string) {
		t.Helper()
		resp, err := http.ReadResponse(c.br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("waiting for %s: %v", want, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 || string(body) != want {
			t.Fatalf("got %d %q (%v), want 200 %q", resp.StatusCode, body, err, want)
		}
	}
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(c.c, s); err != nil {
			t.Fatal(err)
		}
	}
	for _, slow := range []string{"/slow1", "/slow2"} { // fresh, then pooled
		send("GET " + slow + " HTTP/1.1\r\nHost: x\r\n\r\n")
		<-arrived
		time.Sleep(50 * time.Millisecond) // the client watch is running
		send("GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
		read("GET", slow)
		read("GET", "/next")
		<-arrived
	}
	send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n")
	time.Sleep(100 * time.Millisecond) // a slow upload
	send("abc")
	read("POST", "/upload")
	waitFor(t, "5 access log lines", func() bool { return strings.Count(access.String(), "\n") == 5 })
	if n := strings.Count(access.String(), `"status":502`); n > 0 {
		t.Errorf("%d requests logged 502:\n%s", n, access.String())
	}
}

// net/http's Transport ignores an HTTP/1.0 answer's Transfer-Encoding
// (RFC 9112 §6.1: a 1.0 recipient does not know it; transfer.go's
// parseTransferEncoding): the answer is framed by its length or its close
// and relayed, where an HTTP/1.1 one with such a coding fails (502).
func TestGatewayFastPathFramesAnHTTP10AnswerAsReverseProxy(t *testing.T) {
	answers := map[string]string{
		"/gzip":  "HTTP/1.0 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 2\r\n\r\nok",
		"/twice": "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\nok",
	}
	be := newRawBackend(t, func(r *http.Request) (string, bool) {
		return answers[strings.TrimPrefix(r.URL.Path, "/nethttp")], true
	})
	g, _ := newTestGateway(t, 1)
	mustApplyGateway(t, g, fastAndNetHTTP(1, be.endpoint()))
	for _, path := range []string{"/gzip", "/twice"} {
		t.Run(path, func(t *testing.T) {
			want, wantBody := dialRaw(t, g.Addr(80)).do("GET", "GET /nethttp"+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
			got, gotBody := dialRaw(t, g.Addr(80)).do("GET", "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
			if got.StatusCode != want.StatusCode || gotBody != wantBody {
				t.Errorf("fast path %d %q, net/http's path %d %q", got.StatusCode, gotBody, want.StatusCode, wantBody)
			}
		})
	}
}

// An endpoint that closes a kept-alive connection without answering the
// request sent on it, after a while (a pod stopping slowly, an overloaded
// server), answered nothing: net/http's Transport sends a GET once more
// on a new connection (errServerClosedIdle, whenever the close comes), and
// so does the fast path, also once its client watch has started.
func TestGatewayFastPathRetriesAGetWhoseReusedConnectionClosesLate(t *testing.T) {
	addr := server(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for i := 0; ; i++ {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			if i == 1 {
				time.Sleep(50 * time.Millisecond) // longer than the fast path's 20 ms
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	g := gatewayServing(t, addr)
	for _, prefix := range []string{"/nethttp", ""} {
		t.Run("via "+prefix, func(t *testing.T) {
			c := dialRaw(t, g.Addr(80))
			c.do("GET", "GET "+prefix+"/first HTTP/1.1\r\nHost: x\r\n\r\n")
			if resp, body := c.do("GET", "GET "+prefix+"/second HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || body != "ok" {
				t.Errorf("the GET on the connection closed late: %d %q, want 200 \"ok\"", resp.StatusCode, body)
			}
		})
	}
}

// The client watch's deadline on a backend connection (awaitAnswer) is
// left armed once the answer's first byte came: an answer's rest that
// comes later than the watch's wait is still relayed, and a pooled
// connection idle for longer than it is still reused.
func TestGatewayFastPathOutlivesTheClientWatchsDeadline(t *testing.T) {
	var conns atomic.Int32
	addr := server(t, func(c net.Conn) {
		conns.Add(1)
		br := bufio.NewReader(c)
		for {
			r, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, r.Body)
			if r.URL.Path != "/late-body" {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody")
				continue
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n")
			time.Sleep(3 * fastWatchClientAfter)
			io.WriteString(c, "body")
		}
	})
	g := gatewayServing(t, addr)
	c := dialRaw(t, g.Addr(80))
	for _, path := range []string{"/late-body", "/", "/after-an-idle-wait"} {
		if path == "/after-an-idle-wait" {
			time.Sleep(3 * fastWatchClientAfter) // the deadline expires while the connection is pooled
		}
		if resp, body := c.do("GET", "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || body != "body" {
			t.Fatalf("%s: %d %q, want 200 \"body\"", path, resp.StatusCode, body)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections to the backend, want the pooled one reused", n)
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

// A kept-alive connection's next request head may come in pieces (the
// head timeout is armed only then): split after each of its bytes, each
// request is still relayed.
func TestGatewayFastPathReadsAHeadSplitAtAnyByte(t *testing.T) {
	be := newRawBackend(t, ok200)
	g, _ := newTestGateway(t, 1)
	mustApplyGateway(t, g, fastAndNetHTTP(1, be.endpoint()))
	c := dialRaw(t, g.Addr(80))
	head := "GET /split HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n\r\n"
	for i := 1; i < len(head); i++ {
		if _, err := io.WriteString(c.c, head[:i]); err != nil {
			t.Fatal(err)
		}
		// A pause, so that the pieces come in two segments; nothing of
		// an incomplete head reaches the backend.
		time.Sleep(time.Millisecond)
		if n := be.requests(); n != i-1 {
			t.Fatalf("split at %d: the backend saw %d requests before the head was whole, want %d", i, n, i-1)
		}
		resp, body := c.do("GET", head[i:])
		if resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("split at %d: %d %q, want 200 \"ok\"", i, resp.StatusCode, body)
		}
	}
}

// A pooled connection whose previous answer came at once keeps the client
// watch's deadline armed (awaitAnswer); the next request on it, sent
// before or after that deadline passed, may be answered late and in
// pieces, a head line at a time and a chunked body chunk by chunk, each
// later than the watch's wait: all of it is relayed.
func TestGatewayFastPathRelaysALateAnswerInPiecesOnAPooledConnection(t *testing.T) {
	var conns atomic.Int32
	pause := func() { time.Sleep(2 * fastWatchClientAfter) }
	addr := server(t, func(c net.Conn) {
		conns.Add(1)
		br := bufio.NewReader(c)
		for {
			r, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, r.Body)
			if r.URL.Path == "/fast" {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nfast")
				continue
			}
			for _, piece := range []string{"HTTP/1.1 200 OK\r\n", "Transfer-Encoding: chunked\r\n", "\r\n",
				"3\r\none\r\n", "3\r\ntwo\r\n", "5\r\nthree\r\n", "0\r\n\r\n"} {
				pause()
				io.WriteString(c, piece)
			}
		}
	})
	g := gatewayServing(t, addr)
	c := dialRaw(t, g.Addr(80))
	for i, req := range []struct{ method, head, want string }{
		{"GET", "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n", "fast"},
		{"GET", "GET /late HTTP/1.1\r\nHost: x\r\n\r\n", "onetwothree"}, // at once: the deadline not passed yet
		{"GET", "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n", "fast"},
		{"POST", "POST /late HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi", "onetwothree"},
		{"GET", "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n", "fast"},
		{"WAIT", "GET /late HTTP/1.1\r\nHost: x\r\n\r\n", "onetwothree"}, // after the deadline passed
	} {
		if req.method == "WAIT" {
			pause()
			req.method = "GET"
		}
		if resp, body := c.do(req.method, req.head); resp.StatusCode != 200 || body != req.want {
			t.Fatalf("request %d: %d %q, want 200 %q", i, resp.StatusCode, body, req.want)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections to the backend, want the pooled one reused", n)
	}
}

// A WebSocket upgrade on a connection that was served by the fast path
// first is handed over to net/http with no read deadline of the fast
// path's left: the upgraded connection carries data both ways.
func TestGatewayFastPathHandsOverAnUpgradeAfterFastRequests(t *testing.T) {
	addr := server(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			r, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, r.Body)
			if r.Header.Get("Upgrade") == "" {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				continue
			}
			io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
			// Echo, as a WebSocket server echoes frames.
			io.Copy(c, br)
			return
		}
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

// Pooled backend connections pass from one client's request to another's
// with the client watch's deadline left armed or expired: clients at once,
// each with answers at once and later than the watch's wait, get each
// answer whole.
func TestGatewayFastPathSharesPooledConnectionsBetweenClientsWithLateAnswers(t *testing.T) {
	addr := server(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			r, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, r.Body)
			if strings.HasPrefix(r.URL.Path, "/late") {
				time.Sleep(fastWatchClientAfter + 5*time.Millisecond)
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(r.URL.Path))+"\r\n\r\n")
			if strings.HasSuffix(r.URL.Path, "/split") {
				time.Sleep(fastWatchClientAfter + 5*time.Millisecond)
			}
			io.WriteString(c, r.URL.Path)
		}
	})
	g := gatewayServing(t, addr)
	var wg sync.WaitGroup
	for client := range 6 {
		c := dialRaw(t, g.Addr(80))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				path := []string{"/fast", "/late", "/fast/split", "/late/split"}[(client+i)%4] + "/" + strconv.Itoa(client)
				io.WriteString(c.c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
				resp, err := http.ReadResponse(c.br, nil)
				if err != nil {
					t.Errorf("client %d, %s: %v", client, path, err)
					return
				}
				body, err := io.ReadAll(resp.Body)
				if err != nil || resp.StatusCode != 200 || string(body) != path {
					t.Errorf("client %d: %d %q (%v), want 200 %q", client, resp.StatusCode, body, err, path)
					return
				}
			}
		}()
	}
	wg.Wait()
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
