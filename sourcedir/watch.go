package sourcedir

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Debounce is how long Run waits after a change before syncing, so that a
// `git checkout` rewriting many files, or git-sync swapping its link, is
// read once, whole.
const Debounce = 300 * time.Millisecond

// Run syncs at once, then on every change under the paths (debounced)
// and every resync, until ctx ends. Changes are watched with fsnotify on
// every directory of each path and on the directory holding the path
// itself (where git-sync swaps its link); the watches follow each sync.
// A lost event costs at most one resync period.
func (s *Syncer) Run(ctx context.Context, resync time.Duration) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer func() { _ = w.Close() }()
	sync := func() {
		if _, err := s.Sync(); err != nil {
			s.opts.Log.Error("manifests: sync failed", "err", err)
		}
		s.rewatch(w)
	}
	sync()
	tick := time.NewTicker(resync)
	defer tick.Stop()
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-w.Events:
			if !ok {
				return nil
			}
			debounce.Reset(Debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			// An overflow loses events: read everything again.
			s.opts.Log.Warn("manifests: watch error, resyncing", "err", err)
			debounce.Reset(Debounce)
		case <-debounce.C:
			sync()
		case <-tick.C:
			sync()
		}
	}
}

// rewatch makes w watch the directories the paths are now made of. The
// kernel drops the watch of a removed directory by itself (git-sync
// removes the old worktree), so what is watched is asked, not
// remembered.
func (s *Syncer) rewatch(w *fsnotify.Watcher) {
	watched := map[string]bool{}
	for _, d := range w.WatchList() {
		watched[d] = true
	}
	want := map[string]bool{}
	for _, p := range s.opts.Paths {
		// The directory holding the path, and the one holding each
		// symbolic link on the way (git-sync's --link, perhaps above a
		// subdirectory of the checkout): where a swap shows up.
		want[filepath.Dir(filepath.Clean(p))] = true
		for q := filepath.Clean(p); q != filepath.Dir(q); q = filepath.Dir(q) {
			if fi, err := os.Lstat(q); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				want[filepath.Dir(q)] = true
			}
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			want[filepath.Dir(real)] = true
			continue
		}
		_ = filepath.WalkDir(real, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				want[path] = true
			}
			return nil
		})
	}
	for dir := range watched {
		if !want[dir] {
			_ = w.Remove(dir)
		}
	}
	for dir := range want {
		if !watched[dir] {
			if err := w.Add(dir); err != nil {
				s.opts.Log.Debug("manifests: cannot watch", "dir", dir, "err", err)
			}
		}
	}
}
