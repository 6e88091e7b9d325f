package manifests

import (
	"strings"
	"testing"
)

// The network annotation names a network to join (an additional one once
// replicas join their instance network): network modes are refused, with
// a line and a field path, and user-defined names pass.
func TestValidateNetworkAnnotation(t *testing.T) {
	const field = "spec.template.metadata.annotations[dockctl.io/network]"
	tests := []struct {
		value, wantErr string
	}{
		{"backend", ""},
		{"my_net.v2", ""},
		{"bridge", ""},
		{"host", `"host" is not a network to join: use spec.template.spec.hostNetwork: true`},
		{"Host", `"host" is not a network to join`},
		{"none", `"none" is not a network to join`},
		{"container:dockctl", `joining another container's network namespace is not supported`},
		{"", `must be the name of a Docker network`},
		{"-x", `must be the name of a Docker network`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			src := strings.Replace(base, "      labels:\n        app: web\n    spec:",
				"      labels:\n        app: web\n      annotations:\n        dockctl.io/network: \""+tt.value+"\"\n    spec:", 1)
			if src == base {
				t.Fatal("test manifest not edited")
			}
			_, err := Decode("t.yaml", []byte(src))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "t.yaml:") || !strings.Contains(err.Error(), field+": ") || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Decode error %v, want a line, %s and %q", err, field, tt.wantErr)
			}
		})
	}
}
