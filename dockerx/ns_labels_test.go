package dockerx

import (
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

// Every container and volume dockctl creates says its namespace, default
// included (docs/design.md §4): CreateRequest.Namespace, else the deployment's.
func TestNamespaceLabel(t *testing.T) {
	tests := []struct {
		name        string
		metadataNS  string
		requestNS   string
		want        string
		wantVolume  string
		containerNm string
	}{
		{"default, unnamed", "", "", "default", "default", "default_web-5d8f7c9b6-0"},
		{"default, named", "default", "", "default", "default", "default_web-5d8f7c9b6-0"},
		{"the deployment's", "team", "", "team", "team", "default_web.team-5d8f7c9b6-0"},
		{"the request's", "team", "team", "team", "team", "default_web.team-5d8f7c9b6-0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployment("web", nil)
			d.Metadata.Namespace = tt.metadataNS
			req := request(d)
			req.Namespace = tt.requestNS
			req.Name = ContainerName(req.Instance, tt.metadataNS, "web", req.TemplateHash, 0)
			if req.Name != tt.containerNm {
				t.Fatalf("name %q, want %q", req.Name, tt.containerNm)
			}
			cfg, _, _, err := BuildConfig(req)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Labels[LabelNamespace]; got != tt.want {
				t.Errorf("container label %q, want %q", got, tt.want)
			}
			if got := ParseNamespace(cfg.Labels, req.Name); got != tt.want {
				t.Errorf("ParseNamespace of what was created = %q, want %q", got, tt.want)
			}
			vr := PodVolumeRequest(req.Instance, req.TemplateHash, TemplateOf(d), PodRef{Name: "p", UID: "u", Holder: req.Name}, &manifests.Volume{Name: "v", EmptyDir: &manifests.EmptyDirVolumeSource{}})
			if got := VolumeLabels(vr)[LabelNamespace]; got != tt.wantVolume {
				t.Errorf("volume label %q, want %q", got, tt.wantVolume)
			}
		})
	}
}
