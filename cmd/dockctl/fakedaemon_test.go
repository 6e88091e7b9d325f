package main

import (
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// fakeDaemon is the few Engine API endpoints the read-only commands call
// (ping, version, container list), served over HTTP so that a command runs
// end to end through the real Docker client, flags and output included,
// without a Docker daemon. It speaks raw JSON: only dockerx imports the SDK.
type fakeDaemon struct {
	mu         sync.Mutex
	containers []map[string]any
	// logs holds, by container ID, the lines of stdout (1) and stderr (2).
	logs map[string][]logLine
	// tails records the tail parameter of each logs request.
	tails []string
}

type logLine struct {
	stream byte
	text   string
}

const fakeAPIVersion = "1.47"

var apiPrefix = regexp.MustCompile(`^/v[0-9.]+`)

// startFakeDaemon serves the fake and points DOCKER_HOST at it for the test.
func startFakeDaemon(t *testing.T) *fakeDaemon {
	t.Helper()
	f := &fakeDaemon{}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	t.Setenv("DOCKER_HOST", "tcp://"+srv.Listener.Addr().String())
	t.Setenv("DOCKER_API_VERSION", "")
	t.Setenv("DOCKER_TLS_VERIFY", "")
	t.Setenv("DOCKER_CERT_PATH", "")
	return f
}

// addContainer lists a running container of deployment dep (template hash
// "abc") in instance with the given extra labels.
func (f *fakeDaemon) addContainer(name, instance, dep string, labels map[string]string) {
	all := map[string]string{
		"io.dockctl.instance": instance, "io.dockctl.deployment": dep, "io.dockctl.template-hash": "abc",
	}
	for k, v := range labels {
		all[k] = v
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.containers = append(f.containers, map[string]any{
		"Id": name + "-id", "Names": []string{"/" + name}, "Image": "dockctl-workload:dev",
		"Labels": all, "State": "running", "Status": "Up 3 minutes", "Created": now.Unix(),
	})
}

func (f *fakeDaemon) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Api-Version", fakeAPIVersion)
	w.Header().Set("Content-Type", "application/json")
	path := apiPrefix.ReplaceAllString(r.URL.Path, "")
	if id, ok := strings.CutPrefix(path, "/containers/"); ok && strings.HasSuffix(id, "/logs") {
		f.serveLogs(w, r, strings.TrimSuffix(id, "/logs"))
		return
	}
	switch path {
	case "/_ping":
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("OK"))
	case "/version":
		_ = json.NewEncoder(w).Encode(map[string]any{"Version": "27.1.0", "ApiVersion": fakeAPIVersion, "Os": "linux", "Arch": "amd64"})
	case "/info":
		_ = json.NewEncoder(w).Encode(map[string]any{"LoggingDriver": "json-file"})
	case "/containers/json":
		// The instance filter is the daemon's job; the fake lists only
		// the instance asked for, as Docker does.
		var filters map[string]map[string]bool
		_ = json.Unmarshal([]byte(r.URL.Query().Get("filters")), &filters)
		f.mu.Lock()
		defer f.mu.Unlock()
		out := []map[string]any{}
		for _, c := range f.containers {
			labels := c["Labels"].(map[string]string)
			ok := true
			for want := range filters["label"] {
				k, v, _ := strings.Cut(want, "=")
				if labels[k] != v {
					ok = false
				}
			}
			if ok {
				out = append(out, c)
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	default:
		http.Error(w, `{"message":"fake daemon: not implemented: `+r.Method+" "+r.URL.Path+`"}`, http.StatusNotImplemented)
	}
}

// serveLogs answers a logs request in Docker's multiplexed stream format
// (no TTY): an 8-byte header (stream, 3 zero bytes, big-endian length)
// before each frame.
func (f *fakeDaemon) serveLogs(w http.ResponseWriter, r *http.Request, id string) {
	f.mu.Lock()
	f.tails = append(f.tails, r.URL.Query().Get("tail"))
	lines := f.logs[id]
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/vnd.docker.multiplexed-stream")
	for _, l := range lines {
		payload := []byte(l.text + "\n")
		hdr := []byte{l.stream, 0, 0, 0, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(hdr[4:], uint32(len(payload)))
		_, _ = w.Write(append(hdr, payload...))
	}
}
