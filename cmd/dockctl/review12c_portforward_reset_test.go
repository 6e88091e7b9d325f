package main

import (
	"context"
	"io"
	"net"
	"strconv"
	"testing"
	"time"
)

// A local client that resets its connection (RST: killed with unread
// data, SO_LINGER 0, a load balancer's health check) while the pod's
// side is idle — a database or cache waiting for the next command, a
// long-poll waiting for an event — is never passed on. handle copies the
// local side into the relay and half-closes the relay's stdin only when
// that copy ends cleanly; on a read error it does nothing, and the
// output copy waits for the pod's side, which waits for the client. So
// the pod keeps the connection open, the relay exec keeps running in the
// helper, and the CLI keeps a goroutine and a hijacked Docker connection,
// for as long as the session lasts: one of each per reset connection
// (a pod with a connection limit, e.g. Postgres' max_connections, runs
// out). kubectl ends the forwarded stream when the local copy fails
// (its handleConnection's localError), which closes the pod's side.
func TestReview12cPortForwardLocalResetReachesThePod(t *testing.T) {
	// The pod's side: reads until its client goes, never writes.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan struct{}, 1)
	gone := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, 64)
		if n, _ := c.Read(b); n > 0 {
			got <- struct{}{}
		}
		_, _ = io.Copy(io.Discard, c)
		close(gone)
	}()
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	remote, _ := strconv.Atoi(p)

	f := &forwarder{docker: &relayExecs{}, helper: "helper-1", pod: "db-0", out: &syncBuffer{}, errOut: &syncBuffer{}}
	addrs, _ := parseAddresses([]string{"127.0.0.1"})
	if err := f.listen([]forwardedPort{{0, uint16(remote)}}, addrs); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.serve(ctx)
	defer f.close()

	c, err := net.Dial("tcp", f.listeners[0].Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got: // the relay reached the pod
	case <-time.After(30 * time.Second):
		t.Fatal("the request never reached the pod")
	}
	// Reset, not close: SO_LINGER 0.
	_ = c.(*net.TCPConn).SetLinger(0)
	c.Close()
	select {
	case <-gone:
	case <-time.After(30 * time.Second):
		t.Fatal("the local client reset its connection 30 s ago; the pod's side of it is still open (relay still running)")
	}
}
