package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The stand-in serves HTTP/1.1 and gRPC health checks over HTTP/2 without
// TLS on every TCP port it is given, and echoes UDP.
func TestStandinServes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var addrs []string
	done := make(chan error, 1)
	go func() {
		done <- serveStandin(ctx, StandinConfig{Image: "docker.io/library/redis:7.2.4", Ports: []string{"0", "0/udp"}}, func(a string) {
			mu.Lock()
			addrs = append(addrs, a)
			mu.Unlock()
		})
	}()
	var tcp, udp string
	deadline := time.Now().Add(10 * time.Second)
	for tcp == "" || udp == "" {
		if time.Now().After(deadline) {
			t.Fatalf("not listening: %v", addrs)
		}
		mu.Lock()
		for _, a := range addrs {
			if u, ok := strings.CutPrefix(a, "udp "); ok {
				udp = u
			} else {
				tcp = a
			}
		}
		mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	_, port, _ := net.SplitHostPort(tcp)
	tcp = "127.0.0.1:" + port
	_, uport, _ := net.SplitHostPort(udp)

	resp, err := http.Get("http://" + tcp + "/any/path")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "stand-in for docker.io/library/redis:7.2.4") || !strings.Contains(string(body), "path: /any/path") {
		t.Errorf("GET: %s %q", resp.Status, body)
	}

	// A gRPC health check as grpc-go sends it: HTTP/2 with prior
	// knowledge, a framed empty HealthCheckRequest.
	h2 := &http.Client{Transport: &http.Transport{Protocols: new(http.Protocols)}, Timeout: 10 * time.Second}
	h2.Transport.(*http.Transport).Protocols.SetUnencryptedHTTP2(true)
	grpc := func(path string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+tcp+path, bytes.NewReader([]byte{0, 0, 0, 0, 0}))
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("TE", "trailers")
		resp, err := h2.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body) // the trailers come after the body
		resp.Body.Close()
		if resp.ProtoMajor != 2 {
			t.Errorf("%s: answered over %s", path, resp.Proto)
		}
		return resp, b
	}
	resp, b := grpc(grpcHealthCheck)
	if st := resp.Trailer.Get("Grpc-Status"); st != "0" || !bytes.Equal(b, []byte{0, 0, 0, 0, 2, 0x08, 0x01}) {
		t.Errorf("health check: grpc-status %q, body %x; want 0 and SERVING", st, b)
	}
	resp, _ = grpc("/helloworld.Greeter/SayHello")
	if st := resp.Trailer.Get("Grpc-Status"); st != "12" {
		t.Errorf("another method: grpc-status %q, want 12 (UNIMPLEMENTED)", st)
	}

	conn, err := net.Dial("udp", "127.0.0.1:"+uport)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := conn.Read(buf); err != nil || string(buf[:n]) != "ping" {
		t.Errorf("udp echo: %q %v", buf[:n], err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stand-in did not stop with its context")
	}
}

// As a process other than the container's main one (an exec probe or a
// hook), or as an init container's main process, the stand-in exits 0 at
// once; a description it cannot read is an error.
func TestStandinMainExits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "standin.json")
	cfg := StandinConfig{Image: "ghcr.io/fin-core/ledger:3.3.0", Ports: []string{"8080"},
		Init: [][]string{{"/app/ledger", "migrate", "--up"}}}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		path string
		argv []string
		pid  int
		want int
	}{
		{"an exec probe", path, []string{"pg_isready", "-U", "app"}, 42, 0},
		{"a hook run as the app's command", path, []string{"/app/ledger", "serve"}, 7, 0},
		{"an init container", path, []string{"/app/ledger", "migrate", "--up"}, 1, 0},
		{"no description", filepath.Join(t.TempDir(), "none.json"), []string{"/workload"}, 1, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := standinMain(tt.path, tt.argv, tt.pid); got != tt.want {
				t.Errorf("exit %d, want %d", got, tt.want)
			}
		})
	}
}

func TestCatCmd(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "v"), []byte("blue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// As a configMap volume lays its files out: a link into ..data.
	if err := os.Symlink("v", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args      []string
		code      int
		out, errs string
	}{
		{[]string{filepath.Join(dir, "link")}, 0, "blue\n", ""},
		{[]string{filepath.Join(dir, "none")}, 1, "", "cat: "},
		{nil, 2, "", "usage: workload cat FILE"},
	} {
		var out, errs bytes.Buffer
		if code := catCmd(tt.args, &out, &errs); code != tt.code || out.String() != tt.out || !strings.HasPrefix(errs.String(), tt.errs) {
			t.Errorf("cat %v: %d %q %q", tt.args, code, out.String(), errs.String())
		}
	}
}
