//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestEvents: the controller records what it does in the state directory,
// and the CLI shows it, as kubectl shows a cluster's events.
func TestEvents(t *testing.T) {
	independent(t)
	e := newEnv(t)
	e.apply(webManifest(2, "one"))
	e.startController()
	e.waitRunning("web", 2, "")
	eventually(t, time.Minute, "events of deployment web", func() (bool, string) {
		out, err := e.dockctl("", "events", "--for", "deployment/web")
		return err == nil && strings.Contains(out, "ScalingReplicaSet") && strings.Contains(out, "Scaled up replica set web-") &&
			strings.Contains(out, "deployment/web"), out
	})
	eventually(t, time.Minute, "Created and Started of the pods", func() (bool, string) {
		out, err := e.dockctl("", "events", "--types", "Normal")
		return err == nil && strings.Count(out, "Started container app") == 2 && strings.Count(out, "Created container app") == 2, out
	})
	out := e.mustDockctl("", "describe", "deployment", "web")
	if !strings.Contains(out, "Events:\n") || !strings.Contains(out, "ScalingReplicaSet") || !strings.Contains(out, "dockctl-controller") {
		t.Fatalf("describe shows no events:\n%s", out)
	}
	if out := e.mustDockctl("", "get", "events", "-o", "jsonpath={.items[*].kind}"); !strings.Contains(out, "Event") {
		t.Fatalf("get events -o jsonpath: %q", out)
	}
}
