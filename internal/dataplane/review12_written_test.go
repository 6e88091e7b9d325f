package dataplane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
)

// Review 12: a writer holder mounts the pod's emptyDirs under
// helperapi.VolumesDir too (dockerx buildHolder: "/volumes/"+name, to keep
// them mounted), next to its file volumes. Written (`helper files
// --check`) demands a "..data" in every directory there, and the writer
// never writes one into an emptyDir: a pod with an emptyDir and a
// configMap volume is always "never written", so after a controller
// restart with its ConfigMap deleted it is blocked for ever — the case
// --check was added for.
func TestReview12WrittenWithAnEmptyDir(t *testing.T) {
	d := &manifests.Deployment{APIVersion: manifests.APIVersion, Kind: manifests.Kind, Metadata: manifests.ObjectMeta{Name: "web"},
		Spec: manifests.DeploymentSpec{Selector: &manifests.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: manifests.PodTemplateSpec{Metadata: manifests.TemplateMeta{Labels: map[string]string{"app": "web"}},
				Spec: manifests.PodSpec{
					Volumes: []manifests.Volume{
						{Name: "cfg", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "app"}},
						{Name: "cache", EmptyDir: &manifests.EmptyDirVolumeSource{}},
					},
					Containers: []manifests.Container{{Name: "web", Image: "nginx", VolumeMounts: []manifests.VolumeMount{
						{Name: "cfg", MountPath: "/etc/app"}, {Name: "cache", MountPath: "/cache"}}}},
				}}}}
	manifests.SetDefaults(d)
	holder := dockerx.ContainerName("i", "", "web", "abc", 0)
	req := dockerx.CreateRequest{Instance: "i", Name: holder, TemplateHash: "abc", Deployment: d, Role: dockerx.RoleHolder,
		Image: "helper:1", Pod: &dockerx.PodRef{Name: "web-abc-0", UID: "0123abcd", Holder: holder}}
	_, hc, _, err := dockerx.BuildConfig(req)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir() // the holder's helperapi.VolumesDir
	var under []string
	for _, m := range hc.Mounts {
		if rel, ok := strings.CutPrefix(m.Target, helperapi.VolumesDir+"/"); ok {
			under = append(under, rel)
			if err := os.MkdirAll(filepath.Join(root, rel), 0o755); err != nil { // the mountpoint Docker makes
				t.Fatal(err)
			}
		}
	}
	// The controller's payload covers the file volumes only (planFiles).
	if _, err := WriteFiles(root, helperapi.FilesPayload{Volumes: []helperapi.FilesVolume{{Name: "cfg",
		Files: []helperapi.FileItem{{Path: "k", Mode: 0o644, Data: []byte("v")}}}}}); err != nil {
		t.Fatal(err)
	}
	if !Written(root, []string{"cfg"}) {
		t.Errorf("the holder's %s holds %v; its one file volume was written, yet Written (--check) says not written", helperapi.VolumesDir, under)
	}
}
