package reconciler

import (
	"maps"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// addMainReplicas adds running replicas of d as `main` (before pods) made
// them: main's containerLabels copies every template label, then sets
// instance, deployment and template-hash — no role, no pod labels of its
// own.
func addMainReplicas(t *testing.T, h *harness, d *manifests.Deployment, n int) []string {
	t.Helper()
	hash := manifests.TemplateHash(&d.Spec.Template)
	var ids []string
	for i := 0; i < n; i++ {
		l := maps.Clone(d.Spec.Template.Metadata.Labels)
		l[dockerx.LabelInstance] = "i"
		l[dockerx.LabelDeployment] = d.Metadata.Name
		l[dockerx.LabelTemplateHash] = hash
		id, err := h.engine.Add(dockerx.Container{Name: dockerx.ContainerName("i", d.Metadata.Name, hash, i), Image: testImage,
			State: dockerx.StateRunning, Labels: l, Created: time.Now().Add(-time.Hour)}, "")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// Upgrade: containers made by main must keep running untouched. A plain
// main container is left alone (control case). But main copied every
// template label onto its containers, and did not reserve dockctl's label
// keys; a template label io.dockctl.pod-uid (or io.dockctl.pod) that main
// accepted and put on its containers makes this branch's groupPods read a
// single-container replica as a member of a holder pod without holder: the
// pod is "dead" and the replica is removed and re-created. Pod membership
// is judged by the container's own template, which needs no holder.
func TestReviewUpgradeMainContainersUntouched(t *testing.T) {
	for _, tt := range []struct {
		name   string
		labels map[string]string
	}{
		{"plain", nil},
		{"template label io.dockctl.pod-uid", map[string]string{dockerx.LabelPodUID: "v1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Options{ResyncPeriod: 20 * time.Millisecond})
			d := testDeployment("web", 2, "x")
			maps.Copy(d.Spec.Template.Metadata.Labels, tt.labels)
			// main accepted such a template; apply now refuses it, but a
			// record main stored keeps running.
			if errs := manifests.Validate(d); (errs != nil) != (tt.labels != nil) {
				t.Fatalf("Validate = %v", errs)
			}
			h.apply(d)
			ids := addMainReplicas(t, h, d, 2)
			h.start()
			h.waitResyncs(10)
			if n := h.engine.WriteCalls(); n != 0 {
				t.Errorf("%d write calls (%v) on main's running replicas; want none", n, h.engine.Calls())
			}
			for _, id := range ids {
				if !hasID(h.engine.Snapshot(), id) {
					t.Errorf("main's replica %s was removed; containers now: %s", id[len(id)-6:], summary(h.engine.Snapshot()))
				}
			}
		})
	}
}
