//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"
)

// Issue 8 item 1, as a user meets it: a release whose containers run for
// about a second and then exit (no readiness probe, minReadySeconds 0,
// maxSurge 1, maxUnavailable 1, 4 replicas) keeps at least 3 old replicas
// serving under the settle rule, `get containers` shows the new ones in
// CrashLoopBackOff, and `rollout status --timeout 10s` exits non-zero.
func TestCrashingReleaseSettleRule(t *testing.T) {
	e := newEnv(t)
	e.startController()
	strategy := `    type: RollingUpdate
    rollingUpdate: {maxSurge: 1, maxUnavailable: 1}`
	e.apply(testDeployment{name: "web", replicas: 4, strategy: strategy, value: "good"}.manifest())
	good := e.waitRunning("web", 4, "")[0].Labels["io.dockctl.template-hash"]
	e.mustDockctl("", "rollout", "status", "deployment/web", "--timeout", "2m")
	e.apply(testDeployment{name: "web", replicas: 4, strategy: strategy, value: "bad", args: []string{"--crash-after=1s"}}.manifest())
	eventually(t, 90*time.Second, "get containers to show CrashLoopBackOff", func() (bool, string) {
		out, _ := e.dockctl("", "get", "containers")
		return strings.Contains(out, "CrashLoopBackOff"), out
	})
	out, err := e.dockctl("", "rollout", "status", "deployment/web", "--timeout", "10s")
	if err == nil {
		t.Fatalf("rollout status of a crashing release succeeded:\n%s", out)
	}
	oldRunning := 0
	for _, c := range e.deploymentContainers("web") {
		if c.Labels["io.dockctl.template-hash"] == good && c.State == "running" {
			oldRunning++
		}
	}
	if oldRunning < 3 {
		t.Fatalf("only %d old replicas serve; maxUnavailable 1 keeps 3:\n%s", oldRunning, e.mustDockctl("", "get", "containers"))
	}
}
