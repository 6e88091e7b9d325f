package reconciler

import (
	"testing"

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
	taken := dockerx.MemberName(dockerx.ContainerName("i", "web", hash, 0), "migrate")
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
// (unit) or podplan.go compares a member's start with its holder's.
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
	if err := h.engine.KillSilently(holder); err != nil {
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
