package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dockctl/dockctl/internal/helperapi"
)

func specFor(t *testing.T, rawURL string) helperapi.ProbeSpec {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	return helperapi.ProbeSpec{Kind: "http", Address: u.Hostname(), Port: port, Scheme: strings.ToUpper(u.Scheme), TimeoutMillis: deadline.Milliseconds()}
}

func TestProbeHTTP(t *testing.T) {
	block := make(chan struct{})
	var elsewhereHits atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhereHits.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer elsewhere.Close()
	// Same server, another host name: kubelet compares host names.
	elsewhereURL := strings.Replace(elsewhere.URL, "127.0.0.1", "localhost", 1)

	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	mux.HandleFunc("/notfound", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) })
	mux.HandleFunc("/nocontent", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { <-block })
	mux.HandleFunc("/to-ok", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/to-fail", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/fail", http.StatusFound) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/to-elsewhere", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhereURL+"/", http.StatusFound)
	})
	mux.HandleFunc("/headers", func(w http.ResponseWriter, r *http.Request) {
		if r.UserAgent() != "kube-probe/dockctl" || r.Host != "web.example" || r.Header.Get("X-Probe") != "yes" || r.Header.Get("Accept") != "*/*" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
	})
	mux.HandleFunc("/query", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("q") != "1" {
			w.WriteHeader(http.StatusBadRequest)
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tlsSrv := httptest.NewTLSServer(mux)
	defer tlsSrv.Close()
	defer close(block) // before the servers' Close, which waits for /slow

	tests := []struct {
		name     string
		server   string
		path     string
		host     string
		headers  map[string]string
		timeout  int64
		want     int
		wantLine string
	}{
		{name: "200", server: srv.URL, path: "/ok", want: helperapi.ExitOK, wantLine: "success: HTTP 200"},
		{name: "204", server: srv.URL, path: "/nocontent", want: helperapi.ExitOK, wantLine: "success: HTTP 204"},
		{name: "404", server: srv.URL, path: "/notfound", want: helperapi.ExitFailed, wantLine: "statuscode: 404"},
		{name: "500", server: srv.URL, path: "/fail", want: helperapi.ExitFailed, wantLine: "statuscode: 500"},
		{name: "timeout", server: srv.URL, path: "/slow", timeout: 200, want: helperapi.ExitTimeout, wantLine: "timeout:"},
		{name: "redirect to the same host followed", server: srv.URL, path: "/to-ok", want: helperapi.ExitOK, wantLine: "success: HTTP 200"},
		{name: "redirect to a failure followed", server: srv.URL, path: "/to-fail", want: helperapi.ExitFailed, wantLine: "statuscode: 500"},
		{name: "redirect loop", server: srv.URL, path: "/loop", want: helperapi.ExitFailed, wantLine: "stopped after 10 redirects"},
		{name: "redirect to another host not followed", server: srv.URL, path: "/to-elsewhere", want: helperapi.ExitOK, wantLine: "warning: probe terminated redirects"},
		{name: "headers, Host and User-Agent", server: srv.URL, path: "/headers", host: "web.example", headers: map[string]string{"X-Probe": "yes"}, want: helperapi.ExitOK},
		{name: "Host from headers", server: srv.URL, path: "/headers", headers: map[string]string{"X-Probe": "yes", "Host": "web.example"}, want: helperapi.ExitOK},
		{name: "path with a query", server: srv.URL, path: "/query?q=1", want: helperapi.ExitOK},
		{name: "HTTPS without verification", server: tlsSrv.URL, path: "/ok", want: helperapi.ExitOK, wantLine: "success: HTTP 200"},
		{name: "nothing listening", server: "http://" + net.JoinHostPort(deadEndpoint(t).IP, strconv.Itoa(deadEndpoint(t).Port)), path: "/", want: helperapi.ExitFailed, wantLine: "failure:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := specFor(t, tc.server)
			spec.Path, spec.Host, spec.Headers = tc.path, tc.host, tc.headers
			if tc.timeout != 0 {
				spec.TimeoutMillis = tc.timeout
			}
			r := Probe(context.Background(), spec)
			if r.Exit != tc.want || !strings.Contains(r.Message, tc.wantLine) {
				t.Errorf("exit %d %q, want %d %q", r.Exit, r.Message, tc.want, tc.wantLine)
			}
			if strings.Contains(r.Message, "\n") {
				t.Errorf("message of several lines: %q", r.Message)
			}
		})
	}
	if n := elsewhereHits.Load(); n != 0 {
		t.Errorf("the redirect to another host was followed %d times", n)
	}
}

func TestProbeTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	open := endpointOf(ln.Addr())
	closed := deadEndpoint(t)
	tests := []struct {
		name string
		ep   helperapi.Endpoint
		want int
	}{
		{"listening", open, helperapi.ExitOK},
		{"refused", closed, helperapi.ExitFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Probe(context.Background(), helperapi.ProbeSpec{Kind: "tcp", Address: tc.ep.IP, Port: tc.ep.Port, TimeoutMillis: deadline.Milliseconds()})
			if r.Exit != tc.want {
				t.Errorf("exit %d (%s), want %d", r.Exit, r.Message, tc.want)
			}
		})
	}
}

// TestProbeCommand runs `helper probe`: exit status and one line on stdout.
func TestProbeCommand(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	tests := []struct {
		name string
		path string
		kind string
		want int
	}{
		{"healthy", "/healthz", "http", helperapi.ExitOK},
		{"unhealthy", "/other", "http", helperapi.ExitFailed},
		{"unknown kind", "/", "sctp", helperapi.ExitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := specFor(t, srv.URL)
			spec.Kind, spec.Path = tc.kind, tc.path
			b, _ := json.Marshal(spec)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"probe", "--spec", string(b)}, nil, &stdout, &stderr)
			if code != tc.want {
				t.Errorf("exit %d, want %d (stdout %q, stderr %q)", code, tc.want, stdout.String(), stderr.String())
			}
			if lines := strings.Count(stdout.String(), "\n"); lines != 1 || !strings.HasSuffix(stdout.String(), "\n") {
				t.Errorf("stdout %q, want one line", stdout.String())
			}
		})
	}
}
