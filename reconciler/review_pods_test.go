package reconciler

import (
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
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

// TestReviewPodUnknownRevisionReadiness: running pods of a revision the
// history does not hold (a fresh state directory resuming from Docker, as
// the planner supports: "adopt what exists") are never ready: podReady
// returns false when the template is unknown (pod.go, podReady: `t == nil`).
// A single-container replica of an unknown revision is judged by Docker's
// state (readiness → IsReady) and counts ready; `get pods` shows these pods
// READY 2/2 Running; yet `get deployments` counts 0 ready and 0 available,
// and the Available condition is false. Kubernetes judges a pod's
// readiness by the pod's own containers, never by its ReplicaSet's
// template.
func TestReviewPodUnknownRevisionReadiness(t *testing.T) {
	d := podDeployment(3)
	d.Spec.Template.Spec.InitContainers = nil
	manifests.SetDefaults(d)
	const old = "0ld0"
	running := map[string]string{"app": dockerx.StateRunning, "log": dockerx.StateRunning}
	cs := concat(podOf(old, 0, dockerx.StateRunning, running), podOf(old, 1, dockerx.StateRunning, running), podOf(old, 2, dockerx.StateRunning, running))
	rec := &store.Record{Name: "web", Deployment: *d}
	st, _ := View(rec, nil, cs, t0)
	pods := Pods(rec, nil, cs, t0)
	if len(pods) != 3 || pods[0].Ready != 2 || pods[0].Status != "Running" {
		t.Fatalf("get pods: %+v", pods)
	}
	if st.ReadyReplicas != 3 {
		t.Fatalf("get deployments: %d ready replicas, while get pods shows 3 pods READY 2/2 Running: %+v", st.ReadyReplicas, st)
	}
}

// TestReviewPodRestartsAsKubectl: an init container (migrate) failed twice
// before it succeeded; the pod is initialized and its app containers run
// without a restart. kubectl's RESTARTS of an initialized pod counts the
// app containers and native sidecars only (printers.go, printPod: once
// initialized, restarts = restartableInitContainerRestarts, then the app
// containers' restart counts are added): it shows 0. Pods sums the
// restarts of every container, regular init containers included
// (state.go, Pods: `pv.Restarts += pc.View.Restarts` over all of
// pv.Containers) and shows 2 for as long as the pod lives.
func TestReviewPodRestartsAsKubectl(t *testing.T) {
	d := podDeployment(1)
	hash := manifests.TemplateHash(&d.Spec.Template)
	members := map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": dockerx.StateRunning, "log": dockerx.StateRunning}
	cs := podOf(hash, 0, dockerx.StateRunning, members)
	migrate := "id-" + dockerx.MemberName(dockerx.ContainerName("i", "web", hash, 0), "migrate")
	st := &store.Status{}
	if err := writeState(st, deploymentState{Containers: map[string]*containerState{migrate: {Restarts: 2}}}); err != nil {
		t.Fatal(err)
	}
	rec := &store.Record{Name: "web", Deployment: *d}
	pods := Pods(rec, st, cs, t0)
	if len(pods) != 1 || pods[0].Status != "Running" {
		t.Fatalf("pods %+v", pods)
	}
	if pods[0].Restarts != 0 {
		t.Fatalf("RESTARTS %d for an initialized pod whose app containers never restarted (kubectl: 0; the init container's retries are not counted)", pods[0].Restarts)
	}
}
