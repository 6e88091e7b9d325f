package sourcedir

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/dockctl/dockctl/manifests"
)

const (
	// Debounce is how long Run waits after a change before syncing, so
	// that a `git checkout` rewriting many files, or git-sync swapping its
	// link, is read once, whole.
	Debounce = 300 * time.Millisecond
	// MaxDebounce bounds how long changes that keep arriving hold a sync
	// back: Run then syncs anyway, deleting nothing (SyncHoldingDeletes),
	// and again every MaxDebounce while they keep arriving. Deletions wait
	// for a Debounce without change.
	MaxDebounce = 2 * time.Second
)

// Run syncs at once, then on every change under the paths (debounced)
// and every resync, until ctx ends. Changes are watched with fsnotify on
// every directory of each path and on the directory holding the path
// itself (where git-sync swaps its link); the watches follow each sync.
// A lost event costs at most one resync period. While changes are still
// arriving no sync deletes anything: a checkout half done may hold an
// object that moves in neither place. So the resync waits for the
// debounced sync then, and a sync forced by MaxDebounce only creates and
// changes.
func (s *Syncer) Run(ctx context.Context, resync time.Duration) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer func() { _ = w.Close() }()
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	// longest fires MaxDebounce after the first of changes still arriving.
	longest := time.NewTimer(time.Hour)
	longest.Stop()
	// pending: a change not synced yet; debounce is running.
	pending := false
	// emptied fires when a path empty for a while may delete its objects
	// (--allow-empty-after): not a resync period later.
	emptied := time.NewTimer(time.Hour)
	emptied.Stop()
	sync := func(holdDeletes bool) {
		// Watch before reading: a change made while the sync reads is
		// then an event (another sync), never lost until the resync. A
		// directory made meanwhile shows up as a change of its watched
		// parent, and the next sync watches it before reading it.
		s.rewatch(w)
		if _, err := s.sync(holdDeletes); err != nil {
			s.opts.Log.Error("manifests: sync failed", "err", err)
		}
		if d, ok := s.untilEmptyDeletes(); ok {
			emptied.Reset(d)
		}
	}
	changed := func() {
		debounce.Reset(Debounce)
		if !pending {
			pending = true
			longest.Reset(MaxDebounce)
		}
	}
	sync(false)
	tick := time.NewTicker(resync)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Events:
			if !ok {
				return nil
			}
			if s.matters(e.Name) {
				changed()
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			// An overflow loses events: read everything again.
			s.opts.Log.Warn("manifests: watch error, resyncing", "err", err)
			changed()
		case <-debounce.C:
			pending = false
			longest.Stop()
			sync(false)
		case <-longest.C:
			if pending {
				sync(true)
				longest.Reset(MaxDebounce)
			}
		case <-tick.C:
			if !pending { // else the debounced sync comes
				sync(false)
			}
		case <-emptied.C:
			if !pending {
				sync(false)
			}
		}
	}
}

// watchedDir is which changes in a watched directory matter.
type watchedDir struct {
	// tree: a directory of a path, where a manifest or a directory
	// changing matters.
	tree bool
	// names matter in a directory holding a path, or a symbolic link on
	// its way: the rest of it (a log written beside the path) does not.
	names map[string]bool
}

// matters says whether a change to name, reported by the watch, may
// change what the paths hold.
func (s *Syncer) matters(name string) bool {
	if _, ok := s.watched[name]; ok {
		return true // a watched directory itself
	}
	d, ok := s.watched[filepath.Dir(name)]
	switch {
	case !ok:
		return true // a watch just dropped: no telling
	case d.names[filepath.Base(name)]:
		return true
	case !d.tree:
		return false
	case manifests.IsManifestName(name):
		return true
	}
	// A directory created, or one that was watched removed or renamed.
	fi, err := os.Lstat(name)
	return err == nil && fi.IsDir()
}

// rewatch makes w watch the directories the paths are now made of. The
// kernel drops the watch of a removed directory by itself (git-sync
// removes the old worktree), so what is watched is asked, not
// remembered.
func (s *Syncer) rewatch(w *fsnotify.Watcher) {
	want := map[string]*watchedDir{}
	dir := func(d string) *watchedDir {
		if want[d] == nil {
			want[d] = &watchedDir{names: map[string]bool{}}
		}
		return want[d]
	}
	for _, p := range s.opts.Paths {
		// The directory holding the path (the nearest that exists, for
		// a path not made yet), and the one holding each symbolic link
		// on the way (git-sync's --link, perhaps above a subdirectory of
		// the checkout): where a swap shows up.
		for q := filepath.Clean(p); q != filepath.Dir(q); q = filepath.Dir(q) {
			if _, err := os.Stat(filepath.Dir(q)); err == nil {
				dir(filepath.Dir(q)).names[filepath.Base(q)] = true
				break
			}
		}
		for q := filepath.Clean(p); q != filepath.Dir(q); q = filepath.Dir(q) {
			if fi, err := os.Lstat(q); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				dir(filepath.Dir(q)).names[filepath.Base(q)] = true
			}
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			dir(filepath.Dir(real)).names[filepath.Base(real)] = true
			continue
		}
		_ = filepath.WalkDir(real, func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
			case d.IsDir():
				dir(path).tree = true
			case d.Type()&fs.ModeSymlink != 0 && manifests.IsManifestName(path):
				// A manifest kept as a link: its target need not be
				// named as a manifest (read twice, it would be a
				// duplicate), so its name, and the name of every link
				// on its way, is watched where it is. list reads only
				// targets inside real; so it watches.
				target, links, err := resolveInside(p, real, path)
				if err != nil {
					break
				}
				dir(filepath.Dir(target)).names[filepath.Base(target)] = true
				for _, l := range links {
					dir(filepath.Dir(l)).names[filepath.Base(l)] = true
				}
			}
			return nil
		})
	}
	s.watched = want
	watched := map[string]bool{}
	for _, d := range w.WatchList() {
		watched[d] = true
	}
	for d := range watched {
		if want[d] == nil {
			_ = w.Remove(d)
		}
	}
	for d := range want {
		if !watched[d] {
			if err := w.Add(d); err != nil {
				s.opts.Log.Debug("manifests: cannot watch", "dir", d, "err", err)
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
