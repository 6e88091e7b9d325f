package reconciler

import (
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// A dead container (Docker failed to remove it) is no replica: it is not
// running, the planner replaces it and removes it. Counting it in
// status.replicas keeps a rollout whose every new replica is available from
// ever being complete (Replicas != replicas), so `rollout status` hangs and
// Progressing ends ProgressDeadlineExceeded: a rollout reported failed
// that succeeded. Kubernetes counts only active pods.
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
