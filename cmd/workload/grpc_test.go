package main

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dockctl/dockctl/internal/grpcprobe"
)

// TestGRPCHealthFollowsReadiness: the gRPC health service is SERVING
// exactly while /readyz is ready: not before --ready-after, not while
// draining.
func TestGRPCHealthFollowsReadiness(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var now atomic.Int64
	s := newServer(config{readyAfter: time.Minute}, func() time.Time { return time.Unix(now.Load(), 0) }, func(int) {})
	stop, err := s.serveGRPCHealth(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	host, portStr, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portStr)
	check := func(service string) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return grpcprobe.Check(ctx, nil, host, port, service)
	}
	waitCheck := func(service string, serving bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := check(service)
			if (err == nil) == serving {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("service %q: %v, want serving=%v", service, err, serving)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := check("ready"); err == nil || !strings.Contains(err.Error(), "NOT_SERVING") {
		t.Fatalf("before --ready-after: %v, want NOT_SERVING", err)
	}
	now.Store(61)
	waitCheck("", true)
	waitCheck("ready", true)
	s.draining.Store(true)
	waitCheck("ready", false)
}
