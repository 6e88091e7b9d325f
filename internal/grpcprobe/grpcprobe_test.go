package grpcprobe

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func serve(t *testing.T, withHealth bool) (*health.Server, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	if withHealth {
		healthpb.RegisterHealthServer(srv, hs)
	}
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return hs, l.Addr().(*net.TCPAddr).Port
}

func TestCheck(t *testing.T) {
	hs, port := serve(t, true)
	hs.SetServingStatus("ready", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("sick", healthpb.HealthCheckResponse_NOT_SERVING)
	_, bare := serve(t, false)
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	// A listener that accepts and never speaks: the rpc times out.
	mute, _ := net.Listen("tcp", "127.0.0.1:0")
	defer mute.Close()
	go func() {
		for {
			c, err := mute.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	tests := []struct {
		name    string
		port    int
		service string
		want    string // "" success; else a substring of the error
		dial    bool   // the error is a dial error
	}{
		{"server as a whole", port, "", "", false},
		{"serving service", port, "ready", "", false},
		{"not serving", port, "sick", `service unhealthy (responded with "NOT_SERVING")`, false},
		{"unknown service", port, "nope", "error: health rpc probe failed", false},
		{"no health service", bare, "", "does not implement the grpc health protocol", false},
		{"nothing listens", closedPort, "", "connection refused", true},
		{"no answer", mute.Addr().(*net.TCPAddr).Port, "", "timeout", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err := Check(ctx, nil, "127.0.0.1", tt.port, tt.service)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Check = %v, want success", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Check = %v, want an error with %q", err, tt.want)
			}
			var op *net.OpError
			if isDial := errors.As(err, &op) && op.Op == "dial"; isDial != tt.dial {
				t.Errorf("dial error %v, want %v (%v)", isDial, tt.dial, err)
			}
		})
	}
}
