package reconciler

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// The sweep's assessment of a deployment (needsSync) only decides whether
// to queue its sync: it must not act. Its snapshot was listed before it
// ran, possibly before a sync of the same deployment created a pod and
// wrote its files; forgetting what it does not see would drop the memory
// of that write, and the next sync would write the converged pod's files
// once more (the rare "2 writes of a converged pod" of
// TestFilesRewrittenAfterEventGap). Only a deployment's own sync, whose
// list follows every write it made, forgets the pods it no longer sees.
func TestFilesMemoryKeptBySweepOfOlderSnapshot(t *testing.T) {
	h, w := filesHarness(t)
	applyConfigMap(t, h.store, "", "app", map[string]string{"k": "v"})
	h.apply(configMapVolumeDeployment("web", "app"))
	h.start()
	remembered := func() int {
		return h.ctrl.files.Pods(store.Key("", "web"))
	}
	h.waitFor("the files written and remembered", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.writes == 1 && remembered() == 1
	})
	h.stop() // nothing but the call below touches the memory now
	if n := remembered(); n != 1 {
		t.Fatalf("the files memory holds %d pods of web once its controller stopped, want 1", n)
	}
	rec, err := h.store.Lookup("", "web")
	if err != nil || rec == nil {
		t.Fatalf("lookup web: %v", err)
	}
	// A sweep whose list was taken before the pod was created.
	h.ctrl.needsSync(rec, nil, nil, h.ctrl.opts.Now())
	if n := remembered(); n != 1 {
		t.Errorf("the files memory holds %d pods of web after a sweep assessed an older snapshot, want 1: the next sync writes the converged pod again", n)
	}
}

// TestFilesVolumesUpdateEachOnItsOwn: the kubelet sets up each volume of a
// pod on its own (its volume manager remounts each periodically), so a
// ConfigMap deleted under a running pod fails only that volume's update —
// the volume keeps its last files, and the kubelet reports a Warning
// FailedMount on the pod, `MountVolume.SetUp failed for volume "b" :
// configmap "other" not found` — while the pod's other volumes keep
// following their ConfigMaps. When the ConfigMap is back, its volume is
// updated again.
func TestFilesVolumesUpdateEachOnItsOwn(t *testing.T) {
	m := &memRecorder{}
	h, w := filesHarness(t)
	h.opts.Recorder = m
	h.ctrl = New(h.engine, h.store, h.opts)
	applyConfigMap(t, h.store, "", "app", map[string]string{"k": "a1"})
	applyConfigMap(t, h.store, "", "other", map[string]string{"k": "b1"})
	d := testDeployment("web", 1, "1")
	ps := &d.Spec.Template.Spec
	ps.Volumes = []manifests.Volume{
		{Name: "a", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "app"}},
		{Name: "b", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "other"}},
	}
	ps.Containers[0].VolumeMounts = []manifests.VolumeMount{{Name: "a", MountPath: "/etc/a"}, {Name: "b", MountPath: "/etc/b"}}
	manifests.SetDefaults(d)
	h.apply(d)
	h.start()
	var hid string
	file := func(vol string) string {
		p, _ := w.get(hid)
		s, _ := fileOf(p, vol, "k")
		return s
	}
	h.waitFor("both volumes written", func() bool {
		c := rvHolder(h, "web")
		if c == nil {
			return false
		}
		hid = c.ID
		return file("a") == "a1" && file("b") == "b1"
	})
	pod := containerPodRef("", "web", rvHolder(h, "web")).Name

	if err := h.store.DeleteConfigMap("", "other"); err != nil {
		t.Fatal(err)
	}
	applyConfigMap(t, h.store, "", "app", map[string]string{"k": "a2"})
	h.waitFor("volume a updated though ConfigMap other is gone", func() bool { return file("a") == "a2" })
	if got := file("b"); got != "b1" {
		t.Errorf("volume b holds %q, want its last files b1", got)
	}
	want := "Pod/" + pod + ` Warning FailedMount: MountVolume.SetUp failed for volume "b" : configmap "other" not found`
	h.waitFor("the missing ConfigMap reported on the pod", func() bool { return m.Has(want, "") })
	if m.Has("", `volume "a"`) {
		t.Errorf("volume a, which updates, is reported:\n%s", m.Dump())
	}

	applyConfigMap(t, h.store, "", "other", map[string]string{"k": "b2"})
	h.waitFor("volume b updated once its ConfigMap is back", func() bool { return file("b") == "b2" && file("a") == "a2" })
}

// subPathDeployment: one container binding key app.conf of ConfigMap cm's
// volume at /etc/app.conf (a subPath).
func subPathDeployment(name, cm string) *manifests.Deployment {
	d := configMapVolumeDeployment(name, cm)
	d.Spec.Template.Spec.Containers[0].VolumeMounts = []manifests.VolumeMount{{Name: "cfg", MountPath: "/etc/app.conf", SubPath: "app.conf"}}
	return d
}

// TestFilesWrittenByAWriterOfItsOwn: a pod's files are written by a
// writer container of its own, never by a process exec'd in the holder,
// which shares the pod's namespaces (with shareProcessNamespace a member
// could reach it through /proc before it is non-dumpable).
func TestFilesWrittenByAWriterOfItsOwn(t *testing.T) {
	h, w := filesHarness(t)
	applyConfigMap(t, h.store, "default", "app", map[string]string{"app.conf": "v1"})
	d := configMapVolumeDeployment("web", "app")
	d.Spec.Template.Spec.ShareProcessNamespace = new(true)
	h.apply(d)
	h.start()
	h.waitFor("the pod running with its files", func() bool {
		m := member(h.ours("web"), "web")
		hd := rvHolder(h, "web")
		if m == nil || hd == nil || m.State != dockerx.StateRunning {
			return false
		}
		p, ok := w.get(hd.ID)
		v, _ := fileOf(p, "cfg", "app.conf")
		return ok && v == "v1"
	})
	calls := h.engine.Calls()
	if calls["run:files-writer"] == 0 || calls["exec:output"] != 0 {
		t.Errorf("files written through %d writer runs and %d execs in the pod's containers; want writers only", calls["run:files-writer"], calls["exec:output"])
	}
}

// TestFilesSubPathLeavingItsVolumeIsNeverCreated: a subPath that resolves
// out of its volume through a link (planted by any write primitive) is
// never bound: the container is not created and the ReplicaFailure names
// the subPath — the kubelet refuses such a subPath since CVE-2017-1002101.
func TestFilesSubPathLeavingItsVolumeIsNeverCreated(t *testing.T) {
	h, w := filesHarness(t)
	w.outside = map[string]bool{"cfg:app.conf": true}
	applyConfigMap(t, h.store, "default", "app", map[string]string{"app.conf": "v1"})
	h.apply(subPathDeployment("web", "app"))
	h.start()
	h.waitFor("a ReplicaFailure naming the subPath", func() bool {
		return strings.Contains(h.replicaFailure("web"), `subPath "app.conf" of volume cfg leads out`)
	})
	if m := member(h.ours("web"), "web"); m != nil {
		t.Errorf("the container binding the subPath was created: %s (%s)", m.Name, m.State)
	}
}

// TestFilesSubPathCheckedAtEveryStart: Docker resolves a bind's source
// again at each start, so a link planted after the create must stop the
// next start of the container that binds it; the ReplicaFailure names it.
func TestFilesSubPathCheckedAtEveryStart(t *testing.T) {
	h, w := filesHarness(t)
	applyConfigMap(t, h.store, "default", "app", map[string]string{"app.conf": "v1"})
	h.apply(subPathDeployment("web", "app"))
	h.start()
	h.waitFor("the subPath member running", func() bool {
		m := member(h.ours("web"), "web")
		return m != nil && m.State == dockerx.StateRunning
	})
	w.mu.Lock()
	w.outside = map[string]bool{"cfg:app.conf": true}
	checks := w.checks
	w.mu.Unlock()
	m := member(h.ours("web"), "web")
	if err := h.engine.Exit(m.ID, 1); err != nil {
		t.Fatal(err)
	}
	h.waitFor("a ReplicaFailure naming the subPath", func() bool {
		return strings.Contains(h.replicaFailure("web"), `subPath "app.conf" of volume cfg leads out`)
	})
	w.mu.Lock()
	ran := w.checks - checks
	w.mu.Unlock()
	if ran == 0 {
		t.Error("no subPath check before the start")
	}
	// Starts are retried with backoff, each refused: never running. A
	// condition, not a delay: two more checks mean two more refused
	// retries.
	h.waitFor("two more refused starts", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.checks-checks >= ran+2
	})
	if m := member(h.ours("web"), "web"); m == nil || m.State == dockerx.StateRunning {
		t.Errorf("the member binding a subPath out of its volume was started again: %+v", m)
	}
}

// TestFilesSubPathCheckedForEveryKindOfContainer: init containers and
// native sidecars bind their subPaths as app containers do, so each is
// checked before its create: one whose subPath leads out of its volume is
// never created, and the ReplicaFailure names it (the kubelet refuses such
// a subPath in any container of the pod, CVE-2017-1002101).
func TestFilesSubPathCheckedForEveryKindOfContainer(t *testing.T) {
	sub := []manifests.VolumeMount{{Name: "cfg", MountPath: "/etc/app.conf", SubPath: "app.conf"}}
	for _, tc := range []struct {
		kind string
		add  func(ps *manifests.PodSpec, c manifests.Container)
	}{
		{"app container", func(ps *manifests.PodSpec, c manifests.Container) { ps.Containers = append(ps.Containers, c) }},
		{"init container", func(ps *manifests.PodSpec, c manifests.Container) { ps.InitContainers = append(ps.InitContainers, c) }},
		{"sidecar", func(ps *manifests.PodSpec, c manifests.Container) {
			c.RestartPolicy = manifests.ContainerRestartPolicyAlways
			ps.InitContainers = append(ps.InitContainers, c)
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			h, w := filesHarness(t)
			w.outside = map[string]bool{"cfg:app.conf": true}
			applyConfigMap(t, h.store, "default", "app", map[string]string{"app.conf": "v1"})
			d := configMapVolumeDeployment("web", "app")
			ps := &d.Spec.Template.Spec
			tc.add(ps, manifests.Container{Name: "extra", Image: ps.Containers[0].Image, VolumeMounts: sub})
			manifests.SetDefaults(d)
			h.apply(d)
			h.start()
			h.waitFor("a ReplicaFailure naming the container and its subPath", func() bool {
				rf := h.replicaFailure("web")
				return strings.Contains(rf, `container "extra"`) && strings.Contains(rf, `subPath "app.conf" of volume cfg leads out`)
			})
			if m := member(h.ours("web"), "extra"); m != nil {
				t.Errorf("the %s binding the subPath was created: %s (%s)", tc.kind, m.Name, m.State)
			}
		})
	}
}

// filesWriterFake answers `helper files` execs in the fake engine, keeping
// the last payload written into each holder.
type filesWriterFake struct {
	mu      sync.Mutex
	written map[string]helperapi.FilesPayload // by holder ID
	writes  int
	// outside are the subPaths (VOLUME:SUBPATH) `helper files --subpath`
	// finds leading out of their volume; checks counts its runs.
	outside map[string]bool
	checks  int
}

func (f *filesWriterFake) handle(id string, cmd []string, stdin []byte) (int, []byte) {
	if len(cmd) < 3 || cmd[2] != helperapi.ModeFiles {
		return 0, nil
	}
	if len(cmd) > 3 && cmd[3] == "--subpath" {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.checks++
		for i := 3; i+1 < len(cmd); i += 2 {
			if f.outside[cmd[i+1]] {
				vol, sub, _ := strings.Cut(cmd[i+1], ":")
				return helperapi.ExitFailed, []byte(`subPath "` + sub + `" of volume ` + vol + ` leads out of the volume through a link`)
			}
		}
		return helperapi.ExitOK, nil
	}
	if len(cmd) > 3 && cmd[3] == "--check" {
		// The holder's volumes hold what was written into it, by this
		// controller or an earlier one.
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, ok := f.written[id]; ok {
			return helperapi.ExitOK, nil
		}
		return helperapi.ExitFailed, nil
	}
	var p helperapi.FilesPayload
	if err := json.Unmarshal(stdin, &p); err != nil {
		return helperapi.ExitUsage, []byte("bad payload")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.written == nil {
		f.written = map[string]helperapi.FilesPayload{}
	}
	// As the writer: each volume of the payload replaced, the pod's other
	// volumes left as they are.
	merged := f.written[id]
	merged.Volumes = slices.Clone(merged.Volumes)
	for _, v := range p.Volumes {
		if i := slices.IndexFunc(merged.Volumes, func(m helperapi.FilesVolume) bool { return m.Name == v.Name }); i >= 0 {
			merged.Volumes[i] = v
		} else {
			merged.Volumes = append(merged.Volumes, v)
		}
	}
	f.written[id] = merged
	f.writes++
	return helperapi.ExitOK, []byte(`{"volumes":[]}`)
}

func (f *filesWriterFake) get(id string) (helperapi.FilesPayload, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.written[id]
	return p, ok
}

// filesHarness is a controller with the store as its ConfigStore and a
// writer fake answering its `helper files` execs.
func filesHarness(t *testing.T) (*harness, *filesWriterFake) {
	h := newHarness(t, Options{ResyncPeriod: 50 * time.Millisecond})
	h.opts.Config = h.store
	h.opts.FilesDocker = h.engine
	h.ctrl = New(h.engine, h.store, h.opts)
	w := &filesWriterFake{}
	h.engine.HandleExecInput(w.handle)
	return h, w
}

// configMapVolumeDeployment: one container mounting ConfigMap cm at /etc/app.
func configMapVolumeDeployment(name, cm string) *manifests.Deployment {
	d := testDeployment(name, 1, "1")
	ps := &d.Spec.Template.Spec
	ps.Volumes = []manifests.Volume{{Name: "cfg", ConfigMap: &manifests.ConfigMapVolumeSource{Name: cm}}}
	ps.Containers[0].VolumeMounts = []manifests.VolumeMount{{Name: "cfg", MountPath: "/etc/app"}}
	manifests.SetDefaults(d)
	return d
}

func applyConfigMap(t *testing.T, st *store.Store, ns, name string, data map[string]string) {
	t.Helper()
	if _, err := st.Apply(store.Bundle{ConfigMaps: []*manifests.ConfigMap{{APIVersion: "v1", Kind: manifests.KindConfigMap,
		Metadata: manifests.ObjectMeta{Name: name, Namespace: ns}, Data: data}}}, store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestFilesMissingConfigMapCreatesNothing: a Deployment whose configMap
// volume names a ConfigMap that does not exist must create nothing of
// that revision (docs/design.md §11, as for env and claims; the kubelet keeps such
// a pod in ContainerCreating) and say so in ReplicaFailure.
func TestFilesMissingConfigMapCreatesNothing(t *testing.T) {
	h, _ := filesHarness(t)
	h.apply(configMapVolumeDeployment("web", "app"))
	h.start()
	h.waitFor("a ReplicaFailure naming the missing ConfigMap", func() bool {
		return strings.Contains(h.replicaFailure("web"), `"app"`)
	})
	time.Sleep(200 * time.Millisecond)
	if cs := h.ours("web"); len(cs) != 0 {
		t.Errorf("containers of the waiting revision were created: %s", summary(cs))
	}
	var vols []string
	for _, v := range h.engine.Volumes() {
		vols = append(vols, v.Name+"("+v.Role+")")
	}
	if len(vols) != 0 {
		t.Errorf("volumes of the waiting revision were created: %v", vols)
	}
	t.Logf("ReplicaFailure: %s", h.replicaFailure("web"))
}

// hostInfoEngine is the fake engine with a host of known capacity.
type hostInfoEngine struct{ *dockerfake.Engine }

func (hostInfoEngine) HostInfo(context.Context) (dockerx.HostInfo, error) {
	return dockerx.HostInfo{Name: "node1", CPUs: 4, Memory: 8 << 30}, nil
}

// hostFilesHarness is filesHarness on an engine that tells the host's
// capacity, with d applied.
func hostFilesHarness(t *testing.T, d *manifests.Deployment) (*harness, *filesWriterFake) {
	h := newHarness(t, Options{ResyncPeriod: 50 * time.Millisecond})
	h.opts.Config = h.store
	h.opts.FilesDocker = h.engine
	h.ctrl = New(hostInfoEngine{h.engine}, h.store, h.opts)
	w := &filesWriterFake{}
	h.engine.HandleExecInput(w.handle)
	h.apply(d)
	return h, w
}

func rvHolder(h *harness, name string) *dockerx.Container {
	for _, c := range h.ours(name) {
		if c.Role == dockerx.RoleHolder {
			c := c
			return &c
		}
	}
	return nil
}

func fileOf(p helperapi.FilesPayload, vol, path string) (string, bool) {
	for _, v := range p.Volumes {
		if v.Name != vol {
			continue
		}
		for _, f := range v.Files {
			if f.Path == path {
				return string(f.Data), true
			}
		}
	}
	return "", false
}

// TestFilesConfigMapUpdateAndDelete: a change reaches the running pod's
// files within a resync (the kubelet refreshes configMap volumes on its
// sync); a deletion keeps the last content, as the kubelet does.
func TestFilesConfigMapUpdateAndDelete(t *testing.T) {
	d := configMapVolumeDeployment("web", "app")
	d.Metadata.Namespace = "team"
	h, w := filesHarness(t)
	h.applyBundle([]string{"team"})
	applyConfigMap(t, h.store, "team", "app", map[string]string{"k": "v1"})
	applyConfigMap(t, h.store, "", "app", map[string]string{"k": "default-ns"})
	h.applyBundle(nil, d)
	h.start()
	var hid string
	h.waitFor("v1 written", func() bool {
		c := holderOfIn(h, "team", "web")
		if c == nil {
			return false
		}
		hid = c.ID
		p, ok := w.get(hid)
		s, _ := fileOf(p, "cfg", "k")
		return ok && s == "v1"
	})
	applyConfigMap(t, h.store, "team", "app", map[string]string{"k": "v2"})
	h.waitFor("v2 written", func() bool {
		p, _ := w.get(hid)
		s, _ := fileOf(p, "cfg", "k")
		return s == "v2"
	})
	if err := h.store.DeleteConfigMap("team", "app"); err != nil {
		t.Logf("delete: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	p, _ := w.get(hid)
	if s, _ := fileOf(p, "cfg", "k"); s != "v2" {
		t.Errorf("after the ConfigMap's deletion the pod's file is %q, want the last content v2", s)
	}
}

func holderOfIn(h *harness, ns, name string) *dockerx.Container {
	for _, c := range h.in(ns, name) {
		if c.Role == dockerx.RoleHolder {
			c := c
			return &c
		}
	}
	return nil
}

// TestFilesDownwardAPILabelsHaveTemplateHash: a Deployment's pod carries
// the pod-template-hash label; the downward API shows it, in env and in a
// downwardAPI volume alike (Kubernetes). dockctl's volume must, as its env
// does.
func TestFilesDownwardAPILabelsHaveTemplateHash(t *testing.T) {
	d := testDeployment("web", 1, "1")
	ps := &d.Spec.Template.Spec
	ps.Volumes = []manifests.Volume{{Name: "info", DownwardAPI: &manifests.DownwardAPIVolumeSource{Items: []manifests.DownwardAPIVolumeFile{
		{Path: "labels", FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		{Path: "hash", FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.labels['pod-template-hash']"}},
	}}}}
	ps.Containers[0].VolumeMounts = []manifests.VolumeMount{{Name: "info", MountPath: "/etc/podinfo"}}
	manifests.SetDefaults(d)
	hash := manifests.TemplateHash(&d.Spec.Template)
	h, w := hostFilesHarness(t, d)
	h.start()
	var p helperapi.FilesPayload
	h.waitFor("files written", func() bool {
		c := rvHolder(h, "web")
		if c == nil {
			return false
		}
		var ok bool
		p, ok = w.get(c.ID)
		return ok
	})
	labels, _ := fileOf(p, "info", "labels")
	got, _ := fileOf(p, "info", "hash")
	if got != hash || !strings.Contains(labels, `pod-template-hash="`+hash+`"`) {
		t.Errorf("downwardAPI volume: hash file %q, labels file %q; want pod-template-hash %s (as env fieldRef gives it)", got, labels, hash)
	}
}

// TestFilesDownwardAPIResourceDefaultsToHost: a resourceFieldRef to a
// limit the container does not set reports the node's allocatable
// capacity (Kubernetes; dockctl's env does so from HostInfo). The volume's
// file must too, not read 0.
func TestFilesDownwardAPIResourceDefaultsToHost(t *testing.T) {
	d := testDeployment("web", 1, "1")
	ps := &d.Spec.Template.Spec
	ps.Volumes = []manifests.Volume{{Name: "info", DownwardAPI: &manifests.DownwardAPIVolumeSource{Items: []manifests.DownwardAPIVolumeFile{
		{Path: "mem", ResourceFieldRef: &manifests.ResourceFieldSelector{ContainerName: "web", Resource: "limits.memory"}},
		{Path: "cpu", ResourceFieldRef: &manifests.ResourceFieldSelector{ContainerName: "web", Resource: "limits.cpu"}},
	}}}}
	ps.Containers[0].VolumeMounts = []manifests.VolumeMount{{Name: "info", MountPath: "/etc/podinfo"}}
	manifests.SetDefaults(d)
	h, w := hostFilesHarness(t, d)
	h.start()
	var p helperapi.FilesPayload
	h.waitFor("files written", func() bool {
		c := rvHolder(h, "web")
		if c == nil {
			return false
		}
		var ok bool
		p, ok = w.get(c.ID)
		return ok
	})
	mem, _ := fileOf(p, "info", "mem")
	cpu, _ := fileOf(p, "info", "cpu")
	if mem != strconv.FormatInt(8<<30, 10) || cpu != "4" {
		t.Errorf("downwardAPI limits without limits: mem %q cpu %q; want the host's %d and 4", mem, cpu, int64(8<<30))
	}
}

// TestFilesMemoryForgetsGonePods: the controller's memory of written
// payload hashes must not keep an entry per pod that ever existed
// (filesMemory.forget): after rollouts only the live pods are remembered.
func TestFilesMemoryForgetsGonePods(t *testing.T) {
	h, _ := filesHarness(t)
	applyConfigMap(t, h.store, "", "app", map[string]string{"k": "v"})
	h.start()
	for i := 0; i < 4; i++ {
		d := configMapVolumeDeployment("web", "app")
		d.Spec.Template.Spec.Containers[0].Env[0].Value = strconv.Itoa(i)
		h.apply(d)
		hash := manifests.TemplateHash(&d.Spec.Template)
		h.waitFor("the rollout to finish", func() bool {
			cs := h.ours("web")
			if len(cs) != 2 {
				return false
			}
			for _, c := range cs {
				if c.TemplateHash != hash || c.State != dockerx.StateRunning {
					return false
				}
			}
			return true
		})
	}
	time.Sleep(300 * time.Millisecond)
	n := h.ctrl.files.Total()
	if n != 1 {
		t.Errorf("the files memory holds %d pods after 4 rollouts of a 1-replica deployment; want 1 (the live pod)", n)
	}
}

// TestFilesDeletedConfigMapAfterRestartKeepsHealing: a running pod whose
// ConfigMap is deleted keeps its files (the kubelet keeps the last
// content) and keeps being repaired. After a controller restart, the same
// pod whose only container was `docker rm -f`'d must not be taken for one
// that never got its files and blocked for ever: its holder still holds
// the files.
func TestFilesDeletedConfigMapAfterRestartKeepsHealing(t *testing.T) {
	h, _ := filesHarness(t)
	applyConfigMap(t, h.store, "", "app", map[string]string{"k": "v"})
	h.apply(configMapVolumeDeployment("web", "app"))
	h.start()
	h.waitFor("the pod running", func() bool {
		cs := h.ours("web")
		return len(cs) == 2 && cs[0].State == dockerx.StateRunning && cs[1].State == dockerx.StateRunning
	})
	h.stop()
	if err := h.store.DeleteConfigMap("", "app"); err != nil {
		t.Fatal(err)
	}
	var holderID string
	for _, c := range h.ours("web") {
		if c.Role == dockerx.RoleHolder {
			holderID = c.ID
		} else if err := h.engine.Remove(c.ID); err != nil {
			t.Fatal(err)
		}
	}
	h.ctrl = New(h.engine, h.store, h.opts) // a restarted controller
	h.start()
	time.Sleep(500 * time.Millisecond)
	var member *dockerx.Container
	for _, c := range h.ours("web") {
		if c.Role != dockerx.RoleHolder {
			c := c
			member = &c
		}
	}
	if member == nil {
		t.Errorf("the pod (holder %s still running with its files) is not repaired after a controller restart; ReplicaFailure: %s",
			holderID[:12], h.replicaFailure("web"))
	}
}

// TestFilesRewrittenAfterEventGap: what happened while the event stream
// was down went unseen — a daemon restart restarts a holder with a fresh,
// empty tmpfs and no event need say so — so every pod's files are written
// once more after a gap, and only then. The subscription's first message
// is a gap too, and nothing orders it before the first sync (Run does not
// wait for it): a write made before it is rightly made again. So the
// deployment is applied only once that first gap has been handled.
func TestFilesRewrittenAfterEventGap(t *testing.T) {
	h, w := filesHarness(t)
	gaps := &gapRelay{Engine: h.engine, handled: make(chan struct{})}
	h.ctrl = New(gaps, h.store, h.opts)
	applyConfigMap(t, h.store, "", "app", map[string]string{"k": "v"})
	h.start()
	gaps.waitFirstHandled(t)
	h.apply(configMapVolumeDeployment("web", "app"))
	writes := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.writes
	}
	h.waitFor("the files written", func() bool { return writes() == 1 })
	time.Sleep(300 * time.Millisecond) // several resyncs: no write more
	if n := writes(); n != 1 {
		t.Fatalf("%d writes of a converged pod", n)
	}
	h.engine.DaemonDown()
	time.Sleep(100 * time.Millisecond)
	h.engine.DaemonUp()
	h.waitFor("the files written again after the gap", func() bool { return writes() == 2 })
	time.Sleep(300 * time.Millisecond)
	if n := writes(); n != 2 {
		t.Errorf("%d writes after one gap, want 2", n)
	}
}

// gapRelay hands the fake engine's events to the controller one at a time
// and tells when the controller has handled the first one (the
// subscription's first gap): Run handles an event before it receives the
// next, so once a marker event sent after the gap is received, the gap
// has been handled. The marker is a port-forward session's event, which
// the controller maps to nothing.
type gapRelay struct {
	*dockerfake.Engine
	handled chan struct{}
}

func (g *gapRelay) Events(ctx context.Context, instance string) <-chan dockerx.Event {
	in := g.Engine.Events(ctx, instance)
	out := make(chan dockerx.Event)
	handled := g.handled
	go func() {
		defer close(out)
		first := true
		for ev := range in {
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
			if first {
				first = false
				select {
				case out <- dockerx.Event{Role: dockerx.RolePortForward, Action: "start", Time: ev.Time}:
					close(handled)
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

func (g *gapRelay) waitFirstHandled(t *testing.T) {
	t.Helper()
	select {
	case <-g.handled:
	case <-time.After(30 * time.Second):
		t.Fatal("the controller never handled the event subscription's first gap")
	}
}
