package dataplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// Defaults of a proxy.
const (
	// DefaultDialTimeout bounds one dial to one endpoint. It also bounds how
	// long Apply may wait for dials made from the previous snapshot.
	DefaultDialTimeout = 2 * time.Second
	// DefaultUDPIdle is how long a UDP session lives without a datagram
	// either way (the order of conntrack's UDP timeout).
	DefaultUDPIdle = 30 * time.Second
)

// keepAlive is set on both sides of every proxied TCP connection, so that a
// peer that vanished without a FIN or RST (a removed container) does not
// hold a connection, and its goroutines and buffers, forever.
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second, Interval: 10 * time.Second, Count: 3}

// ProxyOptions configure a Proxy; the zero value is the helper's.
type ProxyOptions struct {
	// ListenAddr gives the address a port listens on; nil: "0.0.0.0:PORT".
	// Tests map ports to "127.0.0.1:0" and read the result from Addr.
	ListenAddr func(protocol string, port int) string
	// HostPorts: the ports are the host's (the publisher, in the host's
	// network namespace, docs/design.md §10): a port that cannot be bound
	// (another process holds it) is left out and reported (Unbound), the
	// others served, and each Apply tries it again. Otherwise a port that
	// cannot be bound fails the Apply.
	HostPorts bool
	// Dial connects to an endpoint; nil: a net.Dialer with keep-alive.
	Dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	DialTimeout time.Duration // 0: DefaultDialTimeout
	UDPIdle     time.Duration // 0: DefaultUDPIdle
	Log         *slog.Logger  // nil: discard
}

// Proxy is a Service proxy: one listener per port of its config, each
// forwarding to that port's endpoints. See the package doc for invariants.
type Proxy struct {
	opts ProxyOptions
	log  *slog.Logger

	cur atomic.Pointer[snapshot] // the served config; never nil

	// mu serialises Apply and Shutdown; the data path never takes it.
	mu        sync.Mutex
	listeners map[portKey]listener
	closed    bool
	unbound   []helperapi.UnboundPort // HostPorts: the config's ports the last Apply could not bind

	loops sync.WaitGroup // accept and read loops
	conns sync.WaitGroup // open TCP connections and UDP sessions

	// kill is cancelled when Shutdown gives up waiting: it closes every
	// connection still open.
	kill     context.Context
	killNow  context.CancelFunc
	shutdown chan struct{} // closed when Shutdown starts
}

// portKey names a listener: a Service port is its number and protocol.
type portKey struct {
	protocol string
	port     int
}

func (k portKey) String() string { return strconv.Itoa(k.port) + "/" + k.protocol }

// listener is a TCP or UDP listener of one port.
type listener interface {
	addr() net.Addr
	close() // stops accepting; open connections are left alone
	serve() // runs until close
}

// snapshot is one applied config, immutable once published, plus the count
// of endpoint choices still dialling from it (see acquire).
type snapshot struct {
	cfg   helperapi.ProxyConfig
	ports map[portKey][]netip.AddrPort

	inflight atomic.Int64
	retired  atomic.Bool
	drained  chan struct{} // closed once retired with nothing in flight
	once     sync.Once
}

func newSnapshot(cfg helperapi.ProxyConfig, ports map[portKey][]netip.AddrPort) *snapshot {
	return &snapshot{cfg: cfg, ports: ports, drained: make(chan struct{})}
}

// NewProxy returns a proxy serving nothing until its first Apply.
func NewProxy(opts ProxyOptions) *Proxy {
	if opts.ListenAddr == nil {
		opts.ListenAddr = func(_ string, port int) string { return net.JoinHostPort("0.0.0.0", strconv.Itoa(port)) }
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.UDPIdle <= 0 {
		opts.UDPIdle = DefaultUDPIdle
	}
	if opts.Dial == nil {
		d := &net.Dialer{KeepAliveConfig: keepAlive}
		opts.Dial = d.DialContext
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{opts: opts, log: log, listeners: map[portKey]listener{}, shutdown: make(chan struct{})}
	p.kill, p.killNow = context.WithCancel(context.Background())
	p.cur.Store(newSnapshot(helperapi.ProxyConfig{}, nil))
	return p
}

// Generation is the generation of the served config (0 before any).
func (p *Proxy) Generation() int64 { return p.cur.Load().cfg.Generation }

// Addr is the address a port listens on, nil if it has no listener.
func (p *Proxy) Addr(protocol string, port int) net.Addr {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l, ok := p.listeners[portKey{protocol, port}]; ok {
		return l.addr()
	}
	return nil
}

// acquire returns the served snapshot, pinned: Apply does not return while
// a pinned snapshot it replaced is still pinned. The re-check after the
// increment closes the race with a concurrent swap: a pin taken on a
// snapshot already replaced is given back and taken again on the new one.
func (p *Proxy) acquire() *snapshot {
	for {
		s := p.cur.Load()
		s.inflight.Add(1)
		if p.cur.Load() == s {
			return s
		}
		s.release()
	}
}

func (s *snapshot) release() {
	if s.inflight.Add(-1) == 0 && s.retired.Load() {
		s.once.Do(func() { close(s.drained) })
	}
}

// retire marks s replaced and waits until nothing dials from it.
func (s *snapshot) retire() {
	s.retired.Store(true)
	if s.inflight.Load() == 0 {
		s.once.Do(func() { close(s.drained) })
	}
	<-s.drained
}

// pick chooses the next endpoint round robin from next, skipping those
// already tried by this connection.
func pick(eps []netip.AddrPort, next *atomic.Uint64, tried []netip.AddrPort) (netip.AddrPort, bool) {
	n := uint64(len(eps))
	if n == 0 {
		return netip.AddrPort{}, false
	}
	start := next.Add(1) - 1
	for i := range n {
		ep := eps[(start+i)%n]
		if !contains(tried, ep) {
			return ep, true
		}
	}
	return netip.AddrPort{}, false
}

// connect tries key's endpoints round robin from next, each at most once,
// until dial succeeds; tried is how many it tried. Each dial pins the
// snapshot its endpoint was chosen from (acquire), and each attempt
// chooses from the snapshot served at that moment.
func connect[C any](p *Proxy, key portKey, next *atomic.Uint64, dial func(netip.AddrPort) (C, error)) (c C, ep netip.AddrPort, tried int, ok bool) {
	var done []netip.AddrPort
	for {
		s := p.acquire()
		ep, ok := pick(s.ports[key], next, done)
		if !ok {
			s.release()
			return c, ep, len(done), false
		}
		done = append(done, ep)
		c, err := dial(ep)
		s.release()
		if err == nil {
			return c, ep, len(done), true
		}
		if p.log.Enabled(context.Background(), slog.LevelDebug) {
			p.log.Debug("dial failed, trying the next endpoint", "port", key.String(), "endpoint", ep.String(), "err", err)
		}
	}
}

func contains(s []netip.AddrPort, v netip.AddrPort) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// compile validates a config into the endpoint table of a snapshot.
func compile(cfg helperapi.ProxyConfig) (map[portKey][]netip.AddrPort, error) {
	ports := make(map[portKey][]netip.AddrPort, len(cfg.Ports))
	for _, pp := range cfg.Ports {
		proto := pp.Protocol
		if proto == "" {
			proto = helperapi.TCP // Kubernetes' default
		}
		if proto != helperapi.TCP && proto != helperapi.UDP {
			return nil, fmt.Errorf("port %d: unsupported protocol %q (TCP or UDP)", pp.Port, pp.Protocol)
		}
		if pp.Port < 1 || pp.Port > 65535 {
			return nil, fmt.Errorf("port %d/%s: out of range", pp.Port, proto)
		}
		k := portKey{proto, pp.Port}
		if _, dup := ports[k]; dup {
			return nil, fmt.Errorf("port %s listed twice", k)
		}
		eps := make([]netip.AddrPort, 0, len(pp.Endpoints))
		for _, ep := range pp.Endpoints {
			ip, err := netip.ParseAddr(ep.IP)
			if err != nil {
				return nil, fmt.Errorf("port %s: endpoint %q: %w", k, ep.IP, err)
			}
			if ep.Port < 1 || ep.Port > 65535 {
				return nil, fmt.Errorf("port %s: endpoint %s: port %d out of range", k, ep.IP, ep.Port)
			}
			ap := netip.AddrPortFrom(ip.Unmap(), uint16(ep.Port))
			if !contains(eps, ap) {
				eps = append(eps, ap)
			}
		}
		ports[k] = eps
	}
	return ports, nil
}

// Apply makes cfg the served config. It returns once new connections use
// cfg's endpoints; on error the previous config keeps serving, unchanged.
// Apply does not look at generations: the control server does.
func (p *Proxy) Apply(cfg helperapi.ProxyConfig) error {
	ports, err := compile(cfg)
	if err != nil {
		return fmt.Errorf("proxy config %d: %w", cfg.Generation, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("proxy is shutting down")
	}
	// Bind first, so that a port that cannot be bound leaves everything
	// as it was; accept only after the swap, so that a connection on a new
	// port never meets the old snapshot, which has no endpoints for it.
	added := map[portKey]listener{}
	var unbound []helperapi.UnboundPort
	for k := range ports {
		if _, ok := p.listeners[k]; ok {
			continue
		}
		l, err := p.listen(k)
		if err != nil && p.opts.HostPorts {
			p.log.Warn("port not served: it cannot be bound", "port", k.String(), "err", err)
			unbound = append(unbound, helperapi.UnboundPort{Port: k.port, Protocol: k.protocol, Error: err.Error()})
			continue
		}
		if err != nil {
			for _, l := range added {
				l.close()
			}
			return fmt.Errorf("proxy config %d: listen on %s: %w", cfg.Generation, k, err)
		}
		added[k] = l
	}
	slices.SortFunc(unbound, func(a, b helperapi.UnboundPort) int {
		return cmp.Or(a.Port-b.Port, strings.Compare(a.Protocol, b.Protocol))
	})
	p.unbound = unbound
	next := newSnapshot(cfg, ports)
	old := p.cur.Swap(next)
	for k, l := range added {
		p.listeners[k] = l
		p.loops.Add(1)
		go func() {
			defer p.loops.Done()
			l.serve()
		}()
	}
	old.retire()
	for k, l := range p.listeners {
		if _, keep := ports[k]; !keep {
			l.close()
			delete(p.listeners, k)
			continue
		}
		if u, ok := l.(*udpListener); ok {
			u.dropSessionsNotIn(ports[k])
		}
	}
	p.log.Info("config applied", "generation", cfg.Generation, "service", cfg.Service, "ports", summary(ports))
	return nil
}

// summary is the applied config in one log attribute: port → endpoints.
func summary(ports map[portKey][]netip.AddrPort) map[string]int {
	m := make(map[string]int, len(ports))
	for k, eps := range ports {
		m[k.String()] = len(eps)
	}
	return m
}

// Unbound are the config's ports the last Apply could not bind (HostPorts).
func (p *Proxy) Unbound() []helperapi.UnboundPort {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.unbound)
}

func (p *Proxy) listen(k portKey) (listener, error) {
	addr := p.opts.ListenAddr(k.protocol, k.port)
	lc := net.ListenConfig{KeepAliveConfig: keepAlive}
	switch k.protocol {
	case helperapi.UDP:
		c, err := lc.ListenPacket(context.Background(), "udp", addr)
		if err != nil {
			return nil, err
		}
		return &udpListener{p: p, key: k, conn: c.(*net.UDPConn), sessions: map[netip.AddrPort]*udpSession{}}, nil
	default:
		ln, err := lc.Listen(context.Background(), "tcp", addr)
		if err != nil {
			return nil, err
		}
		return &tcpListener{p: p, key: k, ln: ln}, nil
	}
}

// Shutdown stops accepting, waits for open connections until ctx is done,
// then closes those left. The proxy cannot be used afterwards.
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.shutdown)
	for k, l := range p.listeners {
		l.close()
		delete(p.listeners, k)
	}
	p.mu.Unlock()
	p.loops.Wait() // no connection is added after this
	done := make(chan struct{})
	go func() {
		p.conns.Wait()
		close(done)
	}()
	select {
	case <-done:
		p.killNow()
		return nil
	case <-ctx.Done():
		p.killNow()
		<-done
		return fmt.Errorf("proxy shutdown: connections closed before they finished: %w", ctx.Err())
	}
}
