package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// deadline bounds every wait of these tests; none of them measures time.
const deadline = 30 * time.Second

// running is a workload serving on a loopback port through serve, as run
// starts it, with the stop signal and the drain timer in the test's hands.
type running struct {
	url   string
	addr  string
	stop  context.CancelFunc // the stop signal
	exits chan int
	fire  chan time.Time // ends the drain delay
	delay chan time.Duration
	done  chan int // serve's exit code
}

// start runs s (whose routes are extended by extra, when not nil) the way
// run does.
func start(t *testing.T, s *server, extra func(mux *http.ServeMux)) *running {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	handler := s.routes()
	if extra != nil {
		mux := http.NewServeMux()
		mux.Handle("/", handler)
		extra(mux)
		handler = s.closeWhileDraining(mux)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{
		url: "http://" + ln.Addr().String(), addr: ln.Addr().String(), stop: cancel,
		exits: make(chan int, 1), fire: make(chan time.Time), delay: make(chan time.Duration, 1), done: make(chan int, 1),
	}
	after := func(d time.Duration) <-chan time.Time { r.delay <- d; return r.fire }
	srv := &http.Server{Handler: handler}
	go func() { r.done <- s.serve(ctx, srv, ln, r.exits, after) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(deadline):
			t.Errorf("serve did not return")
		}
	})
	return r
}

// exited waits for serve's exit code.
func (r *running) exited(t *testing.T) int {
	t.Helper()
	select {
	case code := <-r.done:
		r.done <- code // for the cleanup
		return code
	case <-time.After(deadline):
		t.Fatal("serve did not return")
		return -1
	}
}

// stillServing fails the test if serve has returned.
func (r *running) stillServing(t *testing.T) {
	t.Helper()
	select {
	case code := <-r.done:
		r.done <- code
		t.Fatalf("serve returned %d too early", code)
	default:
	}
}

// waitRefused waits until a new connection is refused: the listener is closed.
func (r *running) waitRefused(t *testing.T) {
	t.Helper()
	for end := time.Now().Add(deadline); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		c, err := net.Dial("tcp", r.addr)
		if err != nil {
			return
		}
		c.Close()
	}
	t.Fatal("the listener still accepts connections")
}

type answer struct {
	code  int
	body  string
	close bool // the response said "Connection: close"
	err   error
}

func get(c *http.Client, url string) answer {
	resp, err := c.Get(url)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{code: resp.StatusCode, body: string(b), close: resp.Close, err: err}
}

// keepAlive is a client connection that stays open between requests.
type keepAlive struct {
	conn net.Conn
	rd   *bufio.Reader
}

func dialKeepAlive(t *testing.T, addr string) *keepAlive {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &keepAlive{conn: c, rd: bufio.NewReader(c)}
}

func (k *keepAlive) get(t *testing.T, path string) answer {
	t.Helper()
	if _, err := fmt.Fprintf(k.conn, "GET %s HTTP/1.1\r\nHost: workload\r\n\r\n", path); err != nil {
		return answer{err: err}
	}
	resp, err := http.ReadResponse(k.rd, nil)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{code: resp.StatusCode, body: string(b), close: resp.Close, err: err}
}

// closedByServer waits until the server closes the idle connection.
func (k *keepAlive) closedByServer(t *testing.T) {
	t.Helper()
	_ = k.conn.SetReadDeadline(time.Now().Add(deadline))
	if n, err := k.rd.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("idle keep-alive connection: read %q, %v; want EOF (closed by the server)", n, err)
	}
}

// TestShutdownFinishesRequestsInFlight: on a stop signal without a drain
// delay, the listener closes and an idle keep-alive connection is closed
// at once, while a request in flight runs to its end (its response says
// "Connection: close"); then serve returns 0.
func TestShutdownFinishesRequestsInFlight(t *testing.T) {
	s := newServer(config{shutdownTimeout: deadline}, time.Now, func(int) {})
	entered, release := make(chan struct{}), make(chan struct{})
	r := start(t, s, func(mux *http.ServeMux) {
		mux.HandleFunc("GET /slow", func(w http.ResponseWriter, _ *http.Request) {
			close(entered)
			<-release
			fmt.Fprintln(w, "finished")
		})
	})
	idle := dialKeepAlive(t, r.addr)
	if a := idle.get(t, "/readyz"); a.err != nil || a.code != 200 || a.close {
		t.Fatalf("before the signal: %+v", a)
	}
	slow := make(chan answer, 1)
	go func() { slow <- get(&http.Client{}, r.url+"/slow") }()
	<-entered

	r.stop()
	idle.closedByServer(t)
	r.waitRefused(t)
	r.stillServing(t) // Shutdown waits for /slow
	if len(r.delay) != 0 {
		t.Error("drained without --drain-delay")
	}

	close(release)
	if a := <-slow; a.err != nil || a.code != 200 || a.body != "finished\n" || !a.close {
		t.Errorf("request in flight: %+v, want 200 \"finished\\n\" with Connection: close", a)
	}
	if code := r.exited(t); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
}

// TestShutdownTimeoutCutsStuckRequests: a request still running after
// --shutdown-timeout has its connection closed, and the process exits 0.
func TestShutdownTimeoutCutsStuckRequests(t *testing.T) {
	s := newServer(config{shutdownTimeout: time.Nanosecond}, time.Now, func(int) {})
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	r := start(t, s, func(mux *http.ServeMux) {
		mux.HandleFunc("GET /stuck", func(http.ResponseWriter, *http.Request) { close(entered); <-release })
	})
	stuck := make(chan answer, 1)
	go func() { stuck <- get(&http.Client{}, r.url+"/stuck") }()
	<-entered
	r.stop()
	if code := r.exited(t); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	select {
	case a := <-stuck:
		if a.err == nil {
			t.Errorf("the stuck request was answered: %+v", a)
		}
	case <-time.After(deadline):
		t.Fatal("the stuck request's connection was not closed")
	}
}

// TestDrainDelay: during --drain-delay the workload keeps serving new and
// keep-alive requests, but /readyz answers 503 and every response closes its
// connection; the drain ends when its timer fires (exit 0) or when an exit
// is asked for (that exit's code).
func TestDrainDelay(t *testing.T) {
	tests := []struct {
		name     string
		end      func(r *running)
		wantCode int
	}{
		{"timer fires", func(r *running) { close(r.fire) }, 0},
		{"exit during the drain", func(r *running) { r.exits <- 3 }, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(config{message: "hello", drainDelay: 7 * time.Second, shutdownTimeout: deadline}, time.Now, func(int) {})
			r := start(t, s, nil)
			ka := dialKeepAlive(t, r.addr)
			if a := ka.get(t, "/readyz"); a.err != nil || a.code != 200 || a.close {
				t.Fatalf("before the signal: %+v", a)
			}

			r.stop()
			select {
			case d := <-r.delay:
				if d != 7*time.Second {
					t.Errorf("drain delay %v, want 7s", d)
				}
			case <-time.After(deadline):
				t.Fatal("no drain")
			}
			// The keep-alive connection gets one more answer, which closes it.
			if a := ka.get(t, "/"); a.err != nil || a.code != 200 || !a.close {
				t.Errorf("keep-alive request while draining: %+v, want 200 with Connection: close", a)
			}
			ka.closedByServer(t)
			// New connections are still served, not ready, each closed.
			c := &http.Client{}
			if a := get(c, r.url+"/readyz"); a.err != nil || a.code != 503 || a.body != "draining\n" || !a.close {
				t.Errorf("GET /readyz while draining: %+v, want 503 \"draining\" with Connection: close", a)
			}
			if a := get(c, r.url+"/"); a.err != nil || a.code != 200 || !a.close {
				t.Errorf("GET / while draining: %+v, want 200 with Connection: close", a)
			}
			r.stillServing(t)

			tt.end(r)
			if code := r.exited(t); code != tt.wantCode {
				t.Errorf("exit code %d, want %d", code, tt.wantCode)
			}
			r.waitRefused(t)
		})
	}
}
