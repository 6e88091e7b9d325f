package grpcprobe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// The gRPC wire format over HTTP/2 (grpc/grpc doc/PROTOCOL-HTTP2.md) and
// the two protobuf messages of grpc.health.v1 (grpc/grpc
// src/proto/grpc/health/v1/health.proto), encoded by hand: the probe makes
// one call of one method, which does not pay for a gRPC and a protobuf
// runtime in a binary that is also every helper's image.

// maxResponse is the largest response message accepted: grpc-go's default
// receive limit (4 MiB).
const maxResponse = 4 << 20

// code is a gRPC status code (grpc/grpc doc/statuscodes.md).
type code uint32

const (
	codeOK                code = 0
	codeUnknown           code = 2
	codeDeadlineExceeded  code = 4
	codeResourceExhausted code = 8
	codePermissionDenied  code = 7
	codeUnimplemented     code = 12
	codeInternal          code = 13
	codeUnavailable       code = 14
	codeUnauthenticated   code = 16
)

// codeNames are the names grpc-go's codes.Code.String gives, so that an
// error reads as it did with grpc-go ("rpc error: code = NotFound desc = …").
var codeNames = [...]string{
	"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
	"AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
	"Aborted", "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss",
	"Unauthenticated",
}

func (c code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Code(" + strconv.FormatUint(uint64(c), 10) + ")"
}

// statusError is a call's non-OK gRPC status.
type statusError struct {
	code    code
	message string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("rpc error: code = %s desc = %s", e.code, e.message)
}

// httpStatusCode is the code grpc-go gives a response with an HTTP error
// status (its HTTPStatusConvTab, after grpc/grpc doc/http-grpc-status-mapping.md).
func httpStatusCode(status int) code {
	switch status {
	case http.StatusBadRequest:
		return codeInternal
	case http.StatusUnauthorized:
		return codeUnauthenticated
	case http.StatusForbidden:
		return codePermissionDenied
	case http.StatusNotFound:
		return codeUnimplemented
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return codeUnavailable
	}
	return codeUnknown
}

// encodeTimeout writes a grpc-timeout value (PROTOCOL-HTTP2: at most 8
// digits and a unit) in the finest unit that fits, rounded up, as grpc-go.
func encodeTimeout(d time.Duration) string {
	const maxValue = 1e8 - 1
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{time.Nanosecond, "n"}, {time.Microsecond, "u"}, {time.Millisecond, "m"}, {time.Second, "S"}, {time.Minute, "M"}} {
		if v := ceilDiv(d, u.unit); v <= maxValue {
			return strconv.FormatInt(v, 10) + u.name
		}
	}
	return strconv.FormatInt(ceilDiv(d, time.Hour), 10) + "H"
}

// ceilDiv is d/u rounded up, without the overflow of (d+u-1)/u.
func ceilDiv(d, u time.Duration) int64 {
	if d%u > 0 {
		return int64(d/u + 1)
	}
	return int64(d / u)
}

// unhealthyError: the server answered with a status other than SERVING.
type unhealthyError struct{ status servingStatus }

func (e *unhealthyError) Error() string {
	return fmt.Sprintf("service unhealthy (responded with %q)", e.status)
}

// servingStatus is HealthCheckResponse.ServingStatus.
type servingStatus int32

const serving servingStatus = 1

var servingNames = map[servingStatus]string{0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}

// String is the enum value's name, or its number for a value this client
// does not know (as protobuf-go prints an open enum).
func (s servingStatus) String() string {
	if n, ok := servingNames[s]; ok {
		return n
	}
	return strconv.FormatInt(int64(s), 10)
}

// requestFrame is the length-prefixed message of a HealthCheckRequest:
// a zero compressed flag, the message's length (4 bytes, big-endian),
// then field 1 (service, a string) unless it is empty, as proto3 omits a
// default value.
func requestFrame(service string) []byte {
	var msg []byte
	if service != "" {
		msg = protowire.AppendString(protowire.AppendTag(msg, 1, protowire.BytesType), service)
	}
	frame := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
	return append(frame, msg...)
}

// readResponse reads the one message of a unary response from body, to
// its end: nil when the stream ended without one (the status then says
// why). A compressed message is refused, as the request accepts no
// encoding; so is a second message, as grpc-go refuses it.
func readResponse(body io.Reader) ([]byte, error) {
	var msg []byte
	for n := 0; ; n++ {
		var hdr [5]byte
		if _, err := io.ReadFull(body, hdr[:]); err != nil {
			if err == io.EOF {
				return msg, nil
			}
			if err == io.ErrUnexpectedEOF {
				return nil, &statusError{codeInternal, "unexpected EOF in a message's header"}
			}
			return nil, err
		}
		if n > 0 {
			return nil, &statusError{codeInternal, "cardinality violation: expected <EOF> for non client-streaming RPCs, but received another message"}
		}
		if hdr[0] != 0 {
			return nil, &statusError{codeInternal, fmt.Sprintf("grpc: compressed flag %d set with identity or empty encoding", hdr[0])}
		}
		size := binary.BigEndian.Uint32(hdr[1:])
		if size > maxResponse {
			return nil, &statusError{codeResourceExhausted, fmt.Sprintf("grpc: received message larger than max (%d vs. %d)", size, maxResponse)}
		}
		msg = make([]byte, size)
		if _, err := io.ReadFull(body, msg); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return nil, &statusError{codeInternal, "unexpected EOF in a message"}
			}
			return nil, err
		}
	}
}

// maxNesting is protobuf-go's recursion limit, which ConsumeFieldValue
// applies to nested groups.
const maxNesting = protowire.DefaultRecursionLimit

var errMalformed = errors.New("malformed protobuf message")

// parseStatus decodes HealthCheckResponse: field 1, the status, a varint
// enum. Other fields, and field 1 with another wire type, are skipped as
// unknown fields, as protobuf-go does; the last status wins. The wire
// format is protobuf-go's own protowire, already in the binary.
func parseStatus(msg []byte) (servingStatus, error) {
	var status servingStatus
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return 0, errMalformed
		}
		msg = msg[n:]
		if num == 1 && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(msg)
			if n < 0 {
				return 0, errMalformed
			}
			status, msg = servingStatus(int32(v)), msg[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, msg)
		if n < 0 {
			return 0, errMalformed
		}
		msg = msg[n:]
	}
	return status, nil
}

// decodeMessage undoes the percent-encoding of grpc-message (PROTOCOL-HTTP2:
// "Percent-Encoded"); a malformed escape is kept as it came, as grpc-go
// keeps it.
func decodeMessage(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
