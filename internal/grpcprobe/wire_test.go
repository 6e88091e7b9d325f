package grpcprobe

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// frame is a gRPC length-prefixed message with the given compressed flag.
func frame(flag byte, msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	b[0] = flag
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

func TestRequestFrameEncodesTheServiceAsProtobufField1(t *testing.T) {
	long := strings.Repeat("s", 200)
	tests := []struct {
		name, service string
		want          []byte
	}{
		{"an empty service is omitted, as proto3 omits a default", "", []byte{0, 0, 0, 0, 0}},
		{"a short name has a one-byte length", "ready", append([]byte{0, 0, 0, 0, 7, 0x0a, 5}, "ready"...)},
		{"a name over 127 bytes has a two-byte varint length", long, append([]byte{0, 0, 0, 0, 203, 0x0a, 0xc8, 0x01}, long...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := requestFrame(tt.service); !bytes.Equal(got, tt.want) {
				t.Errorf("requestFrame(%q) = % x, want % x", tt.service, got, tt.want)
			}
		})
	}
}

// A real gRPC server reads a service name that needs a two-byte length.
func TestCheckSendsALongServiceNameAGRPCServerReads(t *testing.T) {
	hs, port := serve(t, true)
	long := strings.Repeat("x", 300)
	hs.SetServingStatus(long, healthpb.HealthCheckResponse_SERVING)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Check(ctx, nil, "127.0.0.1", port, long); err != nil {
		t.Fatalf("Check of a %d-byte service = %v, want success", len(long), err)
	}
}

func TestParseStatusSkipsUnknownFields(t *testing.T) {
	tests := []struct {
		name    string
		msg     []byte
		want    servingStatus
		wantErr bool
	}{
		{"an empty message is UNKNOWN", nil, 0, false},
		{"field 1 is the status", []byte{0x08, 1}, serving, false},
		{"unknown varint, bytes, fixed32 and fixed64 fields around it",
			[]byte{0x10, 0x96, 0x01, 0x1a, 3, 'a', 'b', 'c', 0x08, 2, 0x25, 1, 2, 3, 4, 0x29, 1, 2, 3, 4, 5, 6, 7, 8}, 2, false},
		{"a group with a nested field and group is skipped to its end",
			[]byte{0x2b, 0x08, 3, 0x33, 0x34, 0x2c, 0x08, 1}, serving, false},
		{"field 1 with another wire type is an unknown field", []byte{0x0d, 1, 0, 0, 0}, 0, false},
		{"the last status wins", []byte{0x08, 1, 0x08, 2}, 2, false},
		{"a negative enum value is an int32", []byte{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, -1, false},
		{"a truncated varint", []byte{0x08, 0x80}, 0, true},
		{"a length past the end", []byte{0x1a, 5, 'a'}, 0, true},
		{"a truncated fixed64", []byte{0x29, 1, 2}, 0, true},
		{"field number 0", []byte{0x00, 1}, 0, true},
		{"a group ended by another number", []byte{0x2b, 0x34}, 0, true},
		{"a group never ended", []byte{0x2b, 0x08, 1}, 0, true},
		{"an end group without a start", []byte{0x2c}, 0, true},
		{"wire type 7", []byte{0x0f}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatus(tt.msg)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("parseStatus(% x) = %v, %v; want %v, error %v", tt.msg, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParseStatusRefusesGroupsNestedPastTheLimit(t *testing.T) {
	// The outermost group is a field of the message, and protowire's
	// ConsumeFieldValue reads maxNesting+1 levels inside it, as
	// protobuf-go's unmarshal skips an unknown group.
	deep := append(bytes.Repeat([]byte{0x2b}, maxNesting+2), bytes.Repeat([]byte{0x2c}, maxNesting+2)...)
	if _, err := parseStatus(deep); err == nil {
		t.Fatal("parseStatus of groups nested past the limit succeeded")
	}
	ok := append(bytes.Repeat([]byte{0x2b}, 100), bytes.Repeat([]byte{0x2c}, 100)...)
	if _, err := parseStatus(ok); err != nil {
		t.Fatalf("parseStatus of 100 nested groups = %v", err)
	}
}

func TestEncodeTimeoutUsesTheFinestUnitThatFits(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0n"},
		{50 * time.Millisecond, "50000000n"},
		{time.Second, "1000000u"},
		{time.Second + 1, "1000001u"}, // rounded up
		{2 * time.Minute, "120000m"},
		{40 * time.Hour, "144000S"},
		{1 << 62, "76861434M"},
		{1<<63 - 1, "2562048H"}, // past 8 digits of minutes
	}
	for _, tt := range tests {
		if got := encodeTimeout(tt.d); got != tt.want {
			t.Errorf("encodeTimeout(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestDecodeMessageUndoesPercentEncoding(t *testing.T) {
	for in, want := range map[string]string{
		"plain":             "plain",
		"unknown%20service": "unknown service",
		"caf%C3%A9":         "café",
		"100%":              "100%",
		"%zz%2":             "%zz%2",
	} {
		if got := decodeMessage(in); got != want {
			t.Errorf("decodeMessage(%q) = %q, want %q", in, got, want)
		}
	}
}

// serveH2C answers every request with h over HTTP/2 without TLS, as a
// gRPC server would, and returns its port.
func serveH2C(t *testing.T, h http.HandlerFunc) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: h, Protocols: &p}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// respond writes a gRPC response: body, then grpc-status in the trailers.
func respond(body []byte, status string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/grpc")
		w.WriteHeader(http.StatusOK)
		w.Write(body)
		w.Header().Set(http.TrailerPrefix+"Grpc-Status", status)
	}
}

// trailersOnly writes a gRPC response without a message: the status in the
// headers, which end the stream.
func trailersOnly(status, message string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Grpc-Status", status)
		w.Header().Set("Grpc-Message", message)
	}
}

func TestCheckReadsTheResponseOnTheWire(t *testing.T) {
	tests := []struct {
		name    string
		h       http.HandlerFunc
		want    string // "" success; else a substring of the error
		timeout bool   // the error is a timeout wrapping context.DeadlineExceeded
	}{
		{"SERVING among unknown fields", respond(frame(0, []byte{0x10, 7, 0x08, 1, 0x1a, 2, 'h', 'i'}), "0"), "", false},
		{"NOT_SERVING", respond(frame(0, []byte{0x08, 2}), "0"), `service unhealthy (responded with "NOT_SERVING")`, false},
		{"SERVICE_UNKNOWN", respond(frame(0, []byte{0x08, 3}), "0"), `service unhealthy (responded with "SERVICE_UNKNOWN")`, false},
		{"the default status", respond(frame(0, nil), "0"), `service unhealthy (responded with "UNKNOWN")`, false},
		{"a status this client does not know", respond(frame(0, []byte{0x08, 9}), "0"), `service unhealthy (responded with "9")`, false},
		{"a compressed message is refused", respond(frame(1, []byte{0x08, 1}), "0"), "error: health rpc probe failed: rpc error: code = Internal desc = grpc: compressed flag", false},
		{"a second message is refused", respond(append(frame(0, []byte{0x08, 1}), frame(0, []byte{0x08, 1})...), "0"), "cardinality violation", false},
		{"no message with an OK status", respond(nil, "0"), "received no response message", false},
		{"a malformed message", respond(frame(0, []byte{0x08}), "0"), "failed to unmarshal", false},
		{"a message cut short", respond([]byte{0, 0, 0, 0, 9, 0x08}, "0"), "unexpected EOF", false},
		{"a message over the limit", respond([]byte{0, 0xff, 0, 0, 0}, "0"), "code = ResourceExhausted", false},
		{"an error status in the trailers wins over the message", respond(frame(0, []byte{0x08, 1}), "14"), "code = Unavailable", false},
		{"no grpc-status at all", respond(frame(0, []byte{0x08, 1}), ""), "server closed the stream without sending trailers", false},
		{"trailers-only: unknown service", trailersOnly("5", "unknown%20service"), "error: health rpc probe failed: rpc error: code = NotFound desc = unknown service", false},
		{"trailers-only: no health service", trailersOnly("12", "unknown service grpc.health.v1.Health"),
			"error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health", false},
		{"trailers-only: the server's deadline", trailersOnly("4", "deadline"), "timeout: health rpc did not complete within the probe's timeout", true},
		{"an HTTP 404 is Unimplemented", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
			"does not implement the grpc health protocol (grpc.health.v1.Health): unexpected HTTP status code received from server: 404 (Not Found)", false},
		{"an HTTP 503 is Unavailable", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) },
			"code = Unavailable desc = unexpected HTTP status code received from server: 503", false},
		{"a response that is not gRPC", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello")) },
			`transport: received unexpected content-type "text/plain; charset=utf-8"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			port := serveH2C(t, tt.h)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := Check(ctx, nil, "127.0.0.1", port, "svc")
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Check = %v, want success", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Check = %v, want an error with %q", err, tt.want)
			}
			if got := errors.Is(err, context.DeadlineExceeded); got != tt.timeout {
				t.Errorf("Check = %v: wraps context.DeadlineExceeded %v, want %v", err, got, tt.timeout)
			}
		})
	}
}

// The request is a gRPC call a server accepts: the method's path, gRPC's
// content type, te: trailers, the probe's user agent, the deadline as
// grpc-timeout, and the length-prefixed HealthCheckRequest.
func TestCheckSendsAGRPCRequest(t *testing.T) {
	type seen struct {
		proto, method, path string
		header              http.Header
		body                []byte
	}
	got := make(chan seen, 1)
	port := serveH2C(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.Proto, r.Method, r.URL.Path, r.Header.Clone(), body}
		respond(frame(0, []byte{0x08, 1}), "0")(w, r)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Check(ctx, nil, "127.0.0.1", port, "ready"); err != nil {
		t.Fatalf("Check = %v, want success", err)
	}
	s := <-got
	if s.proto != "HTTP/2.0" || s.method != http.MethodPost || s.path != "/grpc.health.v1.Health/Check" {
		t.Errorf("request %s %s %s, want HTTP/2.0 POST /grpc.health.v1.Health/Check", s.proto, s.method, s.path)
	}
	for k, want := range map[string]string{"Content-Type": "application/grpc", "Te": "trailers", "User-Agent": UserAgent} {
		if v := s.header.Get(k); v != want {
			t.Errorf("header %s = %q, want %q", k, v, want)
		}
	}
	if d, err := time.ParseDuration(strings.TrimSuffix(s.header.Get("Grpc-Timeout"), "u") + "us"); err != nil || d <= 0 || d > 10*time.Second {
		t.Errorf("grpc-timeout %q, want the context's remaining time in microseconds", s.header.Get("Grpc-Timeout"))
	}
	if want := requestFrame("ready"); !bytes.Equal(s.body, want) {
		t.Errorf("body % x, want % x", s.body, want)
	}
}

// A dialer's error that is not a *net.OpError still reads as a dial error,
// and the dialer given is the one used.
func TestCheckReportsADialersFailureAsADialError(t *testing.T) {
	boom := errors.New("no route to the pod")
	var asked string
	dial := func(_ context.Context, network, addr string) (net.Conn, error) {
		asked = network + " " + addr
		return nil, boom
	}
	err := Check(context.Background(), dial, "10.0.0.9", 9090, "")
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" || !errors.Is(err, boom) {
		t.Fatalf("Check = %#v, want a dial *net.OpError wrapping the dialer's error", err)
	}
	if asked != "tcp 10.0.0.9:9090" {
		t.Errorf("dialed %q, want tcp 10.0.0.9:9090", asked)
	}
}

// A dial still under way when the probe's timeout ends is a dial that got
// no answer, as net.Dialer reports it: the pod may be unreachable rather
// than unhealthy, as for httpGet and tcpSocket probes.
func TestCheckReportsADialCutShortByTheTimeoutAsADialError(t *testing.T) {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		<-ctx.Done()
		return nil, &net.OpError{Op: "dial", Net: network, Err: ctx.Err()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := Check(ctx, dial, "10.0.0.9", 9090, "")
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Check = %v, want the dial's *net.OpError wrapping context.DeadlineExceeded", err)
	}
}

// A grpc-status in headers that do not end the stream is not the call's
// status: grpc-go (kubelet's client) reads the status only from the frame
// that ends the stream, and a stream that ends on its data, without
// trailers, is "server closed the stream without sending trailers"
// (Internal), whatever the headers said. A proxy that drops trailers (what
// te: trailers is there to detect, PROTOCOL-HTTP2) must not make the probe
// a success.
func TestCheckIgnoresAStatusInHeadersThatDoNotEndTheStream(t *testing.T) {
	tests := []struct {
		name     string
		trailers http.Header // sent after the message
	}{
		{"no trailers", nil},
		{"trailers without grpc-status", http.Header{"X-Other": {"1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			port := serveH2C(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/grpc")
				w.Header().Set("Grpc-Status", "0")
				w.WriteHeader(http.StatusOK)
				w.Write(frame(0, []byte{0x08, 1}))
				for k, v := range tt.trailers {
					w.Header()[http.TrailerPrefix+k] = v
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := Check(ctx, nil, "127.0.0.1", port, ""); err == nil {
				t.Fatal("Check = nil: a SERVING message whose status came in the headers, not the trailers, is a success; kubelet's grpc-go fails it")
			}
		})
	}
}

// serveRaw accepts connections on a local port and hands each to h; it
// returns the port. The listener and the connections close with the test.
func serveRaw(t *testing.T, h func(net.Conn)) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); defer c.Close(); h(c) }()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// rstStream answers each request's HEADERS with RST_STREAM code.
func rstStream(code http2.ErrCode) func(net.Conn) {
	return func(c net.Conn) {
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(c, preface); err != nil {
			return
		}
		fr := http2.NewFramer(c, c)
		if fr.WriteSettings() != nil {
			return
		}
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					fr.WriteSettingsAck()
				}
			case *http2.HeadersFrame:
				fr.WriteRSTStream(f.StreamID, code)
			}
		}
	}
}

// Whatever the server does, the probe ends with a failure within its
// timeout (kubelet: "timeout: health rpc did not complete within"), and
// leaves no goroutine behind: it runs every period of every probed
// container of a long-lived controller.
func TestCheckEndsWithinItsTimeoutOnAnOddServer(t *testing.T) {
	tests := []struct {
		name   string
		server func(t *testing.T) int
	}{
		{"a server answering HTTP/1.1", func(t *testing.T) int {
			return serveRaw(t, func(c net.Conn) {
				c.Read(make([]byte, 4096))
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/grpc\r\nGrpc-Status: 0\r\nContent-Length: 7\r\n\r\n\x00\x00\x00\x00\x02\x08\x01")
				io.Copy(io.Discard, c)
			})
		}},
		{"a server that reads and never answers", func(t *testing.T) int {
			return serveRaw(t, func(c net.Conn) { io.Copy(io.Discard, c) })
		}},
		{"a server that sends the message and never the trailers", func(t *testing.T) int {
			return serveH2C(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/grpc")
				w.WriteHeader(http.StatusOK)
				w.Write(frame(0, []byte{0x08, 1}))
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			})
		}},
		{"a server that sends a huge message slowly", func(t *testing.T) int {
			return serveH2C(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/grpc")
				w.WriteHeader(http.StatusOK)
				w.Write([]byte{0, 0, 0x40, 0, 0})
				for r.Context().Err() == nil {
					if _, err := w.Write(make([]byte, 1024)); err != nil {
						return
					}
					w.(http.Flusher).Flush()
					time.Sleep(10 * time.Millisecond)
				}
			})
		}},
		{"a server that resets the stream (INTERNAL_ERROR)", func(t *testing.T) int { return serveRaw(t, rstStream(http2.ErrCodeInternal)) }},
		{"a server that refuses the stream (REFUSED_STREAM)", func(t *testing.T) int { return serveRaw(t, rstStream(http2.ErrCodeRefusedStream)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			port := tt.server(t)
			before := runtime.NumGoroutine()
			const timeout = 2 * time.Second
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- Check(ctx, nil, "127.0.0.1", port, "") }()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("Check = nil, want a failure")
				}
				t.Logf("Check = %v", err)
			case <-time.After(timeout + 20*time.Second):
				t.Fatalf("Check still running 20 s past its %v timeout", timeout)
			}
			// The probe's goroutines end with it (the server's are still
			// there, so no more than before the probe).
			for deadline := time.Now().Add(20 * time.Second); runtime.NumGoroutine() > before; {
				if time.Now().After(deadline) {
					buf := make([]byte, 1<<16)
					t.Fatalf("%d goroutines after the probe, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
