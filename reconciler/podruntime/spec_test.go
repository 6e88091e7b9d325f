package podruntime

import (
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

// TestPodSpecRestartPolicy: the owner's restartPolicy wins over the
// template's, which wins over Always (the API server's default).
func TestPodSpecRestartPolicy(t *testing.T) {
	tmpl := func(p string) *manifests.PodTemplateSpec {
		return &manifests.PodTemplateSpec{Spec: manifests.PodSpec{RestartPolicy: p}}
	}
	tests := []struct {
		name string
		spec PodSpec
		want string
	}{
		{"nothing set", PodSpec{}, manifests.RestartAlways},
		{"template's", PodSpec{Template: tmpl(manifests.RestartNever)}, manifests.RestartNever},
		{"owner's over the template's", PodSpec{Template: tmpl(manifests.RestartNever), RestartPolicy: manifests.RestartOnFailure}, manifests.RestartOnFailure},
		{"template unset", PodSpec{Template: tmpl("")}, manifests.RestartAlways},
	}
	for _, tt := range tests {
		if got := tt.spec.EffectiveRestartPolicy(); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
