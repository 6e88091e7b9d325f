package dataplane

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// server listens on 127.0.0.1 and hands each connection to handle.
func server(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// relayed runs `helper relay addr` with stdin in and returns its exit
// code, stdout and stderr.
func relayed(t *testing.T, in io.Reader, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), append([]string{helperapi.ModeRelay}, args...), in, &out, &errb)
	}()
	select {
	case code := <-done:
		return code, out.String(), errb.String()
	case <-time.After(deadline):
		t.Fatal("the relay did not end")
		return 0, "", ""
	}
}

func TestRelay(t *testing.T) {
	// Answers once the client's side has ended: only a half-close gets
	// the client its answer.
	answerAtEOF := server(t, func(c net.Conn) {
		b, _ := io.ReadAll(c)
		io.WriteString(c, "got: "+string(b))
	})
	// Answers at once and closes, while the client may still send.
	hangUp := server(t, func(c net.Conn) { io.WriteString(c, "bye") })
	// Nobody listens there any more.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	t.Run("stdin's end is a half-close", func(t *testing.T) {
		code, out, errOut := relayed(t, strings.NewReader("GET / HTTP/1.0\r\n\r\n"), answerAtEOF)
		if code != helperapi.ExitOK || out != "got: GET / HTTP/1.0\r\n\r\n" || errOut != "" {
			t.Errorf("exit %d, %q, %q", code, out, errOut)
		}
	})
	t.Run("the port's end ends the relay", func(t *testing.T) {
		pr, pw := io.Pipe() // stdin never ends
		defer pw.Close()
		code, out, errOut := relayed(t, pr, hangUp)
		if code != helperapi.ExitOK || out != "bye" || errOut != "" {
			t.Errorf("exit %d, %q, %q", code, out, errOut)
		}
	})
	t.Run("nothing listens", func(t *testing.T) {
		code, out, errOut := relayed(t, strings.NewReader(""), closed)
		if code != helperapi.ExitFailed || out != "" || !strings.Contains(errOut, "connection refused") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("exit %d, %q, %q: want 1 and the dial's error on one line", code, out, errOut)
		}
	})
	// The CLI gives the pod's IPv4 loopback, then its IPv6 one: a server
	// on the second alone is reached; none is the first's error.
	t.Run("the first address that accepts", func(t *testing.T) {
		code, out, errOut := relayed(t, strings.NewReader("hi"), closed, answerAtEOF)
		if code != helperapi.ExitOK || out != "got: hi" || errOut != "" {
			t.Errorf("exit %d, %q, %q", code, out, errOut)
		}
	})
	t.Run("no address accepts", func(t *testing.T) {
		code, out, errOut := relayed(t, strings.NewReader(""), closed, "[::1]:1")
		if code != helperapi.ExitFailed || out != "" || !strings.Contains(errOut, "dial tcp "+closed+": ") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("exit %d, %q, %q: want 1 and the first address's dial error on one line", code, out, errOut)
		}
	})
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"no address", nil},
		{"no port", []string{"127.0.0.1"}},
		{"a second without port", []string{answerAtEOF, "::1"}},
		{"unknown flag", []string{"--frob", answerAtEOF}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if code, _, errOut := relayed(t, strings.NewReader(""), tt.args...); code != helperapi.ExitUsage || errOut == "" {
				t.Errorf("exit %d, %q; want %d and why", code, errOut, helperapi.ExitUsage)
			}
		})
	}
}

// A session's helper lives until its stdin ends (the CLI detached) or it
// is stopped.
func TestHelperPortForward(t *testing.T) {
	for _, byStdin := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		pr, pw := io.Pipe()
		done := make(chan int, 1)
		go func() {
			var out, errb bytes.Buffer
			done <- run(ctx, []string{helperapi.ModePortForward}, pr, &out, &errb)
		}()
		pw.Write([]byte("stdin is read and dropped"))
		select {
		case code := <-done:
			t.Fatalf("port-forward returned %d while its stdin is open", code)
		case <-time.After(100 * time.Millisecond):
		}
		if byStdin {
			pw.Close()
		} else {
			cancel()
		}
		select {
		case code := <-done:
			if code != helperapi.ExitOK {
				t.Errorf("exit %d, want 0", code)
			}
		case <-time.After(deadline):
			t.Fatalf("port-forward did not end (stdin's end: %v)", byStdin)
		}
		cancel()
		pw.Close()
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{helperapi.ModePortForward, "extra"}, strings.NewReader(""), &out, &errb); code != helperapi.ExitUsage {
		t.Errorf("port-forward with an argument: exit %d, want %d", code, helperapi.ExitUsage)
	}
}
