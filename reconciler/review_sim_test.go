package reconciler

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// TestPlanKeepsBoundsUnderRandomRollouts drives the planner through
// random rollouts (template changes on top of template changes), scales
// and graceful stops that end at random, with new replicas becoming
// available at random, and checks after every plan: never more containers
// (terminating ones included) than the larger replica count + maxSurge
// (replicas for Recreate), never fewer available than replicas -
// maxUnavailable unless a scale-up is still filling, and Recreate never
// running two revisions. Seeds make it deterministic.
func TestPlanKeepsBoundsUnderRandomRollouts(t *testing.T) {
	for seed := int64(0); seed < 3000; seed++ {
		rng := rand.New(rand.NewSource(seed))
		R := int32(rng.Intn(6) + 1)
		surge, unav := rng.Intn(3), rng.Intn(3)
		recreate := rng.Intn(4) == 0
		mk := func(img string) *manifests.Deployment {
			d := deployment(R)
			d.Spec.Template.Spec.Containers[0].Image = img
			if recreate {
				d.Spec.Strategy.Type = manifests.StrategyRecreate
			} else {
				d = withStrategy(d, manifests.StrategyRollingUpdate, surge, unav)
			}
			return d
		}
		d := mk("img:0")
		p := resolveParams(d)
		hash := manifests.TemplateHash(&d.Spec.Template)
		revs := []store.Revision{{Number: 1, Hash: hash, Template: d.Spec.Template}}
		var cs []dockerx.Container
		avail := map[string]bool{}
		term := map[string]time.Time{}
		var state RolloutState
		n := 0
		var log []string
		for i := int32(0); i < R; i++ {
			c := ctr(hash, int(i), dockerx.StateRunning, time.Hour)
			cs = append(cs, c)
			avail[c.ID] = true
		}
		state = RolloutState{Sizes: map[string]int32{hash: R}, DesiredReplicas: &R, MaxReplicas: R + p.maxSurge}
		rev := 1
		maxR := R
		scaledUp := false
		for step := 0; step < 60; step++ {
			if rng.Intn(10) == 0 {
				nr := int32(rng.Intn(6) + 1)
				if nr > R {
					scaledUp = true
				}
				R = nr
				maxR = max(maxR, R)
				img := d.Spec.Template.Spec.Containers[0].Image
				d = mk(img)
				p = resolveParams(d)
				log = append(log, fmt.Sprintf("scale %d", R))
			}
			if rng.Intn(8) == 0 && rev < 4 {
				rev++
				d = mk(fmt.Sprintf("img:%d", rev))
				hash = manifests.TemplateHash(&d.Spec.Template)
				revs = append(revs, store.Revision{Number: int64(rev), Hash: hash, Template: d.Spec.Template})
				log = append(log, "template "+hash)
			}
			in := PlanInput{Instance: "i", Name: "web", Desired: d, Hash: hash, Revisions: revs, Containers: cs, Now: t0,
				Available: avail, State: state, Terminating: term}
			plan := ComputePlan(in)
			state = plan.State
			for _, op := range plan.Ops {
				log = append(log, op.String())
				switch op.Kind {
				case OpRemove:
					if op.Grace > 0 {
						term[op.ContainerID] = t0
						delete(avail, op.ContainerID)
					} else {
						for j := range cs {
							if cs[j].ID == op.ContainerID {
								cs = append(cs[:j], cs[j+1:]...)
								break
							}
						}
					}
				case OpCreate:
					n++
					c := dockerx.Container{ID: fmt.Sprintf("n%d", n), Name: op.Name, State: dockerx.StateRunning, Instance: "i", Deployment: "web", TemplateHash: op.Hash, Created: t0}
					cs = append(cs, c)
				}
			}
			// invariants
			limit := int(maxR + p.maxSurge)
			if p.recreate {
				limit = int(maxR)
			}
			if len(cs) > limit {
				t.Fatalf("seed %d: %d containers > %d\n%v", seed, len(cs), limit, log)
			}
			a := 0
			hashes := map[string]bool{}
			for _, c := range cs {
				if avail[c.ID] {
					a++
				}
				if _, ok := term[c.ID]; !ok {
					hashes[c.TemplateHash] = true
				}
			}
			if len(plan.Ops) == 0 && len(term) == 0 && a == len(cs) {
				maxR, scaledUp = R, false
			}
			if !scaledUp && !p.recreate && a < int(R-p.maxUnavailable) {
				t.Fatalf("seed %d: %d available < %d (R %d params %+v prev state %+v)\n%v\n%s", seed, a, R-p.maxUnavailable, R, p, in.State, log, summary(cs))
			}
			if p.recreate && len(hashes) > 1 {
				t.Fatalf("seed %d: recreate mixes %v\n%v", seed, hashes, log)
			}
			// events
			for _, c := range cs {
				if _, ok := term[c.ID]; !ok && !avail[c.ID] && rng.Intn(2) == 0 {
					avail[c.ID] = true
				}
			}
			var keep []dockerx.Container
			for _, c := range cs {
				if _, ok := term[c.ID]; ok && rng.Intn(3) == 0 {
					delete(term, c.ID)
					continue
				}
				keep = append(keep, c)
			}
			cs = keep
		}
	}
}
