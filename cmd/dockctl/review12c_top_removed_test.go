package main

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
)

// Docker answers a stats call (stream=0) with 200 and an empty body when
// the container is removed while the call waits for its two samples: the
// removal stops the container's stats collection, which closes the
// call's subscription, and the daemon's handler returns without writing
// (moby daemon/stats.go: `case v, ok := <-updates: if !ok { return nil
// }`). That is a container that is gone, as a 404 is; top drops a 404
// but fails on the empty answer ("decode: EOF"), so `top pods` or `top
// deployments` run during a rollout or a `docker rm -f` fails outright,
// every other pod's figures with it. kubectl top never fails on a pod
// that goes away meanwhile.
func TestReview12cTopSurvivesContainerRemovedWhileSampled(t *testing.T) {
	api, base, pods := topEngine(t)
	api.mu.Lock()
	gone := api.find(dockerx.ContainerName("t1", "", "web", storedHash(t, base, "web"), 1)).summary.ID
	api.mu.Unlock()
	// The daemon as seen by the CLI: the fake, except that web-1 is
	// removed while its stats are being sampled.
	dir, err := os.MkdirTemp("", "r12c-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "d.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/containers/"+gone+"/stats") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK) // and nothing: the subscription closed
			return
		}
		api.serve(w, r)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	t.Setenv("DOCKER_HOST", "unix://"+sock)

	out, errOut, err := run(t, "", append(base, "top", "pods", "-l", "deployment=web", "--no-headers")...)
	if want := pods["web-0"] + "   12m   5Mi   \n"; err != nil || out != want {
		t.Errorf("top pods while %s is removed: %q, %v, stderr %q; want the other pod's row, %q", pods["web-1"], out, err, errOut, want)
	}
}
