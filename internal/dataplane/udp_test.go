package dataplane

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// udpBackend answers each datagram with "NAME DATAGRAM".
func udpBackend(t *testing.T, name string) helperapi.Endpoint {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, maxDatagram)
		for {
			n, from, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			c.WriteTo([]byte(name+" "+string(buf[:n])), from)
		}
	}()
	return endpointOf(c.LocalAddr())
}

// udpClient is one client address talking to the proxy.
type udpClient struct {
	t *testing.T
	c *net.UDPConn
}

func newUDPClient(t *testing.T, proxy net.Addr) *udpClient {
	t.Helper()
	c, err := net.DialUDP("udp", nil, proxy.(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &udpClient{t: t, c: c}
}

// ask sends msg until an answer comes (UDP may drop a datagram) and returns
// the name of the backend that answered.
func (u *udpClient) ask(msg string) string {
	u.t.Helper()
	buf := make([]byte, maxDatagram)
	end := time.Now().Add(deadline)
	for time.Now().Before(end) {
		if _, err := u.c.Write([]byte(msg)); err != nil {
			u.t.Fatal(err)
		}
		u.c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		n, err := u.c.Read(buf)
		if err != nil {
			continue // lost, or not answered yet: send again
		}
		name, echoed, _ := strings.Cut(string(buf[:n]), " ")
		if echoed != msg {
			u.t.Fatalf("sent %q, got back %q", msg, buf[:n])
		}
		return name
	}
	u.t.Fatalf("no answer to %q", msg)
	return ""
}

func udpListenerOf(t *testing.T, p *Proxy, port int) *udpListener {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.listeners[portKey{helperapi.UDP, port}].(*udpListener)
	if !ok {
		t.Fatalf("no UDP listener on %d", port)
	}
	return l
}

func TestUDPRelay(t *testing.T) {
	a, b := udpBackend(t, "a"), udpBackend(t, "b")
	p := newTestProxy(t, ProxyOptions{})
	mustApply(t, p, config(1, udpPort(53, a, b)))
	addr := p.Addr(helperapi.UDP, 53)

	// A client keeps its endpoint for its session; the next client gets
	// the next endpoint.
	c1, c2 := newUDPClient(t, addr), newUDPClient(t, addr)
	first := c1.ask("one")
	for _, msg := range []string{"two", "three"} {
		if got := c1.ask(msg); got != first {
			t.Fatalf("client 1's datagram %q reached %s, its session is with %s", msg, got, first)
		}
	}
	if second := c2.ask("one"); second == first {
		t.Errorf("both clients reached %s: not round robin", first)
	}
	if n := udpListenerOf(t, p, 53).sessionCount(); n != 2 {
		t.Errorf("%d sessions, want 2", n)
	}

	// A large datagram is relayed whole.
	big := strings.Repeat("x", 60<<10)
	c1.ask(big)

	// Sessions waiting for replies hold no buffer.
	waitFor(t, "idle sessions to give their buffers back", func() bool { return udpBuffers.out.Load() == 0 })
}

func TestUDPSessionExpiry(t *testing.T) {
	a := udpBackend(t, "a")
	p := newTestProxy(t, ProxyOptions{UDPIdle: 200 * time.Millisecond})
	mustApply(t, p, config(1, udpPort(53, a)))
	l := udpListenerOf(t, p, 53)
	c := newUDPClient(t, p.Addr(helperapi.UDP, 53))
	if got := c.ask("hello"); got != "a" {
		t.Fatalf("reached %q, want a", got)
	}
	waitFor(t, "the idle session to expire", func() bool { return l.sessionCount() == 0 })
	// The same client after expiry: a new session, answered as before.
	if got := c.ask("again"); got != "a" {
		t.Fatalf("reached %q after expiry, want a", got)
	}
	if n := l.sessionCount(); n != 1 {
		t.Errorf("%d sessions, want 1", n)
	}
}

func TestUDPSessionFollowsEndpointRemoval(t *testing.T) {
	a, b := udpBackend(t, "a"), udpBackend(t, "b")
	p := newTestProxy(t, ProxyOptions{})
	mustApply(t, p, config(1, udpPort(53, a)))
	c := newUDPClient(t, p.Addr(helperapi.UDP, 53))
	if got := c.ask("before"); got != "a" {
		t.Fatalf("reached %q, want a", got)
	}
	mustApply(t, p, config(2, udpPort(53, b)))
	if got := c.ask("after"); got != "b" {
		t.Fatalf("after a's removal the session still reaches %q, want b", got)
	}
}

func TestUDPNoEndpointsDrops(t *testing.T) {
	p := newTestProxy(t, ProxyOptions{})
	mustApply(t, p, config(1, udpPort(53)))
	l := udpListenerOf(t, p, 53)
	c := newUDPClient(t, p.Addr(helperapi.UDP, 53))
	if _, err := c.c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the datagram to be dropped", func() bool { return l.dropped.Load() == 1 })
	if n := l.sessionCount(); n != 0 {
		t.Fatalf("%d sessions without endpoints, want 0", n)
	}
	// Then endpoints arrive: the next datagram is answered, and it was
	// the only session ever opened.
	a := udpBackend(t, "a")
	mustApply(t, p, config(2, udpPort(53, a)))
	if got := c.ask("again"); got != "a" {
		t.Fatalf("reached %q, want a", got)
	}
	if n := l.sessionCount(); n != 1 {
		t.Errorf("%d sessions, want 1", n)
	}
}
