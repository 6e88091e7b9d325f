package dataplane

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"
)

// The fast path's relay (gateway_fast.go): the request written to the
// pod's connection, and its answer read and copied back to the client by
// its framing (Content-Length, chunked, until close), as net/http's
// Transport and ReverseProxy would.

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
