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
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	// emptied fires when a path empty for a while may delete its objects
	// (--allow-empty-after): not a resync period later.
	emptied := time.NewTimer(time.Hour)
	emptied.Stop()
	sync := func() {
		if _, err := s.Sync(); err != nil {
			s.opts.Log.Error("manifests: sync failed", "err", err)
		}
		s.rewatch(w)
		if d, ok := s.untilEmptyDeletes(); ok {
			emptied.Reset(d)
		}
	}
	sync()
	tick := time.NewTicker(resync)
	defer tick.Stop()
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
		case <-emptied.C:
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

// untilEmptyDeletes is how long until a path found empty or unreadable
// has stayed so for AllowEmptyAfter; false when none waits for it.
func (s *Syncer) untilEmptyDeletes() (time.Duration, bool) {
	if !s.opts.AllowEmpty || len(s.emptySince) == 0 {
		return 0, false
	}
	now := s.opts.Clock.Now()
	first := time.Duration(-1)
	for _, since := range s.emptySince {
		d := since.Add(s.opts.AllowEmptyAfter).Sub(now)
		if d <= 0 {
			continue // its deadline passed: the sync just done deleted
		}
		if first < 0 || d < first {
			first = d
		}
	}
	// A little after the deadline, so that the sync finds it passed.
	return first + 10*time.Millisecond, first >= 0
}
