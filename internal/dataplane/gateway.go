package dataplane

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// GatewayOptions configure a Gateway; the zero value is the helper's.
type GatewayOptions struct {
	// ListenAddr gives the address a port listens on; nil: "0.0.0.0:PORT".
	ListenAddr func(port int) string
	// HostPorts: the ports are the host's (the helper runs in the host's
	// network namespace, docs/design.md §10): a port that cannot be bound
	// (another process holds it) is left out and reported (Unbound), the
	// others served, and each Apply tries it again. Otherwise a port that
	// cannot be bound fails the Apply.
	HostPorts bool
	// Rand chooses backends and endpoints; nil: a random source. Tests
	// give a seeded one.
	Rand *rand.Rand
	// Dial connects to an endpoint; nil: a net.Dialer with keep-alive.
	Dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	DialTimeout time.Duration // 0: DefaultDialTimeout
	Log         *slog.Logger  // nil: discard
	// AccessLog receives one JSON line per request, asynchronously (see
	// accessLog; Shutdown writes the pending lines); nil: discard (the
	// helper gives its stdout).
	AccessLog io.Writer
}

// Gateway is the instance's HTTP(S) gateway: one server per port of its
// config, each routing requests by host and path to the ready endpoints
// of the routes' backends. See the package doc for its invariants.
type Gateway struct {
	opts  GatewayOptions
	log   *slog.Logger
	lines *accessLog // nil: no access log

	cur atomic.Pointer[gatewaySnapshot] // never nil

	rngMu sync.Mutex
	rng   *rand.Rand

	proxy, proxyH2C *httputil.ReverseProxy // over HTTP/1.1, over h2c
	fastPool        backendPool            // the HTTP/1.1 fast path's connections to endpoints

	mu      sync.Mutex // serialises Apply and Shutdown
	servers map[int]*gatewayServer
	old     []*gatewayServer // of ports no longer served: Shutdown gives their connections their grace
	closed  bool
	unbound []helperapi.UnboundPort // HostPorts: the config's ports the last Apply could not bind
}

// gatewaySnapshot is one applied config, immutable once published, with
// the pin count of requests whose endpoint was chosen from it and whose
// connection to it is not yet made (Apply waits for them, as the proxy's
// snapshot, so that an acknowledged removal receives no new request).
type gatewaySnapshot struct {
	cfg   helperapi.GatewayConfig
	ports map[int]*helperapi.GatewayPort
	certs map[int][]tls.Certificate
	// addrs holds "ip:port" of every backend's endpoints, made once per
	// config rather than once per request.
	addrs map[*helperapi.GatewayBackend][]string
	// live holds the same addresses as a set: the fast path keeps a
	// connection to an endpoint for reuse only while it is served.
	live map[string]struct{}

	inflight atomic.Int64
	retired  atomic.Bool
	drained  chan struct{}
	once     sync.Once
}

func (s *gatewaySnapshot) release() {
	if s.inflight.Add(-1) == 0 && s.retired.Load() {
		s.once.Do(func() { close(s.drained) })
	}
}

func (s *gatewaySnapshot) retire(timeout time.Duration) {
	s.retired.Store(true)
	if s.inflight.Load() == 0 {
		s.once.Do(func() { close(s.drained) })
	}
	// A dial is bounded by the dial timeout; a request that never gets a
	// connection (its client left) must not hold a push forever.
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-s.drained:
	case <-t.C:
	}
}

type gatewayServer struct {
	protocol string
	ln       net.Listener
	srv      *http.Server
	fast     *fastServer   // plain HTTP: accepts on ln, hands srv what it does not relay itself
	done     chan struct{} // closed when ln no longer accepts (Serve, or fast's accept loop, returned)
}

// NewGateway returns a gateway serving nothing until its first Apply.
func NewGateway(opts GatewayOptions) *Gateway {
	if opts.ListenAddr == nil {
		opts.ListenAddr = func(port int) string { return net.JoinHostPort("0.0.0.0", strconv.Itoa(port)) }
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var lines *accessLog
	if opts.AccessLog != nil {
		lines = newAccessLog(opts.AccessLog, log)
	}
	rng := opts.Rand
	if rng == nil {
		rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	g := &Gateway{log: log, lines: lines, rng: rng, servers: map[int]*gatewayServer{}}
	if opts.Dial == nil {
		opts.Dial = (&net.Dialer{Timeout: opts.DialTimeout, KeepAliveConfig: keepAlive}).DialContext
	}
	h1 := &http.Transport{
		DialContext:           opts.Dial,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0, // streaming and long polls: no bound
		// Accept-Encoding is the client's: without this the Transport
		// asks for gzip when the client did not and decompresses the
		// answer, a response of known length becoming a chunked one.
		DisableCompression:    true,
		ExpectContinueTimeout: time.Second,
	}
	// h2c: HTTP/2 with prior knowledge to backends flagged for it (gRPC).
	h2 := &http.Transport{DialContext: opts.Dial, IdleConnTimeout: 90 * time.Second, DisableCompression: true}
	h2.Protocols = new(http.Protocols)
	h2.Protocols.SetUnencryptedHTTP2(true)
	g.opts = opts
	g.fastPool.dial = opts.Dial
	g.proxy, g.proxyH2C = g.newReverseProxy(h1), g.newReverseProxy(h2)
	g.cur.Store(newGatewaySnapshot(helperapi.GatewayConfig{}, nil, nil))
	return g
}

func newGatewaySnapshot(cfg helperapi.GatewayConfig, ports map[int]*helperapi.GatewayPort, certs map[int][]tls.Certificate) *gatewaySnapshot {
	addrs := map[*helperapi.GatewayBackend][]string{}
	live := map[string]struct{}{}
	for _, p := range ports {
		for h := range p.Hosts {
			for r := range p.Hosts[h].Routes {
				bes := p.Hosts[h].Routes[r].Backends
				for b := range bes {
					eps := make([]string, len(bes[b].Endpoints))
					for i, e := range bes[b].Endpoints {
						eps[i] = hostPort(e)
						live[eps[i]] = struct{}{}
					}
					addrs[&bes[b]] = eps
				}
			}
		}
	}
	return &gatewaySnapshot{cfg: cfg, ports: ports, certs: certs, addrs: addrs, live: live, drained: make(chan struct{})}
}

// endpointAddr is "ip:port" of be's endpoint i.
func (s *gatewaySnapshot) endpointAddr(be *helperapi.GatewayBackend, i int) string {
	if eps, ok := s.addrs[be]; ok {
		return eps[i]
	}
	return hostPort(be.Endpoints[i])
}

func hostPort(e helperapi.Endpoint) string { return net.JoinHostPort(e.IP, strconv.Itoa(e.Port)) }

// Generation is the generation of the served config (0 before any).
func (g *Gateway) Generation() int64 { return g.cur.Load().cfg.Generation }

// Addr is the address a port listens on, nil if it has no server.
func (g *Gateway) Addr(port int) net.Addr {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s, ok := g.servers[port]; ok {
		return s.ln.Addr()
	}
	return nil
}

// acquire returns the served snapshot, pinned (see proxy's acquire).
func (g *Gateway) acquire() *gatewaySnapshot {
	for {
		s := g.cur.Load()
		s.inflight.Add(1)
		if g.cur.Load() == s {
			return s
		}
		s.release()
	}
}

// compileGateway validates a config and parses its certificates.
func compileGateway(cfg helperapi.GatewayConfig) (map[int]*helperapi.GatewayPort, map[int][]tls.Certificate, error) {
	byName := map[string]tls.Certificate{}
	for _, c := range cfg.Certificates {
		pair, err := tls.X509KeyPair(c.CertPEM, c.KeyPEM)
		if err != nil {
			// The error names the certificate, never its content.
			return nil, nil, fmt.Errorf("certificate %s: %w", c.Name, err)
		}
		byName[c.Name] = pair
	}
	ports := map[int]*helperapi.GatewayPort{}
	certs := map[int][]tls.Certificate{}
	for i := range cfg.Ports {
		p := &cfg.Ports[i]
		if p.Port < 1 || p.Port > 65535 {
			return nil, nil, fmt.Errorf("port %d: out of range", p.Port)
		}
		if _, dup := ports[p.Port]; dup {
			return nil, nil, fmt.Errorf("port %d: listed twice", p.Port)
		}
		switch p.Protocol {
		case helperapi.GatewayHTTP:
		case helperapi.GatewayHTTPS:
			for _, n := range p.Certificates {
				c, ok := byName[n]
				if !ok {
					return nil, nil, fmt.Errorf("port %d: no certificate %q in the config", p.Port, n)
				}
				certs[p.Port] = append(certs[p.Port], c)
			}
		default:
			return nil, nil, fmt.Errorf("port %d: unsupported protocol %q (HTTP or HTTPS)", p.Port, p.Protocol)
		}
		for _, h := range p.Hosts {
			for _, rt := range h.Routes {
				switch rt.Path.Type {
				case helperapi.PathExact, helperapi.PathPrefix:
				default:
					return nil, nil, fmt.Errorf("port %d host %q: unsupported path match %q", p.Port, h.Hostname, rt.Path.Type)
				}
				if !strings.HasPrefix(rt.Path.Value, "/") {
					return nil, nil, fmt.Errorf("port %d host %q: path %q is not absolute", p.Port, h.Hostname, rt.Path.Value)
				}
			}
		}
		ports[p.Port] = p
	}
	return ports, certs, nil
}

// Apply serves cfg: servers for new ports are started, the snapshot is
// swapped (new requests and TLS handshakes use it at once, open
// connections and WebSockets are left alone), requests that chose an
// endpoint from the previous one have their connection, and servers of
// removed ports stop accepting. On error nothing changes.
func (g *Gateway) Apply(cfg helperapi.GatewayConfig) error {
	ports, certs, err := compileGateway(cfg)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errors.New("gateway: shut down")
	}
	// Bind first: a port that cannot be bound fails the whole Apply, or
	// with HostPorts is left out (and tried again by the next Apply).
	started := map[int]*gatewayServer{}
	var unbound []helperapi.UnboundPort
	for num, p := range ports {
		if s, ok := g.servers[num]; ok && s.protocol == p.Protocol {
			continue
		}
		if s, ok := g.servers[num]; ok {
			// The protocol changed: the old server stops accepting
			// first so that the port can be bound again; its open
			// connections finish (Shutdown gives them their grace).
			s.ln.Close()
			<-s.done
			delete(g.servers, num)
			g.old = append(g.old, s)
		}
		s, err := g.listen(num, p.Protocol)
		if err != nil && g.opts.HostPorts {
			g.log.Warn("port not served: it cannot be bound", "port", num, "err", err)
			unbound = append(unbound, helperapi.UnboundPort{Port: num, Protocol: helperapi.TCP, Error: err.Error()})
			continue
		}
		if err != nil {
			for _, s := range started {
				s.ln.Close()
			}
			return err
		}
		started[num] = s
	}
	slices.SortFunc(unbound, func(a, b helperapi.UnboundPort) int { return a.Port - b.Port })
	g.unbound = unbound
	snap := newGatewaySnapshot(cfg, ports, certs)
	old := g.cur.Swap(snap)
	g.fastPool.prune(snap)
	for num, s := range started {
		g.servers[num] = s
		go g.serve(s)
	}
	for num, s := range g.servers {
		if _, ok := ports[num]; !ok {
			s.ln.Close() // open connections finish; Shutdown waits for them
			delete(g.servers, num)
			g.old = append(g.old, s)
		}
	}
	old.retire(g.opts.DialTimeout + time.Second)
	return nil
}

// Unbound are the config's ports the last Apply could not bind (HostPorts).
func (g *Gateway) Unbound() []helperapi.UnboundPort {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.unbound)
}

// listen binds port and makes its server (not yet serving).
func (g *Gateway) listen(port int, protocol string) (*gatewayServer, error) {
	ln, err := net.Listen("tcp", g.opts.ListenAddr(port))
	if err != nil {
		return nil, fmt.Errorf("port %d: %w", port, err)
	}
	srv := &http.Server{
		Handler:           g.handler(port),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelDebug),
	}
	// HTTP/1.1 and HTTP/2 on TLS (ALPN), and h2c with prior knowledge on
	// plain HTTP for gRPC clients.
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetHTTP2(true)
	if protocol == helperapi.GatewayHTTPS {
		srv.TLSConfig = &tls.Config{
			MinVersion:     tls.VersionTLS12,
			NextProtos:     []string{"h2", "http/1.1"},
			GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) { return g.certificate(port, hello) },
		}
		ln = tls.NewListener(ln, srv.TLSConfig)
		return &gatewayServer{protocol: protocol, ln: ln, srv: srv, done: make(chan struct{})}, nil
	}
	srv.Protocols.SetUnencryptedHTTP2(true)
	fs := &fastServer{g: g, port: port, ln: ln, handoff: newHandoffListener(ln.Addr()), conns: map[*fastConn]struct{}{}}
	return &gatewayServer{protocol: protocol, ln: ln, srv: srv, fast: fs, done: make(chan struct{})}, nil
}

func (g *Gateway) serve(s *gatewayServer) {
	if s.fast != nil {
		// The fast path accepts; the server serves what it hands over
		// until Shutdown, also once the port is no longer served (a
		// kept-alive connection of a removed port is answered there).
		go g.serveOn(s, s.fast.handoff)
		s.fast.acceptLoop()
		close(s.done)
		return
	}
	defer close(s.done)
	g.serveOn(s, s.ln)
}

func (g *Gateway) serveOn(s *gatewayServer, ln net.Listener) {
	if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
		g.log.Error("gateway port stopped serving", "addr", s.ln.Addr().String(), "err", err)
	}
}

// certificate chooses, per TLS handshake, from the certificates of the
// snapshot served at that moment: the first that the client's SNI name
// (and algorithms) fit, one naming it exactly first, else the first. A swap takes effect at the next
// handshake; established TLS connections keep theirs.
func (g *Gateway) certificate(port int, hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	certs := g.cur.Load().certs[port]
	if len(certs) == 0 {
		return nil, fmt.Errorf("port %d: no certificate", port)
	}
	if hello.ServerName != "" {
		// A certificate naming the host exactly wins over a wildcard
		// that covers it too, whatever their order.
		name := strings.ToLower(hello.ServerName)
		for _, exact := range []bool{true, false} {
			for i := range certs {
				if exact && (certs[i].Leaf == nil || !slices.Contains(certs[i].Leaf.DNSNames, name)) {
					continue
				}
				if hello.SupportsCertificate(&certs[i]) == nil {
					return &certs[i], nil
				}
			}
		}
	}
	return &certs[0], nil
}

// Shutdown stops accepting on every port and waits, until ctx is done,
// for open requests to finish (hijacked connections, WebSockets, are the
// clients' to close), then writes the access log's pending lines.
func (g *Gateway) Shutdown(ctx context.Context) error {
	g.mu.Lock()
	g.closed = true
	servers := append([]*gatewayServer{}, g.old...)
	for _, s := range g.servers {
		servers = append(servers, s)
	}
	g.mu.Unlock()
	var errs []error
	for _, s := range servers {
		s.ln.Close()
		if s.fast != nil {
			if err := s.fast.shutdown(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		if err := s.srv.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	g.fastPool.prune(nil)
	if g.lines != nil {
		g.lines.Close()
	}
	return errors.Join(errs...)
}

// gatewayTarget is the gateway as a control server's Target.
type gatewayTarget struct{ g *Gateway }

func (t gatewayTarget) Generation() int64 { return t.g.Generation() }

func (t gatewayTarget) Unbound() []helperapi.UnboundPort { return t.g.Unbound() }

func (t gatewayTarget) Apply(raw json.RawMessage) (int64, error) {
	var cfg helperapi.GatewayConfig
	if err := decodeStrict(raw, &cfg); err != nil {
		// encoding/json's errors name a field, a type or one character,
		// never a value: no key material reaches the log.
		return 0, fmt.Errorf("gateway config: %w", err)
	}
	return cfg.Generation, t.g.Apply(cfg)
}

// runGateway serves the gateway; its access log goes to accessLog (the
// container's stdout), its own log to stderr.
func runGateway(ctx context.Context, args []string, stdin io.Reader, accessLog, stderr io.Writer) int {
	var host *string
	var hostPorts *bool
	f, log, code, ok := parseServe(helperapi.ModeGateway, args, stderr, func(fs *flag.FlagSet) {
		host = fs.String("listen-host", "0.0.0.0", "address the gateway's ports listen on")
		hostPorts = fs.Bool("host-ports", false, "the ports are the host's: one that cannot be bound is reported, the others served")
	})
	if !ok {
		return code
	}
	raw, ok := configArg(f.config, stdin, stderr)
	if !ok {
		return helperapi.ExitUsage
	}
	f.config = string(raw)
	g := NewGateway(GatewayOptions{
		ListenAddr: func(port int) string { return net.JoinHostPort(*host, strconv.Itoa(port)) },
		HostPorts:  *hostPorts,
		Log:        log,
		AccessLog:  accessLog,
	})
	return serve(ctx, f, log, gatewayTarget{g}, nil, g.Shutdown)
}
