package reconciler

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dockctl/dockctl/internal/dataplane"
	"github.com/dockctl/dockctl/manifests"
)

// TestReviewFilesProjectedSamePathSpelledTwice: a projected volume whose
// ConfigMap source projects key "a" and whose Secret source maps a key to
// "./a" is valid (Kubernetes accepts it, and the kubelet's AtomicWriter
// cleans the paths, one of them winning). dockctl's validation
// accepts it too, but the writer refuses the payload, so the pod never
// gets its files and never starts.
func TestReviewFilesProjectedSamePathSpelledTwice(t *testing.T) {
	d := testDeployment("web", 1, "1")
	ps := &d.Spec.Template.Spec
	ps.Volumes = []manifests.Volume{{Name: "all", Projected: &manifests.ProjectedVolumeSource{Sources: []manifests.VolumeProjection{
		{ConfigMap: &manifests.ConfigMapProjection{Name: "app"}},
		{Secret: &manifests.SecretProjection{Name: "s", Items: []manifests.KeyToPath{{Key: "x", Path: "./a"}}}},
	}}}}
	ps.Containers[0].VolumeMounts = []manifests.VolumeMount{{Name: "all", MountPath: "/etc/all"}}
	manifests.SetDefaults(d)
	if err := manifests.Validate(d); err != nil {
		t.Fatalf("refused at validation (acceptable, but then say so): %v", err)
	}
	objs := fileObjects{
		ConfigMaps: map[string]*manifests.ConfigMap{"app": {Data: map[string]string{"a": "from-cm"}}},
		Secrets:    map[string]*manifests.Secret{"s": {Data: map[string][]byte{"x": []byte("from-secret")}}},
	}
	payload, err := planFiles(ps, podIdentity{Name: "p", Namespace: "default"}, objs, hostResources{})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "all"), 0o755)
	if _, err := dataplane.WriteFiles(root, payload); err != nil {
		t.Fatalf("a valid projected volume cannot be written: %v", err)
	}
	if _, err := os.ReadFile(filepath.Join(root, "all", "a")); err != nil {
		t.Errorf("a: %v", err)
	}
}
