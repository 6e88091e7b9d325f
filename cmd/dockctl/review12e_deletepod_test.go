package main

import (
	"strings"
	"testing"
)

// Review 12e: right after `delete pod` the pod is Terminating, as kubectl
// shows a pod with a deletion timestamp at once; the deletion is recorded,
// yet `get pods` keeps showing it Running until a controller begins its
// stop — forever while none runs (the CLI itself says the pods are
// stopped only when one starts).
func TestReview12eGetPodsShowsDeletedPodTerminating(t *testing.T) {
	api := startFakeDaemon(t)
	dir := t.TempDir()
	base := []string{"--state-dir", dir, "--instance", "t1"}
	if _, errOut, err := run(t, webYAML, append(base, "apply", "-f", "-")...); err != nil {
		t.Fatalf("apply: %v %s", err, errOut)
	}
	api.addContainer("t1_web-abc-0", "t1", "web", map[string]string{"app": "web"})
	api.addContainer("t1_web-abc-1", "t1", "web", map[string]string{"app": "web"})
	if out, errOut, err := run(t, "", append(base, "delete", "pod", "web-abc-0", "--wait=false")...); err != nil {
		t.Fatalf("delete: %v %q %q", err, out, errOut)
	}
	if got := podDeletionsOf(t, dir, "t1", "", "web"); len(got) != 1 {
		t.Fatalf("requests %q, want the one recorded", got)
	}
	out, errOut, err := run(t, "", append(base, "get", "pods")...)
	if err != nil {
		t.Fatalf("get pods: %v %s", err, errOut)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) < 3:
		case f[0] == "web-abc-0" && f[2] != "Terminating":
			t.Errorf("the deleted pod shows as %s, want Terminating:\n%s", f[2], out)
		case f[0] == "web-abc-1" && f[2] != "Running":
			t.Errorf("the pod not deleted shows as %s, want Running:\n%s", f[2], out)
		}
	}
}

// Review 12e: `delete pod` waits by default, as kubectl does, but gives up
// after --timeout's default of 5 minutes and exits 1 ("timed out waiting
// for the condition") while a graceful stop may rightly take longer: the
// controller gives a pod up to terminationGracePeriodSeconds, bounded by
// its --max-grace-period (5m by default, more when raised), counted from
// when it begins the stop (after the drain and any preStop). kubectl's
// delete --timeout defaults to 0s, which waits up to a week.
func TestReview12eDeleteTimeoutDefaultIsKubectls(t *testing.T) {
	cmd := newRootCommand()
	del, _, err := cmd.Find([]string{"delete"})
	if err != nil {
		t.Fatal(err)
	}
	f := del.Flags().Lookup("timeout")
	if f == nil {
		t.Fatal("delete has no --timeout")
	}
	if f.DefValue != "0s" {
		t.Fatalf("delete --timeout defaults to %s: a default `delete pod` of a pod with a long grace period fails although it is carried out; kubectl's default is 0s (a week)", f.DefValue)
	}
}
