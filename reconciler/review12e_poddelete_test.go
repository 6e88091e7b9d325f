package reconciler

import (
	"testing"
	"time"
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
