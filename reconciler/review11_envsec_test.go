package reconciler

import (
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// TestReview11WaitingRevisionKeepsOldReplicas: a rollout to a template
// whose env refers to a ConfigMap that does not exist creates nothing of
// the new revision, and the old one keeps replicas - maxUnavailable
// running, as a Deployment keeps its old ReplicaSet while the new pods sit
// in CreateContainerConfigError (it may scale it down by maxUnavailable,
// never further). Then the ConfigMap is applied and the rollout proceeds.
func TestReview11WaitingRevisionKeepsOldReplicas(t *testing.T) {
	h := newHarness(t, Options{})
	h.opts.Config = h.store
	h.ctrl = New(h.engine, h.store, h.opts)
	d := testDeployment("web", 4, "x")
	h.apply(d)
	h.start()
	old := h.waitReplicas("web", 4)
	oldHash := old[0].TemplateHash

	d2 := testDeployment("web", 4, "y")
	d2.Spec.Template.Spec.Containers[0].Env = append(d2.Spec.Template.Spec.Containers[0].Env,
		manifests.EnvVar{Name: "MODE", ValueFrom: &manifests.EnvVarSource{ConfigMapKeyRef: &manifests.ConfigMapKeySelector{Name: "app", Key: "mode"}}})
	h.apply(d2)
	h.waitFor("a ReplicaFailure naming the ConfigMap", func() bool { return h.failureSays("web", "ConfigMap default/app not found") })
	time.Sleep(500 * time.Millisecond) // let the rollout settle
	running := 0
	for _, c := range h.ours("web") {
		if c.TemplateHash == oldHash && c.State == dockerx.StateRunning {
			running++
		}
		if c.TemplateHash != oldHash {
			t.Errorf("a container of the waiting revision exists: %s (%s)", c.Name, c.State)
		}
	}
	if running < 3 {
		t.Errorf("%d of 4 old replicas (maxUnavailable 1) run while the new revision waits for its ConfigMap: %s", running, summary(h.ours("web")))
	}
	if _, err := h.store.Apply(store.Bundle{ConfigMaps: []*manifests.ConfigMap{{APIVersion: "v1", Kind: manifests.KindConfigMap,
		Metadata: manifests.ObjectMeta{Name: "app"}, Data: map[string]string{"mode": "fast"}}}}, store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitReplicas("web", 4)
}
