package reconciler

import (
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// Recreate waits for the old containers to stop, not for Docker to manage
// to remove a dead one: a dead container runs nothing (Kubernetes'
// oldPodsRunning skips Failed pods). Waiting for it left a Recreate
// deployment with no replica at all for as long as Docker failed to remove
// it ("device or resource busy"), though replicas holds with it counted.
func TestRecreateIsNotBlockedByDeadOldContainer(t *testing.T) {
	oldD := deployment(3)
	oldD.Spec.Strategy.Type = manifests.StrategyRecreate
	oldHash := manifests.TemplateHash(&oldD.Spec.Template)
	newD := deployment(3)
	newD.Spec.Strategy.Type = manifests.StrategyRecreate
	newD.Spec.Template.Spec.Containers[0].Image = "img:2"
	newHash := manifests.TemplateHash(&newD.Spec.Template)
	revs := []store.Revision{{Number: 1, Hash: oldHash, Template: oldD.Spec.Template}, {Number: 2, Hash: newHash, Template: newD.Spec.Template}}
	cs := []dockerx.Container{ctr(oldHash, 0, dockerx.StateDead, time.Hour)}
	plan := ComputePlan(PlanInput{Instance: "i", Name: "web", Desired: newD, Hash: newHash, Revisions: revs, Containers: cs,
		State: RolloutState{Sizes: map[string]int32{oldHash: 0, newHash: 0}, DesiredReplicas: i32(3), MaxReplicas: 3}, Now: t0})
	// replicas holds with the dead one still counted: 2 of the 3 may come.
	if n := len(plan.Creates()); n != 2 {
		t.Fatalf("plan %v: %d creates, want 2 (no old container runs)", plan.Ops, n)
	}
	for _, op := range plan.Creates() {
		if op.Hash != newHash {
			t.Fatalf("create of revision %s, want only %s", op.Hash, newHash)
		}
	}
}
