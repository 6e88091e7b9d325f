package reconciler

import (
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// A release whose containers run for a second and then exit (issue 8 item
// 1) makes no progress: none of its replicas ever becomes available. But
// each time a sync saw a crash-looping replica in its second of running,
// ReadyReplicas rose above the previous sync's, which counted as progress
// and moved Progressing's LastUpdateTime: with the crash backoff capped at
// 5 min, below the 600 s deadline, such a rollout never reported
// ProgressDeadlineExceeded and `rollout status` never failed. Readiness
// regained is no progress; only counts beyond the best seen in this
// generation are.
func TestCrashLoopingRolloutExceedsProgressDeadline(t *testing.T) {
	d := testDeployment("web", 4, "broken")
	pd := int32(60)
	d.Spec.ProgressDeadlineSeconds = &pd
	hash := manifests.TemplateHash(&d.Spec.Template)
	rec := &store.Record{Name: "web", Generation: 2, Deployment: *d}
	c := New(nil, nil, Options{})
	old := []dockerx.Container{ctr("old", 0, dockerx.StateRunning, time.Hour), ctr("old", 1, dockerx.StateRunning, time.Hour),
		ctr("old", 2, dockerx.StateRunning, time.Hour)}
	status := func(newState string) ([]dockerx.Container, map[string]bool, map[string]bool) {
		cs := append(append([]dockerx.Container(nil), old...), ctr(hash, 0, newState, time.Minute), ctr(hash, 1, newState, time.Minute))
		ready, avail := map[string]bool{}, map[string]bool{}
		for _, ct := range cs {
			if ct.State == dockerx.StateRunning {
				ready[ct.ID] = true
				avail[ct.ID] = ct.TemplateHash == "old" // the new ones never settle
			}
		}
		return cs, ready, avail
	}
	prev := &store.Status{ObservedGeneration: 1}
	now := t0
	for cycle := 0; cycle < 20; cycle++ {
		for _, state := range []string{dockerx.StateExited, dockerx.StateRunning} {
			cs, ready, avail := status(state)
			a := &assessment{rec: rec, d: d, prev: prev, state: readState(prev), ready: ready,
				in: PlanInput{Hash: hash, Containers: cs, Available: avail}}
			next, _, err := c.nextStatus(a, failure{}, now)
			if err != nil {
				t.Fatal(err)
			}
			prev = next
			now = now.Add(15 * time.Second)
		}
	}
	if p := find(prev.Conditions, manifests.ConditionProgressing); p == nil || p.Reason != ReasonProgressDeadlineExceeded {
		t.Fatalf("after %v of crash loop with no new replica ever available, Progressing = %+v; want False %s",
			now.Sub(t0), p, ReasonProgressDeadlineExceeded)
	}
}
