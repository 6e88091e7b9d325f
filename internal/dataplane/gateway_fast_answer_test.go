package dataplane

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

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

// A pooled connection whose previous answer came at once keeps the client
// watch's deadline armed (awaitAnswer); the next request on it, sent
// before or after that deadline passed, may be answered late and in
// pieces, a head line at a time and a chunked body chunk by chunk, each
// later than the watch's wait: all of it is relayed.
func TestGatewayFastPathRelaysALateAnswerInPiecesOnAPooledConnection(t *testing.T) {
	var conns atomic.Int32
	pause := func() { time.Sleep(2 * fastWatchClientAfter) }
	addr := requestServer(t, &conns, func(c net.Conn, br *bufio.Reader, r *http.Request) bool {
		if r.URL.Path == "/fast" {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nfast")
			return true
		}
		for _, piece := range []string{"HTTP/1.1 200 OK\r\n", "Transfer-Encoding: chunked\r\n", "\r\n",
			"3\r\none\r\n", "3\r\ntwo\r\n", "5\r\nthree\r\n", "0\r\n\r\n"} {
			pause()
			io.WriteString(c, piece)
		}
		return true
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
