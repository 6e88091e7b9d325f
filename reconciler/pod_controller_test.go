package reconciler

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
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
	// A short resync lets the sweep collect the helper image at the end.
	h := newHarness(t, Options{ResyncPeriod: 50 * time.Millisecond})
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
	firstUID := holderOf(h.ours("web")).PodUID
	if vs := h.engine.Volumes(); len(vs) != 1 || vs[0].PodUID != firstUID || vs[0].Role != dockerx.RoleEmptyDir {
		t.Fatalf("volumes %+v, want the pod's one emptyDir", vs)
	}
	if imgs := h.engine.HelperImages(); len(imgs) != 1 {
		t.Fatalf("helper images %+v, want the holder's", imgs)
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
		rec, err := h.store.Get("", "web")
		if err != nil {
			return false
		}
		st, _ := h.store.ReadStatus("", "web")
		counts, _ := View(rec, st, nil, h.ours("web"), time.Now())
		pods := Pods(rec, st, nil, h.ours("web"), time.Now())
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

	h.waitFor("the replaced pod's volume collected", func() bool {
		vs := h.engine.Volumes()
		return len(vs) == 1 && vs[0].PodUID != firstUID
	})

	h.apply(testPodDeployment("web", 0))
	h.waitFor("scaled to zero, volumes collected", func() bool { return len(h.ours("web")) == 0 && len(h.engine.Volumes()) == 0 })
	if err := h.store.Delete("", "web"); err != nil {
		t.Fatal(err)
	}
	h.waitFor("helper image collected", func() bool { return len(h.engine.HelperImages()) == 0 })
}

// TestPodStopOrder scales a pod with a native sidecar to zero and checks
// the order of the stop signals (docs/design.md §8): app containers first, then
// the sidecar, then the holder.
func TestPodStopOrder(t *testing.T) {
	h := newHarness(t, Options{})
	d := testPodDeployment("web", 1)
	d.Spec.Template.Spec.InitContainers = []manifests.Container{{Name: "proxy", Image: testImage, RestartPolicy: "Always"}}
	manifests.SetDefaults(d)
	var mu sync.Mutex
	var order []string
	h.engine.IgnoresStop = func(c dockerx.Container) bool {
		mu.Lock()
		defer mu.Unlock()
		name := c.ContainerName
		if c.Role == dockerx.RoleHolder {
			name = "holder"
		}
		order = append(order, name)
		return false
	}
	h.apply(d)
	h.start()
	h.waitFor("pod running", func() bool {
		cs := h.ours("web")
		for _, n := range []string{"proxy", "app", "log"} {
			if m := member(cs, n); m == nil || m.State != dockerx.StateRunning {
				return false
			}
		}
		return true
	})
	d = d.DeepCopy()
	zero := int32(0)
	d.Spec.Replicas = &zero
	h.apply(d)
	h.waitFor("pod gone", func() bool { return len(h.ours("web")) == 0 })
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 4 || order[3] != "holder" || order[2] != "proxy" || !(order[0] == "app" && order[1] == "log" || order[0] == "log" && order[1] == "app") {
		t.Fatalf("stop order %v, want app and log, then proxy, then holder", order)
	}
}

// TestPodRollingUpdate rolls a deployment of two-container pods to a new
// template: every pod is replaced by one of the new revision, and the
// rollout never runs more pods than replicas + maxSurge.
func TestPodRollingUpdate(t *testing.T) {
	h := newHarness(t, Options{})
	d := testPodDeployment("web", 3)
	d.Spec.Template.Spec.InitContainers = nil
	manifests.SetDefaults(d)
	h.apply(d)
	h.start()
	pods := func() map[string]string { // holder name → hash, of running holders
		out := map[string]string{}
		for _, c := range h.ours("web") {
			if c.Role == dockerx.RoleHolder {
				out[c.Name] = c.TemplateHash
			}
		}
		return out
	}
	oldHash := manifests.TemplateHash(&d.Spec.Template)
	h.waitFor("three pods", func() bool {
		n := 0
		for _, c := range h.ours("web") {
			if c.State == dockerx.StateRunning && c.ContainerName == "log" {
				n++
			}
		}
		return n == 3
	})
	var peak atomic.Int32
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if n := int32(len(pods())); n > peak.Load() {
				peak.Store(n)
			}
		}
	}()
	d = d.DeepCopy()
	d.Spec.Template.Spec.Containers[1].Env = []manifests.EnvVar{{Name: "V", Value: "2"}}
	h.apply(d)
	newHash := manifests.TemplateHash(&d.Spec.Template)
	h.waitFor("three pods of the new revision", func() bool {
		ps := pods()
		n := 0
		for _, hash := range ps {
			if hash != newHash {
				return false
			}
			n++
		}
		running := 0
		for _, c := range h.ours("web") {
			if c.TemplateHash == oldHash {
				return false
			}
			if c.State == dockerx.StateRunning && c.ContainerName == "log" {
				running++
			}
		}
		return n == 3 && running == 3
	})
	close(stop)
	wg.Wait()
	// maxSurge 25% of 3 rounds up to 1.
	if p := peak.Load(); p > 4 {
		t.Fatalf("peak of %d pods during the rollout, want at most 4", p)
	}
}

// TestCompletedInitContainerIsNoCrash: an init container that exits 0 at
// once did its job: it is no crash, shows no backoff, and counts no
// restart, in the controller's memory as in `get containers`.
func TestCompletedInitContainerIsNoCrash(t *testing.T) {
	h := newHarness(t, Options{})
	d := testPodDeployment("web", 1)
	h.apply(d)
	h.start()
	for _, name := range []string{"migrate", "seed"} {
		h.waitFor(name+" running", func() bool {
			m := member(h.ours("web"), name)
			return m != nil && m.State == dockerx.StateRunning
		})
		if err := h.engine.Exit(member(h.ours("web"), name).ID, 0); err != nil {
			t.Fatal(err)
		}
	}
	h.waitFor("app running", func() bool {
		m := member(h.ours("web"), "app")
		return m != nil && m.State == dockerx.StateRunning
	})
	rec, err := h.store.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	st, _ := h.store.ReadStatus("", "web")
	_, views := View(rec, st, nil, h.ours("web"), time.Now())
	for _, name := range []string{"migrate", "seed"} {
		m := member(h.ours("web"), name)
		if v := views[m.ID]; v.CrashLoopBackOff || v.Restarts != 0 {
			t.Errorf("completed init container %s: %+v, want no backoff and no restart", name, v)
		}
	}
}

// TestHolderStartFailureIsReported: a holder Docker refuses to start (its
// host port taken, say) is retried with the crash backoff, reported as
// ReplicaFailure naming it, and no member is created beside it.
func TestHolderStartFailureIsReported(t *testing.T) {
	h := newHarness(t, Options{})
	var tries atomic.Int32
	h.engine.OnStart = func(id string) error {
		for _, c := range h.engine.Snapshot() {
			if c.ID == id && c.Role == dockerx.RoleHolder {
				tries.Add(1)
				return fmt.Errorf("driver failed programming external connectivity: port is already allocated")
			}
		}
		return nil
	}
	h.apply(testPodDeployment("web", 1))
	h.start()
	h.waitFor("ReplicaFailure naming the holder", func() bool {
		return h.failureSays("web", "cannot start", "port is already allocated")
	})
	h.waitFor("the holder's start retried", func() bool { return tries.Load() >= 3 })
	for _, c := range h.ours("web") {
		if c.Role != dockerx.RoleHolder {
			t.Fatalf("member %s created beside a holder that does not run", c.Name)
		}
	}
}

// TestPodDeleteCollectsImage deletes a deployment of pods, with and
// without emptyDir volumes, and no periodic resync to help: the syncs of
// the deletion remove the pods and their volumes, and the last one brings
// the sweep that removes the holder image, which no sweep saw in use.
func TestPodDeleteCollectsImage(t *testing.T) {
	for _, volumes := range []bool{false, true} {
		t.Run(fmt.Sprintf("volumes=%v", volumes), func(t *testing.T) {
			h := newHarness(t, Options{}) // resync: an hour
			d := testPodDeployment("web", 2)
			d.Spec.Template.Spec.InitContainers = nil
			if !volumes {
				d.Spec.Template.Spec.Volumes = nil
				for i := range d.Spec.Template.Spec.Containers {
					d.Spec.Template.Spec.Containers[i].VolumeMounts = nil
				}
			}
			manifests.SetDefaults(d)
			h.apply(d)
			h.start()
			want := 0
			if volumes {
				want = 2
			}
			h.waitFor("two pods", func() bool {
				n := 0
				for _, c := range h.ours("web") {
					if c.State == dockerx.StateRunning && c.ContainerName == "log" {
						n++
					}
				}
				return n == 2 && len(h.engine.Volumes()) == want && len(h.engine.HelperImages()) == 1
			})
			if err := h.store.Delete("", "web"); err != nil {
				t.Fatal(err)
			}
			h.waitFor("containers, volumes and the helper image gone", func() bool {
				return len(h.ours("web")) == 0 && len(h.engine.Volumes()) == 0 && len(h.engine.HelperImages()) == 0
			})
		})
	}
}

// TestPodMemberNameTakenConverges: a container this deployment does not
// own (made by hand, no labels) holds the name of the first pod's first
// member, i_web-HASH-0.migrate. The holder i_web-HASH-0 is created, the
// member's create fails with a name conflict, and nameConflict blocks the
// MEMBER's name; the planner must heed it (BlockedNames is consulted for a
// pod's base name in freeOrdinals) rather than plan the same member create
// again at every sync, which would leave the pod never running and the
// deployment never converging. A single-container replica with the same
// conflict moves to the next free ordinal.
func TestPodMemberNameTakenConverges(t *testing.T) {
	h := newHarness(t, Options{})
	d := testPodDeployment("web", 1)
	hash := manifests.TemplateHash(&d.Spec.Template)
	taken := dockerx.MemberName(dockerx.ContainerName("i", "", "web", hash, 0), "migrate")
	if _, err := h.engine.Add(dockerx.Container{Name: taken, State: dockerx.StateRunning, Labels: map[string]string{}}, ""); err != nil {
		t.Fatal(err)
	}
	h.apply(d)
	h.start()
	h.waitFor("a pod whose first init container runs", func() bool {
		m := member(h.ours("web"), "migrate")
		return m != nil && m.State == dockerx.StateRunning
	})
}

// TestPodHolderRestartRecreatesStrandedPod: the holder is restarted by
// hand (docker restart, or stop then start between two lists). Docker
// gives the restarted holder a NEW network namespace; the running members
// stay in the old one, cut off from the pod's published ports and from
// any sidecar started later (dockerfake models it: Stranded). Seeing the
// holder and every member running, the controller would plan nothing and
// the pod would read Running and ready, yet be unreachable, forever. The
// kubelet treats a changed sandbox as a dead one (computePodActions:
// podSandboxChanged → kill the pod and create it again); the contract says
// a pod whose holder is gone is re-created as a whole. The holder's die
// event dooms its pod (and, without the event, Docker's uptimes do:
// TestStrandedByUptime).
func TestPodHolderRestartRecreatesStrandedPod(t *testing.T) {
	h := newHarness(t, Options{})
	d := testPodDeployment("web", 1)
	d.Spec.Template.Spec.InitContainers = nil
	manifests.SetDefaults(d)
	h.apply(d)
	h.start()
	h.waitFor("pod running", func() bool {
		cs := h.ours("web")
		a, l := member(cs, "app"), member(cs, "log")
		return a != nil && l != nil && a.State == dockerx.StateRunning && l.State == dockerx.StateRunning
	})
	holder := holderOf(h.ours("web")).ID
	// docker restart: die, then start again at once (before any sync lists).
	if err := h.engine.Kill(holder); err != nil {
		t.Fatal(err)
	}
	if err := h.engine.StartContainer(t.Context(), holder); err != nil {
		t.Fatal(err)
	}
	h.waitFor("no member left in the holder's previous network namespace", func() bool {
		for _, c := range h.ours("web") {
			if h.engine.Stranded(c.ID) {
				return false
			}
		}
		return true
	})
}

// TestPodVolumePrunedDuringCreateIsNotLeaked: the pod's emptyDir volume is
// removed between its create and its holder's (a user's `docker volume
// prune`, which on Docker 20.10 removes every volume no container mounts,
// named ones included: a freshly created pod volume is one). The holder's
// create then makes Docker create a volume of that name on its own,
// unlabelled (its mount carries only VolumeOptions{NoCopy}: dockerx
// podVolumeMount), and the pod runs on it - a plain disk volume even for
// medium Memory. Once the pod and the deployment are gone, it must still
// be collected (collectVolumes and the sweep see volumes with the instance
// label): no holder, volume or image may be left behind after delete.
func TestPodVolumePrunedDuringCreateIsNotLeaked(t *testing.T) {
	h := newHarness(t, Options{ResyncPeriod: 50 * time.Millisecond})
	var once sync.Once
	h.engine.OnCreate = func(req dockerx.CreateRequest) error {
		if req.Role == dockerx.RoleHolder && req.Pod != nil {
			once.Do(func() {
				for _, v := range h.engine.Volumes() {
					if v.PodUID == req.Pod.UID {
						_ = h.engine.RemoveVolume(context.Background(), v.Name) // docker volume prune
					}
				}
			})
		}
		return nil
	}
	d := testPodDeployment("web", 1)
	d.Spec.Template.Spec.InitContainers = nil
	manifests.SetDefaults(d)
	h.apply(d)
	h.start()
	h.waitFor("pod running", func() bool {
		a := member(h.ours("web"), "app")
		return a != nil && a.State == dockerx.StateRunning
	})
	if err := h.store.Delete("", "web"); err != nil {
		t.Fatal(err)
	}
	h.waitFor("deployment gone", func() bool { return len(h.ours("web")) == 0 })
	deadline := time.Now().Add(30 * time.Second)
	for len(h.engine.Volumes()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("volumes left behind after delete: %+v", h.engine.Volumes())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
