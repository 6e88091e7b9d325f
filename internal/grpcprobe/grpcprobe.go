// Package grpcprobe runs a Kubernetes grpc probe: one call of the standard
// gRPC health service (grpc.health.v1.Health/Check), over plaintext, with
// kubelet's semantics and wording (pkg/probe/grpc): SERVING is a success,
// any other status, an error or no answer within the timeout a failure.
// Both the controller (a direct probe) and `dockctl helper probe` (a
// relayed one, in the DNS helper: the same binary) use it.
package grpcprobe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
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
	// The probe dials itself, under ctx, rather than leave it to the
	// Transport: net/http detaches a dial from its request's cancellation
	// (to pool the connection for a later request), which would outlive the
	// probe, and reports a dial cut short as the context's error, not as
	// the dial's.
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) {
			return op
		}
		return &net.OpError{Op: "dial", Net: "tcp", Err: err}
	}
	defer conn.Close()
	err = call(ctx, conn, addr, service)
	if err == nil {
		return nil
	}
	var unhealthy *unhealthyError
	if errors.As(err, &unhealthy) {
		return err
	}
	var st *statusError
	if errors.As(err, &st) {
		switch st.code {
		case codeUnimplemented:
			return fmt.Errorf("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", st.message)
		case codeDeadlineExceeded:
			return fmt.Errorf("timeout: health rpc did not complete within the probe's timeout: %w", context.DeadlineExceeded)
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("timeout: health rpc did not complete within the probe's timeout: %w", ctx.Err())
	}
	return fmt.Errorf("error: health rpc probe failed: %w", err)
}

// errConnUsed: the Transport asked for a second connection (a retry); the
// probe makes one call on one connection, as kubelet's does.
var errConnUsed = errors.New("grpc probe: the probe's one connection is already used")

// call makes the Health/Check call on conn: a POST over HTTP/2 without TLS
// (prior knowledge, as a gRPC client speaks to a plaintext server). It
// returns nil for SERVING, an *unhealthyError for another status, a
// *statusError for a call that failed with a gRPC status, or the
// transport's error.
func call(ctx context.Context, conn net.Conn, addr, service string) error {
	var used atomic.Bool
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	tr := &http.Transport{
		Protocols: &protocols,
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			if used.Swap(true) {
				return nil, errConnUsed
			}
			return conn, nil
		},
		// gzip is HTTP's, not gRPC's: a gRPC server ignores it.
		DisableCompression: true,
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://localhost/grpc.health.v1.Health/Check", bytes.NewReader(requestFrame(service)))
	if err != nil {
		return fmt.Errorf("building the health request: %w", err)
	}
	// addr as the authority, set past URL parsing, which an IPv6 zone
	// ("fe80::1%eth0") would not pass unescaped.
	req.URL.Host, req.Host = addr, addr
	req.Header = http.Header{
		"Content-Type": {"application/grpc"},
		// Required by gRPC servers to tell a gRPC client from a proxy that
		// drops trailers (PROTOCOL-HTTP2).
		"Te":         {"trailers"},
		"User-Agent": {UserAgent},
	}
	if deadline, ok := ctx.Deadline(); ok {
		d := time.Until(deadline)
		if d <= 0 {
			return &statusError{codeDeadlineExceeded, "context deadline exceeded"}
		}
		// The server may stop working on a call its client gave up on.
		req.Header.Set("Grpc-Timeout", encodeTimeout(d))
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// As grpc-go: an HTTP error status or a response that is not gRPC's
	// decides the code, whatever grpc-status says (a proxy's answer).
	if resp.StatusCode != http.StatusOK {
		return &statusError{httpStatusCode(resp.StatusCode),
			fmt.Sprintf("unexpected HTTP status code received from server: %d (%s)", resp.StatusCode, http.StatusText(resp.StatusCode))}
	}
	if ct := resp.Header.Get("Content-Type"); !isGRPCContentType(ct) {
		return &statusError{codeUnknown, fmt.Sprintf("transport: received unexpected content-type %q", ct)}
	}
	msg, err := readResponse(resp.Body)
	if err != nil {
		return err
	}
	// The status is in the trailers, or, for a response whose headers end
	// the stream ("Trailers-Only", PROTOCOL-HTTP2: no message, no
	// trailers), in the headers. A grpc-status in headers followed by a
	// message or by trailers is not the call's: grpc-go (kubelet's client)
	// reads it only from the frame that ends the stream, so a stream that
	// ends without one in its trailers fails, as a proxy that drops
	// trailers must not pass for a healthy server.
	fields := resp.Trailer
	if msg == nil && !hasFields(resp.Trailer) {
		fields = resp.Header
	}
	raw := fields.Get("Grpc-Status")
	if raw == "" {
		return &statusError{codeInternal, "server closed the stream without sending trailers"}
	}
	c, err := strconv.ParseUint(raw, 10, 32)
	if err != nil {
		return &statusError{codeInternal, fmt.Sprintf("transport: malformed grpc-status %q", raw)}
	}
	if code(c) != codeOK {
		return &statusError{code(c), decodeMessage(fields.Get("Grpc-Message"))}
	}
	if msg == nil {
		return &statusError{codeInternal, "cardinality violation: received no response message from non-streaming RPC"}
	}
	status, err := parseStatus(msg)
	if err != nil {
		return &statusError{codeInternal, fmt.Sprintf("grpc: failed to unmarshal the received message: %v", err)}
	}
	if status != serving {
		return &unhealthyError{status}
	}
	return nil
}

// hasFields: trailers came, with a value. A field the headers announced
// (Trailer:) is a key without values until the trailers bring it.
func hasFields(h http.Header) bool {
	for _, v := range h {
		if len(v) > 0 {
			return true
		}
	}
	return false
}

// isGRPCContentType: application/grpc, bare or with a subtype
// ("application/grpc+proto") or parameters.
func isGRPCContentType(ct string) bool {
	ct = strings.ToLower(ct)
	rest, ok := strings.CutPrefix(ct, "application/grpc")
	return ok && (rest == "" || rest[0] == '+' || rest[0] == ';')
}
