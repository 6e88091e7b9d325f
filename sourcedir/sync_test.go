package sourcedir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

func deployment(name, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
spec:
  selector:
    matchLabels: {app: %s}
  template:
    metadata:
      labels: {app: %s}
    spec:
      containers:
      - name: main
        image: %s
`, name, name, name, image)
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

type recorded struct{ kind, ns, name, typ, reason, msg string }

type fakeRecorder struct {
	mu     sync.Mutex
	events []recorded
}

func (r *fakeRecorder) Event(kind, ns, name, typ, reason, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, recorded{kind, ns, name, typ, reason, msg})
}

func (r *fakeRecorder) reasons(typ string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if e.typ == typ {
			out = append(out, e.reason)
		}
	}
	return out
}

type fixture struct {
	t     *testing.T
	st    *store.Store
	clock *clocktesting.FakeClock
	rec   *fakeRecorder
	s     *Syncer
}

func newFixture(t *testing.T, opts Options) *fixture {
	st, err := store.Open(filepath.Join(t.TempDir(), "state"), "test")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, st: st, clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), rec: &fakeRecorder{}}
	opts.Clock, opts.Recorder = f.clock, f.rec
	f.s = New(st, opts)
	return f
}

func (f *fixture) sync() []store.ApplyResult {
	f.t.Helper()
	res, err := f.s.Sync()
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

// live maps each live deployment to its image and manager.
func (f *fixture) live() map[string]string {
	f.t.Helper()
	recs, err := f.st.List()
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range recs {
		if !r.Deleted {
			out[r.Name] = r.Deployment.Spec.Template.Spec.Containers[0].Image + " " + r.Manager()
		}
	}
	return out
}

func (f *fixture) status() []store.SourceStatus {
	f.t.Helper()
	st, err := f.st.ReadSourceStatus()
	if err != nil {
		f.t.Fatal(err)
	}
	return st
}

func TestSyncFollowsTheDirectory(t *testing.T) {
	dir := t.TempDir()
	mgr := store.DirectoryManager(dir)
	type step struct {
		name   string
		change func()
		want   map[string]string
		ready  bool
		reason string
	}
	steps := []step{
		{"add files", func() {
			write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:1"))
			write(t, filepath.Join(dir, "sub", "api.yml"), deployment("api", "api:1"))
		}, map[string]string{"web": "web:1 " + mgr, "api": "api:1 " + mgr}, true, "Synced"},
		{"change a file", func() { write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:2")) },
			map[string]string{"web": "web:2 " + mgr, "api": "api:1 " + mgr}, true, "Synced"},
		{"an invalid file keeps the last good state and deletes nothing", func() {
			write(t, filepath.Join(dir, "web.yaml"), "kind: Deployment\nmetadata: {name: web\n")
			if err := os.Remove(filepath.Join(dir, "sub", "api.yml")); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"web": "web:2 " + mgr, "api": "api:1 " + mgr}, false, "InvalidManifests"},
		{"fixed, what left is deleted", func() { write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:3")) },
			map[string]string{"web": "web:3 " + mgr}, true, "Synced"},
		{"an object defined twice is refused, last good kept", func() {
			write(t, filepath.Join(dir, "copy.yaml"), deployment("web", "web:4"))
		}, map[string]string{"web": "web:3 " + mgr}, false, "InvalidManifests"},
		{"a file deleted deletes its objects", func() {
			if err := os.Remove(filepath.Join(dir, "copy.yaml")); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "api.yaml"), deployment("api", "api:2"))
			if err := os.Remove(filepath.Join(dir, "web.yaml")); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"api": "api:2 " + mgr}, true, "Synced"},
	}
	f := newFixture(t, Options{Paths: []string{dir}})
	for _, s := range steps {
		s.change()
		f.sync()
		if got := f.live(); !reflect.DeepEqual(got, s.want) {
			t.Fatalf("%s: live %v, want %v", s.name, got, s.want)
		}
		st := f.status()
		if len(st) != 1 || st[0].Ready != s.ready || st[0].Reason != s.reason {
			t.Fatalf("%s: status %+v, want ready %v %s", s.name, st, s.ready, s.reason)
		}
	}
	if got := f.rec.reasons("Warning"); !reflect.DeepEqual(got, []string{"InvalidManifests", "InvalidManifests"}) {
		t.Errorf("warnings %v", got)
	}
}

func TestEmptyOrUnreadableDeletesNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(dir string)
	}{
		{"empty", func(dir string) {
			if err := os.Remove(filepath.Join(dir, "web.yaml")); err != nil {
				t.Fatal(err)
			}
		}},
		{"gone", func(dir string) {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		for _, allow := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s allow-empty=%v", tc.name, allow), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "m")
				write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:1"))
				f := newFixture(t, Options{Paths: []string{dir}, AllowEmpty: allow, AllowEmptyAfter: time.Minute})
				f.sync()
				tc.spoil(dir)
				f.sync()
				f.clock.Step(59 * time.Second)
				f.sync()
				if len(f.live()) != 1 {
					t.Fatalf("deleted before the delay: %v", f.live())
				}
				if st := f.status(); st[0].Ready || st[0].EmptySince == nil {
					t.Errorf("status %+v", st[0])
				}
				f.clock.Step(time.Second)
				f.sync()
				if n := len(f.live()); allow != (n == 0) {
					t.Errorf("after the delay, %d live (allow-empty %v)", n, allow)
				}
			})
		}
	}
}

func TestApplysObjectsAreConflictsNeverDeleted(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:dir"))
	write(t, filepath.Join(dir, "api.yaml"), deployment("api", "api:dir"))
	f := newFixture(t, Options{Paths: []string{dir}})
	// apply -f made web and db before the directory came.
	b, err := Place(mustDecode(t, deployment("web", "web:cli")+"---\n"+deployment("db", "db:cli")), "default", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Apply(b.Bundle, store.ApplyOptions{Manager: store.ManagerApply}); err != nil {
		t.Fatal(err)
	}
	f.sync()
	want := map[string]string{"web": "web:cli apply", "db": "db:cli apply", "api": "api:dir " + store.DirectoryManager(dir)}
	if got := f.live(); !reflect.DeepEqual(got, want) {
		t.Fatalf("live %v, want %v", got, want)
	}
	if st := f.status(); st[0].Reason != "Conflict" || !strings.Contains(st[0].Message, `"apply"`) {
		t.Errorf("status %+v", st[0])
	}
	// apply --prune of another file never deletes the directory's api.
	b, _ = Place(mustDecode(t, deployment("db", "db:cli")), "default", false)
	if _, err := f.st.Apply(b.Bundle, store.ApplyOptions{Prune: true}); err != nil {
		t.Fatal(err)
	}
	if got := f.live(); got["api"] == "" || got["web"] != "" {
		t.Errorf("after apply --prune: %v", got)
	}
}

func TestForceConflictsTakesOver(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:dir"))
	f := newFixture(t, Options{Paths: []string{dir}, ForceConflicts: true})
	b, _ := Place(mustDecode(t, deployment("web", "web:cli")), "default", false)
	if _, err := f.st.Apply(b.Bundle, store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if got := f.live()["web"]; got != "web:dir "+store.DirectoryManager(dir) {
		t.Errorf("web %q", got)
	}
}

func TestFileMovedBetweenDirectories(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	write(t, filepath.Join(a, "web.yaml"), deployment("web", "web:1"))
	write(t, filepath.Join(b, "api.yaml"), deployment("api", "api:1"))
	f := newFixture(t, Options{Paths: []string{a, b}})
	f.sync()
	if err := os.Rename(filepath.Join(a, "web.yaml"), filepath.Join(b, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(a, "other.yaml"), deployment("other", "o:1"))
	for _, r := range f.sync() {
		if r.Name == "web" && r.Action != store.Unchanged {
			t.Errorf("web %s", r.Action)
		}
	}
	if got := f.live()["web"]; got != "web:1 "+store.DirectoryManager(b) {
		t.Errorf("web %q", got)
	}
}

// git-sync publishes each commit as a new worktree and swaps a symbolic
// link to it atomically (a new link renamed over the old).
func TestSymlinkSwap(t *testing.T) {
	root := t.TempDir()
	link := filepath.Join(root, "repo")
	commit := func(n int, files map[string]string) {
		wt := filepath.Join(root, ".worktrees", fmt.Sprint(n))
		for name, c := range files {
			write(t, filepath.Join(wt, name), c)
		}
		tmp := filepath.Join(root, "tmp-link")
		if err := os.Symlink(wt, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, link); err != nil {
			t.Fatal(err)
		}
	}
	commit(1, map[string]string{"web.yaml": deployment("web", "web:1"), "api.yaml": deployment("api", "api:1")})
	f := newFixture(t, Options{Paths: []string{link}})
	f.sync()
	commit(2, map[string]string{"web.yaml": deployment("web", "web:2")})
	if err := os.RemoveAll(filepath.Join(root, ".worktrees", "1")); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if got := f.live(); !reflect.DeepEqual(got, map[string]string{"web": "web:2 " + store.DirectoryManager(link)}) {
		t.Errorf("live %v", got)
	}
}

// Run picks a change up through fsnotify, well before its resync.
func TestRunWatches(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "m")
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:1"))
	image := running(t, dir)
	waitFor(t, "web:1", image)
	write(t, filepath.Join(dir, "new", "web.yaml"), deployment("web", "web:2"))
	if err := os.Remove(filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "web:2", image)
}

func waitFor(t *testing.T, want string, get func() string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := get()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %q, want %q", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustDecode(t *testing.T, yaml string) []*manifests.Document {
	t.Helper()
	docs, err := manifests.Decode("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// A path below git-sync's link (--link=current, --manifests
// /git/current/k8s) follows each swap of the link too, watched.
func TestRunFollowsALinkAbovePath(t *testing.T) {
	root := t.TempDir()
	link := filepath.Join(root, "current")
	publish := func(n int, image string) {
		wt := filepath.Join(root, ".worktrees", fmt.Sprint(n))
		write(t, filepath.Join(wt, "k8s", "web.yaml"), deployment("web", image))
		tmp := filepath.Join(root, "tmp-link")
		if err := os.Symlink(filepath.Join(".worktrees", fmt.Sprint(n)), tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, link); err != nil {
			t.Fatal(err)
		}
	}
	publish(1, "web:1")
	image := running(t, filepath.Join(link, "k8s"))
	waitFor(t, "web:1", image)
	publish(2, "web:2")
	waitFor(t, "web:2", image)
}

// running runs a Syncer of path (resync an hour away: only the watch can
// see a change) until the test ends, and returns how to read deployment
// web's image.
func running(t *testing.T, path string) func() string {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "state"), "test")
	if err != nil {
		t.Fatal(err)
	}
	s := New(st, Options{Paths: []string{path}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, time.Hour) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return func() string {
		r, err := st.Get("", "web")
		if err != nil {
			return ""
		}
		return r.Deployment.Spec.Template.Spec.Containers[0].Image
	}
}

// The delay of --allow-empty-after counts from the start of the current
// emptiness: a directory emptied, filled again, then emptied a second time
// long after keeps its objects for the full delay again, never deleted at
// once because an earlier, long-over emptiness began long ago.
func TestAllowEmptyAfterCountsFromTheLatestEmptiness(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	web := filepath.Join(dir, "web.yaml")
	write(t, web, deployment("web", "web:1"))
	f := newFixture(t, Options{Paths: []string{dir}, AllowEmpty: true, AllowEmptyAfter: time.Minute})
	f.sync()
	// A first, short emptiness (a checkout that removes, then writes).
	if err := os.Remove(web); err != nil {
		t.Fatal(err)
	}
	f.sync()
	f.clock.Step(10 * time.Second)
	write(t, web, deployment("web", "web:1"))
	f.sync()
	if st := f.status(); st[0].EmptySince != nil {
		t.Errorf("a directory filled again still recorded empty since %v", st[0].EmptySince)
	}
	// An hour later it is emptied again.
	f.clock.Step(time.Hour)
	if err := os.Remove(web); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if len(f.live()) != 1 {
		t.Fatalf("deleted at once on its second emptiness: %v", f.live())
	}
	if d, ok := f.s.untilEmptyDeletes(); !ok || d < time.Minute || d > time.Minute+time.Second {
		t.Errorf("deletion due in %v (%v), want the full minute", d, ok)
	}
	f.clock.Step(59 * time.Second)
	f.sync()
	if len(f.live()) != 1 {
		t.Fatalf("deleted before the delay: %v", f.live())
	}
	f.clock.Step(time.Second)
	f.sync()
	if n := len(f.live()); n != 0 {
		t.Errorf("%d live once empty for the whole delay, want 0", n)
	}
}

func TestUntilEmptyDeletes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:1"))
	for _, allow := range []bool{false, true} {
		f := newFixture(t, Options{Paths: []string{dir}, AllowEmpty: allow, AllowEmptyAfter: time.Minute})
		f.sync()
		if _, ok := f.s.untilEmptyDeletes(); ok {
			t.Errorf("allow %v: a deadline with nothing empty", allow)
		}
		if err := os.Rename(filepath.Join(dir, "web.yaml"), filepath.Join(dir, "web.yaml.off")); err != nil {
			t.Fatal(err)
		}
		f.sync()
		f.clock.Step(20 * time.Second)
		d, ok := f.s.untilEmptyDeletes()
		if ok != allow || (allow && (d < 40*time.Second || d > 41*time.Second)) {
			t.Errorf("allow %v: %v %v, want about 40s", allow, d, ok)
		}
		if err := os.Rename(filepath.Join(dir, "web.yaml.off"), filepath.Join(dir, "web.yaml")); err != nil {
			t.Fatal(err)
		}
	}
}

// A file the store refuses on its own (its namespace is declared nowhere)
// is refused as an invalid one: the other files are applied, nothing is
// deleted.
func TestStoreRefusalBlamesTheFile(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:1"))
	write(t, filepath.Join(dir, "old.yaml"), deployment("old", "old:1"))
	f := newFixture(t, Options{Paths: []string{dir}})
	f.sync()
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:2"))
	write(t, filepath.Join(dir, "shop.yaml"), strings.Replace(deployment("shop", "shop:1"), "name: shop\n", "name: shop\n  namespace: nowhere\n", 1))
	if err := os.Remove(filepath.Join(dir, "old.yaml")); err != nil {
		t.Fatal(err)
	}
	f.sync()
	mgr := store.DirectoryManager(dir)
	if got, want := f.live(), map[string]string{"web": "web:2 " + mgr, "old": "old:1 " + mgr}; !reflect.DeepEqual(got, want) {
		t.Errorf("live %v, want %v", got, want)
	}
	st := f.status()
	if st[0].Reason != "InvalidManifests" || !reflect.DeepEqual(st[0].Errors, []string{filepath.Join(dir, "shop.yaml")}) {
		t.Errorf("status %+v", st[0])
	}
}

// A sync made while changes are still arriving creates and changes, but
// deletes nothing: the object whose file is gone may be on its way
// elsewhere. The quiet sync after it deletes.
func TestSyncHoldingDeletes(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:1"))
	write(t, filepath.Join(dir, "api.yaml"), deployment("api", "api:1"))
	f := newFixture(t, Options{Paths: []string{dir}})
	f.sync()
	if err := os.Remove(filepath.Join(dir, "api.yaml")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:2"))
	write(t, filepath.Join(dir, "db.yaml"), deployment("db", "db:1"))
	if _, err := f.s.SyncHoldingDeletes(); err != nil {
		t.Fatal(err)
	}
	mgr := store.DirectoryManager(dir)
	if got, want := f.live(), map[string]string{"web": "web:2 " + mgr, "api": "api:1 " + mgr, "db": "db:1 " + mgr}; !reflect.DeepEqual(got, want) {
		t.Fatalf("held: live %v, want %v", got, want)
	}
	if st := f.status()[0]; !st.Ready || !strings.Contains(st.Message, "changes still arriving") {
		t.Errorf("held: status %+v", st)
	}
	f.sync()
	if got, want := f.live(), map[string]string{"web": "web:2 " + mgr, "db": "db:1 " + mgr}; !reflect.DeepEqual(got, want) {
		t.Fatalf("quiet: live %v, want %v", got, want)
	}
	if st := f.status()[0]; !st.Ready || st.Message != "" {
		t.Errorf("quiet: status %+v", st)
	}
}

// With SkipUnsupported an object of a kind dockctl does not run is left
// out of its file, the rest applied and deletion on; it is noted in the
// status at every sync, warned about (event) when it appears.
func TestSkipUnsupported(t *testing.T) {
	dir := t.TempDir()
	ingress := "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: web\n"
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:1")+"---\n"+ingress)
	write(t, filepath.Join(dir, "api.yaml"), deployment("api", "api:1"))
	f := newFixture(t, Options{Paths: []string{dir}, SkipUnsupported: true})
	f.sync()
	if err := os.Remove(filepath.Join(dir, "api.yaml")); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if got, want := f.live(), map[string]string{"web": "web:1 " + store.DirectoryManager(dir)}; !reflect.DeepEqual(got, want) {
		t.Errorf("live %v, want %v", got, want)
	}
	want := filepath.Join(dir, "web.yaml") + `:16: skipped NetworkPolicy "web": not supported by dockctl (--skip-unsupported)`
	if st := f.status()[0]; !st.Ready || st.Reason != "Synced" || !strings.Contains(st.Message, want) {
		t.Errorf("status %+v, want a message with %q", st, want)
	}
	if got := f.rec.reasons("Warning"); !reflect.DeepEqual(got, []string{"SkippedUnsupported"}) {
		t.Errorf("warnings %v, want one SkippedUnsupported", got)
	}
}

// An Emacs lock link (.#web.yaml, dangling by design) is not a manifest:
// editing a file does not stop deletions.
func TestEditorLockLinkIgnored(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:1"))
	if err := os.Symlink("me@host.4242:1700000000", filepath.Join(dir, ".#web.yaml")); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, Options{Paths: []string{dir}})
	f.sync()
	if st := f.status()[0]; !st.Ready || st.Files != 1 {
		t.Errorf("status %+v", st)
	}
}

// A path whose files that can be read hold no object, beside a
// subdirectory that cannot be read, is unreadable in part, not empty:
// --allow-empty never deletes then.
func TestPartialReadIsNeverEmpty(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	write(t, filepath.Join(dir, "team", "api.yaml"), deployment("api", "api:1"))
	f := newFixture(t, Options{Paths: []string{dir}, AllowEmpty: true, AllowEmptyAfter: time.Minute})
	f.sync()
	team := filepath.Join(dir, "team")
	if err := os.Chmod(team, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(team, 0o755) })
	for range 2 {
		asUnprivileged(t, func() {
			if _, err := f.s.Sync(); err != nil {
				t.Error(err)
			}
		})
		f.clock.Step(time.Hour)
	}
	st := f.status()[0]
	if st.Ready || st.Reason != "Unreadable" || st.EmptySince != nil || !reflect.DeepEqual(st.Errors, []string{team}) || !strings.Contains(st.Message, "permission denied") {
		t.Errorf("status %+v", st)
	}
	if got := f.live(); got["api"] == "" {
		t.Errorf("api deleted: %v", got)
	}
	var plan *Plan
	asUnprivileged(t, func() { plan = f.s.Read() })
	if p := plan.Problems(); len(p) != 2 || p[0] != team+": cannot read the directory: permission denied (its objects are kept as they are)" || plan.Deletes() {
		t.Errorf("problems %q, deletes %v", p, plan.Deletes())
	}
}

// A file's explicit false is applied (kubectl sends it: it undoes a patch
// made since) also by a sync that leaves out another manager's object: the
// bundle without it keeps the others' zeros.
func TestSyncWithAConflictKeepsExplicitZeros(t *testing.T) {
	dir := t.TempDir()
	web := strings.Replace(deployment("web", "web:dir"), "    spec:\n", "    spec:\n      hostNetwork: false\n", 1)
	write(t, filepath.Join(dir, "web.yaml"), web)
	write(t, filepath.Join(dir, "db.yaml"), deployment("db", "db:dir"))
	f := newFixture(t, Options{Paths: []string{dir}})
	// apply -f made db before the directory came: a conflict each sync.
	b, err := Place(mustDecode(t, deployment("db", "db:cli")), "default", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Apply(b.Bundle, store.ApplyOptions{Manager: store.ManagerApply}); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if _, err := f.st.UpdateRecordAs("patch", "", "web", func(_ *store.Record, d *manifests.Deployment) error {
		d.Spec.Template.Spec.HostNetwork = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	f.sync()
	rec, err := f.st.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Deployment.Spec.Template.Spec.HostNetwork {
		t.Errorf("hostNetwork true after the sync: the file's false must undo the patch")
	}
	if st := f.status(); st[0].Reason != "Conflict" {
		t.Errorf("status %+v, want the conflict of db", st[0])
	}
}

// withReplicas is deployment() with spec.replicas set.
func withReplicas(y string, n int) string {
	return strings.Replace(y, "spec:\n  selector", fmt.Sprintf("spec:\n  replicas: %d\n  selector", n), 1)
}

// `dockctl rollout restart` of a deployment a directory manages sets the
// template's kubectl.kubernetes.io/restartedAt annotation (a new
// revision). The directory does not set that annotation, so — as kubectl
// apply's three-way merge and Flux's server-side apply keep it — the next
// sync of the unchanged directory must keep it. Storing the file's
// template whole instead would undo the restart by a second rollout back
// to the previous template, unprompted, within one resync.
func TestSyncKeepsARolloutRestart(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:1"))
	f := newFixture(t, Options{Paths: []string{dir}})
	f.sync()
	restarted, err := f.st.UpdateRecordAs("rollout", "", "web", func(_ *store.Record, d *manifests.Deployment) error {
		if d.Spec.Template.Metadata.Annotations == nil {
			d.Spec.Template.Metadata.Annotations = map[string]string{}
		}
		d.Spec.Template.Metadata.Annotations[manifests.AnnotationRestartedAt] = time.Now().UTC().Format(time.RFC3339Nano)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	before := restarted.CurrentRevision().Number
	for _, r := range f.sync() {
		if r.Name == "web" && r.Action != store.Unchanged {
			t.Errorf("the sync of an unchanged directory %s deployment web after rollout restart", r.Action)
		}
	}
	after, err := f.st.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	if after.CurrentRevision().Number != before || after.Deployment.Spec.Template.Metadata.Annotations[manifests.AnnotationRestartedAt] == "" {
		t.Errorf("rollout restart undone by the sync: revision %d -> %d, template annotations %v",
			before, after.CurrentRevision().Number, after.Deployment.Spec.Template.Metadata.Annotations)
	}
}

// `dockctl label` on a deployment a directory manages adds a label the
// directory does not set. The README says updaters' changes are
// superseded "as kubectl apply would" — and kubectl apply (three-way
// merge) and Flux keep a label the manifest never set, so the sync of the
// unchanged directory keeps it.
func TestSyncKeepsALabelItDoesNotSet(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "web.yaml"), withReplicas(deployment("web", "web:1"), 2))
	f := newFixture(t, Options{Paths: []string{dir}})
	f.sync()
	ref := store.ObjectRef{Kind: store.KindDeployment, Namespace: "default", Name: "web"}
	if _, err := f.st.UpdateMetadataAs("label", ref, func(m *manifests.ObjectMeta) error {
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels["tier"] = "front"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	f.sync()
	r, err := f.st.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	if r.Deployment.Metadata.Labels["tier"] != "front" {
		t.Errorf("label tier=front (set by `dockctl label`, not by the directory) dropped by the next sync: labels %v", r.Deployment.Metadata.Labels)
	}
}
