package dataplane

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// maxDatagram is the largest UDP payload: a relay buffer smaller than this
// would truncate datagrams silently.
const maxDatagram = 64 << 10

// udpListener relays one Service port's UDP datagrams. Each client address
// gets a session: a socket connected to one endpoint, so that replies go
// back to that client, and a client's datagrams keep going to the same
// endpoint while the session lives (as conntrack does).
type udpListener struct {
	p    *Proxy
	key  portKey
	conn *net.UDPConn
	next atomic.Uint64
	// dropped counts datagrams no endpoint took (for tests, and a future
	// metric).
	dropped atomic.Int64

	// mu guards sessions and each session's last. It is taken per
	// datagram, by this port's read loop and by sessions expiring: not on
	// any config path, and held only for a map operation.
	mu       sync.Mutex
	sessions map[netip.AddrPort]*udpSession
	closed   bool
}

type udpSession struct {
	client netip.AddrPort
	ep     netip.AddrPort
	up     *net.UDPConn
	last   time.Time // last datagram either way; guarded by udpListener.mu
}

func (l *udpListener) addr() net.Addr { return l.conn.LocalAddr() }

// close stops the port. Its sessions go too: their replies could only be
// sent through the listening socket.
func (l *udpListener) close() {
	l.mu.Lock()
	l.closed = true
	for c, s := range l.sessions {
		s.up.Close()
		delete(l.sessions, c)
	}
	l.mu.Unlock()
	l.conn.Close()
}

func (l *udpListener) serve() {
	buf := make([]byte, maxDatagram)
	for {
		n, client, err := l.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // an ICMP error reported on the socket, say: not fatal
		}
		s := l.session(client)
		if s == nil {
			l.dropped.Add(1) // no endpoint: dropped, as a cluster drops it
			continue
		}
		// A write error (an ICMP port unreachable from an earlier datagram)
		// is seen by the session's reader too, which ends the session.
		s.up.Write(buf[:n])
	}
}

// session returns client's session, opening one if needed (nil when no
// endpoint takes it), and marks it active.
func (l *udpListener) session(client netip.AddrPort) *udpSession {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.sessions[client]; ok {
		s.last = now
		return s
	}
	if l.closed {
		return nil
	}
	p := l.p
	// A UDP "dial" only connects a socket: no packet, no waiting.
	up, ep, _, ok := connect(p, l.key, &l.next, func(ep netip.AddrPort) (*net.UDPConn, error) {
		return net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(ep))
	})
	if !ok {
		return nil
	}
	s := &udpSession{client: client, ep: ep, up: up, last: now}
	l.sessions[client] = s
	p.conns.Add(1)
	go func() {
		defer p.conns.Done()
		l.replies(s)
	}()
	if p.log.Enabled(context.Background(), slog.LevelDebug) {
		p.log.Debug("udp session", "port", l.key.String(), "client", client.String(), "endpoint", ep.String())
	}
	return s
}

// replies relays an endpoint's datagrams back to the session's client until
// the session has been idle for UDPIdle, its endpoint failed, or it was
// dropped.
func (l *udpListener) replies(s *udpSession) {
	idle := l.p.opts.UDPIdle
	l.mu.Lock()
	deadline := s.last.Add(idle)
	l.mu.Unlock()
	rc, err := s.up.SyscallConn()
	if err != nil {
		l.mu.Lock()
		l.drop(s)
		l.mu.Unlock()
		return
	}
	for {
		s.up.SetReadDeadline(deadline)
		// A session waits most of its life: it holds no buffer meanwhile.
		bp, n, err := udpBuffers.read(rc)
		if err == nil {
			l.mu.Lock()
			s.last = time.Now()
			deadline = s.last.Add(idle)
			l.mu.Unlock()
			l.conn.WriteToUDPAddrPort((*bp)[:n], s.client)
			udpBuffers.put(bp)
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			l.mu.Lock()
			deadline = s.last.Add(idle)
			expired := !time.Now().Before(deadline)
			if expired {
				l.drop(s)
			}
			l.mu.Unlock()
			if expired {
				return
			}
			continue
		}
		// Closed by drop, or the endpoint refused (ICMP): either way the
		// session is over; the client's next datagram opens another.
		l.mu.Lock()
		l.drop(s)
		l.mu.Unlock()
		return
	}
}

// drop ends a session; l.mu is held.
func (l *udpListener) drop(s *udpSession) {
	if l.sessions[s.client] == s {
		delete(l.sessions, s.client)
	}
	s.up.Close()
}

// dropSessionsNotIn ends the sessions whose endpoint was removed, so that
// their clients' next datagrams reach a live endpoint (kube-proxy clears
// conntrack entries of removed UDP endpoints for the same reason).
func (l *udpListener) dropSessionsNotIn(eps []netip.AddrPort) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.sessions {
		if !contains(eps, s.ep) {
			l.drop(s)
		}
	}
}

// sessionCount is for tests.
func (l *udpListener) sessionCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sessions)
}
