package dataplane

import (
	"io"
	"log/slog"
	"sync"
	"time"
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

// Write takes one line (slog's handler writes a record in one call).
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
