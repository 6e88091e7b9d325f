package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/sourcedir"
	"github.com/dockctl/dockctl/store"
)

// A git repository of manifests commonly holds kinds dockctl refuses
// (an Ingress, a CronJob). `apply -f DIR --skip-unsupported` and
// `diff --manifests DIR --skip-unsupported` (which says it previews the
// controller "as the controller sees them") skip them, but `dockctl
// controller` has no --skip-unsupported: its sync refuses the file for
// ever, and since any refused file turns deletion off, nothing that
// leaves the directory is ever deleted. The preview promises a deletion
// the controller never does.
func TestReview12bControllerCannotSkipUnsupportedKinds(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(t.TempDir(), "k8s")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const ingress = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
spec:
  defaultBackend:
    service: {name: web, port: {number: 80}}
`
	for name, content := range map[string]string{"web.yaml": webYAML, "api.yaml": apiYAML, "ingress.yaml": ingress} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.Open(state, "t1")
	if err != nil {
		t.Fatal(err)
	}
	// The controller's sync, with the options `dockctl controller` can
	// give it (controller.go sets no SkipUnsupported): ingress.yaml is
	// refused, the rest applied.
	sync := func() {
		t.Helper()
		if _, err := sourcedir.New(st, sourcedir.Options{Paths: []string{dir}}).Sync(); err != nil {
			t.Fatal(err)
		}
	}
	sync()
	if err := os.Remove(filepath.Join(dir, "api.yaml")); err != nil {
		t.Fatal(err)
	}
	sync()
	if r, err := st.Lookup("", "api"); err != nil || r.Deleted {
		t.Fatalf("api: %v %v", r, err)
	}
	t.Log("api left the directory and is still live: ingress.yaml, refused, turns deletion off for good")
	out, errOut, err := run(t, "", "--state-dir", state, "--instance", "t1", "diff", "--manifests", dir, "--skip-unsupported")
	if exitCode(err) != 1 || !strings.Contains(out, "live/api") {
		t.Fatalf("diff --manifests --skip-unsupported: exit %d, want 1 with the deletion of api (%v)\n%s%s", exitCode(err), err, out, errOut)
	}
	// The controller must be able to do what the preview shows.
	if _, errOut, err := run(t, "", "controller", "--manifests", dir, "--skip-unsupported", "--help"); err != nil {
		t.Errorf("dockctl controller --manifests DIR --skip-unsupported: %v %s(diff --manifests --skip-unsupported previews a deletion the controller, refusing ingress.yaml, never does)", err, errOut)
	}
}
