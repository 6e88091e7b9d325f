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
