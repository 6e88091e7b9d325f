package dataplane

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
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

// BenchmarkGatewayHTTP compares keep-alive GETs on loopback from 8
// clients answered by the backend directly and through the gateway, its
// access log (one JSON line per request) discarded or, as in the helper's
// container, written to a pipe that another goroutine reads (Docker's log
// driver reads the container's stdout through one): run with -bench
// GatewayHTTP and read direct/… next to gateway/… and gateway-pipe/….
func BenchmarkGatewayHTTP(b *testing.B) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "hello from workload\n")
	}))
	b.Cleanup(backend.Close)
	cfg := helperapi.GatewayConfig{Generation: 1, Ports: []helperapi.GatewayPort{{Port: 80, Protocol: helperapi.GatewayHTTP,
		Hosts: []helperapi.GatewayHost{{Routes: []helperapi.GatewayRoute{{Path: helperapi.GatewayPathMatch{Type: helperapi.PathPrefix, Value: "/"},
			Backends: []helperapi.GatewayBackend{{Service: "default/web:80", Weight: 1, Endpoints: []helperapi.Endpoint{endpointOf(backend.Listener.Addr())}}}}}}}}}}
	gateway := func(access io.Writer) string {
		g := NewGateway(GatewayOptions{ListenAddr: func(int) string { return "127.0.0.1:0" }, AccessLog: access})
		b.Cleanup(func() { g.Shutdown(context.Background()) })
		if err := g.Apply(cfg); err != nil {
			b.Fatal(err)
		}
		return "http://" + g.Addr(80).String() + "/"
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pw.Close(); pr.Close() })
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	for _, tg := range []struct{ name, url string }{
		{"direct", backend.URL + "/"},
		{"gateway", gateway(io.Discard)},
		{"gateway-pipe", gateway(pw)},
	} {
		b.Run(tg.name, func(b *testing.B) {
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
			defer c.CloseIdleConnections()
			// 8 keep-alive clients at once (on 2 cores), as dockbench's
			// gateway section loads it.
			b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := c.Get(tg.url)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
		})
	}
}
