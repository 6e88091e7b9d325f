package reconciler

import (
	"testing"
	"time"
)

// A replica that fails its liveness probe again soon after each restart
// is crash-looping, as a pod killed by its liveness probe is: its restarts
// back off (here by an hour) instead of following one another without
// end every few seconds.
func TestLivenessRestartsBackOff(t *testing.T) {
	h := newHarness(t, Options{CrashBackoffBase: time.Hour, CrashBackoffMax: time.Hour})
	runner := &switchRunner{fail: map[string]bool{}}
	h.ctrl.prober.runner = runner
	h.engine.OnStart = func(id string) error {
		runner.set(id, true) // every run of it fails its liveness probe
		return nil
	}
	d := testDeployment("web", 1, "x")
	d.Spec.Template.Spec.Containers[0].LivenessProbe = fastProbe()
	h.apply(d)
	h.start()
	// Not waitReplicas: the liveness probe may stop the replica before a
	// poll sees it running, and the hour-long backoff then keeps it down.
	h.waitFor("the replica to be created", func() bool { return len(h.ours("web")) == 1 })
	c := h.ours("web")[0]
	var v ContainerView
	h.waitFor("a backoff, or a third liveness restart", func() bool {
		st, err := h.store.ReadStatus("", "web")
		if err != nil || st == nil {
			return false
		}
		_, views := View(recordOf(d), st, nil, h.ours("web"), time.Now())
		v = views[c.ID]
		return v.CrashLoopBackOff || v.Restarts >= 3
	})
	if !v.CrashLoopBackOff {
		t.Fatalf("%d liveness restarts within seconds and no CrashLoopBackOff (%+v): restarts do not back off", v.Restarts, v)
	}
}
