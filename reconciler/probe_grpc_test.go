package reconciler

import (
	"context"
	"net"
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

func TestRelaySpecGRPC(t *testing.T) {
	target := podruntime.ProbeTarget{ContainerID: "c", Address: "10.222.0.7"}
	svc := "ready"
	got, err := relaySpec(target, &manifests.Probe{GRPC: &manifests.GRPCAction{Port: 9090, Service: &svc}}, 2*time.Second)
	want := helperapi.ProbeSpec{Kind: "grpc", Address: "10.222.0.7", Port: 9090, Service: "ready", TimeoutMillis: 2000}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("relaySpec = %+v, %v\nwant %+v", got, err, want)
	}
}

func TestDockerProbeRunnerGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("ready", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("warming", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(ln)
	defer srv.Stop()
	port := int32(ln.Addr().(*net.TCPAddr).Port)
	runner := newDockerProbeRunner(dockerfake.New(testImage), nil, nil)
	target := podruntime.ProbeTarget{ContainerID: "c", Address: "127.0.0.1"}
	for _, tc := range []struct {
		service string
		ok      bool
	}{{"", true}, {"ready", true}, {"warming", false}} {
		svc := tc.service
		err := runner.Run(context.Background(), target, &manifests.Probe{GRPC: &manifests.GRPCAction{Port: port, Service: &svc}, TimeoutSeconds: 1})
		if (err == nil) != tc.ok {
			t.Errorf("service %q: Run = %v, want ok=%v", tc.service, err, tc.ok)
		}
	}
	// Flipping the status flips the verdict.
	hs.SetServingStatus("warming", healthpb.HealthCheckResponse_SERVING)
	svc := "warming"
	if err := runner.Run(context.Background(), target, &manifests.Probe{GRPC: &manifests.GRPCAction{Port: port, Service: &svc}, TimeoutSeconds: 1}); err != nil {
		t.Errorf("after SERVING: %v", err)
	}
}
