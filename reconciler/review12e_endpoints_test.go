package reconciler

import (
	"testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// Review 12e: a pod deleted with --grace-period=0 --force is removed at
// once (rm -f: SIGKILL, no drain, no stop signal), and the sync that
// removes it hands the Services' tracker its endpoint as ready and not
// terminating (feedTracker runs before execute and knows nothing of the
// request), so the Service keeps routing to a killed pod until a later
// sync. Kubernetes takes a deleted pod out of its endpoints as soon as it
// is deleted (terminating, not ready) — a force-deleted one at once, its
// object gone — and the kubelet still sends the stop signal with a 2 s
// minimum grace.
func TestReview12eForceDeletedPodLeavesEndpointsFirst(t *testing.T) {
	d := deployment(2)
	d.Spec.Template.Metadata.Labels = map[string]string{"app": "web"}
	d.Spec.Template.Spec.Containers[0].Ports = []manifests.ContainerPort{{Name: "http", ContainerPort: 8080}}
	rec := recordOf(d)
	h := manifests.TemplateHash(&d.Spec.Template)
	c0, c1 := ctr(h, 0, "running", 0), ctr(h, 1, "running", 0)
	c0.Networks = map[string]string{"dockctl_i": "10.0.0.2"}
	c1.Networks = map[string]string{"dockctl_i": "10.0.0.3"}
	zero := int64(0)
	in := PlanInput{Instance: "i", Name: "web", Desired: d, Hash: h, Now: t0, Containers: []dockerx.Container{c0, c1},
		Deletions: []store.PodDeletion{{Pod: "web-x-1", Containers: []string{c1.ID}, GracePeriodSeconds: &zero, RequestedAt: t0}}}
	n := d.Replicas()
	in.State = RolloutState{Sizes: map[string]int32{h: n}, DesiredReplicas: &n}
	in.Available = availableIfRunning(in.Containers)
	plan := ComputePlan(in)
	// Adjusted (fix): a forced delete is no longer a bare rm -f but, as
	// the kubelet's, a stop with the least grace period of 2 s.
	stopped := false
	for _, op := range plan.Ops {
		if op.Kind == OpRemove && op.ContainerID == c1.ID && op.Grace == minPodGrace {
			stopped = true
		}
	}
	if !stopped {
		t.Fatalf("the force-deleted pod is not stopped with the kubelet's least grace period of 2s:\n%s", plan)
	}
	for _, p := range podEndpoints("i", "", rec, in, map[string]bool{c0.ID: true, c1.ID: true}, templateLookup(d, h, nil), false) {
		if p.UnitID == c1.ID && !p.Terminating {
			t.Errorf("the sync that kills pod %s at once publishes it ready=%v terminating=%v to its Services", p.Pod, p.Ready, p.Terminating)
		}
	}
}
