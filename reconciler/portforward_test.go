package reconciler

import (
	"slices"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// Stale port-forward helpers, as data: not running, and created more than
// the grace ago; nothing else.
func TestStalePortForwardHelpers(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pf := func(name, state string, age time.Duration) dockerx.Container {
		return dockerx.Container{ID: name, Name: name, Role: dockerx.RolePortForward, State: state, Created: now.Add(-age)}
	}
	for _, tt := range []struct {
		name string
		ct   dockerx.Container
		want bool
	}{
		{"created, never started, an hour ago", pf("a", dockerx.StateCreated, time.Hour), true},
		{"exited and left", pf("b", dockerx.StateExited, 2*time.Minute), true},
		{"dead", pf("c", dockerx.StateDead, 61*time.Second), true},
		{"created just now: its CLI may be starting it", pf("d", dockerx.StateCreated, 5*time.Second), false},
		{"created a minute ago exactly", pf("e", dockerx.StateCreated, time.Minute), false},
		{"exited just now: Docker removes it (AutoRemove)", pf("f", dockerx.StateExited, time.Second), false},
		{"running: a session's", pf("g", dockerx.StateRunning, 24*time.Hour), false},
		{"paused", pf("h", dockerx.StatePaused, time.Hour), false},
		{"being removed", pf("i", dockerx.StateRemoving, time.Hour), false},
		{"no creation time", dockerx.Container{ID: "j", Role: dockerx.RolePortForward, State: dockerx.StateCreated}, false},
		{"a proxy", dockerx.Container{ID: "k", Role: dockerx.RoleProxy, State: dockerx.StateExited, Created: now.Add(-time.Hour)}, false},
		{"a replica", dockerx.Container{ID: "l", Role: dockerx.RoleReplica, State: dockerx.StateCreated, Created: now.Add(-time.Hour)}, false},
		{"a holder", dockerx.Container{ID: "m", Role: dockerx.RoleHolder, State: dockerx.StateDead, Created: now.Add(-time.Hour)}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := stalePortForwardHelpers([]dockerx.Container{tt.ct}, now, time.Minute)
			if (len(got) == 1) != tt.want {
				t.Errorf("stale %v, want %v", got, tt.want)
			}
		})
	}
	all := []dockerx.Container{pf("a", dockerx.StateCreated, time.Hour), pf("g", dockerx.StateRunning, time.Hour), pf("b", dockerx.StateExited, time.Hour)}
	got := stalePortForwardHelpers(all, now, time.Minute)
	if ids := []string{got[0].ID, got[1].ID}; len(got) != 2 || !slices.Equal(ids, []string{"a", "b"}) {
		t.Errorf("of three: %v, want a and b", got)
	}
}

// Without --prune-orphans too: a stale helper is dockctl's own, no orphan.
// It is removed with an event on the pod it forwarded to; a young one
// and a running one are left.
func TestSweepRemovesStalePortForwardHelpers(t *testing.T) {
	m := &memRecorder{}
	h := newHarness(t, Options{ResyncPeriod: 20 * time.Millisecond, Recorder: m})
	labels := map[string]string{dockerx.LabelInstance: "i", dockerx.LabelNamespace: "shop", dockerx.LabelRole: dockerx.RolePortForward}
	add := func(session, state string, age time.Duration) string {
		id, err := h.engine.Add(dockerx.Container{Name: dockerx.PortForwardHelperName("i", "shop", "db-0", session), Image: testImage, Labels: labels,
			State: state, Created: time.Now().Add(-age)}, "")
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	stale, young, running := add("0a0b0c", dockerx.StateCreated, time.Hour), add("1a1b1c", dockerx.StateCreated, 0), add("2a2b2c", dockerx.StateRunning, time.Hour)
	h.start()
	waitEvent(t, h, m, "Pod/db-0 Normal StaleHelperRemoved", "Removed stale port-forward helper i_db-0.shop_pf-0a0b0c (created)")
	h.waitResyncs(3)
	left := map[string]bool{}
	for _, c := range h.engine.Snapshot() {
		left[c.ID] = true
	}
	if left[stale] || !left[young] || !left[running] {
		t.Errorf("left: stale %v, young %v, running %v; want only the young and the running ones", left[stale], left[young], left[running])
	}
}

// A files writer (dockerx.RunFilesWriter) left created by a controller that
// died between its create and its start holds its pod's file volumes (they
// cannot be removed while it exists) and would never go otherwise: the
// sweep removes it as a stale helper, once older than the grace, with an
// event on the pod it was to write for that says what it was. A young one
// and a running one are left.
func TestSweepRemovesStaleFilesWriters(t *testing.T) {
	m := &memRecorder{}
	h := newHarness(t, Options{ResyncPeriod: 20 * time.Millisecond, Recorder: m})
	labels := map[string]string{dockerx.LabelInstance: "i", dockerx.LabelNamespace: "shop", dockerx.LabelRole: dockerx.RoleFilesWriter}
	holder := dockerx.ContainerName("i", "shop", "web", "5d8f9c7b4", 2)
	add := func(state string, age time.Duration) (string, string) {
		name := dockerx.FilesWriterName(holder)
		id, err := h.engine.Add(dockerx.Container{Name: name, Image: testImage, Labels: labels, State: state, Created: time.Now().Add(-age)}, "")
		if err != nil {
			t.Fatal(err)
		}
		return id, name
	}
	stale, staleName := add(dockerx.StateCreated, time.Hour)
	young, _ := add(dockerx.StateCreated, 0)
	running, _ := add(dockerx.StateRunning, time.Hour)
	h.start()
	waitEvent(t, h, m, "Pod/"+dockerx.Hostname("web", "5d8f9c7b4", 2)+" Normal StaleHelperRemoved", "Removed stale files writer "+staleName+" (created)")
	h.waitResyncs(3)
	left := map[string]bool{}
	for _, c := range h.engine.Snapshot() {
		left[c.ID] = true
	}
	if left[stale] || !left[young] || !left[running] {
		t.Errorf("left: stale %v, young %v, running %v; want only the young and the running ones", left[stale], left[young], left[running])
	}
}

// TestPruneOrphansRemovesNeverStartedPortForwardHelper: a port-forward
// helper that never ran is never going anywhere: Docker's AutoRemove acts
// only when a started container exits, and the helper's stdin trick (it
// exits when the CLI's attach ends) needs it started. The CLI leaves one
// behind whenever it dies between the helper's create and its start
// (SIGKILL, a crash, the daemon connection dropping; or SIGINT while the
// create call is in flight: the daemon creates it, the CLI never learns
// its ID). With --prune-orphans the controller must not skip it as "the
// CLI's, gone with it", or it stays for ever (listed by `get containers`,
// holding the helper image, keeping a deleted namespace Terminating).
func TestPruneOrphansRemovesNeverStartedPortForwardHelper(t *testing.T) {
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
