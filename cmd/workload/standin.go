package main

// Stand-in mode: the workload plays the part of another image, so that a
// real-world bundle (manifests/testdata/realworld) runs end to end on a host
// that can pull nothing. The e2e tests and the benchmark build, for every
// image a bundle names, an image FROM scratch tagged with that name, holding
// this binary (at /workload, and at the path of every command the bundle
// runs in it: /usr/local/bin/redis-server, /bin/sh…) and a description of
// the part (internal/standinapi: at ConfigPath, named by the environment
// variable Env); internal/standin builds them. The real image's command line is then ignored:
//
//   - as the container's main process (PID 1), whose command line is one
//     of an init container's (Init), it exits 0 at once, as a finished
//     init container does;
//   - as the main process otherwise, it listens on every port of Ports
//     (the containerPorts the bundle declares for the image) and answers
//     every HTTP request with 200 and a line naming the image, the port and
//     the host, every gRPC health check (grpc.health.v1.Health/Check, over
//     HTTP/2 without TLS, as a kubelet's grpc probe sends it) with SERVING,
//     and every UDP datagram with itself; it stops on SIGTERM;
//   - as any other process (an exec probe or a lifecycle hook that `docker
//     exec` starts: pg_isready, redis-cli, sh -c …), it exits 0: the probe
//     or hook succeeds.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dockctl/dockctl/internal/standinapi"
)

// StandinConfig describes the image a stand-in plays.
type StandinConfig = standinapi.Config

// standinMain runs the stand-in described by the file at path, for a
// process with the command line argv and the given PID.
func standinMain(path string, argv []string, pid int) int {
	b, err := os.ReadFile(path)
	if err != nil {
		log.Printf("stand-in: %v", err)
		return 1
	}
	var cfg StandinConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		log.Printf("stand-in: %s: %v", path, err)
		return 1
	}
	switch {
	case pid != 1:
		log.Printf("stand-in for %s: %q succeeds (an exec probe or hook)", cfg.Image, argv)
		return 0
	case slices.ContainsFunc(cfg.Init, func(c []string) bool { return slices.Equal(c, argv) }):
		log.Printf("stand-in for %s: init container %q done", cfg.Image, argv)
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := serveStandin(ctx, cfg, func(addr string) { fmt.Printf("stand-in for %s: listening on %s\n", cfg.Image, addr) }); err != nil {
		log.Printf("stand-in for %s: %v", cfg.Image, err)
		return 1
	}
	return 0
}

// serveStandin serves every port of cfg until ctx ends; listening, when
// not nil, is told each address once it is bound.
func serveStandin(ctx context.Context, cfg StandinConfig, listening func(addr string)) error {
	host, _ := os.Hostname()
	var closers []io.Closer
	defer func() {
		for _, c := range closers {
			_ = c.Close()
		}
	}()
	errs := make(chan error, len(cfg.Ports))
	for _, p := range cfg.Ports {
		port, proto, _ := strings.Cut(p, "/")
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return fmt.Errorf("port %q: %w", p, err)
		}
		switch strings.ToLower(proto) {
		case "", "tcp":
			ln, err := net.Listen("tcp", ":"+port)
			if err != nil {
				return err
			}
			srv := &http.Server{Handler: standinHandler(cfg.Image, port, host), ReadHeaderTimeout: 10 * time.Second,
				Protocols: new(http.Protocols)}
			srv.Protocols.SetHTTP1(true)
			srv.Protocols.SetUnencryptedHTTP2(true) // gRPC clients speak HTTP/2 without TLS
			closers = append(closers, srv)
			if listening != nil {
				listening(ln.Addr().String())
			}
			go func() {
				if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
					errs <- err
				}
			}()
		case "udp":
			pc, err := net.ListenPacket("udp", ":"+port)
			if err != nil {
				return err
			}
			closers = append(closers, pc)
			if listening != nil {
				listening("udp " + pc.LocalAddr().String())
			}
			go echoUDP(pc)
		default:
			return fmt.Errorf("port %q: unknown protocol", p)
		}
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-errs:
		return err
	}
}

func echoUDP(pc net.PacketConn) {
	buf := make([]byte, 64<<10)
	for {
		n, addr, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		_, _ = pc.WriteTo(buf[:n], addr)
	}
}

// grpcHealthCheck is the path of grpc.health.v1.Health/Check.
const grpcHealthCheck = "/grpc.health.v1.Health/Check"

// standinHandler answers every request: gRPC health checks with SERVING,
// any other gRPC call with UNIMPLEMENTED, anything else with 200.
func standinHandler(image, port, host string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
			if r.URL.Path != grpcHealthCheck {
				w.WriteHeader(http.StatusOK)
				w.Header().Set("Grpc-Status", "12") // UNIMPLEMENTED
				w.Header().Set("Grpc-Message", "stand-in serves only "+grpcHealthCheck)
				return
			}
			// HealthCheckResponse{status: SERVING}: field 1, varint 1, in
			// a gRPC frame (uncompressed flag, big-endian length).
			msg := []byte{0x08, 0x01}
			frame := make([]byte, 5, 5+len(msg))
			binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(append(frame, msg...))
			w.Header().Set("Grpc-Status", "0")
			return
		}
		fmt.Fprintf(w, "stand-in for %s on port %s\nhostname: %s\npath: %s\n", image, port, host, r.URL.Path)
	})
}
