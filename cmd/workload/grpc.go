package main

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// serveGRPCHealth serves the standard gRPC health service on addr, for
// grpc probes: the server as a whole ("") and the service "ready" are
// SERVING exactly while /readyz answers 200 (after --ready-after, until a
// stop signal), NOT_SERVING otherwise. It returns the function that stops
// it.
func (s *server) serveGRPCHealth(addr string) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	hs := health.NewServer()
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	done := make(chan struct{})
	update := func() {
		st := healthpb.HealthCheckResponse_NOT_SERVING
		if s.ready() {
			st = healthpb.HealthCheckResponse_SERVING
		}
		hs.SetServingStatus("", st)
		hs.SetServingStatus("ready", st)
	}
	update()
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				update()
			}
		}
	}()
	go func() {
		if err := srv.Serve(ln); err != nil {
			log.Printf("workload: grpc: %v", err)
		}
	}()
	fmt.Printf("workload: gRPC health on %s\n", ln.Addr())
	return func() { close(done); srv.Stop() }, nil
}

// ready is /readyz's verdict.
func (s *server) ready() bool {
	return !s.draining.Load() && s.elapsed() >= s.cfg.readyAfter
}

// handlePreStop is a preStop hook's target (httpGet /prestop): it logs the
// call, so that a test can see it came before the stop signal.
func (s *server) handlePreStop(w http.ResponseWriter, _ *http.Request) {
	log.Printf("workload: preStop hook called")
	fmt.Fprintln(w, "ok")
}
