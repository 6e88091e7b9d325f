package dataplane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// The gateway's HTTP/1.1 fast path (docs/design.md §10). On a plain-HTTP
// port the gateway accepts the connections itself, reads each request's
// head, and when the request is plainly safe to relay (HTTP/1.1, origin
// form, no Upgrade, Expect, Transfer-Encoding or duplicate Content-Length,
// a route without filters to an HTTP/1.1 backend) writes it to a pooled
// keep-alive connection to the chosen endpoint and copies the answer back
// by its framing: what net/http's server, httputil.ReverseProxy and
// Transport did at about 160 allocations a request, close to the cost of
// the byte relay that Docker's -p is. Anything else is handed, with the
// bytes already read, to the port's http.Server, and that connection stays
// there.

const (
	// As the port's http.Server (listen): a request head must come within
	// fastHeaderTimeout, the next request of a kept-alive connection
	// within fastIdleTimeout.
	fastHeaderTimeout = 30 * time.Second
	fastIdleTimeout   = 2 * time.Minute
	// fastBufSize is the size of a connection's read and write buffers; a
	// request head that does not fit goes to net/http (1 MB heads).
	fastBufSize = 4 << 10
	// fastMaxBody is the largest request body the fast path relays: it
	// sends the body before it reads the answer, which deadlocks with a
	// backend that answers a large upload before reading it once both
	// exceed the sockets' buffers; net/http's Transport does both at once.
	fastMaxBody = 64 << 10
	// As the Transport's MaxIdleConnsPerHost and IdleConnTimeout.
	fastMaxIdlePerEndpoint = 64
	fastBackendIdle        = 90 * time.Second
	// fastWatchClientAfter is how long a request waits for its answer
	// before its client's connection is watched for a close (awaitAnswer):
	// a short wait costs no goroutine.
	fastWatchClientAfter = 20 * time.Millisecond
	// fastMaxResponseHead is the largest answer head relayed, the
	// Transport's default MaxResponseHeaderBytes (10 MB), which the
	// ReverseProxy of the gateway's net/http path uses; a larger one is
	// answered 502.
	fastMaxResponseHead = 10 << 20
)

var (
	errFastBadResponse = errors.New("malformed HTTP/1.1 response head")
	errFastClientGone  = errors.New("the client closed its connection before the answer")
)

// handoffListener is the port's http.Server's listener: Accept returns the
// connections the fast path gave up on.
type handoffListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newHandoffListener(addr net.Addr) *handoffListener {
	return &handoffListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }

// handOver gives c to the http.Server; closed if it no longer accepts.
func (l *handoffListener) handOver(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.done:
		c.Close()
	}
}

// handoffConn is a connection handed over to net/http: its reads return
// the bytes the fast path buffered first.
type handoffConn struct {
	net.Conn
	br *bufio.Reader // nil once drained
}

func (c *handoffConn) Read(p []byte) (int, error) {
	if c.br != nil {
		if c.br.Buffered() > 0 {
			return c.br.Read(p)
		}
		c.br = nil
	}
	return c.Conn.Read(p)
}

// fastServer is a plain-HTTP port's accept loop and its fast-path
// connections, which it tracks for Shutdown as http.Server tracks its own.
type fastServer struct {
	g       *Gateway
	port    int
	ln      net.Listener
	handoff *handoffListener

	shutting atomic.Bool
	mu       sync.Mutex
	conns    map[*fastConn]struct{}
}

func (fs *fastServer) acceptLoop() {
	var backoff time.Duration
	for {
		c, err := fs.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			// As http.Server: out of descriptors or the like, wait and
			// try again.
			fs.g.log.Debug("gateway accept failed", "port", fs.port, "err", err)
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		fc := &fastConn{fs: fs, c: c}
		fs.mu.Lock()
		if fs.shutting.Load() {
			fs.mu.Unlock()
			c.Close()
			continue
		}
		fs.conns[fc] = struct{}{}
		fs.mu.Unlock()
		go fc.serve()
	}
}

// shutdown closes the idle connections and waits, until ctx is done, for
// the others to finish their request (then they close), as
// http.Server.Shutdown does.
func (fs *fastServer) shutdown(ctx context.Context) error {
	fs.shutting.Store(true)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		fs.mu.Lock()
		for fc := range fs.conns {
			if fc.idle.Load() {
				fc.c.Close()
			}
		}
		n := len(fs.conns)
		fs.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// setIdle marks fc idle or active; false: the server shuts down and an
// idle connection is to be closed. No lock, twice a request: shutdown sets
// shutting before it reads the marks, and an idle connection is marked
// before shutting is read here, so that (the atomics being sequentially
// consistent) one of the two closes it.
func (fs *fastServer) setIdle(fc *fastConn, idle bool) bool {
	fc.idle.Store(idle)
	return !idle || !fs.shutting.Load()
}

func (fs *fastServer) forget(fc *fastConn) {
	fs.mu.Lock()
	delete(fs.conns, fc)
	fs.mu.Unlock()
}

// fastConn is a client connection on the fast path.
type fastConn struct {
	fs       *fastServer
	idle     atomic.Bool // between requests: shutdown closes it
	c        net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	client   string // RemoteAddr, as the access log and http.Request say it
	clientIP string // for X-Forwarded-For; "" if RemoteAddr has no port
	req      fastRequest
	resp     []byte // scratch: the response head being forwarded
	head     []byte // scratch: keepHead's copy of a request's head
	line     []byte // scratch: a response head's line longer than the backend's buffer
	// deadline: a read deadline (idle or head) is armed on c. It is left
	// armed while a request is relayed and cleared only before c is read
	// during the request (its body, the client watch) or handed over: a
	// request answered at once costs no timer change but the next wait's.
	deadline bool
	host     string // the latest request's Host, reused while the next ones send the same
}

func (fc *fastConn) serve() {
	fs := fc.fs
	fc.client = fc.c.RemoteAddr().String()
	if ip, _, err := net.SplitHostPort(fc.client); err == nil {
		fc.clientIP = ip
	}
	fc.br = bufio.NewReaderSize(fc.c, fastBufSize)
	fc.bw = bufio.NewWriterSize(fc.c, fastBufSize)
	handedOver := false
	defer func() {
		fs.forget(fc)
		if !handedOver {
			fc.c.Close()
		}
	}()
	for first := true; ; first = false {
		// Idle until a request's first byte: Shutdown closes the
		// connection then, a new one included.
		if !fs.setIdle(fc, true) {
			return
		}
		wait := fastIdleTimeout
		if first {
			wait = fastHeaderTimeout
		}
		_ = fc.c.SetReadDeadline(time.Now().Add(wait))
		fc.deadline = true
		_, err := fc.br.Peek(1)
		fs.setIdle(fc, false)
		if err != nil {
			return
		}
		ok, err := fc.readHead(first)
		if err != nil {
			return
		}
		if !ok {
			handedOver = true
			fs.forget(fc)
			fc.clearDeadline()
			fs.handoff.handOver(&handoffConn{Conn: fc.c, br: fc.br})
			return
		}
		keep, fallback := fc.roundTrip()
		if fallback {
			handedOver = true
			fs.forget(fc)
			fc.clearDeadline()
			fs.handoff.handOver(&handoffConn{Conn: fc.c, br: fc.br})
			return
		}
		if !keep {
			return
		}
	}
}

// clearDeadline disarms c's read deadline, if armed.
func (fc *fastConn) clearDeadline() {
	if fc.deadline {
		_ = fc.c.SetReadDeadline(time.Time{})
		fc.deadline = false
	}
}

// roundTrip routes and relays the request read: keep false when the
// client connection is to be closed; fallback when net/http is to serve
// it (nothing was read past the head nor written).
func (fc *fastConn) roundTrip() (keep, fallback bool) {
	g := fc.fs.g
	start := time.Now()
	r := &fc.req
	rr, ok := fc.routeRequest()
	if !ok {
		return false, true
	}
	replayable := r.contentLength == 0 && (string(r.method) == "GET" || string(r.method) == "HEAD" ||
		string(r.method) == "OPTIONS" || string(r.method) == "TRACE")
	var info accessInfo
	var bc *backendConn
	var err error
	bodyLeft := r.contentLength > 0 // unread: the connection cannot serve another request
	for attempt := 0; ; attempt++ {
		err = nil
		snap, ep, status := fc.pickEndpoint(&rr, &info)
		switch {
		case status != 0 && attempt > 0:
			// The retry's route is no longer one for the fast path.
			err = fmt.Errorf("route changed before the retry (%d)", status)
		case status == fastFallback:
			return false, true
		case status != 0:
			return fc.answerError(&rr, start, status, info), false
		}
		if err != nil {
			break
		}
		var reused bool
		bc, reused, err = g.fastPool.conn(ep, attempt > 0, g.opts.DialTimeout, start)
		if err == nil {
			err = fc.writeRequest(bc, r)
		}
		// The connection is made and the request written: Apply may
		// return (an acknowledged removal gets no new request).
		snap.release()
		if err == nil && r.contentLength > 0 {
			fc.keepHead(r)
			fc.br.Discard(r.headLen)
			r.headLen = 0
			fc.clearDeadline() // a body takes its time, as net/http's server lets it
			if _, err = io.CopyN(bc.bw, fc.br, r.contentLength); err != nil {
				// The client did not send its body: nothing to answer.
				bc.close()
				fc.logRequest(&rr, start, http.StatusBadRequest, 0, info)
				return false, false
			}
			bodyLeft = false
			err = bc.bw.Flush()
		}
		if err == nil {
			err = fc.awaitAnswer(bc)
		}
		if err == nil {
			break
		}
		if bc != nil {
			bc.close()
			bc = nil
		}
		// A pooled connection the endpoint closed between two requests
		// (a pod stopping, its idle timeout) or closed later without an
		// answer byte: nothing was answered, so a replayable request is
		// sent once more on a new connection, as net/http's Transport
		// does whenever the close comes (keepHead kept the whole head).
		// Not when the client went away: nobody waits for the answer.
		if !reused || !replayable || attempt > 0 || errors.Is(err, errFastClientGone) {
			break
		}
	}
	if errors.Is(err, errFastClientGone) {
		// Nobody reads an answer: logged as ReverseProxy's error
		// handler logs a cancelled request.
		fc.logRequest(&rr, start, http.StatusBadGateway, 0, info)
		return false, false
	}
	if err != nil {
		g.log.Debug("backend request failed", "backend", info.backend, "endpoint", info.upstream, "err", err)
		fc.br.Discard(r.headLen)
		keep = fc.badGateway(!r.close && !bodyLeft)
		fc.logRequest(&rr, start, http.StatusBadGateway, 0, info)
		return keep, false
	}
	status, n, keep, reusable, err := fc.relayResponse(bc, string(r.method) == "HEAD")
	fc.br.Discard(r.headLen)
	end := time.Now()
	if err != nil || !reusable {
		bc.close()
	} else {
		g.fastPool.put(bc, g, end)
	}
	fc.logRequestAt(&rr, start, end, status, n, info)
	return keep && err == nil, false
}

// awaitAnswer waits for the first byte of bc's answer. A client that goes
// away meanwhile (a long poll given up) closes bc, as net/http's server
// cancels the request's context and ReverseProxy the backend request:
// nothing then waits for an answer nobody reads, Shutdown included. The
// client's connection is read for that only once the wait is long, and
// only when it has no pipelined bytes buffered (they are left there).
func (fc *fastConn) awaitAnswer(bc *backendConn) error {
	if bc.br.Buffered() > 0 {
		return nil
	}
	_ = bc.c.SetReadDeadline(time.Now().Add(fastWatchClientAfter))
	bc.deadline, bc.watching = true, true
	_, err := bc.br.Peek(1)
	bc.watching = false
	// An answer that came in time leaves the deadline armed (see
	// backendConn.Read): most are read whole by this Peek.
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	bc.clearDeadline()
	r := &fc.req
	if fc.br.Buffered() > r.headLen {
		_, err = bc.br.Peek(1)
		return err
	}
	// The head is sent: out of the buffer the watcher reads into, kept
	// for roundTrip's retry.
	fc.keepHead(r)
	fc.br.Discard(r.headLen)
	r.headLen = 0
	fc.clearDeadline() // the watch lasts as long as the wait
	gone := make(chan bool, 1)
	go func() {
		// The read buffer is the watcher's until gone is sent.
		_, err := fc.br.Peek(1)
		g := err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
		if g {
			bc.close()
		}
		gone <- g
	}()
	_, err = bc.br.Peek(1)
	_ = fc.c.SetReadDeadline(time.Unix(1, 0)) // ends the watch
	g := <-gone
	_ = fc.c.SetReadDeadline(time.Time{})
	if g {
		return errFastClientGone
	}
	return err
}

// badGateway answers 502 as ReverseProxy's error handler does; keep false,
// or Shutdown: the connection is closed after it (the result).
func (fc *fastConn) badGateway(keep bool) bool {
	keep = keep && !fc.fs.shutting.Load()
	fc.bw.WriteString("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n")
	writeDate(fc.bw)
	if !keep {
		fc.bw.WriteString("Connection: close\r\n")
	}
	fc.bw.WriteString("\r\n")
	return fc.bw.Flush() == nil && keep
}

// routeRequest is the request as the matcher reads it; false: a path net/http
// would reject, or the ACME challenge path (answered by net/http's handler).
func (fc *fastConn) routeRequest() (routeRequest, bool) {
	r := &fc.req
	target := string(r.target)
	path, query, _ := strings.Cut(target, "?")
	if bytes.IndexByte(r.target, '%') >= 0 {
		var err error
		if path, err = url.PathUnescape(path); err != nil {
			return routeRequest{}, false
		}
	}
	if len(path) >= len(helperapi.ACMEChallengePath) && path[:len(helperapi.ACMEChallengePath)] == helperapi.ACMEChallengePath {
		return routeRequest{}, false
	}
	if string(r.host) != fc.host {
		fc.host = string(r.host)
	}
	return routeRequest{method: methodString(r.method), host: fc.host, path: path, rawQuery: query, header: r}, true
}

// fastFallback is pickEndpoint's status for a request net/http serves.
const fastFallback = -1

// pickEndpoint routes rr on the served snapshot and picks an endpoint, as
// route does, returning the snapshot pinned and status 0. Otherwise
// nothing is pinned and status is route's answer (404 no route or port,
// 500 no backend or an unresolved one, 503 no endpoint), or fastFallback
// for a route net/http serves (filters, an h2c backend).
func (fc *fastConn) pickEndpoint(rr *routeRequest, info *accessInfo) (*gatewaySnapshot, string, int) {
	g := fc.fs.g
	snap := g.acquire()
	*info = accessInfo{}
	status := fc.routeOn(snap, rr, info)
	if status != 0 {
		snap.release()
		return nil, "", status
	}
	return snap, info.upstream, 0
}

// routeOn routes rr on snap and picks an endpoint into info, or says why
// not (pickEndpoint's status).
func (fc *fastConn) routeOn(snap *gatewaySnapshot, rr *routeRequest, info *accessInfo) int {
	p := snap.ports[fc.fs.port]
	if p == nil {
		return http.StatusNotFound
	}
	rt := matchRoute(p, rr)
	if rt == nil {
		return http.StatusNotFound
	}
	if rt.Filters.Redirect != nil || rt.Filters.Rewrite != nil || rt.Filters.RequestHeaders != nil || rt.Filters.ResponseHeaders != nil {
		return fastFallback
	}
	// Decided before the pick, so that net/http picks once and the
	// route's weights hold.
	for i := range rt.Backends {
		if rt.Backends[i].H2C {
			return fastFallback
		}
	}
	info.route = rt.Source
	be, idx, ok := fc.fs.g.pick(rt.Backends)
	switch {
	case be == nil:
		return http.StatusInternalServerError
	case be.Invalid:
		info.backend = be.Service
		return http.StatusInternalServerError
	case !ok:
		info.backend = be.Service
		return http.StatusServiceUnavailable
	}
	info.backend, info.upstream = be.Service, snap.endpointAddr(be, idx)
	return 0
}

// fastErrorBodies are route's http.Error texts by status.
var fastErrorBodies = map[int]string{
	http.StatusNotFound:            "no route",
	http.StatusInternalServerError: "no backend",
	http.StatusServiceUnavailable:  "no ready endpoint",
}

// answerError answers as route's http.Error does; false: the connection
// is to be closed (a request body unread, the client asked, Shutdown).
func (fc *fastConn) answerError(rr *routeRequest, start time.Time, status int, info accessInfo) bool {
	r := &fc.req
	msg := fastErrorBodies[status]
	if status == http.StatusInternalServerError && info.backend != "" {
		msg = "backend not resolved"
	}
	keep := !r.close && r.contentLength == 0 && !fc.fs.shutting.Load()
	fc.br.Discard(r.headLen)
	w := fc.bw
	w.WriteString("HTTP/1.1 ")
	w.WriteString(strconv.Itoa(status))
	w.WriteByte(' ')
	w.WriteString(http.StatusText(status))
	w.WriteString("\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nContent-Length: ")
	w.WriteString(strconv.Itoa(len(msg) + 1))
	w.WriteString("\r\n")
	writeDate(w)
	if !keep {
		w.WriteString("Connection: close\r\n")
	}
	w.WriteString("\r\n")
	if string(r.method) != "HEAD" {
		w.WriteString(msg)
		w.WriteByte('\n')
	}
	if w.Flush() != nil {
		keep = false
	}
	fc.logRequest(rr, start, status, int64(len(msg)+1), info)
	return keep
}

func (fc *fastConn) logRequest(rr *routeRequest, start time.Time, status int, n int64, a accessInfo) {
	fc.logRequestAt(rr, start, time.Now(), status, n, a)
}

// logRequestAt logs a request that ended at end.
func (fc *fastConn) logRequestAt(rr *routeRequest, start, end time.Time, status int, n int64, a accessInfo) {
	if fc.fs.g.lines == nil {
		return
	}
	fc.fs.g.lines.writeAt(end, &accessEntry{method: rr.method, host: rr.host, path: string(fc.req.target), proto: "HTTP/1.1",
		status: status, bytes: n, duration: end.Sub(start), client: fc.client, accessInfo: a})
}
