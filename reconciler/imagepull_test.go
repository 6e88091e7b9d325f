package reconciler

import (
	"testing"

	"github.com/dockctl/dockctl/dockerx"
)

// A new revision whose image cannot be pulled must not stop the old
// revision from healing: a replica of the old revision removed by hand is
// recreated from its own image, which is present, while the new one keeps
// failing (found trying the README as a new user).
func TestMissingNewImageDoesNotStopOldRevisionRepair(t *testing.T) {
	h := newHarness(t, Options{})
	d := testDeployment("web", 3, "v1")
	h.apply(d)
	h.start()
	old := h.waitReplicas("web", 3)
	oldHash := old[0].TemplateHash

	next := testDeployment("web", 3, "v2")
	next.Spec.Template.Spec.Containers[0].Image = "absent:2"
	h.apply(next)
	h.waitFor("the new revision to fail on its image", func() bool {
		c := h.condition("web", "ReplicaFailure")
		return c != nil && (c.Reason == ReasonErrImagePull || c.Reason == ReasonImagePullBackOff)
	})

	victim := old[0]
	if err := h.engine.RemoveContainer(t.Context(), victim.ID); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the removed old replica to be recreated", func() bool {
		n := 0
		for _, c := range h.ours("web") {
			if c.TemplateHash == oldHash && c.State == dockerx.StateRunning && c.ID != victim.ID {
				n++
			}
		}
		return n == 3
	})
}
