package reconciler

import (
	"testing"

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
