package dataplane

import (
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// Copy buffers, pooled: memory is bounded by the number of connections
// moving bytes at a time, not by the traffic nor by the connections open.
var (
	tcpBuffers = newBufferPool(32 << 10)
	udpBuffers = newBufferPool(maxDatagram)
	// httpBuffers are the gateway's response copy buffers (the size
	// httputil.ReverseProxy allocates when it has no pool).
	httpBuffers = newBufferPool(32 << 10)
)

type bufferPool struct {
	pool sync.Pool
	out  atomic.Int64 // taken and not given back (tests check idle holds none)
}

func newBufferPool(size int) *bufferPool {
	p := &bufferPool{}
	p.pool.New = func() any { b := make([]byte, size); return &b }
	return p
}

func (p *bufferPool) get() *[]byte {
	p.out.Add(1)
	return p.pool.Get().(*[]byte)
}

func (p *bufferPool) put(b *[]byte) {
	p.pool.Put(b)
	p.out.Add(-1)
}

// reverseProxyPool is p as an httputil.BufferPool: without one the
// ReverseProxy allocates a 32 KiB buffer for every response it copies,
// which at thousands of requests a second is most of the gateway's
// garbage.
type reverseProxyPool struct{ p *bufferPool }

func (r reverseProxyPool) Get() []byte { return *r.p.get() }

func (r reverseProxyPool) Put(b []byte) { r.p.put(&b) }

// read waits until rc has data (or EOF, or an error) and reads it into a
// buffer of p, which the caller puts back; on error there is no buffer.
// The buffer is taken only once the read has something to return: while
// waiting for the poller nothing is held. The system calls are the ones
// net's own Read makes (read, EAGAIN, wait, read); deadlines set on the
// connection apply.
func (p *bufferPool) read(rc syscall.RawConn) (*[]byte, int, error) {
	var bp *[]byte
	var n int
	var rerr error
	err := rc.Read(func(fd uintptr) bool {
		if bp == nil {
			bp = p.get()
		}
		for {
			n, rerr = syscall.Read(int(fd), *bp)
			if rerr != syscall.EINTR {
				break
			}
		}
		if rerr == syscall.EAGAIN {
			p.put(bp)
			bp = nil
			return false // wait for the poller, holding nothing
		}
		return true
	})
	if err == nil && rerr != nil {
		err = os.NewSyscallError("read", rerr)
	}
	if err != nil {
		if bp != nil {
			p.put(bp)
		}
		return nil, 0, err
	}
	return bp, n, nil
}
