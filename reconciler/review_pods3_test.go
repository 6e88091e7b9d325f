package reconciler

import (
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// recreatePods returns an old and a new Recreate deployment of holder pods
// (podDeployment, two replicas). The input is the rollout's first sync: the old revision is sized 2, one of its pods is missing (removed by hand, say) and the other is the one each test breaks, their hashes and revisions.
func recreatePods(t *testing.T) (oldD, newD *manifests.Deployment, oldHash, newHash string, revs []store.Revision) {
	t.Helper()
	oldD = podDeployment(2)
	oldD.Spec.Strategy = manifests.DeploymentStrategy{Type: manifests.StrategyRecreate}
	manifests.SetDefaults(oldD)
	newD = podDeployment(2)
	newD.Spec.Strategy = manifests.DeploymentStrategy{Type: manifests.StrategyRecreate}
	newD.Spec.Template.Spec.Containers[0].Image = "img:2"
	manifests.SetDefaults(newD)
	oldHash = manifests.TemplateHash(&oldD.Spec.Template)
	newHash = manifests.TemplateHash(&newD.Spec.Template)
	revs = []store.Revision{{Number: 1, Hash: oldHash, Template: oldD.Spec.Template}, {Number: 2, Hash: newHash, Template: newD.Spec.Template}}
	return
}

func recreateInput(newD *manifests.Deployment, oldHash, newHash string, revs []store.Revision, cs []dockerx.Container, died map[string]bool, blocked map[string]bool) PlanInput {
	tmpl := func(h string) *manifests.PodTemplateSpec {
		if r := store.FindRevision(revs, h); r != nil {
			return &r.Template
		}
		return nil
	}
	units, pods := groupPods(cs, tmpl, died)
	return PlanInput{Instance: "i", Name: "web", Desired: newD, Hash: newHash, Revisions: revs, Containers: units, Pods: pods,
		BlockedNames: blocked,
		State:        RolloutState{Sizes: map[string]int32{oldHash: 2}, DesiredReplicas: i32(2), MaxReplicas: 2}, Now: t0}
}

// assertNoOverlap fails when the plan creates a pod of the new revision
// while it stops an old pod gracefully: the executor hands a graceful stop
// to the stopper and counts it done once submitted, so the new pod's
// containers run beside the old pod's app containers for up to the grace.
func assertNoOverlap(t *testing.T, plan Plan, newHash string) {
	t.Helper()
	var graceful []Op
	for _, op := range plan.Ops {
		if op.Kind == OpRemove && (op.Grace > 0 || op.Phases != nil) {
			graceful = append(graceful, op)
		}
	}
	for _, op := range plan.Creates() {
		if op.Hash == newHash && len(graceful) > 0 {
			t.Fatalf("Recreate: plan creates %s (revision %s) while the old pod's running members are still being stopped gracefully by %v;\nplan: %v",
				op.Name, newHash, graceful, plan.Ops)
		}
	}
}

// A Recreate rollout must not start a new pod while an old pod still runs
// containers (Kubernetes' Recreate waits until oldPodsRunning is false; a
// pod whose sandbox died but whose containers run is Running, not Failed).
// The review fix makes a pod whose holder died "dead" (holderDied) and
// stops its running members with the pod's grace; ComputePlan still treats
// a dead unit as "runs nothing" (plan.go: dead units are kept out of
// groups, so computeSizes sees no old replica), so the new pod is created
// in the same plan.
func TestReviewRecreateWaitsForStrandedOldPod(t *testing.T) {
	_, newD, oldHash, newHash, revs := recreatePods(t)
	run := dockerx.StateRunning
	cs := podOf(oldHash, 0, run, map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": run, "log": run})
	holderID := cs[0].ID // podOf puts the holder first
	plan := ComputePlan(recreateInput(newD, oldHash, newHash, revs, cs, map[string]bool{holderID: true}, nil))
	assertNoOverlap(t, plan, newHash)
}

// The same with a pod replaced because a member's name is blocked: its
// app containers run, yet Recreate creates the new revision beside them.
func TestReviewRecreateWaitsForNameBlockedOldPod(t *testing.T) {
	_, newD, oldHash, newHash, revs := recreatePods(t)
	run := dockerx.StateRunning
	// log is missing and its name is held by a foreign container.
	cs := podOf(oldHash, 0, run, map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": run})
	base := dockerx.ContainerName("i", "", "web", oldHash, 0)
	blocked := map[string]bool{dockerx.MemberName(base, "log"): true}
	plan := ComputePlan(recreateInput(newD, oldHash, newHash, revs, cs, nil, blocked))
	assertNoOverlap(t, plan, newHash)
}

// The same with the holder stopped (docker stop of the holder): members
// that do not share its PID namespace keep running, and are now stopped
// with the pod's grace while the new pod starts.
func TestReviewRecreateWaitsForHolderExitedOldPod(t *testing.T) {
	_, newD, oldHash, newHash, revs := recreatePods(t)
	run := dockerx.StateRunning
	cs := podOf(oldHash, 0, dockerx.StateExited, map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": run, "log": run})
	plan := ComputePlan(recreateInput(newD, oldHash, newHash, revs, cs, nil, nil))
	assertNoOverlap(t, plan, newHash)
}

// Every holder die event is remembered (controller.go handleEvent →
// holderDied), including those of dockctl's own graceful stops, and only a
// sync of the deployment that lists its containers forgets them
// (diedHolders). A deleted deployment's sync never calls diedHolders, so
// the die events of its holders — every pod it had — stay in deadHolders
// for the controller's lifetime, and every later sync of any deployment
// walks them (diedHolders loops over the whole map).
func TestReviewDeletedDeploymentForgetsDeadHolders(t *testing.T) {
	h := newHarness(t, Options{})
	h.apply(testPodDeployment("web", 3))
	h.start()
	h.waitFor("three pods running", func() bool {
		n := 0
		for _, c := range h.ours("web") {
			if c.Role == dockerx.RoleHolder && c.State == dockerx.StateRunning {
				n++
			}
		}
		return n == 3
	})
	if err := h.store.Delete("", "web"); err != nil {
		t.Fatal(err)
	}
	h.ctrl.queue.Add("web")
	h.waitFor("every container of web gone", func() bool { return len(h.ours("web")) == 0 })
	// Another deployment comes and goes through its syncs.
	h.apply(testDeployment("api", 1, "1"))
	h.ctrl.queue.Add("api")
	h.waitReplicas("api", 1)
	time.Sleep(200 * time.Millisecond)
	h.ctrl.mu.Lock()
	left := len(h.ctrl.deadHolders)
	h.ctrl.mu.Unlock()
	if left != 0 {
		t.Fatalf("deadHolders keeps %d holders of the deleted deployment web, none of which exists", left)
	}
}
