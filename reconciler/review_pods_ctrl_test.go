package reconciler

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// TestReviewPodMemberNameTakenConverges: a container this deployment does
// not own (made by hand, no labels) holds the name of the first pod's
// first member, i_web-HASH-0.migrate. The holder i_web-HASH-0 is created,
// the member's create fails with a name conflict, and nameConflict blocks
// the MEMBER's name — but the planner only consults BlockedNames for a
// pod's base name (plan.go, freeOrdinals), and planPod plans the same
// member create again at every sync (podplan.go, `case m == nil`). The pod
// never runs; the deployment never converges. For a single-container
// replica the same conflict moves it to the next free ordinal.
func TestReviewPodMemberNameTakenConverges(t *testing.T) {
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

// TestReviewPodHolderRestartedStrandsMembers: the holder is restarted by
// hand (docker restart, or stop then start between two lists). Docker
// gives the restarted holder a NEW network namespace; the running members
// stay in the old one, cut off from the pod's published ports and from
// any sidecar started later (dockerfake models it: Stranded). The
// controller sees the holder and every member running and plans nothing:
// the pod reads Running and ready, but is unreachable, forever. The
// kubelet treats a changed sandbox as a dead one (computePodActions:
// podSandboxChanged → kill the pod and create it again); the contract says
// a pod whose holder is gone is re-created as a whole. Nothing in pod.go
// (unit) or podplan.go compared a member's start with its holder's; now the
// holder's die event dooms its pod (and, without the event, Docker's
// uptimes do: TestStrandedByUptime).
func TestReviewPodHolderRestartedStrandsMembers(t *testing.T) {
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

// TestReviewPodVolumePrunedDuringCreateIsNotLeaked: the pod's emptyDir
// volume is removed between its create and its holder's (a user's `docker
// volume prune`, which on Docker 20.10 removes every volume no container
// mounts, named ones included: a freshly created pod volume is one). The
// holder's create then makes Docker create a volume of that name on its
// own, unlabelled (its mount carries only VolumeOptions{NoCopy}:
// dockerx/convert.go, podVolumeMount), the pod runs on it — a plain disk
// volume even for medium Memory — and, once the pod and the deployment are
// gone, nothing collects it: collectVolumes and the sweep only see volumes
// with the instance label. The host is not left clean (issue 9: "no
// holder, volume or image behind after delete").
func TestReviewPodVolumePrunedDuringCreateIsNotLeaked(t *testing.T) {
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
