// Package grpcprobe runs a Kubernetes grpc probe: one call of the standard
// gRPC health service (grpc.health.v1.Health/Check), over plaintext, with
// kubelet's semantics and wording (pkg/probe/grpc): SERVING is a success,
// any other status, an error or no answer within the timeout a failure.
// Both the controller (a direct probe) and `dockctl helper probe` (a
// relayed one, in the DNS helper: the same binary) use it.
package grpcprobe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// UserAgent is what the probe sends, as kubelet sends kube-probe/MAJOR.MINOR.
const UserAgent = "kube-probe/dockctl"

// Dialer connects to the probed address.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// Check probes service ("" for the server as a whole) at host:port, within
// ctx (whose deadline is the probe's timeout). It returns nil when the
// service is SERVING. When no connection could be made at all, the error
// is the dial's *net.OpError (Op "dial"), so that a caller can tell an
// unreachable pod from one that answered. dial nil: a plain net.Dialer.
func Check(ctx context.Context, dial Dialer, host string, port int, service string) error {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	var (
		mu        sync.Mutex
		connected bool
		dialErr   error
	)
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent(UserAgent),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			c, err := dial(ctx, "tcp", a)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				dialErr = err
			} else {
				connected = true
			}
			return c, err
		}),
	)
	if err != nil {
		return fmt.Errorf("error: failed to connect service at %q: %w", addr, err)
	}
	defer conn.Close()
	// Not WaitForReady: the call waits for the first connection attempt
	// and fails with it (a refused port fails at once, not at the timeout).
	resp, err := healthpb.NewHealthClient(conn).Check(metadata.NewOutgoingContext(ctx, metadata.MD{}),
		&healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		mu.Lock()
		never, derr := !connected, dialErr
		mu.Unlock()
		if never && derr != nil {
			var op *net.OpError
			if errors.As(derr, &op) {
				return op
			}
			return &net.OpError{Op: "dial", Net: "tcp", Err: derr}
		}
		if st, ok := status.FromError(err); ok {
			switch st.Code() {
			case codes.Unimplemented:
				return fmt.Errorf("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", st.Message())
			case codes.DeadlineExceeded:
				return fmt.Errorf("timeout: health rpc did not complete within the probe's timeout: %w", context.DeadlineExceeded)
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("timeout: health rpc did not complete within the probe's timeout: %w", ctx.Err())
		}
		return fmt.Errorf("error: health rpc probe failed: %w", err)
	}
	if s := resp.GetStatus(); s != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("service unhealthy (responded with %q)", s.String())
	}
	return nil
}
