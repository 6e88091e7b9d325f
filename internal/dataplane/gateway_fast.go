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
	"syscall"
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

// fastRequest is a parsed request head; its byte slices point into the
// connection's read buffer, valid until the head is discarded.
type fastRequest struct {
	headLen       int
	method        []byte
	target        []byte
	host          []byte
	contentLength int64
	close         bool // the client asked to close after this request
	hdrs          []fastHeader
}

type fastHeader struct {
	name, value []byte
	line        []byte // the whole line with its CRLF, forwarded as is
	drop        bool   // hop-by-hop or X-Forwarded-*: not forwarded
}

// Get is http.Header's Get over the parsed headers (route matching).
func (r *fastRequest) Get(name string) string {
	for i := range r.hdrs {
		if asciiEqualFold(r.hdrs[i].name, name) {
			return string(r.hdrs[i].value)
		}
	}
	return ""
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

// readHead waits for a whole request head in the read buffer and parses
// it; false: not one for the fast path (left unread for net/http). The
// rest of a head that did not come whole is awaited fastHeaderTimeout
// (the first request's own timeout is armed already): a head that came
// whole, the common case, awaits nothing and changes no timer.
func (fc *fastConn) readHead(headTimeoutArmed bool) (bool, error) {
	for n := 1; ; {
		if !headTimeoutArmed && fc.br.Buffered() < n {
			_ = fc.c.SetReadDeadline(time.Now().Add(fastHeaderTimeout))
			headTimeoutArmed = true
		}
		if _, err := fc.br.Peek(n); err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return false, nil // a head larger than the buffer
			}
			return false, err
		}
		buf, _ := fc.br.Peek(fc.br.Buffered())
		switch complete, ok := parseRequestHead(buf, &fc.req); {
		case !ok:
			return false, nil
		case complete:
			return true, nil
		}
		n = len(buf) + 1
	}
}

// parseRequestHead parses head (the bytes buffered so far): complete once
// the empty line came; ok false when the request is not one the fast path
// relays (net/http answers it, or rejects it with 400).
func parseRequestHead(head []byte, r *fastRequest) (complete, ok bool) {
	*r = fastRequest{hdrs: r.hdrs[:0], contentLength: 0}
	line, rest, found := cutLine(head)
	if !found {
		// More to come, unless it cannot be a request line: a TLS
		// handshake or other bytes are net/http's to answer, at once.
		for _, c := range head {
			if c < ' ' && c != '\r' || c >= 0x7f {
				return false, false
			}
		}
		return false, len(head) == 0 || isTokenByte(head[0])
	}
	if line == nil {
		return false, false
	}
	// METHOD SP origin-form SP HTTP/1.1 CRLF
	line = line[:len(line)-2]
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 <= 0 {
		return false, false
	}
	sp2 := bytes.IndexByte(line[sp1+1:], ' ')
	if sp2 < 0 {
		return false, false
	}
	r.method, r.target = line[:sp1], line[sp1+1:sp1+1+sp2]
	if string(line[sp1+2+sp2:]) != "HTTP/1.1" || !isToken(r.method) || !validTarget(r.target) {
		return false, false
	}
	hosts, lengths := 0, 0
	for {
		line, rest, found = cutLine(rest)
		if !found {
			return false, true // more to come
		}
		if line == nil {
			return false, false // a bare LF
		}
		if len(line) == 2 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			return false, false // obs-fold
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !isToken(line[:colon]) {
			return false, false
		}
		name := line[:colon]
		value := bytes.Trim(line[colon+1:len(line)-2], " \t")
		if !validFieldValue(value) {
			return false, false
		}
		h := fastHeader{name: name, value: value, line: line}
		switch {
		case asciiEqualFold(name, "Host"):
			hosts++
			r.host = value
			h.drop = true // written first, as the Transport does
		case asciiEqualFold(name, "Content-Length"):
			lengths++
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 || value[0] == '+' {
				return false, false
			}
			r.contentLength = n
		case asciiEqualFold(name, "Connection"):
			for tok := range bytes.SplitSeq(value, []byte(",")) {
				switch tok = bytes.Trim(tok, " \t"); {
				case asciiEqualFold(tok, "close"):
					r.close = true
				case asciiEqualFold(tok, "keep-alive"), len(tok) == 0:
				default:
					// Upgrade, or headers it makes hop-by-hop: net/http.
					return false, false
				}
			}
			h.drop = true
		case asciiEqualFold(name, "Transfer-Encoding"), asciiEqualFold(name, "Upgrade"),
			asciiEqualFold(name, "Expect"), asciiEqualFold(name, "Te"),
			asciiEqualFold(name, "Trailer"), asciiEqualFold(name, "HTTP2-Settings"):
			// Chunked bodies (and CL with TE, a smuggling attempt),
			// upgrades, 100-continue and trailers: net/http.
			return false, false
		case hopByHop(name):
			h.drop = true // as ReverseProxy drops them
		case asciiEqualFold(name, "Forwarded"), asciiEqualFold(name, "X-Forwarded-For"),
			asciiEqualFold(name, "X-Forwarded-Host"), asciiEqualFold(name, "X-Forwarded-Proto"):
			// ReverseProxy's Rewrite drops them; X-Forwarded-For is
			// written again with the client appended (writeRequest).
			h.drop = true
		}
		r.hdrs = append(r.hdrs, h)
	}
	if hosts != 1 || lengths > 1 || !validHost(r.host) || r.contentLength > fastMaxBody {
		// No Host or two, two Content-Lengths (even equal ones): net/http
		// decides (400), never the fast path.
		return false, false
	}
	r.headLen = len(head) - len(rest)
	return true, true
}

// cutLine cuts the first line (with its CRLF) off b; found false: no LF
// yet; line nil: the line ends in a bare LF.
func cutLine(b []byte) (line, rest []byte, found bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return nil, b, false
	}
	if i == 0 || b[i-1] != '\r' {
		return nil, b[i+1:], true
	}
	return b[:i+1], b[i+1:], true
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

// keepHead copies r's head out of the read buffer, before it leaves it, and
// points r into the copy (the method that frames the answer, the target and
// host the access log names, the headers a retry sends again): a body's
// bytes overwrite the buffer as they are read, and so does a long wait's
// client watch (awaitAnswer). The caller discards the head and zeroes
// headLen; a head kept already (headLen 0) stays as it is.
func (fc *fastConn) keepHead(r *fastRequest) {
	if r.headLen == 0 {
		return
	}
	buf, _ := fc.br.Peek(r.headLen)
	fc.head = append(fc.head[:0], buf...)
	// The same bytes parse the same: a complete head for the fast path.
	parseRequestHead(fc.head, r)
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

// writeRequest writes the request head to bc as ReverseProxy sends it: Host
// first, hop-by-hop headers left out, X-Forwarded-For with the client
// appended, -Host as asked, -Proto http.
func (fc *fastConn) writeRequest(bc *backendConn, r *fastRequest) error {
	w := bc.bw
	w.Write(r.method)
	w.WriteByte(' ')
	w.Write(r.target)
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.Write(r.host)
	w.WriteString("\r\n")
	xff := false
	for i := range r.hdrs {
		h := &r.hdrs[i]
		if !h.drop {
			w.Write(h.line)
		}
	}
	if fc.clientIP != "" {
		w.WriteString("X-Forwarded-For: ")
		for i := range r.hdrs {
			if h := &r.hdrs[i]; asciiEqualFold(h.name, "X-Forwarded-For") {
				if xff {
					w.WriteString(", ")
				}
				w.Write(h.value)
				xff = true
			}
		}
		if xff {
			w.WriteString(", ")
		}
		w.WriteString(fc.clientIP)
		w.WriteString("\r\n")
	}
	w.WriteString("X-Forwarded-Host: ")
	w.Write(r.host)
	w.WriteString("\r\nX-Forwarded-Proto: http\r\n\r\n")
	if r.contentLength > 0 {
		return nil // flushed with the body
	}
	return w.Flush()
}

// relayResponse copies the endpoint's answer to the client by its framing.
// keep: the client connection may serve another request; reusable: bc may
// serve another; an error after the head was forwarded closes both.
func (fc *fastConn) relayResponse(bc *backendConn, head bool) (status int, n int64, keep, reusable bool, err error) {
	keep = !fc.req.close
	for sent := false; ; sent = true {
		// After an informational answer (103 Early Hints) the client is
		// watched again while the next head is awaited, as net/http's
		// server watches its connection for the whole request; the first
		// head's byte is buffered already (roundTrip's wait).
		if err = fc.awaitAnswer(bc); err != nil {
			return http.StatusBadGateway, 0, false, false, err
		}
		var fr fastResponse
		if fr, err = fc.readResponseHead(bc); err != nil {
			if sent {
				return http.StatusBadGateway, 0, false, false, err
			}
			// Nothing reached the client yet: it gets ReverseProxy's
			// answer to an answer net/http cannot read.
			fc.fs.g.log.Debug("backend answer unreadable", "endpoint", bc.addr, "err", err)
			return http.StatusBadGateway, 0, fc.badGateway(keep), false, nil
		}
		status = fr.status
		if status == http.StatusSwitchingProtocols {
			// No Upgrade is asked on the fast path.
			return status, 0, false, false, errFastBadResponse
		}
		informational := status >= 100 && status < 200
		noBody := head || informational || status == http.StatusNoContent || status == http.StatusNotModified
		closeDelimited := !noBody && !fr.chunked && fr.contentLength < 0
		if closeDelimited || fc.fs.shutting.Load() {
			keep = false
		}
		fc.bw.Write(fc.resp)
		if !keep && !informational {
			fc.bw.WriteString("Connection: close\r\n")
		}
		fc.bw.WriteString("\r\n")
		if informational {
			if err = fc.bw.Flush(); err != nil {
				return status, 0, false, false, err
			}
			continue
		}
		reusable = fr.keepAlive && !closeDelimited
		switch {
		case noBody:
			// HEAD's Content-Length describes a body not sent.
		case fr.chunked:
			n, err = relayChunked(fc.bw, bc.br)
		default:
			n, err = relayBody(fc.bw, bc.br, fr.contentLength)
			if closeDelimited && errors.Is(err, io.EOF) {
				err = nil
			}
		}
		if err == nil {
			err = fc.bw.Flush()
		}
		return status, n, keep, reusable, err
	}
}

type fastResponse struct {
	status        int
	contentLength int64 // -1: none
	chunked       bool
	keepAlive     bool // the endpoint keeps the connection open
}

// readResponseHead reads a response head from bc into fc.resp as it is to
// be forwarded (status line as HTTP/1.1, hop-by-hop headers left out, no
// final CRLF).
func (fc *fastConn) readResponseHead(bc *backendConn) (fastResponse, error) {
	fr := fastResponse{contentLength: -1, keepAlive: true}
	total := 0
	line, err := fc.readHeadLine(bc.br, &total)
	if err != nil {
		return fr, err
	}
	// HTTP/1.x SP 3DIGIT [SP reason]
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || line[8] != ' ' || len(line) > 12 && line[12] != ' ' ||
		!validFieldValue(line) {
		return fr, errFastBadResponse
	}
	if line[7] != '1' {
		fr.keepAlive = false // HTTP/1.0: not kept unless it says so; not tried
	}
	http10 := line[7] == '0'
	st, err := strconv.Atoi(string(line[9:12]))
	if err != nil || st < 100 {
		return fr, errFastBadResponse
	}
	fr.status = st
	fc.resp = append(fc.resp[:0], "HTTP/1.1"...)
	fc.resp = append(append(fc.resp, line[8:]...), "\r\n"...)
	var conn []byte // Connection's tokens other than close: headers to drop
	lengths := 0
	for {
		if line, err = fc.readHeadLine(bc.br, &total); err != nil {
			return fr, err
		}
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			return fr, errFastBadResponse
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !isToken(line[:colon]) {
			return fr, errFastBadResponse
		}
		name, value := line[:colon], bytes.Trim(line[colon+1:], " \t")
		if !validFieldValue(value) {
			return fr, errFastBadResponse
		}
		switch {
		case asciiEqualFold(name, "Connection"):
			for tok := range bytes.SplitSeq(value, []byte(",")) {
				tok = bytes.Trim(tok, " \t")
				if asciiEqualFold(tok, "close") {
					fr.keepAlive = false
				} else if len(tok) > 0 && !asciiEqualFold(tok, "keep-alive") {
					conn = append(append(conn, tok...), ',')
				}
			}
			continue
		case hopByHop(name), asciiEqualFold(name, "Upgrade"), asciiEqualFold(name, "Te"):
			continue
		case asciiEqualFold(name, "Transfer-Encoding") && http10:
			// An HTTP/1.0 recipient does not know Transfer-Encoding
			// (RFC 9112 §6.1): net/http's Transport drops it and frames
			// the answer by its Content-Length or its close.
			continue
		case asciiEqualFold(name, "Transfer-Encoding"):
			// Exactly one, "chunked", as net/http's Transport reads an
			// answer: any other coding, or a list, fails it (502); the
			// fast path would else relay until a close that a
			// keep-alive endpoint never makes.
			if fr.chunked || !asciiEqualFold(value, "chunked") {
				return fr, errFastBadResponse
			}
			fr.chunked = true
		case asciiEqualFold(name, "Content-Length"):
			n, perr := strconv.ParseInt(string(value), 10, 64)
			if perr != nil || n < 0 || value[0] == '+' || lengths > 0 && n != fr.contentLength {
				return fr, errFastBadResponse
			}
			lengths++
			fr.contentLength = n
		}
		fc.resp = append(append(fc.resp, line...), "\r\n"...)
	}
	if fr.chunked && lengths > 0 {
		// Transfer-Encoding overrides Content-Length (RFC 9112 §6.3).
		fc.resp = dropHeader(fc.resp, "Content-Length")
		fr.contentLength = -1
	}
	for len(conn) > 0 {
		var tok []byte
		tok, conn, _ = bytes.Cut(conn, []byte(","))
		fc.resp = dropHeader(fc.resp, string(tok))
	}
	return fr, nil
}

// readHeadLine reads a line of an answer's head without its end, CRLF or
// a bare LF as net/http's textproto reads it. A line longer than br's
// buffer (a large Set-Cookie or CSP) is gathered in fc.line; total counts
// the head against fastMaxResponseHead, the Transport's limit.
func (fc *fastConn) readHeadLine(br *bufio.Reader, total *int) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		fc.line = append(fc.line[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if *total+len(fc.line) > fastMaxResponseHead {
				return nil, errFastBadResponse
			}
			line, err = br.ReadSlice('\n')
			fc.line = append(fc.line, line...)
		}
		line = fc.line
	}
	if err != nil {
		return nil, err
	}
	if *total += len(line); *total > fastMaxResponseHead {
		return nil, errFastBadResponse
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// writeDate writes the Date header that net/http's server adds to the
// answers it makes (RFC 9110 §6.6.1).
func writeDate(w *bufio.Writer) {
	var b [len(http.TimeFormat) + 8]byte
	w.WriteString("Date: ")
	w.Write(time.Now().UTC().AppendFormat(b[:0], http.TimeFormat))
	w.WriteString("\r\n")
}

// dropHeader removes the lines of header name from a response head.
func dropHeader(head []byte, name string) []byte {
	out := head[:0]
	first := true
	for len(head) > 0 {
		i := bytes.IndexByte(head, '\n')
		line := head[:i+1]
		head = head[i+1:]
		if !first {
			if colon := bytes.IndexByte(line, ':'); colon > 0 && asciiEqualFold(line[:colon], name) {
				continue
			}
		}
		first = false
		out = append(out, line...)
	}
	return out
}

// relayBody copies n bytes (n < 0: until EOF) from src to dst, flushing dst
// whenever src has nothing buffered, so that a trickling body reaches the
// client as it comes and a small one leaves with its head in one write.
// What is larger than the connections' buffers goes through a pooled
// 32 KiB buffer, held while the body streams, as ReverseProxy's.
func relayBody(dst *bufio.Writer, src *bufio.Reader, n int64) (int64, error) {
	var done int64
	for n < 0 || done < n {
		if src.Buffered() == 0 {
			if err := dst.Flush(); err != nil {
				return done, err
			}
			if n < 0 || n-done > fastBufSize {
				k, err := relayLarge(dst, src, n-done)
				done += int64(k)
				if err != nil {
					if errors.Is(err, io.EOF) && n >= 0 {
						err = io.ErrUnexpectedEOF
					}
					return done, err
				}
				continue
			}
			if _, err := src.Peek(1); err != nil {
				if errors.Is(err, io.EOF) && n >= 0 {
					err = io.ErrUnexpectedEOF
				}
				return done, err
			}
		}
		k := src.Buffered()
		if n >= 0 {
			k = int(min(int64(k), n-done))
		}
		b, _ := src.Peek(k)
		if _, err := dst.Write(b); err != nil {
			return done, err
		}
		src.Discard(k)
		done += int64(k)
	}
	return done, nil
}

// relayLarge reads once from src, whose buffer is empty, straight into a
// pooled buffer (at most left bytes, unless left < 0) and writes that to
// dst, whose buffer is empty too: one read and one write, no copy.
func relayLarge(dst *bufio.Writer, src *bufio.Reader, left int64) (int, error) {
	bp := httpBuffers.get()
	defer httpBuffers.put(bp)
	buf := *bp
	if left >= 0 && int64(len(buf)) > left {
		buf = buf[:left]
	}
	k, err := src.Read(buf)
	if k > 0 {
		if _, werr := dst.Write(buf[:k]); werr != nil {
			return k, werr
		}
	}
	return k, err
}

// relayChunked copies a chunked body as sent (chunk sizes, extensions,
// trailers), reading the sizes to find its end; it returns the data's
// length, as the access log counts a body.
func relayChunked(dst *bufio.Writer, src *bufio.Reader) (int64, error) {
	var data int64
	for {
		line, err := readLineFlushing(dst, src)
		if err != nil {
			return data, err
		}
		size := line[:len(line)-2]
		if i := bytes.IndexByte(size, ';'); i >= 0 {
			size = size[:i]
		}
		n, perr := strconv.ParseInt(string(bytes.TrimRight(size, " \t")), 16, 64)
		if perr != nil || n < 0 {
			return data, errFastBadResponse
		}
		if _, err := dst.Write(line); err != nil {
			return data, err
		}
		if n == 0 {
			// Trailers, then the empty line.
			for {
				line, err := readLineFlushing(dst, src)
				if err != nil {
					return data, err
				}
				if _, err := dst.Write(line); err != nil {
					return data, err
				}
				if len(line) == 2 {
					return data, nil
				}
			}
		}
		if _, err := relayBody(dst, src, n); err != nil {
			return data, err
		}
		data += n
		crlf, err := readLineFlushing(dst, src)
		if err != nil {
			return data, err
		}
		if len(crlf) != 2 {
			return data, errFastBadResponse
		}
		dst.Write(crlf)
	}
}

// readLineFlushing reads a CRLF-terminated line from src, flushing dst
// first if src would block.
func readLineFlushing(dst *bufio.Writer, src *bufio.Reader) ([]byte, error) {
	if b, _ := src.Peek(src.Buffered()); bytes.IndexByte(b, '\n') < 0 {
		if err := dst.Flush(); err != nil {
			return nil, err
		}
	}
	line, err := src.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			err = errFastBadResponse
		}
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, errFastBadResponse
	}
	return line, nil
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

func isTokenByte(c byte) bool {
	return c < 0x80 && tokenTable[c]
}

var tokenTable = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-32] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !isTokenByte(c) {
			return false
		}
	}
	return true
}

// validFieldValue: no control byte but HTAB (RFC 9110 §5.5).
func validFieldValue(b []byte) bool {
	for _, c := range b {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// validTarget: origin form of visible ASCII (RFC 9112 §3.2.1).
func validTarget(b []byte) bool {
	if len(b) == 0 || b[0] != '/' {
		return false
	}
	for _, c := range b {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// validHost: a reg-name, IPv4 or bracketed IPv6 address with an optional
// port; anything else goes to net/http, which answers 400 for it.
func validHost(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case bytes.IndexByte([]byte("-._~:[]"), c) >= 0:
		default:
			return false
		}
	}
	return true
}

// hopByHop reports whether a header field is one of the hop-by-hop
// fields (RFC 9110 §7.6.1) that a proxy never forwards, in a request or
// an answer, besides Connection, Upgrade, TE and Transfer-Encoding, which
// each side handles on its own.
func hopByHop(name []byte) bool {
	return asciiEqualFold(name, "Keep-Alive") || asciiEqualFold(name, "Proxy-Connection") ||
		asciiEqualFold(name, "Proxy-Authenticate") || asciiEqualFold(name, "Proxy-Authorization")
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		x, y := b[i], s[i]
		if x|0x20 != y|0x20 || (x|0x20 < 'a' || x|0x20 > 'z') && x != y {
			return false
		}
	}
	return true
}

// methodString avoids an allocation for the common methods.
func methodString(m []byte) string {
	for _, s := range [...]string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"} {
		if string(m) == s {
			return s
		}
	}
	return string(m)
}
