package reconciler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// A Localhost seccomp profile is read from the host at create time and
// handed to Docker as content; a missing or empty file fails the create
// rather than run the container with Docker's default profile.
func TestCreateInputsReadsLocalhostProfile(t *testing.T) {
	root := t.TempDir()
	old := profilePath
	profilePath = func(p string) string { return filepath.Join(root, filepath.Clean("/"+p)) }
	t.Cleanup(func() { profilePath = old })
	const profile = `{"defaultAction":"SCMP_ACT_ALLOW"}`
	if err := os.MkdirAll(filepath.Join(root, "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "profiles", "audit.json"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "empty.json"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	op := func(name string) Op {
		d := testDeployment("web", 1, "v1")
		d.Spec.Template.Spec.Containers[0].SecurityContext = &manifests.SecurityContext{
			SeccompProfile: &manifests.SeccompProfile{Type: manifests.SeccompLocalhost, LocalhostProfile: &name}}
		return Op{Kind: OpCreate, Name: "web-1", From: dockerx.TemplateOf(d)}
	}
	c := &Controller{}
	var req dockerx.CreateRequest
	if err := c.createInputs(t.Context(), &req, op("profiles/audit.json")); err != nil || req.SeccompProfile != profile {
		t.Fatalf("createInputs: %v, profile %q", err, req.SeccompProfile)
	}
	for name, want := range map[string]string{"missing.json": "no such file", "empty.json": "is empty"} {
		req = dockerx.CreateRequest{}
		if err := c.createInputs(t.Context(), &req, op(name)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", name, err, want)
		}
	}
	// No profile, no read.
	req = dockerx.CreateRequest{}
	if err := c.createInputs(t.Context(), &req, Op{Kind: OpCreate, Name: "x", From: dockerx.TemplateOf(testDeployment("web", 1, "v1"))}); err != nil || req.SeccompProfile != "" {
		t.Errorf("without a Localhost profile: %v %q", err, req.SeccompProfile)
	}
}
