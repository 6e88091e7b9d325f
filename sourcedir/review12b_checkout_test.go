package sourcedir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dockctl/dockctl/store"
)

// A `git checkout` that moves files first removes the old paths, then
// writes the new ones; on a large tree or a slow disk the writes take
// seconds. The README promises "a git checkout rewriting many files is
// one sync" (the debounce), but Run's periodic resync is not held back
// while changes are still arriving: a resync that lands in the middle
// reads a half-written tree and deletes every object whose file is not
// written yet — its containers removed, then created again a moment
// later. The resync period is short here only so that the tick surely
// lands in the checkout; with the default 2m it lands in one checkout of
// every few dozen that take seconds.
func TestReview12bResyncMidCheckoutDeletesMovedObjects(t *testing.T) {
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
