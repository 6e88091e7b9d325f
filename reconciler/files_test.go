package reconciler

import (
	"strings"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
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
		h.ctrl.files.mu.Lock()
		defer h.ctrl.files.mu.Unlock()
		return len(h.ctrl.files.written[store.Key("", "web")])
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
	h.waitFor("the missing ConfigMap reported on the pod", func() bool { return m.has(want, "") })
	if m.has("", `volume "a"`) {
		t.Errorf("volume a, which updates, is reported:\n%s", m.dump())
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
