package reconciler

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// podDeployment is deployment web with a pod of two init containers
// (migrate, seed), two app containers (app, log) and an emptyDir, or with
// the given init containers.
func podDeployment(replicas int32, inits ...manifests.Container) *manifests.Deployment {
	d := deployment(replicas)
	if inits == nil {
		inits = []manifests.Container{{Name: "migrate", Image: "img:1"}, {Name: "seed", Image: "img:1"}}
	}
	d.Spec.Template.Spec.InitContainers = inits
	d.Spec.Template.Spec.Containers = []manifests.Container{
		{Name: "app", Image: "img:1", VolumeMounts: []manifests.VolumeMount{{Name: "shared", MountPath: "/shared"}}},
		{Name: "log", Image: "img:1", VolumeMounts: []manifests.VolumeMount{{Name: "shared", MountPath: "/shared"}}},
	}
	d.Spec.Template.Spec.Volumes = []manifests.Volume{{Name: "shared", EmptyDir: &manifests.EmptyDirVolumeSource{}}}
	manifests.SetDefaults(d)
	return d
}

// podOf builds the observed containers of pod ordinal ord of revision
// hash: its holder in holderState ("" for none) and members given as
// name → state ("exited:N" is an exit with code N).
func podOf(hash string, ord int, holderState string, members map[string]string) []dockerx.Container {
	base := dockerx.ContainerName("i", "", "web", hash, ord)
	uid := "u" + hash + string(rune('0'+ord))
	podName := dockerx.Hostname("web", hash, ord)
	c := func(name, role, cname, state string) dockerx.Container {
		code := 0
		if len(state) > 7 && state[:7] == "exited:" {
			code = int(state[7] - '0')
			state = dockerx.StateExited
		}
		return dockerx.Container{ID: "id-" + name, Name: name, State: state, ExitCode: code, Instance: "i", Deployment: "web",
			TemplateHash: hash, Role: role, Pod: podName, PodUID: uid, ContainerName: cname, Created: t0.Add(-time.Hour)}
	}
	var out []dockerx.Container
	if holderState != "" {
		out = append(out, c(base, dockerx.RoleHolder, "", holderState))
	}
	for name, state := range members {
		out = append(out, c(dockerx.MemberName(base, name), dockerx.RoleReplica, name, state))
	}
	return out
}

func concat(groups ...[]dockerx.Container) []dockerx.Container {
	var out []dockerx.Container
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// podInput groups observed pod containers as the controller does and marks
// running pods ready and available.
func podInput(d *manifests.Deployment, cs []dockerx.Container) PlanInput {
	units, pods := podruntime.GroupPods(cs, func(string) *manifests.PodTemplateSpec { return &d.Spec.Template }, nil)
	ready := map[string]bool{}
	for i := range cs {
		if podruntime.IsReady(cs[i]) {
			ready[cs[i].ID] = true
		}
	}
	for key, p := range pods {
		if podruntime.PodReady(p, &d.Spec.Template, ready) {
			ready[key] = true
		}
	}
	return PlanInput{Desired: d, Containers: units, Pods: pods, Ready: ready, Available: ready}
}

// TestPodPlanGolden compares the plans of holder pods with
// testdata/plan-pod-*.golden (-update rewrites them): how a pod is made
// (volumes, then holder, then its first step), how it is initialized (one
// init container at a time, sidecars to their start), repaired in place,
// replaced when its holder is gone, and stopped in phases.
func TestPodPlanGolden(t *testing.T) {
	const H = "aaaa"
	run, exited, created := dockerx.StateRunning, dockerx.StateExited, dockerx.StateCreated
	d := podDeployment
	sidecar := func(replicas int32) *manifests.Deployment {
		return d(replicas, manifests.Container{Name: "proxy", Image: "img:1", RestartPolicy: "Always"},
			manifests.Container{Name: "migrate", Image: "img:1"})
	}
	allInitDone := map[string]string{"migrate": "exited:0", "seed": "exited:0"}
	running := map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": run, "log": run}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(out, kv[i])
			} else {
				out[kv[i]] = kv[i+1]
			}
		}
		return out
	}
	seedID := "id-" + dockerx.MemberName(dockerx.ContainerName("i", "", "web", H, 0), "seed")
	tests := []struct {
		name string
		in   PlanInput
	}{
		{"pod-create", podInput(d(2), nil)},
		{"pod-holder-only", podInput(d(1), podOf(H, 0, run, nil))},
		{"pod-holder-created", podInput(d(1), podOf(H, 0, created, nil))},
		{"pod-init-running", podInput(d(1), podOf(H, 0, run, map[string]string{"migrate": run}))},
		{"pod-init-next", podInput(d(1), podOf(H, 0, run, map[string]string{"migrate": "exited:0"}))},
		{"pod-init-failed", podInput(d(1), podOf(H, 0, run, map[string]string{"migrate": "exited:0", "seed": "exited:1"}))},
		{"pod-init-backoff", func() PlanInput {
			in := podInput(d(1), podOf(H, 0, run, map[string]string{"migrate": "exited:0", "seed": "exited:1"}))
			in.StartNotBefore = map[string]time.Time{seedID: t0.Add(30 * time.Second)}
			return in
		}()},
		{"pod-apps-after-init", podInput(d(1), podOf(H, 0, run, allInitDone))},
		{"pod-running", podInput(d(1), podOf(H, 0, run, running))},
		{"pod-repair-member", podInput(d(1), podOf(H, 0, run, with(running, "log", exited, "app", "")))},
		{"pod-init-removed-after-run", podInput(d(1), podOf(H, 0, run, with(running, "migrate", "", "seed", "")))},
		{"pod-holder-gone", podInput(d(1), podOf(H, 0, "", running))},
		{"pod-holder-exited", podInput(d(1), podOf(H, 0, exited, running))},
		{"pod-scale-down", podInput(d(1), concat(podOf(H, 0, run, running), podOf(H, 1, run, running)))},
		{"pod-deleted", func() PlanInput {
			in := podInput(d(1), podOf(H, 0, run, running))
			in.Desired = nil
			in.Volumes = []dockerx.Volume{
				{Name: "gone-vol", Role: dockerx.RoleEmptyDir, Pod: "web-aaaa-7", PodUID: "gone", Instance: "i", Deployment: "web"},
				{Name: "live-vol", Role: dockerx.RoleEmptyDir, Pod: "web-aaaa-0", PodUID: "uaaaa0", Instance: "i", Deployment: "web"},
			}
			return in
		}()},
		{"pod-sidecar-first", podInput(sidecar(1), podOf(H, 0, run, nil))},
		{"pod-sidecar-waits", podInput(sidecar(1), podOf(H, 0, run, map[string]string{"proxy": created}))},
		{"pod-sidecar-then-init", podInput(sidecar(1), podOf(H, 0, run, map[string]string{"proxy": run}))},
		{"pod-sidecar-crashed-after-init", podInput(sidecar(1), podOf(H, 0, run, map[string]string{"proxy": exited, "migrate": "exited:0", "app": run, "log": run}))},
		{"pod-sidecar-scale-down", podInput(sidecar(0), podOf(H, 0, run, map[string]string{"proxy": run, "migrate": "exited:0", "app": run, "log": run}))},
		{"pod-liveness", func() PlanInput {
			in := podInput(d(1), podOf(H, 0, run, running))
			in.LivenessFailed = map[string]bool{"id-" + dockerx.MemberName(dockerx.ContainerName("i", "", "web", H, 0), "app"): true}
			return in
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Instance, in.Name, in.Hash, in.Now = "i", "web", H, t0
			plan := ComputePlan(in)
			checkOrder(t, plan)
			checkNeeds(t, plan)
			checkPlanGolden(t, tt.name, plan)
		})
	}
}

// checkNeeds asserts the order within pods, so that regenerating goldens
// cannot accept a regression: a holder needs every volume of its pod
// created before it, and a member needs its holder's create when both are
// in the plan.
func checkNeeds(t *testing.T, plan Plan) {
	t.Helper()
	byID := map[OpID]Op{}
	for _, op := range plan.Ops {
		byID[op.ID] = op
	}
	for _, op := range plan.Ops {
		for _, n := range op.Needs {
			if n >= op.ID {
				t.Errorf("%s needs #%d, which comes after it", op.Line(), n)
			}
		}
		if op.Kind != OpCreate || op.Pod == nil {
			continue
		}
		for _, other := range plan.Ops {
			switch {
			case op.Role == dockerx.RoleHolder && other.Kind == OpCreateVolume && other.Volume.Pod.UID == op.Pod.UID:
				if !slices.Contains(op.Needs, other.ID) {
					t.Errorf("%s does not need %s", op.Line(), other.Line())
				}
			case op.Role != dockerx.RoleHolder && other.Kind == OpCreate && other.Role == dockerx.RoleHolder && other.Pod.UID == op.Pod.UID:
				if !slices.Contains(op.Needs, other.ID) {
					t.Errorf("%s does not need %s", op.Line(), other.Line())
				}
			}
		}
	}
}

// TestStrandedByUptime: without the holder's die event (a controller that
// was down), a running holder whose uptime is certainly shorter than a
// running member's was started after it: the member is stranded in the
// previous run's namespaces, and the pod is replaced.
func TestStrandedByUptime(t *testing.T) {
	d := podDeployment(1)
	tests := []struct {
		holder, member string
		dead           bool
	}{
		{"Up 3 seconds", "Up 5 minutes", true},
		{"Up Less than a second", "Up 2 seconds", true},
		{"Up About a minute", "Up 2 hours (healthy)", true},
		{"Up 5 minutes", "Up 5 minutes", false},
		{"Up 2 seconds", "Up 2 seconds", false},
		{"Up 6 minutes", "Up 5 minutes", false}, // the member started later: fine
		{"Up 2 hours", "Up 3 hours", true},
		{"", "Up 3 hours", false}, // unknown: never guessed
	}
	for _, tt := range tests {
		cs := podOf("aaaa", 0, dockerx.StateRunning, map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": dockerx.StateRunning, "log": dockerx.StateRunning})
		for i := range cs {
			switch {
			case cs[i].Role == dockerx.RoleHolder:
				cs[i].Status = tt.holder
			case cs[i].State == dockerx.StateRunning:
				cs[i].Status = tt.member
			}
		}
		units, _ := podruntime.GroupPods(cs, func(string) *manifests.PodTemplateSpec { return &d.Spec.Template }, nil)
		if got := units[0].State == dockerx.StateDead; got != tt.dead {
			t.Errorf("holder %q, member %q: unit %s, want dead %v", tt.holder, tt.member, units[0].State, tt.dead)
		}
	}
}

// TestPodsStatusAfterRun: what `get pods` shows of a pod that ran: an app
// container removed by hand is ContainerCreating (not PodInitializing: the
// init containers never run again), and a pod whose holder is gone serves
// nothing, whatever its members' state (READY 0).
func TestPodsStatusAfterRun(t *testing.T) {
	d := podDeployment(1)
	hash := manifests.TemplateHash(&d.Spec.Template)
	rec := &store.Record{Name: "web", Deployment: *d}
	run := dockerx.StateRunning
	for _, tt := range []struct {
		name    string
		holder  string
		members map[string]string
		ready   int
		status  string
	}{
		{"app removed", run, map[string]string{"migrate": "exited:0", "seed": "exited:0", "log": run}, 1, "ContainerCreating"},
		{"just initialized", run, map[string]string{"migrate": "exited:0", "seed": "exited:0"}, 0, "PodInitializing"},
		{"holder gone", "", map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": run, "log": run}, 0, "Error"},
		{"holder exited", dockerx.StateExited, map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": run, "log": run}, 0, "Error"},
	} {
		pods := Pods(rec, nil, nil, podOf(hash, 0, tt.holder, tt.members), t0)
		if len(pods) != 1 || pods[0].Ready != tt.ready || pods[0].Status != tt.status {
			t.Errorf("%s: %+v, want READY %d STATUS %s", tt.name, pods, tt.ready, tt.status)
		}
	}
}

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
	units, pods := podruntime.GroupPods(cs, tmpl, died)
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
// A pod whose holder died is "dead" (holderDied) and its running members
// are stopped with the pod's grace; ComputePlan must not treat that dead
// unit as "runs nothing" (dead units are kept out of groups, so
// computeSizes sees no old replica) and create the new pod in the same
// plan.
func TestRecreateWaitsForStrandedOldPod(t *testing.T) {
	_, newD, oldHash, newHash, revs := recreatePods(t)
	run := dockerx.StateRunning
	cs := podOf(oldHash, 0, run, map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": run, "log": run})
	holderID := cs[0].ID // podOf puts the holder first
	plan := ComputePlan(recreateInput(newD, oldHash, newHash, revs, cs, map[string]bool{holderID: true}, nil))
	assertNoOverlap(t, plan, newHash)
}

// The same with a pod replaced because a member's name is blocked: its
// app containers run, so Recreate must not create the new revision beside
// them.
func TestRecreateWaitsForNameBlockedOldPod(t *testing.T) {
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
// that do not share its PID namespace keep running, and are stopped with
// the pod's grace before the new pod starts.
func TestRecreateWaitsForHolderExitedOldPod(t *testing.T) {
	_, newD, oldHash, newHash, revs := recreatePods(t)
	run := dockerx.StateRunning
	cs := podOf(oldHash, 0, dockerx.StateExited, map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": run, "log": run})
	plan := ComputePlan(recreateInput(newD, oldHash, newHash, revs, cs, nil, nil))
	assertNoOverlap(t, plan, newHash)
}

// planFor runs ComputePlan on a holder pod input as TestPodPlanGolden does.
func planFor(in PlanInput) Plan {
	in.Instance, in.Name, in.Now = "i", "web", t0
	if in.Hash == "" {
		in.Hash = "aaaa"
	}
	return ComputePlan(in)
}

// TestPodInitNotRerunWhileLaterInitRuns: the first init container
// (migrate) exited 0 and was then removed by hand while the second (seed)
// runs. The kubelet (findNextInitContainerToRun) looks at the LAST init
// container that has a status: seed runs, so it waits; it never runs an
// earlier init container again beside a later one. planPod must not see
// migrate missing and create it while seed runs: two init containers
// would run at once, and migrate twice.
func TestPodInitNotRerunWhileLaterInitRuns(t *testing.T) {
	const H = "aaaa"
	in := podInput(podDeployment(1), podOf(H, 0, dockerx.StateRunning, map[string]string{"seed": dockerx.StateRunning}))
	plan := planFor(in)
	for _, op := range plan.Ops {
		if op.Kind == OpCreate && op.Container == "migrate" {
			t.Fatalf("init container migrate created again while seed (the next init container) runs:\n%s", plan)
		}
	}
}

// TestPodInitNotRerunAfterLaterInitCompleted: both init containers exited
// 0, then the first was removed by hand before the app containers were
// created. Kubernetes: the last init container exited successfully, so
// the pod is initialized and its app containers start; migrate is not run
// again.
func TestPodInitNotRerunAfterLaterInitCompleted(t *testing.T) {
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

// TestPodDeadMemberIsRepaired: a member Docker reports `dead` (a `docker
// rm -f` that failed to remove its filesystem leaves it so) can never run
// again. As a dead single-container replica is removed and replaced
// (ReasonDead), planPod's tend must repair a dead member, or the pod stays
// without its app container forever and never becomes ready.
func TestPodDeadMemberIsRepaired(t *testing.T) {
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

// TestPodDeadInitContainerIsRepaired: the same for an init container that
// is dead while the pod initializes: the init loop must plan something,
// or the pod stays in Init forever.
func TestPodDeadInitContainerIsRepaired(t *testing.T) {
	const H = "aaaa"
	in := podInput(podDeployment(1), podOf(H, 0, dockerx.StateRunning, map[string]string{"migrate": dockerx.StateDead}))
	plan := planFor(in)
	if len(plan.Ops) == 0 {
		t.Fatalf("a dead init container blocks the pod forever: nothing planned:\n%s", plan)
	}
}

// TestPodMembersStoppedGracefullyWhenHolderExited: the holder exited
// (docker stop of the holder, say) while the app containers run. The pod
// is replaced, and its running app containers must be stopped with the
// pod's grace, not removed with none (SIGKILL) because the holder does not
// run (graceFor). docs/design.md §8: a replica is stopped with its stop
// signal, then killed after terminationGracePeriodSeconds; the kubelet,
// when a pod's sandbox died, kills its containers with the pod's grace
// period too (killPodWithSyncResult → killContainer with the pod's
// terminationGracePeriodSeconds).
func TestPodMembersStoppedGracefullyWhenHolderExited(t *testing.T) {
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

// TestPodScaleDownRemovesInitializingPodFirst: scale 2 → 1. Pod 0 is
// initialized, its app containers run (not ready yet: no readiness
// verdict); pod 1 is still initializing (its second init container runs)
// and is the OLDER one. Kubernetes ranks a Pending pod (init containers
// not done) before a Running one for scale-down (controller.ActivePods:
// PodPending < PodUnknown < PodRunning, before readiness and age), so it
// removes pod 1. pod.unit must not call an initializing pod whose init
// container runs "running", or rankForRemoval falls through to age and
// removes the initialized pod 0, keeping the one still in Init.
func TestPodScaleDownRemovesInitializingPodFirst(t *testing.T) {
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

// TestSidecarStartupProbeGatesNextInit: Kubernetes starts the container
// after a native sidecar only once the sidecar has started - its
// startupProbe succeeded (and its postStart hook completed). A sidecar
// that runs but whose startup probe has not succeeded yet (the prober
// gives it no Ready verdict; it is not ready) holds back the next init
// container.
func TestSidecarStartupProbeGatesNextInit(t *testing.T) {
	const H = "aaaa"
	d := podDeployment(1, manifests.Container{Name: "proxy", Image: "img:1", RestartPolicy: "Always", StartupProbe: tcpProbe(10, 30)},
		manifests.Container{Name: "migrate", Image: "img:1"})
	in := podInput(d, podOf(H, 0, dockerx.StateRunning, map[string]string{"proxy": dockerx.StateRunning}))
	in.Instance, in.Name, in.Now, in.Hash = "i", "web", t0, H
	// The prober has no verdict yet (startup probe running): not ready,
	// not started.
	in.Ready, in.Available = map[string]bool{}, map[string]bool{}
	in.Unstarted = map[string]bool{}
	for _, p := range in.Pods {
		if m := p.Members["proxy"]; m != nil {
			in.Unstarted[m.ID] = true
		}
	}
	if len(in.Unstarted) != 1 {
		t.Fatalf("no proxy member in the input")
	}
	creates := func(plan Plan) bool {
		for _, op := range plan.Ops {
			if op.Kind == OpCreate && op.Container == "migrate" {
				return true
			}
		}
		return false
	}
	if plan := ComputePlan(in); creates(plan) {
		t.Fatalf("init container migrate is created while sidecar proxy's startupProbe has not succeeded:\n%s", plan)
	}
	in.Unstarted = nil // started: its successor goes on
	if plan := ComputePlan(in); !creates(plan) {
		t.Errorf("the sidecar started, and init container migrate is not created:\n%s", plan)
	}
}
