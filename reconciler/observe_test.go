package reconciler

import (
	"testing"

	"github.com/dockctl/dockctl/dockerx"
)

// TestSweepLeavesPodsOfOtherOwners: a container of a pod whose owner is
// no Deployment (io.dockctl.owner-kind: the pod runtime's Sync runs it,
// docs/design.md §17) is no Deployment's orphan: the sweep neither
// reports nor prunes it, while it prunes a container naming a deployment
// this state directory never knew.
func TestSweepLeavesPodsOfOtherOwners(t *testing.T) {
	h := newHarness(t, Options{PruneOrphans: true})
	h.engine.HoldRemovals(true) // a pruned container stays, `removing`
	other, _ := h.engine.Add(dockerx.Container{Name: dockerx.PodContainerName("i", "", "batch-x7k2p"), State: dockerx.StateRunning, Labels: map[string]string{
		dockerx.LabelInstance: "i", dockerx.LabelOwnerKind: "TestOwner", dockerx.LabelOwner: "batch", dockerx.LabelTemplateHash: "abc"}}, "")
	orphan, _ := h.engine.Add(dockerx.Container{Name: "orphan", State: dockerx.StateRunning, Labels: map[string]string{
		dockerx.LabelInstance: "i", dockerx.LabelDeployment: "unknown", dockerx.LabelTemplateHash: "abc"}}, "")
	if err := h.ctrl.sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, c := range h.engine.Snapshot() {
		states[c.ID] = c.State
	}
	if states[orphan] != dockerx.StateRemoving {
		t.Errorf("orphan of an unknown deployment: %q, want pruned (removing)", states[orphan])
	}
	if states[other] != dockerx.StateRunning {
		t.Errorf("pod of a TestOwner: %q, want left running", states[other])
	}
}
