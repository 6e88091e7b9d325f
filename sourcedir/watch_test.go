package sourcedir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fsnotify/fsnotify"
)

// Which changes the watch reacts to: in the directories of a path, a
// manifest or a directory; in the directory holding it (or a link on its
// way), only the path's or the link's own name.
func TestWatchedChangesThatMatter(t *testing.T) {
	root := t.TempDir()
	r := func(p string) string { return filepath.Join(root, p) }
	write(t, r("wt1/k8s/web.yaml"), deployment("web", "web:1"))
	write(t, r("wt1/k8s/README.md"), "docs")
	write(t, r("wt1/k8s/apps/api.yaml"), deployment("api", "api:1"))
	if err := os.Symlink("wt1", r("current")); err != nil {
		t.Fatal(err)
	}
	s := New(nil, Options{Paths: []string{r("current/k8s")}})
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	s.rewatch(w)
	// Made after the watches were set.
	if err := os.Mkdir(r("wt1/k8s/new"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		want bool
	}{
		{"current", true},                // the link swapped
		{"current.tmp", false},           // git-sync's new link, before its rename
		{"app.log", false},               // beside the link
		{"current/k8s", true},            // the path, in the directory holding it
		{"current/other", false},         // beside the path
		{"wt1/k8s", true},                // a directory of the path itself
		{"wt1/k8s/web.yaml", true},       // a manifest
		{"wt1/k8s/WEB.YML", true},        // a manifest
		{"wt1/k8s/README.md", false},     // not a manifest
		{"wt1/k8s/.web.yaml.swp", false}, // an editor's swap file
		{"wt1/k8s/apps", true},           // a directory of the path, removed or renamed
		{"wt1/k8s/new", true},            // a directory created
		{"wt1/k8s/gone", false},          // neither a manifest nor a directory
		{"wt1/k8s/apps/api.json", true},
		{"elsewhere/x", true}, // no longer watched: no telling
	}
	for _, tt := range tests {
		if got := s.matters(r(tt.name)); got != tt.want {
			t.Errorf("%s: matters %v, want %v (watched %v)", tt.name, got, tt.want, w.WatchList())
		}
	}
}

// A manifest kept as a symbolic link to a file inside the directory (an
// overlay of links to a base whose files are not named as manifests): an
// edit of the target is a change of the link's manifest, and so is a swap
// of a link to a directory on the target's way. The rest of the target's
// directory does not matter more than before.
func TestWatchedLinkTargetsMatter(t *testing.T) {
	dir := t.TempDir()
	r := func(p string) string { return filepath.Join(dir, p) }
	write(t, r("base/web.yaml.in"), deployment("web", "web:1"))
	write(t, r("base/notes.txt"), "docs")
	write(t, r("lib/v1/api.in"), deployment("api", "api:1"))
	link(t, "base/web.yaml.in", r("web.yaml"))
	link(t, "v1", r("lib/current"))
	link(t, r("lib/current/api.in"), r("api.yaml"))
	s := New(nil, Options{Paths: []string{dir}})
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	s.rewatch(w)
	tests := []struct {
		name string
		want bool
	}{
		{"base/web.yaml.in", true}, // the target, edited or replaced
		{"lib/v1/api.in", true},    // a target through a linked directory
		{"lib/current", true},      // that directory link, swapped
		{"base/notes.txt", false},  // beside a target
		{"lib/v1/other.in", false}, // beside a target
	}
	for _, tt := range tests {
		if got := s.matters(r(tt.name)); got != tt.want {
			t.Errorf("%s: matters %v, want %v", tt.name, got, tt.want)
		}
	}
}

// The README promises a change is picked up within about a second: an
// edit of a linked manifest's target too, not only at the resync (an hour
// away here).
func TestRunSeesAnEditOfALinkTarget(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "base", "web.in"), deployment("web", "web:1"))
	link(t, "base/web.in", filepath.Join(dir, "web.yaml"))
	image := running(t, dir)
	waitFor(t, "web:1", image)
	write(t, filepath.Join(dir, "base", "web.in"), deployment("web", "web:2"))
	waitFor(t, "web:2", image)
}
