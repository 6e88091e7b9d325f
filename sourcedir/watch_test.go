package sourcedir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/dockctl/dockctl/store"
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

// A `git checkout` that moves files first removes the old paths, then
// writes the new ones; on a large tree or a slow disk the writes take
// seconds. The README promises "a git checkout rewriting many files is
// one sync" (the debounce), so Run's periodic resync is held back while
// changes are still arriving: a resync that landed in the middle would
// read a half-written tree and delete every object whose file is not
// written yet — its containers removed, then created again a moment
// later. The resync period is short here only so that the tick surely
// lands in the checkout; with the default 2m it would land in one
// checkout of every few dozen that take seconds.
func TestResyncMidCheckoutDeletesNoMovedObject(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:1"))
	for i := range 5 {
		write(t, filepath.Join(dir, fmt.Sprintf("app%d.yaml", i)), deployment(fmt.Sprintf("app%d", i), "app:1"))
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "state"), "test")
	if err != nil {
		t.Fatal(err)
	}
	s := New(st, Options{Paths: []string{dir}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, 200*time.Millisecond) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "web:1", func() string {
		r, err := st.Get("", "web")
		if err != nil {
			return ""
		}
		return r.Deployment.Spec.Template.Spec.Containers[0].Image
	})

	// The checkout: web.yaml moves to apps/web.yaml; the old path goes
	// first, then the files are written one after the other, 100ms
	// apart (every write an event: the debounce is never quiet).
	if err := os.Remove(filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		time.Sleep(100 * time.Millisecond)
		write(t, filepath.Join(dir, fmt.Sprintf("app%d.yaml", i)), deployment(fmt.Sprintf("app%d", i), "app:2"))
	}
	write(t, filepath.Join(dir, "apps", "web.yaml"), deployment("web", "web:1"))
	// The checkout is done: wait for its sync.
	waitFor(t, "app:2", func() string {
		r, err := st.Get("", "app4")
		if err != nil {
			return ""
		}
		return r.Deployment.Spec.Template.Spec.Containers[0].Image
	})
	r, err := st.Lookup("", "web")
	if err != nil {
		t.Fatal(err)
	}
	// A deployment deleted and applied again has a generation past 2
	// (1 created, +1 deleted, +1 revived) and a fresh creation time.
	if r.Generation != 1 {
		t.Errorf("deployment web, moved within one checkout, was deleted and re-created mid-checkout (generation %d, deleted %v)", r.Generation, r.Deleted)
	}
}

// Run's debounce restarts on every event, so it needs an upper bound:
// without one, while anything keeps changing where it watches — the
// directory holding the path is watched too (--manifests /home/me/k8s
// watches /home/me; a log or a cache written there every few hundred
// milliseconds) — no sync would run, and a change to the manifests would
// wait for the resync period (2m by default) instead of "within a
// second".
func TestDebounceHasAMaximumDelayUnderUnrelatedChurn(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "m")
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:1"))
	image := running(t, dir) // resync an hour away
	waitFor(t, "web:1", image)

	// Something writes a file beside the directory, every 100ms.
	ctx, cancel := context.WithCancel(context.Background())
	churned := make(chan struct{})
	go func() {
		defer close(churned)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = os.WriteFile(filepath.Join(root, "app.log"), []byte(time.Now().String()), 0o644)
			}
		}
	}()
	defer func() { cancel(); <-churned }()

	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:2"))
	deadline := time.Now().Add(15 * time.Second)
	for image() != "web:2" {
		if time.Now().After(deadline) {
			t.Fatalf("the change of web.yaml not applied after 15s while a file beside the directory keeps changing (image %q)", image())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
