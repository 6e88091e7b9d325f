package manifests

import "testing"

// Decode tells whether spec.replicas was written, so that apply can keep
// the live count when it was not (kubectl apply's behaviour); the
// Deployment itself is defaulted either way.
func TestDecodeReplicasSet(t *testing.T) {
	tests := []struct {
		name    string
		replace string
		set     bool
		want    int32
	}{
		{"set", "  replicas: 1\n", true, 1},
		{"set to zero", "  replicas: 0\n", true, 0},
		{"absent", "", false, 1},
		{"null", "  replicas: null\n", false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Decode("web.yaml", []byte(edit(t, "  replicas: 1\n", tt.replace)))
			if err != nil {
				t.Fatal(err)
			}
			d := docs[0]
			if d.ReplicasSet != tt.set || d.Deployment.Spec.Replicas == nil || *d.Deployment.Spec.Replicas != tt.want {
				t.Fatalf("ReplicasSet %v replicas %v, want %v %d", d.ReplicasSet, d.Deployment.Spec.Replicas, tt.set, tt.want)
			}
		})
	}
}
