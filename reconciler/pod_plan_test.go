package reconciler

import (
	"slices"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
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
	base := dockerx.ContainerName("i", "web", hash, ord)
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
	units, pods := groupPods(cs, func(string) *manifests.PodTemplateSpec { return &d.Spec.Template })
	ready := map[string]bool{}
	for i := range cs {
		if IsReady(cs[i]) {
			ready[cs[i].ID] = true
		}
	}
	for key, p := range pods {
		if podReady(p, &d.Spec.Template, ready) {
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
	seedID := "id-" + dockerx.MemberName(dockerx.ContainerName("i", "web", H, 0), "seed")
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
			in.LivenessFailed = map[string]bool{"id-" + dockerx.MemberName(dockerx.ContainerName("i", "web", H, 0), "app"): true}
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
