package dataplane

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
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

// tcpRelay is a stand-in for docker-proxy, what Docker's -p runs on
// 127.0.0.1: every connection relayed to backend by io.Copy both ways.
func tcpRelay(b *testing.B, backend string) string {
	return server(b, func(c net.Conn) {
		up, err := net.Dial("tcp", backend)
		if err != nil {
			return
		}
		defer up.Close()
		go func() { _, _ = io.Copy(up, c); up.(*net.TCPConn).CloseWrite() }()
		_, _ = io.Copy(c, up)
	})
}

// BenchmarkGatewayHTTP compares keep-alive GETs on loopback from 8
// clients answered by the backend directly, through a TCP relay (tcp-relay,
// docker-proxy's stand-in: the cost the gateway is held to) and through the
// gateway, its access log (one JSON line per request) discarded or, as in
// the helper's container, written to a pipe that another goroutine reads
// (Docker's log driver reads the container's stdout through one); the
// gateway's requests take its HTTP/1.1 fast path, gateway-nethttp's (a
// route with a request header filter) net/http's server and ReverseProxy:
// run with -bench GatewayHTTP and read tcp-relay/… next to gateway/….
func BenchmarkGatewayHTTP(b *testing.B) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "hello from workload\n")
	}))
	b.Cleanup(backend.Close)
	cfg := helperapi.GatewayConfig{Generation: 1, Ports: []helperapi.GatewayPort{{Port: 80, Protocol: helperapi.GatewayHTTP,
		Hosts: []helperapi.GatewayHost{{Routes: []helperapi.GatewayRoute{{Path: helperapi.GatewayPathMatch{Type: helperapi.PathPrefix, Value: "/"},
			Backends: []helperapi.GatewayBackend{{Service: "default/web:80", Weight: 1, Endpoints: []helperapi.Endpoint{endpointOf(backend.Listener.Addr())}}}}}}}}}}
	gateway := func(access io.Writer, filtered bool) string {
		g := NewGateway(GatewayOptions{ListenAddr: func(int) string { return "127.0.0.1:0" }, AccessLog: access})
		b.Cleanup(func() { g.Shutdown(context.Background()) })
		cfg := cfg
		if filtered {
			cfg.Ports = slices.Clone(cfg.Ports)
			cfg.Ports[0].Hosts = slices.Clone(cfg.Ports[0].Hosts)
			cfg.Ports[0].Hosts[0].Routes = slices.Clone(cfg.Ports[0].Hosts[0].Routes)
			cfg.Ports[0].Hosts[0].Routes[0].Filters.RequestHeaders = &helperapi.GatewayHeaderModifier{
				Set: []helperapi.GatewayValueMatch{{Name: "X-Via", Value: "gateway"}}}
		}
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
		{"tcp-relay", "http://" + tcpRelay(b, backend.Listener.Addr().String()) + "/"},
		{"gateway", gateway(io.Discard, false)},
		{"gateway-pipe", gateway(pw, false)},
		{"gateway-nethttp", gateway(io.Discard, true)},
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
