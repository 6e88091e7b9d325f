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
		return Op{Kind: OpCreate, Name: "web-1", From: d}
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
	if err := c.createInputs(t.Context(), &req, Op{Kind: OpCreate, Name: "x", From: testDeployment("web", 1, "v1")}); err != nil || req.SeccompProfile != "" {
		t.Errorf("without a Localhost profile: %v %q", err, req.SeccompProfile)
	}
}

// Only a regular file holding a JSON object is a profile: a directory, a
// file that is not JSON, or JSON that is not an object is refused, and the
// error never echoes the file's content. A link is followed (the gate
// judged the path it resolves to).
func TestReadProfileRefusesWhatIsNotAProfile(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const profile = `{"defaultAction":"SCMP_ACT_ALLOW"}`
	good := write("good.json", profile)
	link := filepath.Join(root, "link.json")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	if got, err := readProfile(link); err != nil || got != profile {
		t.Errorf("readProfile(link to a profile) = %q, %v", got, err)
	}
	if err := os.Mkdir(filepath.Join(root, "dir.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	big := write("big.json", `{"a":"`+strings.Repeat("x", maxSeccompProfile)+`"}`)
	for _, tt := range []struct{ path, want string }{
		{filepath.Join(root, "dir.json"), "not a regular file"},
		{write("word.json", "unconfined"), "not a JSON object"},
		{write("builtin.json", "builtin\n"), "not a JSON object"},
		{write("array.json", `[{"defaultAction":"SCMP_ACT_ALLOW"}]`), "not a JSON object"},
		{write("null.json", "null"), "not a JSON object"},
		{write("blank.json", " \n"), "is empty"},
		{big, "larger than"},
	} {
		got, err := readProfile(tt.path)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("readProfile(%s) = %q, %v; want an error %q", filepath.Base(tt.path), got, err, tt.want)
			continue
		}
		if strings.Contains(err.Error(), "unconfined") || strings.Contains(err.Error(), "builtin\n") {
			t.Errorf("the error echoes the file's content: %v", err)
		}
	}
}
