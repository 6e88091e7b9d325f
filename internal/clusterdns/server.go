package clusterdns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// ErrStale is wrapped by Apply's error when the config is older than the
// one served (helper push exits helperapi.ExitStale on it).
var ErrStale = errors.New("stale generation")

// defaultResolvConf is where the upstreams come from when a config names
// none: in the helper's container, Docker's embedded DNS.
const defaultResolvConf = "/etc/resolv.conf"

// Forwarding bounds. Each upstream is tried once with upstreamTimeout; the
// whole stays under a stub resolver's default 5 s timeout so that the
// client sees our SERVFAIL instead of timing out itself.
const (
	upstreamTimeout = 2 * time.Second
	forwardBudget   = 4 * time.Second
	// maxForwards bounds the queries waiting on upstreams at once: past it a
	// query gets SERVFAIL at once instead of one more goroutine and socket
	// (a burst against an offline upstream would otherwise pile them up).
	maxForwards = 512
)

// Server is the DNS server. Its query path (ServeDNS) reads the current
// snapshot through an atomic pointer and takes no lock.
type Server struct {
	log        *slog.Logger
	resolvConf string

	snap    atomic.Pointer[snapshot]
	applyMu sync.Mutex // serializes Apply (writers only)

	udpClient, tcpClient *dns.Client
	forwards             chan struct{} // semaphore, maxForwards

	serving  atomic.Bool
	ready    chan struct{} // closed once Serve has bound both sockets
	addrMu   sync.Mutex
	udpAddr  net.Addr
	tcpAddr  net.Addr
	serveCtx atomic.Pointer[context.Context] // Serve's ctx: its end cancels forwards
}

// New validates cfg and returns a server answering from it. It does not
// listen: see Serve. A nil log discards.
func New(cfg helperapi.DNSConfig, log *slog.Logger) (*Server, error) {
	return newServer(cfg, log, defaultResolvConf)
}

// newServer is New with the resolv.conf path given (tests).
func newServer(cfg helperapi.DNSConfig, log *slog.Logger, resolvConf string) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		log:        log,
		resolvConf: resolvConf,
		// UDPSize is only used for a query without EDNS0: read whatever an
		// upstream sends, the reply is truncated to the client's size after.
		udpClient: &dns.Client{Net: "udp", Timeout: upstreamTimeout, UDPSize: dns.MaxMsgSize},
		tcpClient: &dns.Client{Net: "tcp", Timeout: upstreamTimeout},
		forwards:  make(chan struct{}, maxForwards),
		ready:     make(chan struct{}),
	}
	snap, err := build(cfg, resolvConf, log)
	if err != nil {
		return nil, err
	}
	s.snap.Store(snap)
	s.logApplied(snap)
	return s, nil
}

// Apply validates cfg, builds its snapshot and swaps it in atomically. An
// invalid config changes nothing. A config of an older generation than the
// one served is refused with an error wrapping ErrStale; the same
// generation is applied again (a repeated push).
func (s *Server) Apply(cfg helperapi.DNSConfig) error {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	if cur := s.snap.Load(); cfg.Generation < cur.generation {
		return fmt.Errorf("clusterdns: generation %d is older than the one served (%d): %w",
			cfg.Generation, cur.generation, ErrStale)
	}
	snap, err := build(cfg, s.resolvConf, s.log)
	if err != nil {
		return err
	}
	s.snap.Store(snap)
	s.logApplied(snap)
	return nil
}

func (s *Server) logApplied(snap *snapshot) {
	s.log.Info("clusterdns: config applied", "generation", snap.generation,
		"domain", snap.domain, "names", len(snap.names), "upstreams", snap.upstreams)
}

// Generation is the generation of the config being served.
func (s *Server) Generation() int64 { return s.snap.Load().generation }

// Serve answers on addr over UDP and TCP (the same port; with port 0 both
// get one free port, see UDPAddr/TCPAddr) until ctx is done, then returns
// nil. It returns an error if it cannot listen or a listener fails. A
// Server serves once.
func (s *Server) Serve(ctx context.Context, addr string) error {
	if !s.serving.CompareAndSwap(false, true) {
		return errors.New("clusterdns: Serve called twice")
	}
	pc, ln, err := listen(ctx, addr)
	if err != nil {
		return err
	}
	s.serveCtx.Store(&ctx)
	started := make(chan struct{}, 2)
	notify := func() { started <- struct{}{} }
	udp := &dns.Server{PacketConn: pc, Handler: s, UDPSize: dns.DefaultMsgSize, NotifyStartedFunc: notify}
	tcp := &dns.Server{Listener: ln, Handler: s, NotifyStartedFunc: notify}
	errc := make(chan error, 2)
	go func() { errc <- udp.ActivateAndServe() }()
	go func() { errc <- tcp.ActivateAndServe() }()

	// Wait for both to have started: a Shutdown before that is refused by
	// the library and would leave a server running.
	pending, running := 2, 0 // goroutines not returned; servers started
	var serveErr error
	for running < 2 && serveErr == nil {
		select {
		case <-started:
			running++
		case err := <-errc:
			pending--
			serveErr = fmt.Errorf("clusterdns: serve %s: %w", addr, err)
		}
	}
	if serveErr == nil {
		s.addrMu.Lock()
		s.udpAddr, s.tcpAddr = pc.LocalAddr(), ln.Addr()
		s.addrMu.Unlock()
		close(s.ready)
		s.log.Info("clusterdns: serving", "udp", pc.LocalAddr(), "tcp", ln.Addr())
		select {
		case <-ctx.Done():
		case err := <-errc:
			pending--
			serveErr = fmt.Errorf("clusterdns: serve %s: %w", addr, err)
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range []*dns.Server{udp, tcp} {
		_ = srv.ShutdownContext(sctx) // "not started" for one that already returned
	}
	// Closing the sockets also ends a server that had not started yet.
	pc.Close()
	ln.Close()
	for ; pending > 0; pending-- {
		<-errc
	}
	return serveErr
}

// listen binds UDP and TCP on addr. With port 0 it binds TCP on a free port
// and then UDP on the same one, retrying if UDP's is taken.
func listen(ctx context.Context, addr string) (net.PacketConn, net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("clusterdns: listen %q: %w", addr, err)
	}
	var lc net.ListenConfig
	var lastErr error
	for range 20 {
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			return nil, nil, fmt.Errorf("clusterdns: listen tcp %s: %w", addr, err)
		}
		p := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		pc, err := lc.ListenPacket(ctx, "udp", net.JoinHostPort(host, p))
		if err == nil {
			return pc, ln, nil
		}
		ln.Close()
		lastErr = err
		if port != "0" {
			break
		}
	}
	return nil, nil, fmt.Errorf("clusterdns: listen udp %s: %w", addr, lastErr)
}

// Ready is closed once Serve listens; UDPAddr and TCPAddr are set then.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// UDPAddr is the bound UDP address (nil before Ready).
func (s *Server) UDPAddr() net.Addr {
	s.addrMu.Lock()
	defer s.addrMu.Unlock()
	return s.udpAddr
}

// TCPAddr is the bound TCP address (nil before Ready).
func (s *Server) TCPAddr() net.Addr {
	s.addrMu.Lock()
	defer s.addrMu.Unlock()
	return s.tcpAddr
}
