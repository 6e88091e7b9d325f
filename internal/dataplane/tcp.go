package dataplane

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// tcpListener accepts one Service port's TCP connections.
type tcpListener struct {
	p      *Proxy
	key    portKey
	ln     net.Listener
	next   atomic.Uint64 // round-robin cursor, kept across configs
	warned limiter
}

// limiter lets one event through per second: a warning that every failing
// connection would repeat is logged, not flooded.
type limiter struct{ last atomic.Int64 }

func (l *limiter) allow(now time.Time) bool {
	prev := l.last.Load()
	return now.UnixNano()-prev >= int64(time.Second) && l.last.CompareAndSwap(prev, now.UnixNano())
}

func (l *tcpListener) addr() net.Addr { return l.ln.Addr() }
func (l *tcpListener) close()         { l.ln.Close() }

func (l *tcpListener) serve() {
	var backoff time.Duration
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors or the like: back off as net/http
			// does instead of spinning, and keep serving.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			l.p.log.Warn("accept failed", "port", l.key.String(), "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		l.p.conns.Add(1)
		go func() {
			defer l.p.conns.Done()
			l.handle(c)
		}()
	}
}

// handle connects one client to an endpoint and relays until both sides
// are done.
func (l *tcpListener) handle(client net.Conn) {
	p := l.p
	up, ep, tried, ok := connect(p, l.key, &l.next, func(ep netip.AddrPort) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(p.kill, p.opts.DialTimeout)
		defer cancel()
		return p.opts.Dial(ctx, "tcp", ep.String())
	})
	if !ok {
		if tried > 0 && l.warned.allow(time.Now()) {
			p.log.Warn("no endpoint accepted a connection (logged at most once a second)", "port", l.key.String(), "tried", tried)
		}
		reset(client)
		return
	}
	if p.log.Enabled(context.Background(), slog.LevelDebug) {
		p.log.Debug("connection", "port", l.key.String(), "client", client.RemoteAddr().String(), "endpoint", ep.String())
	}
	relay(p.kill, client, up)
}

// reset closes c with an RST, so the client fails at once as it would on a
// refused connection instead of reading an orderly, empty reply.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// relay copies both ways until both directions ended, then closes both
// connections. kill closes them early (the end of a Shutdown's grace).
func relay(kill context.Context, client, up net.Conn) {
	stop := context.AfterFunc(kill, func() {
		client.Close()
		up.Close()
	})
	defer stop()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pipe(up, client)
	}()
	pipe(client, up)
	wg.Wait()
	client.Close()
	up.Close()
}

// pipe copies src to dst. At src's EOF it half-closes dst, so the other
// direction goes on (a client that sent its request and shut down its
// write side still gets its response). Any other error ends both
// directions: a reset is passed on as a reset.
func pipe(dst, src net.Conn) {
	err := copyConn(dst, src)
	if err == nil {
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			if cw.CloseWrite() == nil {
				return
			}
		}
		// A connection that cannot half-close: closing is the only way to
		// tell the other side that nothing more comes.
	}
	if errors.Is(err, syscall.ECONNRESET) {
		reset(dst)
	}
	dst.Close()
	src.Close()
}

// copyConn copies src to dst until src's EOF (nil) or an error, through
// tcpBuffers (see bufferPool.read): an idle connection — most of a
// keep-alive client's life — holds no buffer.
func copyConn(dst, src net.Conn) error {
	sc, ok := src.(syscall.Conn)
	if !ok {
		return copyBuffered(dst, src)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return copyBuffered(dst, src)
	}
	for {
		bp, n, err := tcpBuffers.read(rc)
		if err != nil {
			return err
		}
		if n == 0 {
			tcpBuffers.put(bp)
			return nil // EOF
		}
		_, err = dst.Write((*bp)[:n])
		tcpBuffers.put(bp)
		if err != nil {
			return err
		}
	}
}

// copyBuffered is copyConn for a connection that is not a socket.
func copyBuffered(dst, src net.Conn) error {
	bp := tcpBuffers.get()
	defer tcpBuffers.put(bp)
	// The wrappers hide ReadFrom/WriteTo, which would use a buffer of
	// their own (or, for *net.TCPConn, splice through kernel pipes held
	// for the connection's whole life).
	_, err := io.CopyBuffer(writerOnly{dst}, readerOnly{src}, *bp)
	return err
}

type readerOnly struct{ r io.Reader }

func (r readerOnly) Read(b []byte) (int, error) { return r.r.Read(b) }

type writerOnly struct{ w io.Writer }

func (w writerOnly) Write(b []byte) (int, error) { return w.w.Write(b) }
