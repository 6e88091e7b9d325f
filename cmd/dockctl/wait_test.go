package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
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

// rollout status ends its waiting line with why the rollout waits: the
// reason of a pod of the revision rolled out, never that of a pod of an
// older one, which does not hold the rollout back (its pods are being
// replaced).
func TestRolloutStatusGivesTheNewRevisionsReason(t *testing.T) {
	snap := waitingFixture(t)
	rec := snap.records[0]
	oldHash := rec.Revisions[0].Hash
	// Revision 2 changes the image; the pods of revision 1 are the ones
	// whose image cannot be pulled.
	rec.Deployment.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	rec.Generation = 2
	newHash := manifests.TemplateHash(&rec.Deployment.Spec.Template)
	rec.Revisions = append(rec.Revisions, store.Revision{Number: 2, Hash: newHash, Template: rec.Deployment.Spec.Template})
	st := snap.statuses["default/web"]
	st.ObservedGeneration, st.Conditions = 2, nil
	for _, tc := range []struct {
		name    string
		waiting []podruntime.WaitingPod
		want    string
	}{
		{"only an old pod waits", []podruntime.WaitingPod{
			{Name: dockerx.Hostname("web", oldHash, 0), Hash: oldHash, Reason: podruntime.WaitImagePullBackOff, Message: "image nginx:1.27: not found", Since: now},
		}, `Waiting for deployment "web" rollout to finish: 0 out of 2 new replicas have been updated...`},
		{"an old and a new pod wait", []podruntime.WaitingPod{
			{Name: dockerx.Hostname("web", oldHash, 0), Hash: oldHash, Reason: podruntime.WaitImagePullBackOff, Message: "image nginx:1.27: not found", Since: now},
			{Name: dockerx.Hostname("web", newHash, 0), Hash: newHash, Reason: podruntime.WaitErrImagePull, Message: "image nginx:1.28: not found", Since: now},
		}, `Waiting for deployment "web" rollout to finish: 0 out of 2 new replicas have been updated... (ErrImagePull: image nginx:1.28: not found)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, err := json.Marshal(map[string]any{"rollout": map[string]any{}, "waiting": tc.waiting})
			if err != nil {
				t.Fatal(err)
			}
			st.Extra = map[string]json.RawMessage{"controller": state}
			if got := progressOf(rec, st, nil, nil, now).message(); got != tc.want {
				t.Errorf("rollout status says\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
