package main

import (
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// run makes a deployment of one replica labeled run=NAME (kubectl run's
// pod, restarted as a replica is), and a Pod for one that must not be
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
	// A pod not restarted is kubectl's Pod: a standalone Pod stored,
	// run once by the workload controller with its restartPolicy.
	for _, restart := range []string{"Never", "OnFailure"} {
		name := "once-" + strings.ToLower(restart)
		out, _, err := run(t, "", "--state-dir", dir, "run", name, "--image=busybox", "--restart="+restart, "--", "echo", "hi")
		if err != nil || out != "pod/"+name+" created\n" {
			t.Fatalf("--restart=%s: %q %v", restart, out, err)
		}
		st, err := store.Open(dir, "default")
		if err != nil {
			t.Fatal(err)
		}
		obj, err := st.LookupObject(store.ObjectRef{Kind: store.KindPod, Namespace: "default", Name: name})
		if err != nil {
			t.Fatalf("--restart=%s: no Pod stored: %v", restart, err)
		}
		p := obj.Object.(*manifests.Pod)
		if c := p.Spec.Containers; string(p.Spec.RestartPolicy) != restart || p.Metadata.Labels["run"] != name || len(c) != 1 ||
			c[0].Name != name || c[0].Image != "busybox" || strings.Join(c[0].Args, " ") != "echo hi" {
			t.Errorf("--restart=%s: stored %+v", restart, p)
		}
	}
	if _, _, err := run(t, "", "--state-dir", dir, "run", "x", "--image=busybox", "--restart=Sometimes"); err == nil || !strings.Contains(err.Error(), "invalid restart policy") {
		t.Errorf("--restart=Sometimes: %v", err)
	}
}
