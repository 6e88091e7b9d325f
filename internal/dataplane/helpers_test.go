package dataplane

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// deadline bounds every wait of these tests: generous, because the machine
// is shared; a correct run never comes near it.
const deadline = 20 * time.Second

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// testLog writes the code's logs to the test's log.
func testLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// backend is a TCP server on 127.0.0.1 that answers every line it reads
// with "NAME LINE", so a client knows which endpoint it reached.
type backend struct {
	name  string
	ln    net.Listener
	conns atomic.Int64 // connections accepted
	wg    sync.WaitGroup
}

func newBackend(t testing.TB, name string) *backend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{name: name, ln: ln}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.conns.Add(1)
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := fmt.Fprintf(c, "%s %s", name, line); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		b.wg.Wait()
	})
	return b
}

func (b *backend) endpoint() helperapi.Endpoint { return endpointOf(b.ln.Addr()) }

func endpointOf(a net.Addr) helperapi.Endpoint {
	host, port, _ := net.SplitHostPort(a.String())
	n, _ := strconv.Atoi(port)
	return helperapi.Endpoint{IP: host, Port: n}
}

// deadEndpoint is an address on 127.0.0.1 where nothing listens: a dial
// is refused at once.
func deadEndpoint(t testing.TB) helperapi.Endpoint {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := endpointOf(ln.Addr())
	ln.Close()
	return ep
}

// newTestProxy is a proxy whose ports listen on 127.0.0.1, each on a port
// of the kernel's choosing; Addr tells which.
func newTestProxy(t testing.TB, opts ProxyOptions) *Proxy {
	t.Helper()
	opts.ListenAddr = func(string, int) string { return "127.0.0.1:0" }
	if opts.Log == nil {
		opts.Log = testLog(t)
	}
	p := NewProxy(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return p
}

func tcpPort(port int, eps ...helperapi.Endpoint) helperapi.ProxyPort {
	return helperapi.ProxyPort{Protocol: helperapi.TCP, Port: port, Endpoints: eps}
}

func udpPort(port int, eps ...helperapi.Endpoint) helperapi.ProxyPort {
	return helperapi.ProxyPort{Protocol: helperapi.UDP, Port: port, Endpoints: eps}
}

func config(gen int64, ports ...helperapi.ProxyPort) helperapi.ProxyConfig {
	return helperapi.ProxyConfig{Generation: gen, Service: "default/test", Ports: ports}
}

func mustApply(t testing.TB, p *Proxy, cfg helperapi.ProxyConfig) {
	t.Helper()
	if err := p.Apply(cfg); err != nil {
		t.Fatalf("apply generation %d: %v", cfg.Generation, err)
	}
}

// client is one connection through the proxy, speaking the backend's
// line protocol.
type client struct {
	t testing.TB
	c net.Conn
	r *bufio.Reader
}

func dial(t testing.TB, addr net.Addr) *client {
	t.Helper()
	if addr == nil {
		t.Fatal("port has no listener")
	}
	c, err := net.DialTimeout("tcp", addr.String(), deadline)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, r: bufio.NewReader(c)}
}

// ask sends msg and returns the name of the backend that answered.
func (c *client) ask(msg string) (string, error) {
	c.c.SetDeadline(time.Now().Add(deadline))
	if _, err := io.WriteString(c.c, msg+"\n"); err != nil {
		return "", err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	name, echoed, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
	if echoed != msg {
		return "", fmt.Errorf("sent %q, got back %q", msg, line)
	}
	return name, nil
}

func (c *client) mustAsk(msg string) string {
	c.t.Helper()
	name, err := c.ask(msg)
	if err != nil {
		c.t.Fatalf("ask %q: %v", msg, err)
	}
	return name
}

// once opens a connection, asks once and closes it.
func once(t testing.TB, addr net.Addr) string {
	t.Helper()
	c := dial(t, addr)
	defer c.c.Close()
	return c.mustAsk("hello")
}

// refused reports whether a connection through addr ends without an
// answer (closed or reset by the proxy), as opposed to timing out.
func refused(t testing.TB, addr net.Addr) error {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr.String(), deadline)
	if err != nil {
		// The reset can come before connect(2) has returned.
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fmt.Errorf("the connection was left hanging: %w", err)
		}
		return nil
	}
	c := &client{t: t, c: conn, r: bufio.NewReader(conn)}
	defer c.c.Close()
	c.c.SetDeadline(time.Now().Add(deadline))
	io.WriteString(c.c, "hello\n")
	_, err = c.r.ReadString('\n')
	if err == nil {
		return errors.New("the connection was answered")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("the connection was left hanging: %w", err)
	}
	return nil
}

var socketSeq atomic.Int64

// testSocket is an abstract socket name no other test (or process) uses.
func testSocket(t testing.TB) string {
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	return fmt.Sprintf("@dockctl-test-%d-%s-%d", os.Getpid(), name, socketSeq.Add(1))
}
