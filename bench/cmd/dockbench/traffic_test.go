package main

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingServer is an httptest server that counts the connections it
// accepted, so that a test can tell keep-alive from new connections.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func TestHTTPClientConnections(t *testing.T) {
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hello")) }
	closing := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = w.Write([]byte("bye"))
	}
	for _, tc := range []struct {
		name      string
		handler   http.HandlerFunc
		keepAlive bool
		wantConns int64
	}{
		{"keep-alive reuses one connection", ok, true, 1},
		{"new connection per request", ok, false, 5},
		{"a server announcing Connection: close is followed, not a failure", closing, true, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, conns := countingServer(t, tc.handler)
			c := newHTTPClient(strings.TrimPrefix(srv.URL, "http://"), tc.keepAlive)
			defer c.close()
			for i := 0; i < 5; i++ {
				if _, kind := c.do(); kind != "" {
					t.Fatalf("request %d failed: %s", i, kind)
				}
			}
			if got := conns.Load(); got != tc.wantConns {
				t.Errorf("server saw %d connections, want %d", got, tc.wantConns)
			}
		})
	}
}

// rawServer accepts connections and hands each to fn.
func rawServer(t *testing.T, fn func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go fn(c)
		}
	}()
	return ln.Addr().String()
}

func readRequest(c net.Conn) error {
	_, err := http.ReadRequest(bufio.NewReader(c))
	return err
}

func TestHTTPClientFailureKinds(t *testing.T) {
	closedAddr := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}
	for _, tc := range []struct {
		name string
		addr func(t *testing.T) string
		want string
	}{
		{"nothing listens", closedAddr, "connect: refused"},
		{"not 200", func(t *testing.T) string {
			srv, _ := countingServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
			return strings.TrimPrefix(srv.URL, "http://")
		}, "HTTP 503"},
		{"closed without an answer", func(t *testing.T) string {
			return rawServer(t, func(c net.Conn) { _ = readRequest(c); c.Close() })
		}, "answer: closed by the server"},
		{"reset without an answer", func(t *testing.T) string {
			return rawServer(t, func(c net.Conn) {
				_ = readRequest(c)
				_ = c.(*net.TCPConn).SetLinger(0) // close sends RST
				c.Close()
			})
		}, "answer: reset"},
		{"truncated body", func(t *testing.T) string {
			return rawServer(t, func(c net.Conn) {
				_ = readRequest(c)
				_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"))
				c.Close()
			})
		}, "body: closed by the server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newHTTPClient(tc.addr(t), true)
			defer c.close()
			if _, kind := c.do(); kind != tc.want {
				t.Errorf("kind %q, want %q", kind, tc.want)
			}
			if c.conn != nil {
				t.Error("the connection is kept after a failure")
			}
		})
	}
}

// A keep-alive connection the server closes between two requests is a
// failure of its own kind: the one a resending client would hide.
func TestHTTPClientReusedConnectionClosed(t *testing.T) {
	closed := make(chan struct{})
	addr := rawServer(t, func(c net.Conn) {
		_ = readRequest(c)
		_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		c.Close()
		close(closed)
	})
	c := newHTTPClient(addr, true)
	defer c.close()
	if _, kind := c.do(); kind != "" {
		t.Fatalf("first request failed: %s", kind)
	}
	<-closed
	_, kind := c.do()
	if !strings.HasSuffix(kind, "(reused keep-alive connection)") {
		t.Errorf("kind %q, want a failure on the reused connection", kind)
	}
}

func TestMeasureFailures(t *testing.T) {
	t.Run("counts every request of both clients", func(t *testing.T) {
		srv, _ := countingServer(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
		ran := false
		res, err := measureFailures(context.Background(), strings.TrimPrefix(srv.URL, "http://"), func(context.Context) error {
			ran = true
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !ran {
			t.Error("the operation did not run")
		}
		if len(res) != len(trafficModes) {
			t.Fatalf("%d results, want one per mode", len(res))
		}
		for _, r := range res {
			if r.Sent == 0 || r.Failed != 0 || len(r.Kinds) != 0 {
				t.Errorf("%s: sent %d failed %d %v, want some sent and none failed", r.Mode, r.Sent, r.Failed, r.Kinds)
			}
		}
	})
	t.Run("a path broken before the operation is an error", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		ran := false
		_, err = measureFailures(context.Background(), addr, func(context.Context) error { ran = true; return nil })
		if err == nil || !strings.Contains(err.Error(), "already fails before the operation") {
			t.Errorf("err %v, want the path reported broken", err)
		}
		if ran {
			t.Error("the operation ran on a broken path")
		}
	})
	t.Run("the operation's error is returned", func(t *testing.T) {
		srv, _ := countingServer(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
		boom := errors.New("boom")
		if _, err := measureFailures(context.Background(), strings.TrimPrefix(srv.URL, "http://"), func(context.Context) error { return boom }); !errors.Is(err, boom) {
			t.Errorf("err %v, want %v", err, boom)
		}
	})
}

func TestTrafficResultKinds(t *testing.T) {
	r := trafficResult{Kinds: map[string]int{"connect: refused": 3, "answer: reset": 7, "HTTP 502": 3}}
	if got, want := r.kindsString(), "answer: reset ×7, HTTP 502 ×3, connect: refused ×3"; got != want {
		t.Errorf("kindsString() = %q, want %q", got, want)
	}
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	for _, tc := range []struct {
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{nil, 0.5, 0},
		{ms(7), 0.99, 7 * time.Millisecond},
		{ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{ms(1, 2, 3, 4, 5), 0.5, 3 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.99, 10 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.9, 9 * time.Millisecond},
	} {
		if got := percentile(tc.sorted, tc.q); got != tc.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", tc.sorted, tc.q, got, tc.want)
		}
	}
}

func TestFormatValue(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		unit string
		want string
	}{
		{812.4, "µs", "812 µs"},
		{1234, "µs", "1.23 ms"},
		{13140.7, "req/s", "13141 req/s"},
		{0, "failed", "0 failed"},
		{208, "failed", "208 failed"},
		{423.6, "ms", "424 ms"},
		{12345, "ms", "12.35 s"},
		{0.6, "%", "0.6 %"},
		{21.5, "MiB", "21.5 MiB"},
		{22, "", "22"},
	} {
		if got := formatValue(tc.v, tc.unit); got != tc.want {
			t.Errorf("formatValue(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
}
