package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dockctl/dockctl/sourcedir"
	"github.com/dockctl/dockctl/store"
)

// `dockctl controller --manifests /srv/k8s --manifests /srv/k8s/apps`
// is accepted (checkManifestPaths refuses only the same path twice), and
// then every file under /srv/k8s/apps is read by both paths and refused
// as "also defined in" itself: its objects are never created or updated,
// and deletion is off for good. Either the overlap is refused when the
// controller starts, or a file read through two paths is one file.
func TestReview12bNestedManifestsPaths(t *testing.T) {
	root := filepath.Join(t.TempDir(), "k8s")
	apps := filepath.Join(root, "apps")
	if err := os.MkdirAll(apps, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(apps, "web.yaml"), []byte(webYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	paths := []string{root, apps}
	if err := checkManifestPaths(paths); err != nil {
		return // refused at start: fine
	}
	st, err := store.Open(t.TempDir(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sourcedir.New(st, sourcedir.Options{Paths: paths}).Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get("", "web"); err != nil {
		ss, _ := st.ReadSourceStatus()
		t.Errorf("overlapping --manifests paths accepted, and web (in both) is never applied: %v; status %+v", err, ss)
	}
}
