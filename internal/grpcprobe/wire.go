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
		msg = append(msg, 1<<3|wireBytes)
		msg = binary.AppendUvarint(msg, uint64(len(service)))
		msg = append(msg, service...)
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

// Protobuf wire types (protobuf.dev/programming-guides/encoding).
const (
	wireVarint     = 0
	wireFixed64    = 1
	wireBytes      = 2
	wireStartGroup = 3
	wireEndGroup   = 4
	wireFixed32    = 5
)

// maxNesting is protobuf-go's default recursion limit.
const maxNesting = 10000

var errMalformed = errors.New("malformed protobuf message")

// parseStatus decodes HealthCheckResponse: field 1, the status, a varint
// enum. Other fields, and field 1 with another wire type, are skipped as
// unknown fields, as protobuf-go does; the last status wins.
func parseStatus(msg []byte) (servingStatus, error) {
	var status servingStatus
	for len(msg) > 0 {
		num, typ, n := consumeTag(msg)
		if n < 0 {
			return 0, errMalformed
		}
		msg = msg[n:]
		if num == 1 && typ == wireVarint {
			v, n := binary.Uvarint(msg)
			if n <= 0 {
				return 0, errMalformed
			}
			status, msg = servingStatus(int32(v)), msg[n:]
			continue
		}
		n = skipField(msg, num, typ, 0)
		if n < 0 {
			return 0, errMalformed
		}
		msg = msg[n:]
	}
	return status, nil
}

// consumeTag reads a field's tag: its number (1 to 2^29-1) and wire type,
// and the bytes it took, or -1.
func consumeTag(b []byte) (num uint64, typ byte, n int) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v>>3 < 1 || v>>3 > 1<<29-1 {
		return 0, 0, -1
	}
	return v >> 3, byte(v & 7), n
}

// skipField returns how many bytes the value of field num with wire type
// typ takes at the start of b, or -1 when it is malformed. A group runs to
// its end-group tag of the same number, over any fields nested in it, to
// protobuf-go's nesting limit.
func skipField(b []byte, num uint64, typ byte, depth int) int {
	switch typ {
	case wireVarint:
		_, n := binary.Uvarint(b)
		if n <= 0 {
			return -1
		}
		return n
	case wireFixed64:
		if len(b) < 8 {
			return -1
		}
		return 8
	case wireFixed32:
		if len(b) < 4 {
			return -1
		}
		return 4
	case wireBytes:
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return -1
		}
		return n + int(l)
	case wireStartGroup:
		if depth >= maxNesting {
			return -1
		}
		for off := 0; ; {
			inner, ityp, n := consumeTag(b[off:])
			if n < 0 {
				return -1
			}
			off += n
			if ityp == wireEndGroup {
				if inner != num {
					return -1
				}
				return off
			}
			m := skipField(b[off:], inner, ityp, depth+1)
			if m < 0 {
				return -1
			}
			off += m
		}
	}
	// An end group without its start, or wire types 6 and 7.
	return -1
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
