package reconciler

import (
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

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
	// Starts are retried with backoff, each refused: never running.
	time.Sleep(300 * time.Millisecond)
	if m := member(h.ours("web"), "web"); m == nil || m.State == dockerx.StateRunning {
		t.Errorf("the member binding a subPath out of its volume was started again: %+v", m)
	}
}
