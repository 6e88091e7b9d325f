package dataplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dockctl/dockctl/internal/helperapi"
)

func TestProxyRoundRobin(t *testing.T) {
	a, b, c := newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "c")
	p := newTestProxy(t, ProxyOptions{})
	mustApply(t, p, config(1, tcpPort(80, a.endpoint(), b.endpoint(), c.endpoint())))
	addr := p.Addr(helperapi.TCP, 80)
	var got []string
	for range 9 {
		got = append(got, once(t, addr))
	}
	if want := "a b c a b c a b c"; strings.Join(got, " ") != want {
		t.Errorf("backends reached: %q, want %q", strings.Join(got, " "), want)
	}
	for _, be := range []*backend{a, b, c} {
		if n := be.conns.Load(); n != 3 {
			t.Errorf("backend %s accepted %d connections, want 3", be.name, n)
		}
	}
}

// countingDial counts the dials to each address.
type countingDial struct {
	mu sync.Mutex
	n  map[string]int
}

func (d *countingDial) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	if d.n == nil {
		d.n = map[string]int{}
	}
	d.n[addr]++
	d.mu.Unlock()
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

func (d *countingDial) count(ep helperapi.Endpoint) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n[net.JoinHostPort(ep.IP, fmt.Sprint(ep.Port))]
}

func TestProxyDialFailureFallsThrough(t *testing.T) {
	live := newBackend(t, "live")
	d1, d2 := deadEndpoint(t), deadEndpoint(t)
	tests := []struct {
		name string
		eps  []helperapi.Endpoint
	}{
		{"dead first", []helperapi.Endpoint{d1, live.endpoint()}},
		{"two dead first", []helperapi.Endpoint{d1, d2, live.endpoint()}},
		{"dead last", []helperapi.Endpoint{live.endpoint(), d1}},
		{"dead around", []helperapi.Endpoint{d1, live.endpoint(), d2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var dials countingDial
			p := newTestProxy(t, ProxyOptions{Dial: dials.dial})
			mustApply(t, p, config(1, tcpPort(80, tc.eps...)))
			const conns = 6
			for i := range conns {
				if got := once(t, p.Addr(helperapi.TCP, 80)); got != "live" {
					t.Fatalf("connection %d reached %q", i, got)
				}
			}
			if n := dials.count(live.endpoint()); n != conns {
				t.Errorf("live endpoint dialled %d times for %d connections", n, conns)
			}
			// Round robin still spreads the start, so each dead endpoint is
			// tried by some connections, never twice by one.
			for _, d := range []helperapi.Endpoint{d1, d2} {
				if n := dials.count(d); n > conns {
					t.Errorf("dead endpoint %v dialled %d times for %d connections", d, n, conns)
				}
			}
		})
	}
}

func TestProxyAllEndpointsFailResetsClient(t *testing.T) {
	d1, d2, d3 := deadEndpoint(t), deadEndpoint(t), deadEndpoint(t)
	var dials countingDial
	p := newTestProxy(t, ProxyOptions{Dial: dials.dial})
	mustApply(t, p, config(1, tcpPort(80, d1, d2, d3)))
	if err := refused(t, p.Addr(helperapi.TCP, 80)); err != nil {
		t.Fatal(err)
	}
	// The client learns once every endpoint was tried: each exactly once.
	for _, d := range []helperapi.Endpoint{d1, d2, d3} {
		if n := dials.count(d); n != 1 {
			t.Errorf("endpoint %v dialled %d times, want 1", d, n)
		}
	}
}

func TestProxyNoEndpointsClosesAtOnce(t *testing.T) {
	p := newTestProxy(t, ProxyOptions{})
	mustApply(t, p, config(1, tcpPort(80)))
	if err := refused(t, p.Addr(helperapi.TCP, 80)); err != nil {
		t.Fatal(err)
	}
	// And endpoints arriving later are used by the next connection.
	a := newBackend(t, "a")
	mustApply(t, p, config(2, tcpPort(80, a.endpoint())))
	if got := once(t, p.Addr(helperapi.TCP, 80)); got != "a" {
		t.Fatalf("reached %q, want a", got)
	}
}

func TestProxyEndpointRemovalKeepsOpenConnections(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	p := newTestProxy(t, ProxyOptions{})
	mustApply(t, p, config(1, tcpPort(80, a.endpoint())))
	addr := p.Addr(helperapi.TCP, 80)
	open := dial(t, addr)
	if got := open.mustAsk("before"); got != "a" {
		t.Fatalf("reached %q, want a", got)
	}

	mustApply(t, p, config(2, tcpPort(80, b.endpoint())))

	// The connection opened before the removal still talks to a…
	for i := range 3 {
		if got := open.mustAsk(fmt.Sprint("after-", i)); got != "a" {
			t.Fatalf("open connection now reaches %q, want a", got)
		}
	}
	// …while every new one goes to b, and a accepted nothing new.
	for i := range 5 {
		if got := once(t, addr); got != "b" {
			t.Fatalf("new connection %d reached %q, want b", i, got)
		}
	}
	if n := a.conns.Load(); n != 1 {
		t.Errorf("removed endpoint accepted %d connections, want only the first", n)
	}
	if got := open.mustAsk("last"); got != "a" {
		t.Fatalf("open connection now reaches %q, want a", got)
	}
}

// TestProxyApplyWaitsForDialsInFlight: a connection that chose an endpoint
// from the old config and is still dialling it holds Apply, so that once
// Apply returned (and the push was acknowledged) the removed endpoint gets
// no new connection.
func TestProxyApplyWaitsForDialsInFlight(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	aAddr := a.ln.Addr().String()
	entered := make(chan struct{})
	release := make(chan struct{})
	var released atomic.Bool
	var once sync.Once
	dialer := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == aAddr {
			once.Do(func() { close(entered) })
			<-release
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	p := newTestProxy(t, ProxyOptions{Dial: dialer, DialTimeout: deadline})
	mustApply(t, p, config(1, tcpPort(80, a.endpoint())))
	c := dial(t, p.Addr(helperapi.TCP, 80))
	<-entered // the proxy is dialling a for c

	go func() {
		// Whatever the scheduling, a correct Apply cannot return before
		// this runs; an Apply that does not wait returns well before.
		time.Sleep(100 * time.Millisecond)
		released.Store(true)
		close(release)
	}()
	mustApply(t, p, config(2, tcpPort(80, b.endpoint())))
	if !released.Load() {
		t.Fatal("Apply returned while a dial to the removed endpoint was in flight")
	}
	if got := c.mustAsk("hello"); got != "a" {
		t.Errorf("the connection accepted before the change reached %q, want a", got)
	}
}

func TestProxyListenerAddRemove(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	p := newTestProxy(t, ProxyOptions{})
	mustApply(t, p, config(1, tcpPort(80, a.endpoint())))
	if p.Addr(helperapi.TCP, 81) != nil {
		t.Fatal("port 81 listens before any config has it")
	}
	addr80 := p.Addr(helperapi.TCP, 80)

	mustApply(t, p, config(2, tcpPort(80, a.endpoint()), tcpPort(81, b.endpoint())))
	addr81 := p.Addr(helperapi.TCP, 81)
	if got := once(t, addr81); got != "b" {
		t.Fatalf("port 81 reached %q, want b", got)
	}
	if p.Addr(helperapi.TCP, 80).String() != addr80.String() {
		t.Fatal("port 80's listener was replaced by a config that kept it")
	}
	open81 := dial(t, addr81)
	open81.mustAsk("before")

	mustApply(t, p, config(3, tcpPort(80, a.endpoint())))
	if p.Addr(helperapi.TCP, 81) != nil {
		t.Fatal("port 81 still listens after its removal")
	}
	if c, err := net.DialTimeout("tcp", addr81.String(), deadline); err == nil {
		c.Close()
		t.Fatal("port 81 still accepts connections after its removal")
	}
	if got := open81.mustAsk("after"); got != "b" {
		t.Errorf("a connection on the removed port now reaches %q, want b", got)
	}
	if got := once(t, addr80); got != "a" {
		t.Errorf("port 80 reached %q, want a", got)
	}
}

func TestProxyHalfClose(t *testing.T) {
	// The backend reads to EOF, then answers with what it read: the
	// answer can only arrive if the client's half-close reached it and
	// the way back stayed open.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		fmt.Fprintf(c, "read %d bytes", len(b))
	}()
	p := newTestProxy(t, ProxyOptions{})
	mustApply(t, p, config(1, tcpPort(80, endpointOf(ln.Addr()))))
	c, err := net.DialTimeout("tcp", p.Addr(helperapi.TCP, 80).String(), deadline)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(deadline))
	payload := strings.Repeat("x", 100<<10) // several buffers' worth
	if _, err := io.WriteString(c, payload); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("read %d bytes", len(payload)); string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestProxyApplyRefusesInvalidConfig(t *testing.T) {
	a := newBackend(t, "a")
	good := tcpPort(80, a.endpoint())
	tests := []struct {
		name string
		cfg  helperapi.ProxyConfig
		want string
	}{
		{"unknown protocol", config(2, helperapi.ProxyPort{Protocol: "SCTP", Port: 80}), "unsupported protocol"},
		{"port zero", config(2, tcpPort(0)), "out of range"},
		{"port too large", config(2, tcpPort(70000)), "out of range"},
		{"port twice", config(2, good, tcpPort(80)), "listed twice"},
		{"bad endpoint IP", config(2, tcpPort(80, helperapi.Endpoint{IP: "10.0.0.300", Port: 80})), "endpoint"},
		{"bad endpoint port", config(2, tcpPort(80, helperapi.Endpoint{IP: "10.0.0.3", Port: 0})), "out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestProxy(t, ProxyOptions{})
			mustApply(t, p, config(1, good))
			err := p.Apply(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Apply: %v, want an error containing %q", err, tc.want)
			}
			if g := p.Generation(); g != 1 {
				t.Errorf("generation %d after a refused config, want 1", g)
			}
			if got := once(t, p.Addr(helperapi.TCP, 80)); got != "a" {
				t.Errorf("reached %q after a refused config, want a", got)
			}
		})
	}
}

func TestProxyBindFailureKeepsPreviousConfig(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	a, b := newBackend(t, "a"), newBackend(t, "b")
	p := NewProxy(ProxyOptions{
		Log: testLog(t),
		ListenAddr: func(_ string, port int) string {
			if port == 81 {
				return taken.Addr().String()
			}
			return "127.0.0.1:0"
		},
	})
	defer p.Shutdown(context.Background())
	mustApply(t, p, config(1, tcpPort(80, a.endpoint())))
	err = p.Apply(config(2, tcpPort(80, b.endpoint()), tcpPort(81, b.endpoint()), tcpPort(82, b.endpoint())))
	if err == nil {
		t.Fatal("Apply succeeded with a port that cannot be bound")
	}
	if g := p.Generation(); g != 1 {
		t.Errorf("generation %d, want 1", g)
	}
	if p.Addr(helperapi.TCP, 82) != nil {
		t.Error("a port of the refused config was left listening")
	}
	if got := once(t, p.Addr(helperapi.TCP, 80)); got != "a" {
		t.Errorf("reached %q, want a (the previous config)", got)
	}
}

func TestProxyShutdown(t *testing.T) {
	t.Run("open connections finish", func(t *testing.T) {
		a := newBackend(t, "a")
		p := NewProxy(ProxyOptions{Log: testLog(t), ListenAddr: func(string, int) string { return "127.0.0.1:0" }})
		mustApply(t, p, config(1, tcpPort(80, a.endpoint())))
		addr := p.Addr(helperapi.TCP, 80)
		c := dial(t, addr)
		c.mustAsk("before")
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			done <- p.Shutdown(ctx)
		}()
		waitFor(t, "the listener to close", func() bool {
			conn, err := net.Dial("tcp", addr.String())
			if err == nil {
				conn.Close()
			}
			return err != nil
		})
		if got := c.mustAsk("during"); got != "a" {
			t.Fatalf("reached %q during shutdown, want a", got)
		}
		select {
		case err := <-done:
			t.Fatalf("Shutdown returned (%v) with a connection open", err)
		default:
		}
		c.c.Close()
		if err := <-done; err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if err := p.Apply(config(2)); err == nil {
			t.Error("Apply after Shutdown succeeded")
		}
	})
	t.Run("grace expires", func(t *testing.T) {
		a := newBackend(t, "a")
		p := NewProxy(ProxyOptions{Log: testLog(t), ListenAddr: func(string, int) string { return "127.0.0.1:0" }})
		mustApply(t, p, config(1, tcpPort(80, a.endpoint())))
		c := dial(t, p.Addr(helperapi.TCP, 80))
		c.mustAsk("before")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := p.Shutdown(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Shutdown: %v, want the connections cut", err)
		}
		if _, err := c.ask("after"); err == nil {
			t.Fatal("a connection survived the end of the grace")
		}
	})
}

// TestProxyIdleConnectionsHoldNoBuffer: memory follows the connections
// moving bytes; open, idle ones (keep-alive clients) hold no copy buffer.
func TestProxyIdleConnectionsHoldNoBuffer(t *testing.T) {
	a := newBackend(t, "a")
	p := newTestProxy(t, ProxyOptions{})
	mustApply(t, p, config(1, tcpPort(80, a.endpoint())))
	var open []*client
	for i := range 10 {
		c := dial(t, p.Addr(helperapi.TCP, 80))
		// More than a buffer's worth each way, so each direction copied
		// through several buffers.
		if got := c.mustAsk(strings.Repeat(fmt.Sprint(i), 100<<10)); got != "a" {
			t.Fatalf("reached %q", got)
		}
		open = append(open, c)
	}
	waitFor(t, "idle connections to give their buffers back", func() bool { return tcpBuffers.out.Load() == 0 })
	for _, c := range open {
		if got := c.mustAsk("still open"); got != "a" {
			t.Fatalf("reached %q", got)
		}
	}
}

// A publisher's ports are the host's (HostPorts): one another process
// holds is reported and left out, the others serve, and the next Apply
// binds it once it is free.
func TestProxyHostPortsServeTheOthersAndRetryAHeldPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	heldAddr := taken.Addr().String()
	a := newBackend(t, "a")
	p := NewProxy(ProxyOptions{
		Log:       testLog(t),
		HostPorts: true,
		ListenAddr: func(_ string, port int) string {
			if port == 81 {
				return heldAddr
			}
			return "127.0.0.1:0"
		},
	})
	defer p.Shutdown(context.Background())
	mustApply(t, p, config(1, tcpPort(80, a.endpoint()), tcpPort(81, a.endpoint())))
	if g := p.Generation(); g != 1 {
		t.Errorf("generation %d, want 1", g)
	}
	if got := once(t, p.Addr(helperapi.TCP, 80)); got != "a" {
		t.Errorf("port 80 reached %q, want a", got)
	}
	u := p.Unbound()
	if len(u) != 1 || u[0].Port != 81 || u[0].Protocol != helperapi.TCP || u[0].Error == "" {
		t.Fatalf("unbound %+v, want port 81/TCP with its error", u)
	}
	taken.Close()
	mustApply(t, p, config(2, tcpPort(80, a.endpoint()), tcpPort(81, a.endpoint())))
	if u := p.Unbound(); len(u) != 0 {
		t.Errorf("unbound %+v after the port was freed, want none", u)
	}
	if got := once(t, p.Addr(helperapi.TCP, 81)); got != "a" {
		t.Errorf("port 81 reached %q, want a", got)
	}
}
