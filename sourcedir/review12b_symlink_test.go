package sourcedir

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dockctl/dockctl/store"
)

// A manifest kept as a symbolic link (a shared base, an overlay made of
// links) whose target is missing for a moment — replaced by a checkout,
// or on a volume not mounted yet — is a file that cannot be read: the
// package doc and the README promise that while any file is refused,
// nothing is deleted. ExpandPath skips a dangling link silently, so the
// object it declared is deleted. (The link stays inside the directory: a
// link out of it is refused whatever its target.)
func TestReview12bDanglingSymlinkDeletesItsObject(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "m")
	shared := filepath.Join(dir, "shared")
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:1"))
	write(t, filepath.Join(shared, "api.in"), deployment("api", "api:1"))
	if err := os.Symlink(filepath.Join(shared, "api.in"), filepath.Join(dir, "api.yaml")); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, Options{Paths: []string{dir}})
	f.sync()
	mgr := store.DirectoryManager(dir)
	want := map[string]string{"web": "web:1 " + mgr, "api": "api:1 " + mgr}
	if got := f.live(); !reflect.DeepEqual(got, want) {
		t.Fatalf("live %v, want %v", got, want)
	}
	// The link's target goes away for a while (the link stays).
	if err := os.Rename(filepath.Join(shared, "api.in"), filepath.Join(shared, "api.in.moving")); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if got := f.live(); !reflect.DeepEqual(got, want) {
		t.Errorf("a dangling manifest link: live %v, want %v (an unreadable file must delete nothing)", got, want)
	}
	if st := f.status(); st[0].Ready {
		t.Errorf("status %+v: the unreadable link is not reported", st[0])
	}
}
