package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// backend starts a workload as a back end, with a fixed hostname.
func backend(t *testing.T, message, hostname string) string {
	t.Helper()
	s := newServer(config{message: message}, time.Now, func(int) {})
	s.hostname = hostname
	ts := httptest.NewServer(s.routes())
	t.Cleanup(ts.Close)
	return ts.URL + "/"
}

// failing starts a back end that always answers status with text.
func failing(t *testing.T, status int, text string) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, text, status)
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/"
}

// hanging starts a back end that answers nothing until the test ends.
func hanging(t *testing.T) string {
	t.Helper()
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(release) }) // runs first: Close waits for the handler
	return ts.URL + "/"
}

// refused returns a URL where nothing listens.
func refused(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/"
}

// TestFrontEnd: with --backend, GET / shows the front end's own answer and
// one line per back end, in flag order; any back end that fails makes it a
// 502 whose body says which one and why.
func TestFrontEnd(t *testing.T) {
	tests := []struct {
		name     string
		backends func(t *testing.T) []string
		timeout  time.Duration
		wantCode int
		// wantLines are the lines after "hello from web\nhostname: web-1",
		// one per back end: %[1]s stands for its URL, %[2]s for its address.
		wantLines []string
	}{
		{
			name:      "no back end: the answer of a back end",
			backends:  func(*testing.T) []string { return nil },
			wantCode:  200,
			wantLines: nil,
		},
		{
			name:      "one back end",
			backends:  func(t *testing.T) []string { return []string{backend(t, "hello from api", "api-2")} },
			wantCode:  200,
			wantLines: []string{"backend %[1]s: hello from api, hostname: api-2"},
		},
		{
			name: "two back ends, in flag order",
			backends: func(t *testing.T) []string {
				return []string{backend(t, "hello from api", "api-1"), backend(t, "hello from db", "db-1")}
			},
			wantCode:  200,
			wantLines: []string{"backend %[1]s: hello from api, hostname: api-1", "backend %[1]s: hello from db, hostname: db-1"},
		},
		{
			name:      "back end not ready",
			backends:  func(t *testing.T) []string { return []string{failing(t, 503, "not ready")} },
			wantCode:  502,
			wantLines: []string{"backend %[1]s: error: answered 503 Service Unavailable: not ready"},
		},
		{
			name:      "back end refuses the connection",
			backends:  func(t *testing.T) []string { return []string{refused(t)} },
			wantCode:  502,
			wantLines: []string{"backend %[1]s: error: dial tcp %[2]s: connect: connection refused"},
		},
		{
			name:      "back end too slow",
			backends:  func(t *testing.T) []string { return []string{hanging(t)} },
			timeout:   50 * time.Millisecond,
			wantCode:  502,
			wantLines: []string{"backend %[1]s: error: context deadline exceeded (Client.Timeout exceeded while awaiting headers)"},
		},
		{
			name: "one of two fails",
			backends: func(t *testing.T) []string {
				return []string{backend(t, "hello from api", "api-1"), failing(t, 500, "boom")}
			},
			wantCode:  502,
			wantLines: []string{"backend %[1]s: hello from api, hostname: api-1", "backend %[1]s: error: answered 500 Internal Server Error: boom"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The front end's port is taken before the back ends are made:
			// a refused back end's port, free when chosen, must not be
			// handed to the front end itself (which would then call itself
			// until it runs out of files).
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			urls := tt.backends(t)
			timeout := tt.timeout
			if timeout == 0 {
				timeout = time.Minute
			}
			s := newServer(config{message: "hello from web", backends: urls, backendTimeout: timeout}, time.Now, func(int) {})
			s.hostname = "web-1"
			ts := httptest.NewUnstartedServer(s.routes())
			ts.Listener.Close()
			ts.Listener = ln
			ts.Start()
			defer ts.Close()

			a := get(http.DefaultClient, ts.URL+"/")
			if a.err != nil {
				t.Fatal(a.err)
			}
			if a.code != tt.wantCode {
				t.Errorf("status %d, want %d", a.code, tt.wantCode)
			}
			want := "hello from web\nhostname: web-1\n"
			for i, l := range tt.wantLines {
				want += fmt.Sprintf(l, urls[i], strings.TrimSuffix(strings.TrimPrefix(urls[i], "http://"), "/")) + "\n"
			}
			if a.body != want {
				t.Errorf("body:\n%s\nwant:\n%s", a.body, want)
			}
		})
	}
}

// TestWhoami: /whoami answers the hostname alone, whatever the message and
// the back ends (it calls none).
func TestWhoami(t *testing.T) {
	s := newServer(config{message: "hello", backends: []string{refused(t)}, backendTimeout: time.Minute}, time.Now, func(int) {})
	s.hostname = "web-7f9c-3"
	ts := httptest.NewServer(s.routes())
	defer ts.Close()
	if a := get(http.DefaultClient, ts.URL+"/whoami"); a.err != nil || a.code != 200 || a.body != "web-7f9c-3\n" {
		t.Errorf("GET /whoami = %+v, want 200 %q", a, "web-7f9c-3\n")
	}
}
