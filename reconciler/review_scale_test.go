package reconciler

import (
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// A scale-down in the middle of a rollout must not take availability below
// replicas - maxUnavailable. The scale event sized the old revision down
// proportionally, and then the rolling step of the same pass counted all
// of its available containers — including the one that scale-down was
// about to remove — and scaled it down further: 5 → 3 replicas with
// maxUnavailable 0 left 2 replicas running.
func TestScaleDownDuringRolloutKeepsAvailability(t *testing.T) {
	oldD := withStrategy(deployment(5), manifests.StrategyRollingUpdate, 2, 0)
	oldHash := manifests.TemplateHash(&oldD.Spec.Template)
	newD := withStrategy(deployment(3), manifests.StrategyRollingUpdate, 2, 0)
	newD.Spec.Template.Spec.Containers[0].Image = "img:2"
	newHash := manifests.TemplateHash(&newD.Spec.Template)
	revs := []store.Revision{{Number: 1, Hash: oldHash, Template: oldD.Spec.Template}, {Number: 2, Hash: newHash, Template: newD.Spec.Template}}
	var cs []dockerx.Container
	avail := map[string]bool{}
	for i := 0; i < 5; i++ {
		c := ctr(oldHash, i, dockerx.StateRunning, time.Hour)
		cs = append(cs, c)
		avail[c.ID] = true
	}
	fresh := ctr(newHash, 0, dockerx.StateRunning, time.Minute)
	settling := ctr(newHash, 1, dockerx.StateRunning, time.Second)
	cs = append(cs, fresh, settling)
	avail[fresh.ID] = true // the other one has not settled yet
	plan := ComputePlan(PlanInput{Instance: "i", Name: "web", Desired: newD, Hash: newHash, Revisions: revs, Containers: cs,
		Available: avail, Now: t0,
		State: RolloutState{Sizes: map[string]int32{oldHash: 5, newHash: 2}, DesiredReplicas: i32(5), MaxReplicas: 7}})
	removed := map[string]bool{}
	for _, op := range plan.Ops {
		if op.Kind == OpRemove {
			removed[op.ContainerID] = true
		}
	}
	left := 0
	for _, c := range cs {
		if avail[c.ID] && !removed[c.ID] {
			left++
		}
	}
	if left < 3 {
		t.Fatalf("plan %v leaves %d available replicas; want at least 3 (replicas 3, maxUnavailable 0)", plan.Ops, left)
	}
}
