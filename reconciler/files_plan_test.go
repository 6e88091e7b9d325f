package reconciler

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dataplane"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// filesDeployment is deployment web with one container "app" mounting a
// configMap volume and a secret volume: a pod that needs a writer holder.
func filesDeployment(replicas int32) *manifests.Deployment {
	d := deployment(replicas)
	d.Spec.Template.Spec.Containers = []manifests.Container{{Name: "app", Image: "img:1", VolumeMounts: []manifests.VolumeMount{
		{Name: "cfg", MountPath: "/etc/app"}, {Name: "tls", MountPath: "/etc/tls"}}}}
	d.Spec.Template.Spec.Volumes = []manifests.Volume{
		{Name: "cfg", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "app"}},
		{Name: "tls", Secret: &manifests.SecretVolumeSource{SecretName: "tls"}},
	}
	manifests.SetDefaults(d)
	return d
}

// TestFilesPlanGolden compares the plans of pods with file volumes with
// testdata/plan-files-*.golden (-update rewrites them): the write comes
// after the holder and before any container of the pod, a change is one
// write, a converged pod plans nothing, a pod that never got its files
// waits for them.
func TestFilesPlanGolden(t *testing.T) {
	const H = "aaaa"
	run, exited := dockerx.StateRunning, dockerx.StateExited
	key := podruntime.PodKeyPrefix + dockerx.ContainerName("i", "", "web", H, 0) + "/u" + H + "0"
	withFiles := func(in PlanInput, pf PodFiles) PlanInput {
		in.Files = map[string]PodFiles{key: pf}
		return in
	}
	d := filesDeployment
	tests := []struct {
		name string
		in   PlanInput
	}{
		{"files-pod-create", podInput(d(1), nil)},
		{"files-holder-running-unwritten", withFiles(podInput(d(1), podOf(H, 0, run, nil)), PodFiles{Want: "h1"})},
		{"files-converged", withFiles(podInput(d(1), podOf(H, 0, run, map[string]string{"app": run})), PodFiles{Want: "h1", Have: "h1"})},
		{"files-changed", withFiles(podInput(d(1), podOf(H, 0, run, map[string]string{"app": run})), PodFiles{Want: "h2", Have: "h1"})},
		{"files-changed-member-exited", withFiles(podInput(d(1), podOf(H, 0, run, map[string]string{"app": exited})), PodFiles{Want: "h2", Have: "h1"})},
		{"files-controller-restarted", withFiles(podInput(d(1), podOf(H, 0, run, map[string]string{"app": run})), PodFiles{Want: "h1"})},
		{"files-missing-never-written", withFiles(podInput(d(1), podOf(H, 0, run, nil)),
			PodFiles{Missing: `pod web-aaaa-0: MountVolume.SetUp failed: volume cfg: configmap "app" not found`})},
		{"files-missing-after-written", withFiles(podInput(d(1), podOf(H, 0, run, map[string]string{"app": run})),
			PodFiles{Have: "h1", Missing: `pod web-aaaa-0: MountVolume.SetUp failed: volume cfg: configmap "app" not found`})},
		{"files-deleted", func() PlanInput {
			in := podInput(d(1), nil)
			in.Desired = nil
			in.Volumes = []dockerx.Volume{
				{Name: "gone-cfg", Role: dockerx.RoleFiles, Pod: "web-aaaa-7", PodUID: "gone", Instance: "i", Deployment: "web"},
			}
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
			checkFilesFirst(t, plan)
			checkPlanGolden(t, tt.name, plan)
		})
	}
}

// checkFilesFirst asserts that every create or start of a member of a pod
// whose files the plan writes needs that write.
func checkFilesFirst(t *testing.T, plan Plan) {
	t.Helper()
	writes := map[string]OpID{}
	for _, op := range plan.Ops {
		if op.Kind == OpWriteFiles {
			writes[op.Pod.Holder] = op.ID
		}
	}
	for _, op := range plan.Ops {
		if op.Kind != OpCreate && op.Kind != OpStart || op.Role == dockerx.RoleHolder {
			continue
		}
		for holder, w := range writes {
			if strings.HasPrefix(op.Name, holder+".") && !slices.Contains(op.Needs, w) {
				t.Errorf("%s does not need the write #%d of its pod's files", op.Line(), w)
			}
		}
	}
}

// TestPlanPodFilesWithAVolumeMissing: a pod that has its files is written
// the volumes that can be made (the others keep their last files, as the
// kubelet keeps a volume whose remount fails), as a change; a pod that
// never got them waits for all of them; a pod whose files are not known
// to be written gets no partial write.
func TestPlanPodFilesWithAVolumeMissing(t *testing.T) {
	const H = "aaaa"
	run := dockerx.StateRunning
	key := podruntime.PodKeyPrefix + dockerx.ContainerName("i", "", "web", H, 0) + "/u" + H + "0"
	const missing = `pod web-aaaa-0: MountVolume.SetUp failed: volume tls: secret "tls" not found`
	tests := []struct {
		name        string
		members     map[string]string
		pf          PodFiles
		wantWrite   OpReason // "" none
		wantBlocked bool
	}{
		{"written before: the other volumes are written, as a change", map[string]string{"app": run},
			PodFiles{Want: "partial", Have: "h1", Missing: missing}, ReasonFilesChanged, false},
		{"written before, the other volumes as written: nothing", map[string]string{"app": run},
			PodFiles{Want: "partial", Have: "partial", Missing: missing}, "", false},
		{"never started: waits for every volume", nil,
			PodFiles{Want: "partial", Missing: missing}, "", true},
		{"running, its files not known to be written: no partial write", map[string]string{"app": run},
			PodFiles{Want: "partial", Missing: missing}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := podInput(filesDeployment(1), podOf(H, 0, run, tt.members))
			in.Files = map[string]PodFiles{key: tt.pf}
			in.Instance, in.Name, in.Hash, in.Now = "i", "web", H, t0
			plan := ComputePlan(in)
			var got OpReason
			for _, op := range plan.Ops {
				if op.Kind == OpWriteFiles {
					got = op.Reason
				}
			}
			if got != tt.wantWrite {
				t.Errorf("write %q, want %q:\n%s", got, tt.wantWrite, plan)
			}
			if blocked := slices.Contains(plan.Blocked, missing); blocked != tt.wantBlocked {
				t.Errorf("blocked %v, want %v: %q", blocked, tt.wantBlocked, plan.Blocked)
			}
		})
	}
}

// TestPlanPodFilesNotKnownWrittenStartsNothing: a pod whose files are not
// known to be written (a restarted controller could not confirm them: its
// check said no, or failed) while one of its volumes cannot be made gets
// no container created or started: the kubelet starts no container of a
// pod before every one of its volumes is mounted, and an exited member
// would otherwise run on volumes that may be empty. It waits, named in
// ReplicaFailure; a member that runs is left running.
func TestPlanPodFilesNotKnownWrittenStartsNothing(t *testing.T) {
	const H = "aaaa"
	key := podruntime.PodKeyPrefix + dockerx.ContainerName("i", "", "web", H, 0) + "/u" + H + "0"
	const missing = `pod web-aaaa-0: MountVolume.SetUp failed: volume tls: secret "tls" not found`
	tests := []struct {
		name        string
		member      string
		wantStart   bool
		wantBlocked bool
	}{
		{"exited member: not started, waits", dockerx.StateExited, false, true},
		{"created member: not started, waits", dockerx.StateCreated, false, true},
		{"running member: left running", dockerx.StateRunning, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := podInput(filesDeployment(1), podOf(H, 0, dockerx.StateRunning, map[string]string{"app": tt.member}))
			in.Files = map[string]PodFiles{key: {Want: "partial", Missing: missing}}
			in.Instance, in.Name, in.Hash, in.Now = "i", "web", H, t0
			plan := ComputePlan(in)
			started := slices.ContainsFunc(plan.Ops, func(op Op) bool { return op.Kind == OpStart || op.Kind == OpCreate })
			if started != tt.wantStart {
				t.Errorf("started %v, want %v:\n%s", started, tt.wantStart, plan)
			}
			for _, op := range plan.Ops {
				if op.Kind == OpRemove || op.Kind == OpRestart || op.Kind == OpWriteFiles {
					t.Errorf("unexpected %s:\n%s", op.Kind, plan)
				}
			}
			if blocked := slices.Contains(plan.Blocked, missing); blocked != tt.wantBlocked {
				t.Errorf("blocked %v, want %v: %q", blocked, tt.wantBlocked, plan.Blocked)
			}
		})
	}
}

// TestFilesProjectedSamePathSpelledTwice: a projected volume whose
// ConfigMap source projects key "a" and whose Secret source maps a key to
// "./a" is valid (Kubernetes accepts it, and the kubelet's AtomicWriter
// cleans the paths, one of them winning). dockctl's validation accepts it
// too, so the writer must take the payload, or the pod never gets its
// files and never starts.
func TestFilesProjectedSamePathSpelledTwice(t *testing.T) {
	d := testDeployment("web", 1, "1")
	ps := &d.Spec.Template.Spec
	ps.Volumes = []manifests.Volume{{Name: "all", Projected: &manifests.ProjectedVolumeSource{Sources: []manifests.VolumeProjection{
		{ConfigMap: &manifests.ConfigMapProjection{Name: "app"}},
		{Secret: &manifests.SecretProjection{Name: "s", Items: []manifests.KeyToPath{{Key: "x", Path: "./a"}}}},
	}}}}
	ps.Containers[0].VolumeMounts = []manifests.VolumeMount{{Name: "all", MountPath: "/etc/all"}}
	manifests.SetDefaults(d)
	if err := manifests.Validate(d); err != nil {
		t.Fatalf("refused at validation (acceptable, but then say so): %v", err)
	}
	objs := podruntime.FileObjects{
		ConfigMaps: map[string]*manifests.ConfigMap{"app": {Data: map[string]string{"a": "from-cm"}}},
		Secrets:    map[string]*manifests.Secret{"s": {Data: map[string][]byte{"x": []byte("from-secret")}}},
	}
	payload, err := podruntime.PlanFiles(ps, podruntime.DownwardIdentity{Name: "p", Namespace: "default"}, objs, podruntime.HostResources{})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "all"), 0o755)
	if _, err := dataplane.WriteFiles(root, payload); err != nil {
		t.Fatalf("a valid projected volume cannot be written: %v", err)
	}
	if _, err := os.ReadFile(filepath.Join(root, "all", "a")); err != nil {
		t.Errorf("a: %v", err)
	}
}
