package reconciler

import (
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// A port-forward helper that never ran is never going anywhere: Docker's
// AutoRemove acts only when a started container exits, and the helper's
// stdin trick (it exits when the CLI's attach ends) needs it started. The
// CLI leaves one behind whenever it dies between the helper's create and
// its start (SIGKILL, a crash, the daemon connection dropping; or SIGINT
// while the create call is in flight: the daemon creates it, the CLI
// never learns its ID — see review12c_portforward_leak_test.go in e2e).
// The controller skips every port-forward helper as "the CLI's, gone with
// it", even with --prune-orphans, so such a container stays for ever
// (listed by `get containers`, holding the helper image, keeping a
// deleted namespace Terminating).
func TestReview12cPruneOrphansLeavesDeadPortForwardHelper(t *testing.T) {
	h := newHarness(t, Options{PruneOrphans: true, ResyncPeriod: 20 * time.Millisecond})
	h.apply(testDeployment("web", 1, "x"))
	h.start()
	pod := h.waitReplicas("web", 1)[0]
	labels := map[string]string{dockerx.LabelInstance: "i", dockerx.LabelNamespace: "default", dockerx.LabelRole: dockerx.RolePortForward}
	// Created an hour ago by a CLI that died before starting it: no
	// session can be using it.
	id, err := h.engine.Add(dockerx.Container{Name: pod.Name + ".default_pf-0a0b0c", Image: testImage, Labels: labels,
		State: dockerx.StateCreated, Created: time.Now().Add(-time.Hour)}, "")
	if err != nil {
		t.Fatal(err)
	}
	h.waitResyncs(10)
	for _, c := range h.engine.Snapshot() {
		if c.ID == id {
			t.Errorf("a port-forward helper that never started (created an hour ago) is left after 10 sweeps with --prune-orphans: %s %s", c.Name, c.State)
		}
	}
}
