package reconciler

import (
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// A release whose containers run for a second and then exit makes no
// progress: none of its replicas ever becomes available. Each time a sync
// sees a crash-looping replica in its second of running, ReadyReplicas
// rises above the previous sync's; counted as progress, it would move
// Progressing's LastUpdateTime, and with the crash backoff capped at
// 5 min, below the 600 s deadline, such a rollout would never report
// ProgressDeadlineExceeded and `rollout status` would never fail.
// Readiness regained is no progress; only counts beyond the best seen in
// this generation are.
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

// A dead container (Docker failed to remove it) is no replica: it is not
// running, the planner replaces it and removes it. Counting it in
// status.replicas would keep a rollout whose every new replica is
// available from ever being complete (Replicas != replicas), so `rollout
// status` would hang and Progressing end ProgressDeadlineExceeded: a
// rollout reported failed that succeeded. Kubernetes counts only active
// pods.
func TestDeadContainerIsNoReplicaInStatus(t *testing.T) {
	d := deployment(2)
	hash := manifests.TemplateHash(&d.Spec.Template)
	cs := []dockerx.Container{ctr(hash, 0, dockerx.StateRunning, time.Hour), ctr(hash, 1, dockerx.StateRunning, time.Hour),
		ctr("old", 0, dockerx.StateDead, 2*time.Hour)}
	ready := availableIfRunning(cs)
	st := ComputeStatus(d, hash, cs, ready, ready)
	if st.Replicas != 2 || !RolloutComplete(d, st) {
		t.Fatalf("status %+v with a dead old container: replicas %d, complete %v; want 2, complete", st, st.Replicas, RolloutComplete(d, st))
	}
}
