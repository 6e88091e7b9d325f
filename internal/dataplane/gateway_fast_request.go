package dataplane

import (
	"bufio"
	"bytes"
	"errors"
	"strconv"
	"time"
)

// The fast path's request side (gateway_fast.go): reading a client's
// request head, parsing it and judging whether it is plainly safe to relay
// (RFC 9110/9112 tokens, field values, targets and hosts), as net/http's
// server would accept it.

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
