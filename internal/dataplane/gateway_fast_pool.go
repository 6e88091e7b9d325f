package dataplane

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// The fast path's keep-alive connections to the pods (gateway_fast.go):
// one pool per endpoint, as the Transport's idle connections, checked at
// checkout for bytes or a close that came while idle
// (gateway_fast_idle.go).

// backendConn is a keep-alive HTTP/1.1 connection to an endpoint.
type backendConn struct {
	c      net.Conn
	br     *bufio.Reader // reads through Read
	bw     *bufio.Writer
	addr   string
	idleAt time.Time

	// deadline: awaitAnswer's read deadline may still be armed on c, left
	// so when the answer came in time; cleared before c's next read that
	// is not awaitAnswer's (watching), and by idleClean when it expired.
	// A request answered at once so costs one timer change, not two.
	deadline, watching bool

	// idleClean's probe of the socket (nil rc: none on this connection).
	rc         syscall.RawConn
	probe      func(fd uintptr) bool
	probeBuf   [1]byte
	probeClean bool
}

func (bc *backendConn) close() { bc.c.Close() }

// Read is bc.br's source: c's reads, the client watch's deadline cleared
// first unless awaitAnswer reads.
func (bc *backendConn) Read(p []byte) (int, error) {
	if bc.deadline && !bc.watching {
		bc.clearDeadline()
	}
	return bc.c.Read(p)
}

func (bc *backendConn) clearDeadline() {
	_ = bc.c.SetReadDeadline(time.Time{})
	bc.deadline = false
}

// backendPool holds the fast path's idle connections per endpoint address.
// A connection to an endpoint that is not in the served snapshot is
// closed, never reused: Apply prunes the pool after its swap, and put
// checks the snapshot under the same lock.
type backendPool struct {
	dial func(ctx context.Context, network, addr string) (net.Conn, error) // GatewayOptions.Dial

	mu     sync.Mutex
	idle   map[string][]*backendConn
	closed bool
}

// conn returns an idle connection to addr (reused) or a new one; fresh: a
// new one whatever is idle. now is the request's start.
func (p *backendPool) conn(addr string, fresh bool, timeout time.Duration, now time.Time) (*backendConn, bool, error) {
	for !fresh {
		p.mu.Lock()
		conns := p.idle[addr]
		if len(conns) == 0 {
			p.mu.Unlock()
			break
		}
		bc := conns[len(conns)-1]
		conns[len(conns)-1] = nil
		p.idle[addr] = conns[:len(conns)-1]
		p.mu.Unlock()
		// One the endpoint closed, or sent bytes on while idle (no
		// answer to the next request, which may be another client's),
		// is dropped before a request is written to it, as net/http's
		// Transport drops it: a POST is then sent on a new connection.
		if now.Sub(bc.idleAt) < fastBackendIdle && bc.idleClean() {
			return bc, true, nil
		}
		bc.close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := p.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, false, fmt.Errorf("dial %s: %w", addr, err)
	}
	bc := &backendConn{c: c, bw: bufio.NewWriterSize(c, fastBufSize), addr: addr}
	bc.br = bufio.NewReaderSize(bc, fastBufSize)
	bc.initIdleProbe()
	return bc, false, nil
}

// put keeps bc for another request if its endpoint is still served; now
// is the request's end.
func (p *backendPool) put(bc *backendConn, g *Gateway, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, live := g.cur.Load().live[bc.addr]; !live || p.closed || len(p.idle[bc.addr]) >= fastMaxIdlePerEndpoint || bc.br.Buffered() > 0 {
		bc.close()
		return
	}
	bc.idleAt = now
	if p.idle == nil {
		p.idle = map[string][]*backendConn{}
	}
	p.idle[bc.addr] = append(p.idle[bc.addr], bc)
}

// prune closes the idle connections to endpoints that snap does not serve
// (all of them when snap is nil, at Shutdown).
func (p *backendPool) prune(snap *gatewaySnapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if snap == nil {
		p.closed = true
	}
	for addr, conns := range p.idle {
		if snap != nil {
			if _, live := snap.live[addr]; live {
				continue
			}
		}
		for _, bc := range conns {
			bc.close()
		}
		delete(p.idle, addr)
	}
}
