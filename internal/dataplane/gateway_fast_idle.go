//go:build linux || darwin

package dataplane

import (
	"errors"
	"os"
	"syscall"
)

// initIdleProbe prepares idleClean for bc; once per connection, so that
// a probe allocates nothing.
func (bc *backendConn) initIdleProbe() {
	sc, ok := bc.c.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	bc.rc = rc
	bc.probe = func(fd uintptr) bool {
		for {
			n, _, err := syscall.Recvfrom(int(fd), bc.probeBuf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			if err == syscall.EINTR {
				continue
			}
			// Nothing to read yet: clean. A byte (an answer nobody
			// asked for) or EOF (the endpoint closed it) or an error:
			// not to be used again.
			bc.probeClean = n <= 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
			return true
		}
	}
}

// idleClean says, without waiting, whether a pooled connection is still
// clean: open, nothing received since its last answer. net/http's
// Transport knows it by a read pending on each idle connection (its
// "Unsolicited response received on idle HTTP channel" and closed idle
// connections); a non-blocking MSG_PEEK asks the socket the same at
// checkout, without a goroutine per idle connection. An expired read
// deadline would not do: Go fails the read before it reaches the socket.
func (bc *backendConn) idleClean() bool {
	if bc.rc == nil {
		return true
	}
	bc.probeClean = false
	err := bc.rc.Read(bc.probe)
	if errors.Is(err, os.ErrDeadlineExceeded) && bc.deadline {
		// The client watch's deadline, left armed (awaitAnswer), expired
		// while bc was idle: cleared, the socket is asked.
		bc.clearDeadline()
		err = bc.rc.Read(bc.probe)
	}
	if err != nil {
		return false
	}
	return bc.probeClean
}
