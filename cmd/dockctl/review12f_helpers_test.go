package main

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// callCounter stands between the commands and the fake Engine API and
// counts the requests by kind: what a command asks Docker, and how often.
type callCounter struct {
	mu     sync.Mutex
	counts map[string]int
	// gate, when set, holds each container list until it is closed: what
	// the list answers is Docker's state when the gate opens.
	gate chan struct{}
}

// countCalls puts a counter in front of d: DOCKER_HOST points at it for
// the test.
func countCalls(t *testing.T, d *dockerAPI) *callCounter {
	t.Helper()
	dir, err := os.MkdirTemp("", "cnt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "c.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	c := &callCounter{counts: map[string]int{}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.add(r) == "list" {
			c.mu.Lock()
			gate := c.gate
			c.mu.Unlock()
			if gate != nil {
				<-gate
			}
		}
		d.serve(w, r)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	t.Setenv("DOCKER_HOST", "unix://"+sock)
	return c
}

// add counts r as "inspect", "list", "info" or its path, and says which.
func (c *callCounter) add(r *http.Request) string {
	path := apiVersionPrefix.ReplaceAllString(r.URL.Path, "")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	kind := path
	switch {
	case len(parts) == 3 && parts[0] == "containers" && parts[2] == "json":
		kind = "inspect"
	case path == "/containers/json":
		kind = "list"
	case path == "/info":
		kind = "info"
	}
	c.mu.Lock()
	c.counts[kind]++
	c.mu.Unlock()
	return kind
}

// hold makes the container lists wait until the function it returns is
// called.
func (c *callCounter) hold() (release func()) {
	gate := make(chan struct{})
	c.mu.Lock()
	c.gate = gate
	c.mu.Unlock()
	return sync.OnceFunc(func() {
		c.mu.Lock()
		c.gate = nil
		c.mu.Unlock()
		close(gate)
	})
}

func (c *callCounter) get(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[kind]
}

func (c *callCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts = map[string]int{}
}
