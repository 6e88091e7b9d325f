package dataplane

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

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
	addr := requestServer(t, nil, func(c net.Conn, br *bufio.Reader, r *http.Request) bool {
		switch {
		case r.URL.Path == "/first":
			io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
			close(first)
			<-more
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nalice's data!")
		default:
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
		return true
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
	addr := requestServer(t, &conns, func(c net.Conn, br *bufio.Reader, r *http.Request) bool {
		if r.URL.Path != "/late-body" {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody")
			return true
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n")
		time.Sleep(3 * fastWatchClientAfter)
		io.WriteString(c, "body")
		return true
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

// Pooled backend connections pass from one client's request to another's
// with the client watch's deadline left armed or expired: clients at once,
// each with answers at once and later than the watch's wait, get each
// answer whole.
func TestGatewayFastPathSharesPooledConnectionsBetweenClientsWithLateAnswers(t *testing.T) {
	addr := requestServer(t, nil, func(c net.Conn, br *bufio.Reader, r *http.Request) bool {
		if strings.HasPrefix(r.URL.Path, "/late") {
			time.Sleep(fastWatchClientAfter + 5*time.Millisecond)
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(r.URL.Path))+"\r\n\r\n")
		if strings.HasSuffix(r.URL.Path, "/split") {
			time.Sleep(fastWatchClientAfter + 5*time.Millisecond)
		}
		io.WriteString(c, r.URL.Path)
		return true
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
