package reconciler

import (
	"context"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/reconcile"
)

// The deployments' sweep never takes a Service's helper for an orphan, even
// with PruneOrphans, and never collects the helper image while a helper
// uses it; once no helper is left and nothing is live, it does.
func TestDeploymentSweepLeavesHelpers(t *testing.T) {
	h, eng := newServiceHarness(t)
	// As the Service controller's tests run it: the network is not this
	// controller's, removals end when the test says.
	h.opts.NetworkDocker, h.opts.PruneOrphans = nil, true
	h.ctrl = New(eng, h.store, h.opts)
	eng.HoldRemovals(true)
	ctx := context.Background()
	img, err := eng.EnsureHelperImage(ctx, "i")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for ip, h := range map[string]dockerx.HelperRequest{
		"10.222.8.1": {Instance: "i", Namespace: "default", Name: "i_web.default_svc", Role: dockerx.RoleProxy, Service: "web"},
		"10.222.8.0": {Instance: "i", Name: "i_dns", Role: dockerx.RoleDNS},
	} {
		h.Image, h.Cmd = img, []string{"/dockctl", "helper", h.Role, "--config", "{}"}
		h.Network = dockerx.PodNetwork{Name: "dockctl_i", IPv4: ip}
		id, err := eng.CreateHelper(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for range 2 {
		if _, err := h.ctrl.Reconcile(ctx, reconcile.Request{Key: orphanSweepKey}); err != nil {
			t.Fatal(err)
		}
	}
	if cs, _ := eng.ListContainers(ctx, "i"); len(cs) != 2 {
		t.Fatalf("after the sweep: %v, want both helpers left", cs)
	}
	if len(eng.HelperImages()) != 1 {
		t.Fatal("the helper image was collected under its helpers")
	}
	if !h.ctrl.tracker.Synced() {
		t.Error("a sweep did not mark the tracker fed")
	}
	for _, id := range ids {
		if err := eng.RemoveContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	eng.FinishRemovals()
	h.ctrl.helperImages.Store(true)
	if _, err := h.ctrl.Reconcile(ctx, reconcile.Request{Key: orphanSweepKey}); err != nil {
		t.Fatal(err)
	}
	if imgs := eng.HelperImages(); len(imgs) != 0 {
		t.Errorf("helper images left with nothing live: %v", imgs)
	}
}
