//go:build e2e

package e2e

import (
	"testing"
	"time"
)

// TestControllerKilledMidRollout: a controller SIGKILLed in the middle of a
// rolling update resumes it after a restart (the revision sizes are in the
// state directory), converges to the new template, and never exceeds
// replicas + maxSurge containers at any sample.
func TestControllerKilledMidRollout(t *testing.T) {
	e := newEnv(t)
	const replicas = 6
	sel := []string{"io.dockctl.instance=" + e.instance, "io.dockctl.deployment=web"}
	sampler := startCountSampler(t, dockerCli, 100*time.Millisecond, replicas+1, sel...)

	c1 := e.startHostController(nil, settleFast)
	e.apply(rolloutManifest("web", replicas, surge1, "one", nil, ""))
	old := e.waitRunning("web", replicas, "")[0].Labels["io.dockctl.template-hash"]
	e.apply(rolloutManifest("web", replicas, surge1, "two", nil, ""))
	// Kill once the rollout is under way: two revisions at once, at least
	// two new containers.
	pollUntilHashes := func() (oldN, newN int) {
		deadline := time.Now().Add(90 * time.Second)
		for {
			oldN, newN = 0, 0
			for _, c := range containers(t, sel...) {
				if c.Labels["io.dockctl.template-hash"] == old {
					oldN++
				} else {
					newN++
				}
			}
			if oldN > 0 && newN >= 2 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the rollout never got under way: %d old, %d new", oldN, newN)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	oldN, newN := pollUntilHashes()
	c1.kill()
	t.Logf("SIGKILL mid-rollout with %d old and %d new containers", oldN, newN)

	restarted := time.Now()
	e.startHostController(nil, settleFast)
	out := e.mustDockctl("", "rollout", "status", "deployment/web", "--timeout", "3m")
	t.Logf("rollout resumed and completed %s after the restart: %s", time.Since(restarted).Round(time.Millisecond), out)
	after := e.waitRunning("web", replicas, "")
	for _, c := range after {
		if c.Labels["io.dockctl.template-hash"] == old {
			t.Fatalf("a container of the old revision survived: %s", describe(after))
		}
	}
	sampler.stop()
	sampler.check(t)
}
