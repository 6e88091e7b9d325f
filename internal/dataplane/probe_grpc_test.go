package dataplane

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// TestProbeGRPC: the relay runs grpc probes with the health v1 client.
func TestProbeGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("sick", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(ln)
	defer srv.Stop()
	open := endpointOf(ln.Addr())
	closed := deadEndpoint(t)
	tests := []struct {
		name    string
		ep      helperapi.Endpoint
		service string
		want    int
	}{
		{"serving", open, "", helperapi.ExitOK},
		{"not serving", open, "sick", helperapi.ExitFailed},
		{"refused", closed, "", helperapi.ExitFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Probe(context.Background(), helperapi.ProbeSpec{Kind: "grpc", Address: tc.ep.IP, Port: tc.ep.Port, Service: tc.service, TimeoutMillis: deadline.Milliseconds()})
			if r.Exit != tc.want {
				t.Errorf("exit %d (%s), want %d", r.Exit, r.Message, tc.want)
			}
		})
	}
}
