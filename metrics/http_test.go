package metrics

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHandler(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		ready    func() bool
		wantCode int
		wantBody string // a substring
	}{
		{"healthz", "/healthz", func() bool { return false }, http.StatusOK, "ok\n"},
		{"readyz when ready", "/readyz", func() bool { return true }, http.StatusOK, "ok\n"},
		{"readyz when docker is unreachable", "/readyz", func() bool { return false }, http.StatusServiceUnavailable, NotReadyReason + "\n"},
		{"readyz without a readiness source", "/readyz", nil, http.StatusOK, "ok\n"},
		{"metrics: dockctl series", "/metrics", nil, http.StatusOK, `dockctl_docker_api_calls_total{operation="create"} 0`},
		{"metrics: go runtime collector", "/metrics", nil, http.StatusOK, "go_goroutines "},
		{"metrics: process collector", "/metrics", nil, http.StatusOK, "process_resident_memory_bytes "},
		{"unknown path", "/nope", nil, http.StatusNotFound, ""},
	}
	m := New()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(m.Handler(tt.ready))
			defer srv.Close()
			resp, err := http.Get(srv.URL + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("status %d, want %d; body %q", resp.StatusCode, tt.wantCode, body)
			}
			if lines := strings.Count(string(body), "\n"); tt.wantCode == http.StatusServiceUnavailable && lines != 1 {
				t.Errorf("not-ready body %q is %d lines, want one", body, lines)
			}
			if !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("body %q does not contain %q", body, tt.wantBody)
			}
		})
	}
}

// Readiness is asked on every request, not once: it follows the Docker
// daemon going away and coming back.
func TestHandlerReadinessFollowsState(t *testing.T) {
	ready := false
	h := New().Handler(func() bool { return ready })
	for _, want := range []int{http.StatusServiceUnavailable, http.StatusOK, http.StatusServiceUnavailable} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		if rec.Code != want {
			t.Fatalf("ready=%v: status %d, want %d", ready, rec.Code, want)
		}
		ready = !ready
	}
}

func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, done, err := Serve(ctx, "127.0.0.1:0", New().Handler(func() bool { return true }))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(addr, ":0") {
		t.Fatalf("Serve returned %s, want the port actually bound", addr)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d", path, resp.StatusCode)
		}
	}

	// A second listener on the same address fails at once, so that a taken
	// port stops the controller at startup.
	if _, _, err := Serve(ctx, addr, http.NotFoundHandler()); err == nil || !strings.Contains(err.Error(), addr) {
		t.Errorf("Serve on a taken address: err = %v, want one naming %s", err, addr)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not shut down after its context ended")
	}
	if _, ok := <-done; ok {
		t.Error("done channel not closed after the final error")
	}
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("server still answers after shutdown")
	}
}
