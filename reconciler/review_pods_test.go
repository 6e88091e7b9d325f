package reconciler

import (
	"strings"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
)

// Review of issue 9 (pods): each test here proves a defect of the
// reconciler's pod logic; it fails on the branch under review for the
// reason its comment gives.

// planFor runs ComputePlan on a holder pod input as TestPodPlanGolden does.
func planFor(in PlanInput) Plan {
	in.Instance, in.Name, in.Now = "i", "web", t0
	if in.Hash == "" {
		in.Hash = "aaaa"
	}
	return ComputePlan(in)
}

// TestReviewPodInitNotRerunWhileLaterInitRuns: the first init container
// (migrate) exited 0 and was then removed by hand while the second (seed)
// runs. The kubelet (findNextInitContainerToRun) looks at the LAST init
// container that has a status: seed runs, so it waits; it never runs an
// earlier init container again beside a later one. planPod sees migrate
// missing and creates it while seed is running: two init containers run at
// once, and migrate runs twice (podplan.go, planPod: `case m == nil` of the
// init loop, with initDone requiring every regular init container to be
// present and exited 0).
func TestReviewPodInitNotRerunWhileLaterInitRuns(t *testing.T) {
	const H = "aaaa"
	in := podInput(podDeployment(1), podOf(H, 0, dockerx.StateRunning, map[string]string{"seed": dockerx.StateRunning}))
	plan := planFor(in)
	for _, op := range plan.Ops {
		if op.Kind == OpCreate && op.Container == "migrate" {
			t.Fatalf("init container migrate created again while seed (the next init container) runs:\n%s", plan)
		}
	}
}

// TestReviewPodInitNotRerunAfterLaterInitCompleted: both init containers
// exited 0, then the first was removed by hand before the app containers
// were created. Kubernetes: the last init container exited successfully,
// so the pod is initialized and its app containers start. planPod runs
// migrate again (and not the app containers).
func TestReviewPodInitNotRerunAfterLaterInitCompleted(t *testing.T) {
	const H = "aaaa"
	in := podInput(podDeployment(1), podOf(H, 0, dockerx.StateRunning, map[string]string{"seed": "exited:0"}))
	plan := planFor(in)
	apps := 0
	for _, op := range plan.Ops {
		if op.Kind == OpCreate && op.Container == "migrate" {
			t.Errorf("completed init sequence run again from migrate:\n%s", plan)
		}
		if op.Kind == OpCreate && (op.Container == "app" || op.Container == "log") {
			apps++
		}
	}
	if apps != 2 {
		t.Errorf("app containers not created after the last init container completed:\n%s", plan)
	}
}

// TestReviewPodDeadMemberIsRepaired: a member Docker reports `dead` (a
// `docker rm -f` that failed to remove its filesystem leaves it so) can
// never run again. A dead single-container replica is removed and
// replaced (ReasonDead), but planPod's tend has no case for a dead member:
// nothing is planned, the pod stays without its app container forever and
// never becomes ready (podplan.go, tend's switch; same for a dead init
// container in the init loop).
func TestReviewPodDeadMemberIsRepaired(t *testing.T) {
	const H = "aaaa"
	members := map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": dockerx.StateDead, "log": dockerx.StateRunning}
	in := podInput(podDeployment(1), podOf(H, 0, dockerx.StateRunning, members))
	plan := planFor(in)
	appID := "id-" + dockerx.MemberName(dockerx.ContainerName("i", "web", H, 0), "app")
	for _, op := range plan.Ops {
		if op.ContainerID == appID || (op.Kind == OpCreate && op.Container == "app") {
			return
		}
	}
	t.Fatalf("a dead app container is neither removed nor re-created:\n%s", plan)
}

// TestReviewPodDeadInitContainerIsRepaired: the same for an init container
// that is dead while the pod initializes: the init loop returns with
// nothing planned, so the pod stays in Init forever.
func TestReviewPodDeadInitContainerIsRepaired(t *testing.T) {
	const H = "aaaa"
	in := podInput(podDeployment(1), podOf(H, 0, dockerx.StateRunning, map[string]string{"migrate": dockerx.StateDead}))
	plan := planFor(in)
	if len(plan.Ops) == 0 {
		t.Fatalf("a dead init container blocks the pod forever: nothing planned:\n%s", plan)
	}
}

// TestReviewPodMembersStoppedGracefullyWhenHolderExited: the holder
// exited (docker stop of the holder, say) while the app containers run.
// The pod is replaced, but its running app containers are removed with no
// grace at all (SIGKILL): graceFor returns 0 for a pod whose holder does
// not run (bounds.go, graceFor), and expandPods then removes each
// container at once. DESIGN §8 (Stopping): a replica is stopped with its
// stop signal, then killed after terminationGracePeriodSeconds; the
// kubelet, when a pod's sandbox died, kills its containers with the pod's
// grace period too (killPodWithSyncResult → killContainer with the pod's
// terminationGracePeriodSeconds).
func TestReviewPodMembersStoppedGracefullyWhenHolderExited(t *testing.T) {
	const H = "aaaa"
	members := map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": dockerx.StateRunning, "log": dockerx.StateRunning}
	in := podInput(podDeployment(1), podOf(H, 0, dockerx.StateExited, members))
	plan := planFor(in)
	appID := "id-" + dockerx.MemberName(dockerx.ContainerName("i", "web", H, 0), "app")
	for _, op := range plan.Ops {
		if op.Kind != OpRemove {
			continue
		}
		if op.ContainerID == appID && op.Grace == 0 {
			t.Fatalf("running app container killed without grace when its holder exited:\n%s", plan)
		}
		for _, ph := range op.Phases {
			for _, tg := range ph {
				if tg.ID == appID && op.Grace > 0 {
					return
				}
			}
		}
	}
	if !strings.Contains(plan.String(), "app") {
		t.Fatalf("the running app container is not stopped at all:\n%s", plan)
	}
}
