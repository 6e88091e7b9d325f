package reconciler

import (
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
	"strings"
	"testing"
	"time"

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
	appID := "id-" + dockerx.MemberName(dockerx.ContainerName("i", "", "web", H, 0), "app")
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
	appID := "id-" + dockerx.MemberName(dockerx.ContainerName("i", "", "web", H, 0), "app")
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
	st, _ := View(rec, nil, nil, cs, t0)
	pods := Pods(rec, nil, nil, cs, t0)
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
	migrate := "id-" + dockerx.MemberName(dockerx.ContainerName("i", "", "web", hash, 0), "migrate")
	st := &store.Status{}
	if err := writeState(st, deploymentState{Containers: map[string]*containerState{migrate: {Restarts: 2}}}); err != nil {
		t.Fatal(err)
	}
	rec := &store.Record{Name: "web", Deployment: *d}
	pods := Pods(rec, st, nil, cs, t0)
	if len(pods) != 1 || pods[0].Status != "Running" {
		t.Fatalf("pods %+v", pods)
	}
	if pods[0].Restarts != 0 {
		t.Fatalf("RESTARTS %d for an initialized pod whose app containers never restarted (kubectl: 0; the init container's retries are not counted)", pods[0].Restarts)
	}
}

// TestReviewPodScaleDownRemovesInitializingPodFirst: scale 2 → 1. Pod 0
// is initialized, its app containers run (not ready yet: no readiness
// verdict); pod 1 is still initializing (its second init container runs)
// and is the OLDER one. Kubernetes ranks a Pending pod (init containers
// not done) before a Running one for scale-down (controller.ActivePods:
// PodPending < PodUnknown < PodRunning, before readiness and age), so it
// removes pod 1. pod.unit calls an initializing pod whose init container
// runs "running" (appsRunning: every member runs, or exited 0, and the
// running member is an init container), so rankForRemoval falls through to
// age and removes the initialized pod 0, keeping the one still in Init.
func TestReviewPodScaleDownRemovesInitializingPodFirst(t *testing.T) {
	const H = "aaaa"
	d := podDeployment(1)
	initialized := podOf(H, 0, dockerx.StateRunning, map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": dockerx.StateRunning, "log": dockerx.StateRunning})
	initializing := podOf(H, 1, dockerx.StateRunning, map[string]string{"migrate": "exited:0", "seed": dockerx.StateRunning})
	for i := range initializing {
		initializing[i].Created = t0.Add(-2 * time.Hour) // older
	}
	in := podInput(d, concat(initialized, initializing))
	in.Ready, in.Available = map[string]bool{}, map[string]bool{} // nothing ready yet
	plan := planFor(in)
	for _, op := range plan.Ops {
		if op.Kind == OpRemove {
			if op.Name != dockerx.ContainerName("i", "", "web", H, 1) {
				t.Fatalf("scale-down removes the initialized pod %s and keeps the one still initializing:\n%s", op.Name, plan)
			}
			return
		}
	}
	t.Fatalf("nothing removed:\n%s", plan)
}

// TestReviewPodNameIsHostname: the pod name is the hostname,
// Hostname(deployment, hash, ordinal) (contract: "pod name (also the
// hostname)"), which cuts a long deployment name to keep a DNS label. A
// holder pod takes it from its io.dockctl.pod label; a single-container
// pod's name is derived from its container name instead (state.go,
// podName: the container name after the instance prefix), which is not
// cut: for a deployment name of 55 characters `get pods` lists a name that
// is neither the replica's hostname nor a valid DNS label (over 63
// characters), unlike the pods of the same deployment with a holder.
func TestReviewPodNameIsHostname(t *testing.T) {
	name := strings.Repeat("a", 55)
	d := deployment(1)
	d.Metadata.Name = name
	hash := manifests.TemplateHash(&d.Spec.Template)
	c := dockerx.Container{ID: "c1", Name: dockerx.ContainerName("i", "", name, hash, 0), State: dockerx.StateRunning,
		Instance: "i", Deployment: name, TemplateHash: hash, Role: dockerx.RoleReplica, Created: t0}
	rec := &store.Record{Name: name, Deployment: *d}
	pods := Pods(rec, nil, nil, []dockerx.Container{c}, t0)
	if len(pods) != 1 {
		t.Fatalf("pods %+v", pods)
	}
	if want := dockerx.Hostname(name, hash, 0); pods[0].Name != want {
		t.Fatalf("pod name %q (%d chars), want its hostname %q", pods[0].Name, len(pods[0].Name), want)
	}
}

// TestReviewPodCompletedWithRunningSiblingIsNotReady: an initialized pod
// whose app container exited 0 while its sibling runs. kubectl prints
// "NotReady" (printers.go, printPod: `if reason == "Completed" &&
// hasRunning` → "Running" if the pod is Ready, else "NotReady"); the
// contract lists NotReady among the STATUS words. podStatus never returns
// NotReady: it shows "Completed" for a pod that still runs a container.
func TestReviewPodCompletedWithRunningSiblingIsNotReady(t *testing.T) {
	d := podDeployment(1)
	hash := manifests.TemplateHash(&d.Spec.Template)
	members := map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": "exited:0", "log": dockerx.StateRunning}
	cs := podOf(hash, 0, dockerx.StateRunning, members)
	rec := &store.Record{Name: "web", Deployment: *d}
	pods := Pods(rec, nil, nil, cs, t0)
	if len(pods) != 1 {
		t.Fatalf("pods %+v", pods)
	}
	if pods[0].Status != "NotReady" {
		t.Fatalf("STATUS %q (READY %d/%d) for a pod whose app container completed while its sibling runs; kubectl shows NotReady", pods[0].Status, pods[0].Ready, pods[0].Total)
	}
}
