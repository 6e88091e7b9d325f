package reconciler

import (
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

// Review 12e: a pod deleted again with a shorter grace period while its
// stop is under way (kubectl delete pod --now / --grace-period=N on a pod
// stuck Terminating) is killed when the shorter grace ends, as the
// kubelet cancels a termination whose grace was shortened and kills
// sooner. The store keeps the shorter grace ("only ever shortens"), but
// the planner plans nothing for a container whose stop is in flight, so
// the first stop's grace (here the 5-minute bound) holds.
func TestReview12eShorterGraceWhileStopping(t *testing.T) {
	h := newHarness(t, Options{})
	// The container ignores its stop signal; a stop of a few seconds is
	// killed when it ends, a longer one never within the test.
	stops := ignoreStops(h, func(d time.Duration) <-chan time.Time {
		if d <= 5*time.Second {
			return time.After(d)
		}
		return nil
	}, "web")
	h.apply(withGrace(testDeployment("web", 2, "x"), 3600))
	h.start()
	victim := h.waitReplicas("web", 2)[0]
	requestDeletion(t, h, victim, nil)
	waitLong(t, h, "its stop under way with the pod's own grace", func() bool { return len(stops.asked()) == 1 })

	one := int64(1) // --now
	requestDeletion(t, h, victim, &one)
	if reqs := h.pendingDeletions(); len(reqs) != 1 || reqs[0].GracePeriodSeconds == nil || *reqs[0].GracePeriodSeconds != 1 {
		t.Fatalf("requests %+v, want one with the shortened grace of 1s", reqs)
	}
	waitLong(t, h, "the pod killed once its shortened grace of 1s ended", func() bool { return !has(h.ours("web"), victim.ID) })
}

// Review 12e: a pod of a deployment the controller refuses (here a
// privilege it was restarted without: its running pods are left as they
// are) is never deleted: the refusal skips the plan, deletions included,
// so `delete pod` prints `pod "…" deleted`, then waits out its timeout
// and fails with no word of why, and the request lingers to be carried
// out whenever the refusal ends. Kubernetes deletes a pod whatever its
// ReplicaSet's state; a user's delete only removes.
func TestReview12eDeletePodOfRefusedDeployment(t *testing.T) {
	yes := true
	h := newHarness(t, Options{Allow: manifests.Policy{Privileged: true}})
	d := testDeployment("web", 2, "x")
	d.Spec.Template.Spec.Containers[0].SecurityContext = &manifests.SecurityContext{Privileged: &yes}
	h.apply(d)
	h.start()
	victim := h.waitReplicas("web", 2)[0]
	h.stop()
	// Restarted without --allow-privileged: the deployment is refused,
	// its running pods kept.
	h.opts.Allow = manifests.Policy{}
	h.ctrl = New(h.engine, h.store, h.opts)
	h.start()
	h.waitFor("the refusal", func() bool {
		c := h.condition("web", manifests.ConditionReplicaFailure)
		return c != nil && strings.Contains(c.Message, "--allow-privileged")
	})
	requestDeletion(t, h, victim, nil)
	waitLong(t, h, "the deleted pod of the refused deployment removed", func() bool { return !has(h.ours("web"), victim.ID) })
}
