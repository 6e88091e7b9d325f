package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/store"
)

// A timed-out wait says what holds the rollout back when the controller
// reported it, and asks about the controller only when it has not.
func TestTimeoutErrorSaysWhy(t *testing.T) {
	stuck := progress{name: "web", desired: 3, updated: 1, observed: true,
		failure: "ImagePullBackOff: image nope:1: not found", crashLooping: 2}
	for _, tt := range []struct {
		name       string
		running    bool
		ps         []progress
		want, deny []string
	}{
		{"stuck, controller running", true, []progress{stuck},
			[]string{`deployment "web": ImagePullBackOff: image nope:1`, "2 replica(s) in CrashLoopBackOff"}, []string{"is `dockctl controller` running"}},
		{"stuck, no controller", false, []progress{stuck},
			[]string{"ImagePullBackOff", "is `dockctl controller` running for instance \"i\"?"}, nil},
		{"not observed yet", true, []progress{{name: "web", desired: 3}},
			[]string{"is `dockctl controller` running"}, nil},
		{"slow but healthy", true, []progress{{name: "web", desired: 3, updated: 2, observed: true}},
			[]string{"the controller is running; see `dockctl describe deployment NAME`"}, []string{"is `dockctl controller` running"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			msg := timeoutError(10*time.Second, "i", tt.running, tt.ps).Error()
			if !strings.HasPrefix(msg, "timed out after 10s waiting for the rollout: ") {
				t.Fatalf("message %q", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			for _, d := range tt.deny {
				if strings.Contains(msg, d) {
					t.Errorf("message %q has %q", msg, d)
				}
			}
		})
	}
}

// A wait that times out on a paused deployment says that the rollout is
// paused, the one thing holding it back, rather than pointing at describe.
func TestTimeoutErrorNamesPause(t *testing.T) {
	for _, tt := range []struct{ ns, name, ref string }{
		{"", "rc", "deployment/rc"},
		{"team", "team/rc", "deployment/rc -n team"}, // the hint works as given
	} {
		p := progress{name: tt.name, ref: cmdRef(tt.ns, "rc"), desired: 2, updated: 0, total: 2, observed: true, paused: true}
		msg := timeoutError(5*time.Second, "i", true, []progress{p}).Error()
		if !strings.Contains(msg, `deployment "`+tt.name+`": rollout paused`) || !strings.Contains(msg, "dockctl rollout resume "+tt.ref+"`") {
			t.Errorf("message %q does not say the rollout is paused", msg)
		}
		if strings.Contains(msg, "see `dockctl describe deployment NAME`") {
			t.Errorf("message %q points at describe for a paused rollout", msg)
		}
	}
}

// `--wait` words its timeout the same however it strikes — here
// before the first look at the engine completes (as on a loaded machine,
// where TestApplyWait's 1 s timeout failed with a bare "timed out after 1s"
// or "context deadline exceeded").
func TestWaitTimeoutMessage(t *testing.T) {
	startFakeDaemon(t)
	dir := t.TempDir()
	if out, err := runCLI(t, dir, webYAML, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	st, err := store.OpenReadOnly(dir, "rev")
	if err != nil {
		t.Fatal(err)
	}
	g := &globalOptions{stateDir: dir, instance: "rev"}
	err = waitRollouts(context.Background(), g, st, []string{"default/web"}, time.Nanosecond, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "timed out after 1ns waiting for the rollout") {
		t.Fatalf("err = %v, want the timeout message", err)
	}
}

// When the controller has observed the deployment and the rollout
// is stuck (a crash-looping release), the timeout must not suggest that no
// controller is running.
func TestWaitTimeoutWithController(t *testing.T) {
	dir, st, rec := appliedWeb(t)
	if err := st.WriteStatus("", "web", &store.Status{ObservedGeneration: rec.Generation}); err != nil {
		t.Fatal(err)
	}
	// A controller runs: it holds the lock.
	release, err := st.AcquireControllerLock(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	g := &globalOptions{stateDir: dir, instance: "rev"}
	var out bytes.Buffer
	err = waitRollouts(context.Background(), g, st, []string{"default/web"}, time.Second, &out)
	if err == nil || !strings.Contains(err.Error(), "timed out") || strings.Contains(err.Error(), "controller` running") {
		t.Fatalf("err = %v, want a timeout that does not blame a missing controller\n%s", err, out.String())
	}
}

// `rollout status` and `apply --wait` wait for a rollout to
// complete; a deployment deleted meanwhile never completes it, so they must
// fail, not exit 0 as `delete --wait` rightly does once its containers are
// gone.
func TestWaitRolloutFailsOnDeletion(t *testing.T) {
	dir, st, _ := appliedWeb(t)
	if err := st.Delete("", "web"); err != nil {
		t.Fatal(err)
	}
	g := &globalOptions{stateDir: dir, instance: "rev"}
	var out bytes.Buffer
	err := waitRollouts(context.Background(), g, st, []string{"default/web"}, time.Minute, &out)
	if err == nil || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("waiting for the rollout of a deleted deployment: err = %v, want a failure naming the deletion\n%s", err, out.String())
	}
	if err := waitDeleted(context.Background(), g, st, []string{"default/web"}, time.Minute, &out); err != nil {
		t.Fatalf("delete --wait with no container left: %v", err)
	}
}

// appliedWeb applies webYAML (instance "rev") into a new state directory,
// with a fake Docker daemon, and returns the directory, the store and the
// deployment's record.
func appliedWeb(t *testing.T) (string, *store.Store, *store.Record) {
	t.Helper()
	startFakeDaemon(t)
	dir := t.TempDir()
	if out, err := runCLI(t, dir, webYAML, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	st, err := store.Open(dir, "rev")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	return dir, st, rec
}
