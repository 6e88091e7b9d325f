//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestDeletePod: `dockctl delete pod` restarts a replica of a 2-replica
// deployment through the controller: the command waits (kubectl's
// default) until the pod's container is gone, a new pod replaces it, and
// the kubelet's Killing event names the pod.
func TestDeletePod(t *testing.T) {
	independent(t)
	e := newEnv(t)
	e.apply(testDeployment{name: "web", replicas: 2}.manifest())
	e.startController()
	before := e.waitRunning("web", 2, "")
	victim := before[0]
	pod := strings.TrimPrefix(victim.Names[0], "/"+e.instance+"_")

	out := e.mustDockctl("", "delete", "pod", pod, "--timeout", "1m")
	if want := fmt.Sprintf("pod %q deleted\n", pod); out != want {
		t.Fatalf("delete pod printed %q, want %q", out, want)
	}
	for _, c := range e.deploymentContainers("web") {
		if c.ID == victim.ID {
			t.Fatalf("delete pod returned while %s is still there (%s)", pod, c.State)
		}
	}
	after := e.waitRunning("web", 2, "")
	replaced := 0
	for _, c := range after {
		if c.ID != before[0].ID && c.ID != before[1].ID {
			replaced++
		}
	}
	if replaced != 1 {
		t.Fatalf("want one new pod beside the one left: before %s, after %s", describe(before), describe(after))
	}
	eventually(t, time.Minute, "the Killing event of the deleted pod", func() (bool, string) {
		out, err := e.dockctl("", "events", "--for", "pod/"+pod)
		return err == nil && strings.Contains(out, "Killing"), out
	})
}
