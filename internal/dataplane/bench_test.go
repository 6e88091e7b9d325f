package dataplane

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// echoServer echoes every byte back, on 127.0.0.1.
func echoServer(b *testing.B) net.Addr {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr()
}

// BenchmarkProxyTCP compares a request/response on loopback reached
// directly and through the proxy, on one kept-alive connection and with a
// new connection per request: run with -bench ProxyTCP and read the pairs
// side by side (direct/… next to proxy/…).
func BenchmarkProxyTCP(b *testing.B) {
	backend := echoServer(b)
	p := NewProxy(ProxyOptions{ListenAddr: func(string, int) string { return "127.0.0.1:0" }})
	b.Cleanup(func() { p.Shutdown(context.Background()) })
	if err := p.Apply(config(1, tcpPort(80, endpointOf(backend)))); err != nil {
		b.Fatal(err)
	}
	targets := []struct {
		name string
		addr net.Addr
	}{
		{"direct", backend},
		{"proxy", p.Addr(helperapi.TCP, 80)},
	}
	const size = 1 << 10
	req := make([]byte, size)
	for _, mode := range []string{"keepalive", "newconn"} {
		for _, tg := range targets {
			b.Run(mode+"/"+tg.name, func(b *testing.B) {
				resp := make([]byte, size)
				b.SetBytes(2 * size)
				var c net.Conn
				roundTrip := func() {
					if _, err := c.Write(req); err != nil {
						b.Fatal(err)
					}
					if _, err := io.ReadFull(c, resp); err != nil {
						b.Fatal(err)
					}
				}
				dial := func() {
					var err error
					if c, err = net.Dial("tcp", tg.addr.String()); err != nil {
						b.Fatal(err)
					}
				}
				if mode == "keepalive" {
					dial()
					defer c.Close()
				}
				for b.Loop() {
					if mode == "newconn" {
						dial()
						roundTrip()
						// An RST rather than a FIN: thousands of TIME_WAIT
						// sockets would exhaust the ephemeral ports.
						c.(*net.TCPConn).SetLinger(0)
						c.Close()
						continue
					}
					roundTrip()
				}
			})
		}
	}
}
