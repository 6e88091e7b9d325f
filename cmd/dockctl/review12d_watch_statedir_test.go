package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// Review of get -w (issue 12 item 2): each test here proves a defect.

// kubectl get -w on a cluster with nothing in it waits for the first
// object; dockctl's `get` of a state directory nothing was applied to yet
// is an empty listing, not an error (store.OpenReadOnly). get -w of the
// same directory must wait too, and print what is applied later. It
// fails at once instead: the record watch needs deployments/, which only
// the first write creates ("error: watching state directory …: no such
// file or directory", exit 1), so `dockctl get deployments -w` started
// before the first apply (a CI job watching while another step applies)
// never shows anything.
func TestReview12dGetWatchBeforeTheFirstApply(t *testing.T) {
	for _, tc := range []struct {
		what  string
		setup func(t *testing.T, dir string)
	}{
		{"no state directory", func(*testing.T, string) {}},
		{"an empty state directory", func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			api := startFakeDaemon(t)
			dir := filepath.Join(t.TempDir(), "state")
			tc.setup(t, dir)
			base := []string{"--state-dir", dir, "--instance", "t1"}
			defer func(d time.Duration) { watchResync = d }(watchResync)
			watchResync = time.Hour // the change must come from a source
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var out, errOut syncBuffer
			cmd := newRootCommand()
			cmd.SetOut(&out)
			cmd.SetErr(&errOut)
			cmd.SetArgs(append(base, "get", "deployments", "-w"))
			done := make(chan error, 1)
			go func() { done <- cmd.ExecuteContext(ctx) }()
			// The watch is set up once it subscribed to Docker's events,
			// which it does after the state directory's watches.
			deadline := time.Now().Add(30 * time.Second)
			for subscribed := false; !subscribed; {
				select {
				case err := <-done:
					t.Fatalf("get -w ended before anything was applied: %v; stderr %q", err, errOut.String())
				default:
				}
				api.mu.Lock()
				subscribed = len(api.subs) > 0
				api.mu.Unlock()
				if time.Now().After(deadline) {
					t.Fatal("get -w did not subscribe to Docker's events")
				}
				time.Sleep(10 * time.Millisecond)
			}
			runner(t, base)(webYAML, "apply", "-f", "-")
			for !regexp.MustCompile(`(?m)^web +0/3 `).MatchString(out.String()) {
				select {
				case err := <-done:
					t.Fatalf("get -w ended: %v; stderr %q", err, errOut.String())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("the deployment applied after get -w started was never printed; output %q, stderr %q", out.String(), errOut.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
