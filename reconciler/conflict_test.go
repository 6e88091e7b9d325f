package reconciler

import (
	"testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// The controller running as a replica of a deployment it manages (dockctl
// deployed by dockctl) ignores its own container, so the planner wants a
// replica in its place, under the first free name - its own. The create
// conflicts, and the name conflict, finding the holder labelled as a
// replica of this deployment, must not "adopt" it: nothing would be
// created, the next sync would do the same, and the deployment would stay
// a replica short forever. Its own container's name must be skipped like
// any name held by a container the deployment does not manage.
func TestControllerDoesNotAdoptItselfOnNameConflict(t *testing.T) {
	h := newHarness(t, Options{})
	d := testDeployment("web", 1, "x")
	hash := manifests.TemplateHash(&d.Spec.Template)
	self, err := h.engine.Add(dockerx.Container{Name: dockerx.ContainerName("i", "", "web", hash, 0), State: dockerx.StateRunning,
		Labels: map[string]string{dockerx.LabelInstance: "i", dockerx.LabelDeployment: "web", dockerx.LabelTemplateHash: hash}}, "")
	if err != nil {
		t.Fatal(err)
	}
	h.ctrl.opts.SelfID = self[:12]
	h.apply(d)
	h.start()
	h.waitFor("one replica besides the controller", func() bool { return len(h.ours("web")) == 2 })
	if !hasID(h.engine.Snapshot(), self) {
		t.Fatal("the controller removed its own container")
	}
}
