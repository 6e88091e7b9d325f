package statefulset

import (
	"maps"
	"testing"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/workload"
)

func TestPodIdentity(t *testing.T) {
	s := newSet(3, claimTemplate("data"))
	s.Spec.Template.Spec.Volumes = []manifests.Volume{{Name: "data", EmptyDir: &manifests.EmptyDirVolumeSource{}}, {Name: "cache", EmptyDir: &manifests.EmptyDirVolumeSource{}}}
	r := RevisionOf(s)
	p := newPod(s, r, 2)
	if p.Name != "web-2" || p.Namespace != "shop" {
		t.Errorf("pod = %s/%s, want shop/web-2", p.Namespace, p.Name)
	}
	if want := (podruntime.Identity{Ordinal: 2, HasOrdinal: true, Hostname: "web-2", Subdomain: "nginx"}); p.Identity != want {
		t.Errorf("identity = %+v, want %+v", p.Identity, want)
	}
	if want := (podruntime.OwnerRef{Kind: "StatefulSet", Name: "web"}); p.Owner != want {
		t.Errorf("owner = %+v, want %+v", p.Owner, want)
	}
	if p.TemplateHash != s.TemplateHash() {
		t.Errorf("template hash = %s, want the revision's %s", p.TemplateHash, s.TemplateHash())
	}
	want := map[string]string{"app": "web", PodNameLabel: "web-2", PodIndexLabel: "2", workload.RevisionLabel: r.Name}
	if !maps.Equal(p.Template.Metadata.Labels, want) {
		t.Errorf("labels = %v, want %v", p.Template.Metadata.Labels, want)
	}
	vols := map[string]manifests.Volume{}
	for _, v := range p.Template.Spec.Volumes {
		vols[v.Name] = v
	}
	if len(vols) != 2 || vols["data"].PersistentVolumeClaim == nil || vols["data"].PersistentVolumeClaim.ClaimName != "data-web-2" || vols["cache"].EmptyDir == nil {
		t.Errorf("volumes = %+v, want data from claim data-web-2 (replacing the template's) and cache kept", p.Template.Spec.Volumes)
	}
	if len(s.Spec.Template.Metadata.Labels) != 1 || s.Spec.Template.Spec.Volumes[0].EmptyDir == nil {
		t.Error("the set's template was changed")
	}
}

func TestOrdinalParsesOnlyTheSetsNames(t *testing.T) {
	s := newSet(1)
	tests := map[string]int{"web-0": 0, "web-12": 12, "web-x": -1, "web-": -1, "web-01": -1, "web--1": -1, "webs-1": -1, "web-1-2": -1, "db-0": -1}
	for name, want := range tests {
		got, ok := Ordinal(s, name)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("Ordinal(%q) = %d, want %d", name, got, want)
		}
	}
}

func TestRevisionNameIsSetNameAndHash(t *testing.T) {
	s := newSet(1)
	if r := RevisionOf(s); r.Name != "web-"+s.TemplateHash() || r.Hash != s.TemplateHash() || r.Template != &s.Spec.Template {
		t.Errorf("revision = %+v", r)
	}
}
