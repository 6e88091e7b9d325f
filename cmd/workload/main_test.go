package main

import (
	"bytes"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// fakeClock is advanced by the tests; the server reads it under a lock
// because handlers run on other goroutines.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type exitRecorder struct {
	mu    sync.Mutex
	codes []int
}

func (e *exitRecorder) exit(code int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.codes = append(e.codes, code)
}
func (e *exitRecorder) get() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]int(nil), e.codes...)
}

func TestHandlers(t *testing.T) {
	type step struct {
		advance  time.Duration
		method   string
		path     string
		wantCode int
		wantBody string // substring
		wantExit []int
	}
	tests := []struct {
		name  string
		cfg   config
		env   string
		steps []step
	}{
		{
			name: "root shows message and env",
			cfg:  config{message: "hi there"},
			env:  "xyz",
			steps: []step{
				{method: "GET", path: "/", wantCode: 200, wantBody: "hi there\nhostname: "},
				{method: "GET", path: "/", wantCode: 200, wantBody: "DOCKCTL_TEST_VALUE=xyz"},
				{method: "GET", path: "/nope", wantCode: 404},
			},
		},
		{
			name: "healthy until unhealthy-after",
			cfg:  config{unhealthyAfter: 5 * time.Second},
			steps: []step{
				{method: "GET", path: "/healthz", wantCode: 200, wantBody: "ok"},
				{advance: 5 * time.Second, method: "GET", path: "/healthz", wantCode: 503},
			},
		},
		{
			name: "/unhealthy flips healthz",
			steps: []step{
				{method: "GET", path: "/healthz", wantCode: 200},
				{method: "POST", path: "/unhealthy", wantCode: 200},
				{method: "GET", path: "/healthz", wantCode: 503},
				{method: "GET", path: "/readyz", wantCode: 200},
			},
		},
		{
			name: "ready after ready-after",
			cfg:  config{readyAfter: 3 * time.Second},
			steps: []step{
				{method: "GET", path: "/readyz", wantCode: 503},
				{advance: 2 * time.Second, method: "GET", path: "/readyz", wantCode: 503},
				{advance: time.Second, method: "GET", path: "/readyz", wantCode: 200, wantBody: "ready"},
			},
		},
		{
			name: "crash exits 1",
			steps: []step{
				{method: "POST", path: "/crash", wantCode: 200, wantBody: "crashing", wantExit: []int{1}},
			},
		},
		{
			name: "exit with code",
			steps: []step{
				{method: "GET", path: "/exit?code=7", wantCode: 200, wantBody: "code 7", wantExit: []int{7}},
			},
		},
		{
			name: "exit default 0",
			steps: []step{
				{method: "GET", path: "/exit", wantCode: 200, wantExit: []int{0}},
			},
		},
		{
			name: "exit bad code",
			steps: []step{
				{method: "GET", path: "/exit?code=abc", wantCode: 400},
				{method: "GET", path: "/exit?code=300", wantCode: 400},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv("DOCKCTL_TEST_VALUE", tt.env)
			}
			clock := &fakeClock{t: time.Unix(1000, 0)}
			rec := &exitRecorder{}
			ts := httptest.NewServer(newServer(tt.cfg, clock.now, rec.exit).routes())
			defer ts.Close()
			for i, st := range tt.steps {
				clock.add(st.advance)
				req, _ := http.NewRequest(st.method, ts.URL+st.path, nil)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != st.wantCode {
					t.Errorf("step %d %s %s: status %d, want %d", i, st.method, st.path, resp.StatusCode, st.wantCode)
				}
				if !strings.Contains(string(body), st.wantBody) {
					t.Errorf("step %d %s: body %q, want it to contain %q", i, st.path, body, st.wantBody)
				}
				if got := rec.get(); len(got) != len(st.wantExit) || (len(got) > 0 && got[0] != st.wantExit[0]) {
					t.Errorf("step %d %s: exits %v, want %v", i, st.path, got, st.wantExit)
				}
			}
		})
	}
}

// A WebSocket at /ws echoes each message with the replica's hostname, and
// an open one keeps echoing once the server drains (a stop signal): only
// new requests are told to close their connection.
func TestWebSocketEchoesWithHostname(t *testing.T) {
	for _, tt := range []struct {
		name           string
		drainAfterOpen bool
	}{
		{name: "serving"},
		{name: "draining after it opened", drainAfterOpen: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(config{}, time.Now, func(int) {})
			ts := httptest.NewServer(s.routes())
			defer ts.Close()
			ws, err := websocket.Dial("ws"+strings.TrimPrefix(ts.URL, "http")+"/ws", "", ts.URL)
			if err != nil {
				t.Fatalf("dial /ws: %v", err)
			}
			defer ws.Close()
			if tt.drainAfterOpen {
				s.draining.Store(true)
			}
			for _, msg := range []string{"one", "two"} {
				if err := websocket.Message.Send(ws, msg); err != nil {
					t.Fatalf("send %q: %v", msg, err)
				}
				var got string
				if err := websocket.Message.Receive(ws, &got); err != nil {
					t.Fatalf("receive the echo of %q: %v", msg, err)
				}
				if want := s.hostname + " " + msg; got != want {
					t.Errorf("echo of %q = %q, want %q", msg, got, want)
				}
			}
		})
	}
}

func TestProbe(t *testing.T) {
	ts := httptest.NewServer(newServer(config{readyAfter: time.Hour}, time.Now, func(int) {}).routes())
	defer ts.Close()
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"2xx", []string{ts.URL + "/healthz"}, 0},
		{"503", []string{ts.URL + "/readyz"}, 1},
		{"404", []string{ts.URL + "/missing"}, 1},
		{"refused", []string{"http://127.0.0.1:1/healthz"}, 1},
		{"usage", nil, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if got := probeCmd(tt.args, &stderr); got != tt.want {
				t.Errorf("probeCmd(%v) = %d, want %d (stderr %q)", tt.args, got, tt.want, stderr.String())
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	defaults := func(c config) config {
		c.messageFrom, c.listen, c.exitCode = "default", ":8080", 1
		if c.message == "" {
			c.message = defaultMessage
		}
		c.backendTimeout, c.shutdownTimeout = 2*time.Second, 25*time.Second
		return c
	}
	tests := []struct {
		name    string
		args    []string
		want    config
		wantErr string
	}{
		{name: "none", want: defaults(config{})},
		{
			name: "timed exits",
			args: []string{"--listen", ":9", "--crash-after", "2s", "--exit-code", "3", "--message", "m"},
			want: func() config {
				c := defaults(config{message: "m", crashAfter: 2 * time.Second})
				c.listen, c.exitCode, c.messageFrom = ":9", 3, "--message"
				return c
			}(),
		},
		{
			name: "back ends, repeated, in order",
			args: []string{"--backend", "http://api/", "--backend=http://db.data.svc:8080/x", "--backend-timeout", "300ms"},
			want: func() config {
				c := defaults(config{backends: []string{"http://api/", "http://db.data.svc:8080/x"}})
				c.backendTimeout = 300 * time.Millisecond
				return c
			}(),
		},
		{
			name: "drain and shutdown",
			args: []string{"--drain-delay", "5s", "--shutdown-timeout", "1m"},
			want: func() config {
				c := defaults(config{drainDelay: 5 * time.Second})
				c.shutdownTimeout = time.Minute
				return c
			}(),
		},
		{name: "unknown flag", args: []string{"--bogus"}, wantErr: "not defined"},
		{name: "back end without scheme", args: []string{"--backend", "api"}, wantErr: `"api": want an http:// URL with a host`},
		{name: "back end over https", args: []string{"--backend", "https://api/"}, wantErr: "want an http:// URL"},
		{name: "back end without host", args: []string{"--backend", "http:///x"}, wantErr: "want an http:// URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseFlagsEnv(tt.args, func(string) (string, bool) { return "", false })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c, tt.want) {
				t.Errorf("parseFlags = %+v, want %+v", c, tt.want)
			}
		})
	}
}

func TestGreeting(t *testing.T) {
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		want     string
		wantFrom string
	}{
		{"default", nil, nil, defaultMessage, "default"},
		{"GREETING replaces the default", nil, map[string]string{"GREETING": "hello from web"}, "hello from web", "GREETING"},
		{"--message wins over GREETING", []string{"--message", "m"}, map[string]string{"GREETING": "hello from web"}, "m", "--message"},
		{"--message without GREETING", []string{"--message=m"}, nil, "m", "--message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseFlagsEnv(tt.args, env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if c.message != tt.want || c.messageFrom != tt.wantFrom {
				t.Fatalf("message %q from %s, want %q from %s", c.message, c.messageFrom, tt.want, tt.wantFrom)
			}
			ts := httptest.NewServer(newServer(c, time.Now, func(int) {}).routes())
			defer ts.Close()
			a := get(http.DefaultClient, ts.URL+"/")
			if a.err != nil {
				t.Fatal(a.err)
			}
			if !strings.HasPrefix(a.body, tt.want+"\nhostname: ") {
				t.Errorf("GET / = %q, want it to start with %q", a.body, tt.want+"\n")
			}
		})
	}
}

// TestRunLogsGreeting checks that the message taken from GREETING is in the
// startup log, which is what `dockctl logs` shows.
func TestRunLogsGreeting(t *testing.T) {
	t.Setenv("GREETING", "hello from web")
	var buf bytes.Buffer
	log.SetOutput(&buf)
	defer log.SetOutput(os.Stderr)
	if got := run([]string{"--listen", "127.0.0.1:0", "--exit-after", "10ms"}); got != 0 {
		t.Fatalf("run = %d, want 0", got)
	}
	if want := `message "hello from web" (from GREETING)`; !strings.Contains(buf.String(), want) {
		t.Errorf("log %q, want it to contain %q", buf.String(), want)
	}
}

func TestRunTimedExits(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"exit-after", []string{"--listen", "127.0.0.1:0", "--exit-after", "50ms"}, 0},
		{"crash-after default code", []string{"--listen", "127.0.0.1:0", "--crash-after", "50ms"}, 1},
		{"crash-after custom code", []string{"--listen", "127.0.0.1:0", "--crash-after", "50ms", "--exit-code", "42"}, 42},
		{"bad flag", []string{"--nope"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(tt.args); got != tt.want {
				t.Errorf("run(%v) = %d, want %d", tt.args, got, tt.want)
			}
		})
	}
}

// TestRunFiles: --require-file fails the start when the file is missing,
// --write-file leaves the message in its file, and the two together are
// what one init container of a chain does.
func TestRunFiles(t *testing.T) {
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"require missing", []string{"--listen", "127.0.0.1:0", "--exit-after", "10ms", "--require-file", first}, 1},
		{"write", []string{"--listen", "127.0.0.1:0", "--exit-after", "10ms", "--write-file", first, "--message", "one"}, 0},
		{"require present, write", []string{"--listen", "127.0.0.1:0", "--exit-after", "10ms", "--require-file", first, "--write-file", second, "--message", "two"}, 0},
		{"write fails", []string{"--listen", "127.0.0.1:0", "--exit-after", "10ms", "--write-file", filepath.Join(dir, "no", "such", "dir")}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(tt.args); got != tt.want {
				t.Errorf("run(%v) = %d, want %d", tt.args, got, tt.want)
			}
		})
	}
	for path, want := range map[string]string{first: "one\n", second: "two\n"} {
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", path, b, err, want)
		}
	}
}

// wait dials until the address accepts a connection, once a second, and
// exits 0; a bad argument is a usage error.
func TestWaitDialsUntilAccepted(t *testing.T) {
	failures := 2
	var slept []time.Duration
	dial := func(addr string) error {
		if addr != "db:5432" {
			t.Fatalf("dialed %q", addr)
		}
		if failures > 0 {
			failures--
			return errors.New("connection refused")
		}
		return nil
	}
	var errOut bytes.Buffer
	if code := waitCmd([]string{"db:5432"}, &errOut, dial, func(d time.Duration) { slept = append(slept, d) }); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if len(slept) != 2 || slept[0] != time.Second || !strings.Contains(errOut.String(), "db:5432 answers") {
		t.Fatalf("slept %v, stderr %q", slept, errOut.String())
	}
	for _, args := range [][]string{nil, {"db"}, {"db:1", "extra"}} {
		if code := waitCmd(args, io.Discard, dial, func(time.Duration) { t.Fatal("slept on a usage error") }); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := tcpDial(ln.Addr().String()); err != nil {
		t.Fatalf("tcpDial of a listening port: %v", err)
	}
}

// An address no dial could ever reach (no port, port 0 or past 65535, an
// unknown service name) is a usage error, exit 2 at once, not a
// wait that never ends in an init container.
func TestWaitRefusesAnAddressThatNeverAnswers(t *testing.T) {
	for _, tt := range []struct{ name, addr string }{
		{"no port", "db:"},
		{"port 0", "db:0"},
		{"port past 65535", "db:70000"},
		{"an unknown service name", "db:no-such-service-name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dial := func(string) error { t.Fatal("dialed"); return nil }
			if code := waitCmd([]string{tt.addr}, io.Discard, dial, func(time.Duration) { t.Fatal("slept on a usage error") }); code != 2 {
				t.Errorf("%s: exit %d, want 2", tt.addr, code)
			}
		})
	}
}
