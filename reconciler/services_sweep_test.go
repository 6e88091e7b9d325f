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
	r := newSvcRig(t)
	r.prune = true
	r.restart()
	ctx := context.Background()
	img, err := r.docker.EnsureHelperImage(ctx, "i")
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
		id, err := r.docker.CreateHelper(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// The deployments' controller runs on the same engine here.
	r.ctrl.docker = r.docker.Engine
	for range 2 {
		if _, err := r.ctrl.Reconcile(ctx, reconcile.Request{Key: orphanSweepKey}); err != nil {
			t.Fatal(err)
		}
	}
	if cs, _ := r.docker.ListContainers(ctx, "i"); len(cs) != 2 {
		t.Fatalf("after the sweep: %v, want both helpers left", cs)
	}
	if len(r.docker.HelperImages()) != 1 {
		t.Fatal("the helper image was collected under its helpers")
	}
	if !r.tracker.Synced() {
		t.Error("a sweep did not mark the tracker fed")
	}
	for _, id := range ids {
		if err := r.docker.RemoveContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	r.docker.FinishRemovals()
	r.ctrl.helperImages.Store(true)
	if _, err := r.ctrl.Reconcile(ctx, reconcile.Request{Key: orphanSweepKey}); err != nil {
		t.Fatal(err)
	}
	if imgs := r.docker.HelperImages(); len(imgs) != 0 {
		t.Errorf("helper images left with nothing live: %v", imgs)
	}
}
