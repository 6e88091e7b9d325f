package reconciler

import (
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

// runAsNonRoot is checked against the image's user before anything of the
// revision is created (kubelet's verifyRunAsNonRoot): a root image is a
// ReplicaFailure worded as kubelet's, and no container — not the holder,
// not the other container — exists; once the image runs as a non-root
// uid, the retry creates the pod.
func TestRunAsNonRootRefusesARootImage(t *testing.T) {
	h := newHarness(t, Options{})
	d := testDeployment("web", 2, "v1")
	yes := true
	ps := &d.Spec.Template.Spec
	ps.SecurityContext = &manifests.PodSecurityContext{RunAsNonRoot: &yes}
	ps.Containers = append(ps.Containers, manifests.Container{Name: "side", Image: testImage})
	h.apply(d)
	h.start()
	h.waitFor("the runAsNonRoot refusal", func() bool {
		c := h.condition("web", manifests.ConditionReplicaFailure)
		return c != nil && c.Reason == ReasonCreateContainerConfigError &&
			strings.Contains(c.Message, "container has runAsNonRoot and image will run as root") &&
			strings.Contains(c.Message, "container: web")
	})
	if cs := h.ours("web"); len(cs) != 0 {
		t.Fatalf("created despite the refusal: %s", summary(cs))
	}
	if n := h.engine.Calls()["create"]; n != 0 {
		t.Fatalf("%d creates despite the refusal", n)
	}

	h.engine.SetImageUser(testImage, "65532:65532")
	h.waitFor("the pods once the image runs as non-root", func() bool {
		n := 0
		for _, c := range h.ours("web") {
			if c.Role == "replica" && c.State == "running" {
				n++
			}
		}
		return n == 4 // two pods of two containers
	})
	h.waitFor("the condition to clear", func() bool {
		return h.condition("web", manifests.ConditionReplicaFailure) == nil
	})
}

// A non-numeric image user cannot be verified (kubelet refuses it too);
// runAsUser in the template settles it without the image.
func TestRunAsNonRootNonNumericUser(t *testing.T) {
	h := newHarness(t, Options{})
	h.engine.SetImageUser(testImage, "nginx")
	yes := true
	d := testDeployment("web", 1, "v1")
	d.Spec.Template.Spec.Containers[0].SecurityContext = &manifests.SecurityContext{RunAsNonRoot: &yes}
	h.apply(d)
	h.start()
	h.waitFor("the refusal", func() bool {
		c := h.condition("web", manifests.ConditionReplicaFailure)
		return c != nil && c.Reason == ReasonCreateContainerConfigError &&
			strings.Contains(c.Message, "image has non-numeric user (nginx), cannot verify user is non-root")
	})
	uid := int64(1000)
	d = testDeployment("web", 1, "v1")
	d.Spec.Template.Spec.Containers[0].SecurityContext = &manifests.SecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid}
	h.apply(d)
	h.waitReplicas("web", 1)
}

// Only the refused revision waits: an old revision keeps healing while a
// new one is refused by runAsNonRoot, as while its image cannot be pulled.
func TestRunAsNonRootRefusalKeepsOldRevisionHealing(t *testing.T) {
	h := newHarness(t, Options{})
	h.apply(testDeployment("web", 2, "v1"))
	h.start()
	old := h.waitReplicas("web", 2)

	yes := true
	next := testDeployment("web", 2, "v2")
	next.Spec.Template.Spec.Containers[0].SecurityContext = &manifests.SecurityContext{RunAsNonRoot: &yes}
	h.apply(next)
	h.waitFor("the new revision's refusal", func() bool {
		c := h.condition("web", manifests.ConditionReplicaFailure)
		return c != nil && c.Reason == ReasonCreateContainerConfigError
	})
	if err := h.engine.RemoveContainer(t.Context(), old[0].ID); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the old replica to be recreated", func() bool {
		n := 0
		for _, c := range h.ours("web") {
			if c.TemplateHash == old[0].TemplateHash && c.State == "running" && c.ID != old[0].ID {
				n++
			}
		}
		return n == 2
	})
	for _, c := range h.ours("web") {
		if c.TemplateHash != old[0].TemplateHash {
			t.Fatalf("a container of the refused revision exists: %s", summary(h.ours("web")))
		}
	}
}
