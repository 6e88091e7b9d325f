package main

import (
	"strings"
	"testing"
)

// run makes a deployment of one replica labeled run=NAME (kubectl run's
// pod, restarted as a replica is), and refuses a pod that must not be
// restarted.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	out, errOut, err := run(t, "", "--state-dir", dir, "run", "web", "--image=nginx", "--port=80", "--env=A=1", "--dry-run=client", "-o", "yaml", "--", "-g", "daemon off;")
	if err != nil {
		t.Fatalf("%v stderr %q", err, errOut)
	}
	golden(t, "run", []byte(out))
	out, _, err = run(t, "", "--state-dir", dir, "run", "box", "--image=busybox")
	if err != nil || out != "deployment/box created\n" {
		t.Fatalf("run: %q %v", out, err)
	}
	got, _, err := run(t, "", "--state-dir", dir, "get", "deploy", "box", "-o", "jsonpath={.spec.replicas} {.spec.template.metadata.labels.run} {.spec.template.spec.containers[0].name}")
	if err != nil || got != "1 box box" {
		t.Fatalf("stored: %q %v", got, err)
	}
	for _, restart := range []string{"Never", "OnFailure"} {
		_, _, err := run(t, "", "--state-dir", dir, "run", "once", "--image=busybox", "--restart="+restart)
		if err == nil || !strings.Contains(err.Error(), "a pod that is not restarted") {
			t.Fatalf("--restart=%s: %v", restart, err)
		}
	}
}
