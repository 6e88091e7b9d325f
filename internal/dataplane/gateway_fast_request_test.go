package dataplane

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

func TestGatewayFastPathParseDecidesWhatItRelays(t *testing.T) {
	for _, tc := range []struct {
		name           string
		head           string
		complete, fast bool
	}{
		{"a GET", "GET /a?b=c HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n", true, true},
		{"a POST of known length", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n", true, true},
		{"a body over 64 KiB", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 65537\r\n\r\n", false, false},
		{"Connection: close", "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", true, true},
		{"a head not yet complete", "GET / HTTP/1.1\r\nHost: x\r\n", false, true},
		{"a request line not yet complete", "GET /a", false, true},
		{"HTTP/1.0", "GET / HTTP/1.0\r\nHost: x\r\n\r\n", false, false},
		{"the h2c preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", false, false},
		{"an absolute-form target", "GET http://x/ HTTP/1.1\r\nHost: x\r\n\r\n", false, false},
		{"a WebSocket upgrade", "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", false, false},
		{"an h2c upgrade", "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n", false, false},
		{"Expect: 100-continue", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n", false, false},
		{"a chunked body", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", false, false},
		{"Content-Length and Transfer-Encoding (smuggling)", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", false, false},
		{"two Content-Lengths (smuggling)", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 30\r\n\r\n", false, false},
		{"two equal Content-Lengths", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n", false, false},
		{"a signed Content-Length", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\n", false, false},
		{"a Content-Length not a number", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x3\r\n\r\n", false, false},
		{"an obs-fold", "GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n 2\r\n\r\n", false, false},
		{"a bare LF", "GET / HTTP/1.1\nHost: x\n\n", false, false},
		{"a space before the colon", "GET / HTTP/1.1\r\nHost : x\r\n\r\n", false, false},
		{"a control byte in a value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n", false, false},
		{"no Host", "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", false, false},
		{"two Hosts", "GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", false, false},
		{"an invalid Host", "GET / HTTP/1.1\r\nHost: x/y\r\n\r\n", false, false},
		{"a Connection naming a header", "GET / HTTP/1.1\r\nHost: x\r\nConnection: X-Secret\r\n\r\n", false, false},
		{"TE: trailers", "GET / HTTP/1.1\r\nHost: x\r\nTE: trailers\r\n\r\n", false, false},
		{"a TLS handshake", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r fastRequest
			complete, fast := parseRequestHead([]byte(tc.head), &r)
			if complete != tc.complete || fast != tc.fast {
				t.Errorf("parseRequestHead = complete %v, fast %v; want %v, %v", complete, fast, tc.complete, tc.fast)
			}
		})
	}
}

// A request body longer than what the connection's first read brings
// overwrites, as it is read, the head the fast path parsed: the access log
// then names a path the client never asked for, and the method that picks
// the response's framing (HEAD: no body) can be the body's bytes.
func TestGatewayFastPathKeepsTheHeadOfALargePost(t *testing.T) {
	be := newRawBackend(t, ok200)
	g, access := newTestGateway(t, 1)
	mustApplyGateway(t, g, fastAndNetHTTP(1, be.endpoint()))
	for i, tc := range []struct {
		name string
		// atRefill is what the body has where the connection's buffer
		// (fastBufSize) ends, the bytes its next read writes first.
		atRefill string
	}{
		{"the path logged", "xxxx"},
		{"the method that frames the answer", "HEAD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := "POST /upload HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 5000\r\n\r\n"
			body := []byte(strings.Repeat("x", 5000))
			copy(body[fastBufSize-len(head):], tc.atRefill)
			c := dialRaw(t, g.Addr(80))
			resp, got := c.do("POST", head+string(body))
			if resp.StatusCode != 200 || got != "ok" {
				t.Errorf("%d %q, want 200 \"ok\"", resp.StatusCode, got)
			}
			waitFor(t, "the access log line", func() bool { return strings.Count(access.String(), "\n") == i+1 })
			var line struct {
				Method, Path string
				Bytes        int
			}
			if err := json.Unmarshal([]byte(strings.Split(access.String(), "\n")[i]), &line); err != nil {
				t.Fatal(err)
			}
			if line.Method != "POST" || line.Path != "/upload" || line.Bytes != 2 {
				t.Errorf("access log: %s %q, %d bytes; want POST /upload, 2 bytes", line.Method, short(line.Path), line.Bytes)
			}
		})
	}
}

// A kept-alive connection's next request head may come in pieces (the
// head timeout is armed only then): split after each of its bytes, each
// request is still relayed.
func TestGatewayFastPathReadsAHeadSplitAtAnyByte(t *testing.T) {
	be := newRawBackend(t, ok200)
	g, _ := newTestGateway(t, 1)
	mustApplyGateway(t, g, fastAndNetHTTP(1, be.endpoint()))
	c := dialRaw(t, g.Addr(80))
	head := "GET /split HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n\r\n"
	for i := 1; i < len(head); i++ {
		if _, err := io.WriteString(c.c, head[:i]); err != nil {
			t.Fatal(err)
		}
		// A pause, so that the pieces come in two segments; nothing of
		// an incomplete head reaches the backend.
		time.Sleep(time.Millisecond)
		if n := be.requests(); n != i-1 {
			t.Fatalf("split at %d: the backend saw %d requests before the head was whole, want %d", i, n, i-1)
		}
		resp, body := c.do("GET", head[i:])
		if resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("split at %d: %d %q, want 200 \"ok\"", i, resp.StatusCode, body)
		}
	}
}
