//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestGracefulStop (docs/design.md §8): a replica removed by a scale-down
// gets its stop signal and is killed only when its grace period has
// passed; meanwhile `get containers` shows it as Terminating.
func TestGracefulStop(t *testing.T) {
	independent(t)
	e := newEnv(t)
	e.startController()
	const grace = 15 * time.Second
	manifest := func(replicas int) string {
		return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: %d
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: %d
      containers:
      - name: app
        image: %s
        args: ["--ignore-sigterm"]
`, replicas, int(grace/time.Second), workloadImage)
	}
	e.apply(manifest(2))
	e.waitRunning("web", 2, "")
	start := time.Now()
	e.mustDockctl("", "scale", "deployment", "web", "--replicas", "1")
	eventually(t, 60*time.Second, "a replica shown as Terminating", func() (bool, string) {
		out := e.mustDockctl("", "get", "containers")
		return strings.Contains(out, "Terminating"), out
	})
	e.waitRunning("web", 1, "")
	// A lower bound only: a slow machine makes it longer, never shorter.
	if took := time.Since(start); took < grace {
		t.Fatalf("the replica was gone %v after the scale-down: it did not get its grace period of %v", took, grace)
	}
}
