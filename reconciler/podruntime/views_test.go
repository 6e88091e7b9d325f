package podruntime

import (
	"testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// TestViewsOfAnyOwner: the pods of an owner of any kind are presented
// from what was observed and judged alone — its name for a pod of one
// container from the owner's naming, its namespace, owner and
// restartPolicy carried as data, READY counted from the container facts,
// STATUS as kubectl words it — and a finished pod reads as such.
func TestViewsOfAnyOwner(t *testing.T) {
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{RestartPolicy: manifests.RestartNever,
		Containers: []manifests.Container{{Name: "work", Image: "busybox"}}}}
	templates := func(h string) *manifests.PodTemplateSpec {
		if h == "h1" {
			return tmpl
		}
		return nil
	}
	cs := []dockerx.Container{
		{ID: "a", Name: "inst_job-a", TemplateHash: "h1", State: dockerx.StateRunning},
		{ID: "b", Name: "inst_job-b", TemplateHash: "h1", State: dockerx.StateExited, ExitCode: 0},
	}
	o := Judge(cs, nil, templates, nil)
	facts := map[string]ContainerView{"a": {Ready: true}}
	owner := OwnerRef{Kind: "Job", Name: "job", UID: "u1"}
	pvs := Views(o, templates, facts, facts, "batch", owner, func(c *dockerx.Container) string { return c.Name[len("inst_"):] })
	if len(pvs) != 2 {
		t.Fatalf("%d pods, want 2", len(pvs))
	}
	for _, pv := range pvs {
		if pv.Namespace != "batch" || pv.Owner != owner || pv.RestartPolicy != manifests.RestartNever || pv.Total != 1 {
			t.Errorf("%s: %+v", pv.Name, pv)
		}
	}
	if a := pvs[0]; a.Name != "job-a" || a.Ready != 1 || a.Status != "Running" {
		t.Errorf("running pod: name %s ready %d status %s", a.Name, a.Ready, a.Status)
	}
	if b := pvs[1]; b.Name != "job-b" || b.Ready != 0 || b.Status != "Completed" || b.Phase() != "Succeeded" {
		t.Errorf("finished pod: name %s ready %d status %s phase %s", b.Name, b.Ready, b.Status, b.Phase())
	}
}
