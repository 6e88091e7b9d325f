package dataplane

import (
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// accessLogLimit bounds the access log lines waiting to be written: about
// 10,000 lines, seconds of a full load, before a line is dropped rather
// than a request held.
const accessLogLimit = 4 << 20

// accessLogBatch is the pause between two writes of the access log: a
// line waits at most that long (or a write's time) to be written.
const accessLogBatch = 5 * time.Millisecond

// accessLogKeep is the largest buffer kept for reuse after a write.
const accessLogKeep = 64 << 10

// accessLog writes the gateway's access log (one JSON line per request,
// docs/design.md §10) asynchronously: Write appends the line to a buffer
// and returns, and one goroutine writes what accumulated in one write. In
// the helper's container the lines go to stdout, a pipe that Docker's log
// driver reads: written synchronously, every request paid a write system
// call, and waited whenever the driver fell behind. Lines keep their
// order; Close writes every pending line, and a line written after Close
// (a WebSocket ending after the drain) is written at once.
type accessLog struct {
	w     io.Writer
	log   *slog.Logger
	limit int // accessLogLimit; tests lower it

	mu      sync.Mutex // guards the fields below; never held across a write to w
	buf     []byte
	spare   []byte
	dropped int64
	closed  bool

	wmu    sync.Mutex // one write to w at a time, in order
	failed bool       // guarded by wmu: a write error is logged once

	wake chan struct{} // cap 1: lines are pending
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the writing goroutine returned
}

func newAccessLog(w io.Writer, log *slog.Logger) *accessLog {
	l := &accessLog{w: w, log: log, limit: accessLogLimit, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	return l
}

// Write takes one line (write makes a line and writes it in one call).
func (l *accessLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	if !l.closed && len(l.buf)+len(p) > l.limit {
		l.dropped++
		l.mu.Unlock()
		return len(p), nil
	}
	l.buf = append(l.buf, p...)
	closed := l.closed
	l.mu.Unlock()
	if closed {
		l.flush()
		return len(p), nil
	}
	select {
	case l.wake <- struct{}{}:
	default: // already woken: the pending write takes this line too
	}
	return len(p), nil
}

func (l *accessLog) run() {
	defer close(l.done)
	pause := time.NewTimer(0)
	for {
		select {
		case <-l.wake:
			l.flush()
		case <-l.stop:
			l.flush()
			return
		}
		// Under load the lines of the next accessLogBatch go out in one
		// write, and this goroutine is not woken once per request.
		pause.Reset(accessLogBatch)
		select {
		case <-pause.C:
		case <-l.stop:
			l.flush()
			return
		}
	}
}

// flush writes every pending line to w.
func (l *accessLog) flush() {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	buf, dropped := l.buf, l.dropped
	l.buf, l.spare, l.dropped = l.spare[:0], nil, 0
	l.mu.Unlock()
	if dropped > 0 {
		l.log.Warn("access log lines dropped: stdout is not read as fast as requests come", "lines", dropped)
	}
	if len(buf) > 0 {
		if _, err := l.w.Write(buf); err != nil && !l.failed {
			l.failed = true
			l.log.Warn("access log not written", "err", err)
		}
	}
	if cap(buf) <= accessLogKeep {
		l.mu.Lock()
		l.spare = buf[:0]
		l.mu.Unlock()
	}
}

// Close writes every pending line and stops the writing goroutine; later
// lines are written synchronously.
func (l *accessLog) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.mu.Unlock()
	close(l.stop)
	<-l.done
}

// accessEntry is what one request's access log line says (docs/design.md
// §10).
type accessEntry struct {
	method, host, path, proto string
	status                    int
	bytes                     int64
	duration                  time.Duration
	client                    string
	accessInfo
}

// accessLineBufs are the buffers lines are made in (accessLog.Write
// copies a line).
var accessLineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// write sends e's line to l; nil l: no access log.
func (l *accessLog) write(e *accessEntry) {
	l.writeAt(time.Now(), e)
}

// writeAt sends e's line, timed now, to l; nil l: no access log. The fast
// path reads the clock once for a request's end: its duration, its line's
// time and its backend connection's idle time.
func (l *accessLog) writeAt(now time.Time, e *accessEntry) {
	if l == nil {
		return
	}
	bp := accessLineBufs.Get().(*[]byte)
	*bp = appendAccessLine((*bp)[:0], now, e)
	_, _ = l.Write(*bp)
	accessLineBufs.Put(bp)
}

// appendAccessLine appends e's line as slog's JSONHandler wrote it before
// (keys, order, time format and string escaping: TestAccessLineIsSlogs
// compares them), without its cost per record, a quarter of the fast
// path's own CPU time.
func appendAccessLine(b []byte, now time.Time, e *accessEntry) []byte {
	b = append(b, `{"time":"`...)
	b = appendLogTime(b, now)
	b = append(b, `","level":"INFO","msg":"request","method":`...)
	b = appendJSONString(b, e.method)
	b = append(b, `,"host":`...)
	b = appendJSONString(b, e.host)
	b = append(b, `,"path":`...)
	b = appendJSONString(b, e.path)
	b = append(b, `,"proto":`...)
	b = appendJSONString(b, e.proto)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(e.status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, e.bytes, 10)
	b = append(b, `,"duration_us":`...)
	b = strconv.AppendInt(b, e.duration.Microseconds(), 10)
	b = append(b, `,"client":`...)
	b = appendJSONString(b, e.client)
	b = append(b, `,"route":`...)
	b = appendJSONString(b, e.route)
	b = append(b, `,"backend":`...)
	b = appendJSONString(b, e.backend)
	b = append(b, `,"upstream":`...)
	b = appendJSONString(b, e.upstream)
	return append(b, "}\n"...)
}

// logSecond is the RFC 3339 form of one second in one location, split
// where the fraction goes: its date and time, then its zone.
type logSecond struct {
	unix int64
	loc  *time.Location
	text string // "2006-01-02T15:04:05Z07:00"
}

// lastLogSecond is the second the latest line was made in: the lines of a
// second share its formatting, the larger part of a line's cost.
var lastLogSecond atomic.Pointer[logSecond]

// appendLogTime appends t.AppendFormat(time.RFC3339Nano), as slog's
// JSONHandler writes a record's time: the second's text (cached), the
// fraction (nanoseconds, trailing zeros trimmed, none when 0), the zone.
func appendLogTime(b []byte, t time.Time) []byte {
	const dateTime = len("2006-01-02T15:04:05")
	sec := lastLogSecond.Load()
	if sec == nil || sec.unix != t.Unix() || sec.loc != t.Location() {
		if y := t.Year(); y < 0 || y > 9999 {
			return t.AppendFormat(b, time.RFC3339Nano) // not 4 digits: not cached
		}
		sec = &logSecond{unix: t.Unix(), loc: t.Location(), text: t.Truncate(time.Second).Format(time.RFC3339)}
		lastLogSecond.Store(sec)
	}
	b = append(b, sec.text[:dateTime]...)
	if ns := t.Nanosecond(); ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i > 0; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := len(frac)
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, sec.text[dateTime:]...)
}

// appendJSONString appends s as a JSON string, escaped as slog's
// JSONHandler does: no HTML escaping, control bytes as \n, \r, \t or
// \u00XX, invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			case '\t':
				b = append(b, `\t`...)
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}
