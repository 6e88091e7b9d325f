package reconciler

import (
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// testPodDeployment is a deployment whose pod has two init containers
// (migrate, seed), two app containers (app, log) sharing an emptyDir.
func testPodDeployment(name string, replicas int32) *manifests.Deployment {
	d := testDeployment(name, replicas, "1")
	ps := &d.Spec.Template.Spec
	mount := []manifests.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	ps.Volumes = []manifests.Volume{{Name: "shared", EmptyDir: &manifests.EmptyDirVolumeSource{}}}
	ps.InitContainers = []manifests.Container{{Name: "migrate", Image: testImage, VolumeMounts: mount}, {Name: "seed", Image: testImage, VolumeMounts: mount}}
	ps.Containers = []manifests.Container{{Name: "app", Image: testImage, VolumeMounts: mount}, {Name: "log", Image: testImage, VolumeMounts: mount}}
	manifests.SetDefaults(d)
	return d
}

// member returns the container of pod member cname, or nil.
func member(cs []dockerx.Container, cname string) *dockerx.Container {
	for i := range cs {
		if cs[i].ContainerName == cname && cs[i].Role == dockerx.RoleReplica {
			return &cs[i]
		}
	}
	return nil
}

func holderOf(cs []dockerx.Container) *dockerx.Container {
	for i := range cs {
		if cs[i].Role == dockerx.RoleHolder {
			return &cs[i]
		}
	}
	return nil
}

// TestPodLifecycle drives one pod through the controller and the fake
// engine: holder first, init containers one at a time to a successful exit
// (a failed one is run again), app containers after them; a crashed member
// is started again and a removed one re-created without touching its
// siblings; a pod whose holder is removed is replaced as a whole; scaling to
// zero stops everything.
func TestPodLifecycle(t *testing.T) {
	h := newHarness(t, Options{})
	h.apply(testPodDeployment("web", 1))
	h.start()
	state := func(cname, st string) func() bool {
		return func() bool {
			m := member(h.ours("web"), cname)
			return m != nil && m.State == st
		}
	}
	h.waitFor("holder and first init container running", func() bool {
		cs := h.ours("web")
		hd := holderOf(cs)
		return hd != nil && hd.State == dockerx.StateRunning && member(cs, "migrate") != nil && member(cs, "migrate").State == dockerx.StateRunning
	})
	if m := member(h.ours("web"), "seed"); m != nil {
		t.Fatalf("seed created while migrate runs: %+v", m)
	}
	if err := h.engine.Exit(member(h.ours("web"), "migrate").ID, 0); err != nil {
		t.Fatal(err)
	}
	h.waitFor("seed running after migrate succeeded", state("seed", dockerx.StateRunning))
	if member(h.ours("web"), "app") != nil {
		t.Fatal("app container created before the init containers completed")
	}
	seed := member(h.ours("web"), "seed").ID
	if err := h.engine.Exit(seed, 3); err != nil {
		t.Fatal(err)
	}
	h.waitFor("failed init container run again", func() bool {
		m := member(h.ours("web"), "seed")
		return m != nil && m.ID == seed && m.State == dockerx.StateRunning && h.engine.Calls()["start"] >= 4
	})
	if member(h.ours("web"), "app") != nil {
		t.Fatal("app container created after a failed init container")
	}
	if err := h.engine.Exit(seed, 0); err != nil {
		t.Fatal(err)
	}
	h.waitFor("app containers running", func() bool {
		return state("app", dockerx.StateRunning)() && state("log", dockerx.StateRunning)()
	})
	h.waitFor("one ready replica", func() bool {
		rec, err := h.store.Get("web")
		if err != nil {
			return false
		}
		st, _ := h.store.ReadStatus("web")
		counts, _ := View(rec, st, h.ours("web"), time.Now())
		pods := Pods(rec, st, h.ours("web"), time.Now())
		return counts.ReadyReplicas == 1 && counts.Replicas == 1 && len(pods) == 1 && pods[0].Status == "Running" &&
			pods[0].Ready == 2 && pods[0].Total == 2
	})

	cs := h.ours("web")
	holder, app, log := holderOf(cs).ID, member(cs, "app").ID, member(cs, "log").ID
	if err := h.engine.Kill(log); err != nil {
		t.Fatal(err)
	}
	h.waitFor("crashed member started again in place", func() bool {
		m := member(h.ours("web"), "log")
		return m != nil && m.ID == log && m.State == dockerx.StateRunning
	})
	if err := h.engine.Remove(app); err != nil {
		t.Fatal(err)
	}
	h.waitFor("removed member re-created", func() bool {
		m := member(h.ours("web"), "app")
		return m != nil && m.ID != app && m.State == dockerx.StateRunning
	})
	cs = h.ours("web")
	if holderOf(cs).ID != holder || member(cs, "log").ID != log {
		t.Fatalf("repairing one member touched its siblings: %+v", cs)
	}
	if m := member(cs, "migrate"); m == nil || m.State != dockerx.StateExited {
		t.Fatalf("init container ran again during a repair: %+v", m)
	}

	if err := h.engine.Remove(holder); err != nil {
		t.Fatal(err)
	}
	h.waitFor("pod replaced after its holder was removed", func() bool {
		cs := h.ours("web")
		hd := holderOf(cs)
		if hd == nil || hd.ID == holder {
			return false
		}
		for _, c := range cs {
			if c.ID == log {
				return false // the old pod's members are gone
			}
		}
		return true
	})

	h.apply(testPodDeployment("web", 0))
	h.waitFor("scaled to zero", func() bool { return len(h.ours("web")) == 0 })
}
