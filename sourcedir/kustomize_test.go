package sourcedir

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/store"
)

// A path holding a kustomization is rendered as one unit, as Flux's
// kustomize-controller renders it: its generators run, its transformers
// apply, and the files it builds from are not read as objects. A build
// that fails keeps the last good state and deletes nothing.
func TestKustomizationDirectoryIsBuiltAsOneUnit(t *testing.T) {
	dir := t.TempDir()
	mgr := store.DirectoryManager(dir)
	write(t, filepath.Join(dir, "kustomization.yaml"), "namePrefix: prod-\nresources: [web.yaml]\nimages:\n- {name: nginx, newTag: \"2\"}\nconfigMapGenerator:\n- {name: cfg, literals: [A=1]}\n")
	// Not listed in resources: not applied.
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "nginx"))
	write(t, filepath.Join(dir, "other.yaml"), deployment("other", "nginx"))
	f := newFixture(t, Options{Paths: []string{dir}})
	f.sync()
	if got, want := f.live(), map[string]string{"prod-web": "nginx:2 " + mgr}; !reflect.DeepEqual(got, want) {
		t.Fatalf("live = %v, want %v", got, want)
	}
	cms, errs := f.st.ListConfigMaps()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(cms) != 1 || !strings.HasPrefix(cms[0].Object.Metadata.Name, "prod-cfg-") {
		t.Fatalf("configmaps = %v, want one generated prod-cfg-HASH", cms)
	}
	if st := f.status(); len(st) != 1 || !st[0].Ready || st[0].Objects != 2 {
		t.Fatalf("status = %+v", st)
	}

	// A broken kustomization: reported, nothing deleted or changed.
	write(t, filepath.Join(dir, "kustomization.yaml"), "resources: [missing.yaml]\n")
	f.sync()
	if got, want := f.live(), map[string]string{"prod-web": "nginx:2 " + mgr}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after a failed build live = %v, want %v", got, want)
	}
	if st := f.status(); len(st) != 1 || st[0].Ready || !strings.Contains(st[0].Message, "missing.yaml") {
		t.Fatalf("status after a failed build = %+v", st)
	}
}
