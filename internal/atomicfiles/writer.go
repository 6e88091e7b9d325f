// Package atomicfiles projects a set of files into a directory so that a
// reader never sees a half-written file, nor files of two versions mixed:
// the scheme of the kubelet's AtomicWriter (pkg/volume/util), which is what
// configMap, secret, projected and downwardAPI volumes look like inside a
// Kubernetes pod, so that programs that watch them (inotify on `..data`)
// work unchanged.
//
// Layout of a directory it manages:
//
//	..2026_12_01_08_00_00.123456789/   the current version (a timestamped dir)
//	..data -> ..2026_12_01_08_00_00.123456789
//	key -> ..data/key                  one symlink per top-level path
//
// Invariants:
//   - A version is written completely (files, modes, group ownership) into
//     a fresh timestamped directory before it becomes visible; it becomes
//     visible by one rename(2) of a symlink over `..data`, which is atomic.
//     A reader that resolves `key` sees the old or the new version, whole.
//   - Names starting with ".." are the writer's own: a payload path may not
//     start with "..", be absolute, or contain a ".." element.
//   - Writing a payload equal to the current version (same paths, bytes and
//     modes) changes nothing (Result.Changed false), so a repeated write is
//     free of side effects for watchers.
//   - Top-level paths of the previous version that the new one lacks are
//     removed after the swap, then the previous version's directory. A
//     reader whose path lookup had passed `..data` into that directory just
//     before it went gets ENOENT for that one lookup (the kubelet's writer
//     has the same window); opening the path again finds the new version.
//   - A Writer offers no concurrency of its own: one writer per directory at
//     a time (the controller writes a pod's volumes from one sync).
//
// It never logs, and its errors name paths, never file contents: a payload
// may hold a Secret's values.
package atomicfiles

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

const (
	// DataDirName is the symlink to the current version.
	DataDirName = "..data"
	// newDataDirName is the symlink made before it is renamed over ..data.
	newDataDirName = "..data_tmp"

	maxFileNameLength = 255
	maxPathLength     = 4096
)

// File is one file of a payload.
type File struct {
	Data []byte
	// Mode is the file's permission bits (0644 when zero is meant, the
	// caller defaults it; a zero mode writes an unreadable file, as
	// Kubernetes would).
	Mode fs.FileMode
}

// Result says what a Write did.
type Result struct {
	Changed bool   // a new version was made visible
	Version string // the current version's directory name ("..2026_…")
}

// Writer writes versions of a payload into Dir.
type Writer struct {
	Dir string
	// FSGroup, when set, is the group a new version is given after its
	// files are written and before it becomes visible, as the kubelet's
	// SetVolumeOwnership does for a read-only volume with fsGroup: every
	// file and directory chowned to the group, files gain 0440,
	// directories 0550 and the setgid bit.
	FSGroup *int64
	// Now stamps version directories (time.Now when nil).
	Now func() time.Time
}

// ValidatePath checks a payload path as the kubelet's validatePath does.
func ValidatePath(p string) error {
	switch {
	case p == "":
		return errors.New("invalid path: must not be empty")
	case len(p) > maxPathLength:
		return fmt.Errorf("invalid path: must be less than or equal to %d characters", maxPathLength)
	case path.IsAbs(p):
		return fmt.Errorf("invalid path %q: must be relative", p)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("invalid path %q: must not start with '..'", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return fmt.Errorf("invalid path %q: must not contain '..'", p)
		}
		if len(seg) > maxFileNameLength {
			return fmt.Errorf("invalid path %q: a segment is longer than %d characters", p, maxFileNameLength)
		}
	}
	return nil
}

// cleanPayload validates every path and returns the payload keyed by its
// cleaned paths.
func cleanPayload(payload map[string]File) (map[string]File, error) {
	out := make(map[string]File, len(payload))
	for p, f := range payload {
		if err := ValidatePath(p); err != nil {
			return nil, err
		}
		c := path.Clean(p)
		if _, dup := out[c]; dup {
			return nil, fmt.Errorf("invalid path %q: given twice", p)
		}
		out[c] = f
	}
	// A path may not be both a file and the directory of another.
	for p := range out {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if _, ok := out[d]; ok {
				return nil, fmt.Errorf("invalid path %q: %q is also a file", p, d)
			}
		}
	}
	return out, nil
}

// Write makes payload the directory's current version, atomically.
func (w *Writer) Write(payload map[string]File) (Result, error) {
	files, err := cleanPayload(payload)
	if err != nil {
		return Result{}, err
	}
	if err := os.MkdirAll(w.Dir, 0o755); err != nil {
		return Result{}, fmt.Errorf("atomic write %s: %w", w.Dir, err)
	}
	oldVersion := w.currentVersion()
	if oldVersion != "" {
		same, err := w.same(oldVersion, files)
		if err != nil {
			return Result{}, err
		}
		if same && w.visibleLinksPresent(files) {
			return Result{Version: oldVersion}, nil
		}
	}
	oldVisible := map[string]bool{}
	if oldVersion != "" {
		entries, err := os.ReadDir(filepath.Join(w.Dir, oldVersion))
		if err != nil {
			return Result{}, fmt.Errorf("atomic write %s: read the current version: %w", w.Dir, err)
		}
		for _, e := range entries {
			oldVisible[e.Name()] = true
		}
	}

	version, err := w.newVersionDir()
	if err != nil {
		return Result{}, err
	}
	abs := filepath.Join(w.Dir, version)
	if err := writeFiles(abs, files); err != nil {
		os.RemoveAll(abs)
		return Result{}, fmt.Errorf("atomic write %s: %w", w.Dir, err)
	}
	if w.FSGroup != nil {
		if err := groupOwnership(abs, int(*w.FSGroup)); err != nil {
			os.RemoveAll(abs)
			return Result{}, fmt.Errorf("atomic write %s: set permissions: %w", w.Dir, err)
		}
	}
	// The swap: a symlink made aside, then renamed over ..data.
	tmpLink := filepath.Join(w.Dir, newDataDirName)
	os.Remove(tmpLink)
	if err := os.Symlink(version, tmpLink); err != nil {
		os.RemoveAll(abs)
		return Result{}, fmt.Errorf("atomic write %s: %w", w.Dir, err)
	}
	if err := os.Rename(tmpLink, filepath.Join(w.Dir, DataDirName)); err != nil {
		os.Remove(tmpLink)
		os.RemoveAll(abs)
		return Result{}, fmt.Errorf("atomic write %s: swap %s: %w", w.Dir, DataDirName, err)
	}
	newVisible := topLevel(files)
	for _, name := range newVisible {
		if err := w.ensureVisibleLink(name); err != nil {
			return Result{Changed: true, Version: version}, err
		}
		delete(oldVisible, name)
	}
	var errs []error
	for _, name := range slices.Sorted(mapsKeys(oldVisible)) {
		if err := os.Remove(filepath.Join(w.Dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("atomic write %s: remove %s: %w", w.Dir, name, err))
		}
	}
	if oldVersion != "" && oldVersion != version {
		if err := os.RemoveAll(filepath.Join(w.Dir, oldVersion)); err != nil {
			errs = append(errs, fmt.Errorf("atomic write %s: remove the previous version: %w", w.Dir, err))
		}
	}
	return Result{Changed: true, Version: version}, errors.Join(errs...)
}

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// currentVersion is the version ..data points to ("" when none, or when
// it is not one of the writer's directories).
func (w *Writer) currentVersion() string {
	target, err := os.Readlink(filepath.Join(w.Dir, DataDirName))
	if err != nil || strings.Contains(target, "/") || !strings.HasPrefix(target, "..") || target == DataDirName {
		return ""
	}
	if fi, err := os.Lstat(filepath.Join(w.Dir, target)); err != nil || !fi.IsDir() {
		return ""
	}
	return target
}

// same reports whether version holds exactly files: the same regular
// files with the same bytes and modes, and nothing else.
func (w *Writer) same(version string, files map[string]File) (bool, error) {
	root := filepath.Join(w.Dir, version)
	seen := 0
	differ := errors.New("differs")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		f, ok := files[filepath.ToSlash(rel)]
		if !ok || !d.Type().IsRegular() {
			return differ
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode().Perm() != w.effectiveMode(f.Mode) || fi.Size() != int64(len(f.Data)) || !w.groupIs(fi) {
			return differ
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Equal(b, f.Data) {
			return differ
		}
		seen++
		return nil
	})
	if errors.Is(err, differ) {
		return false, nil
	}
	if err != nil {
		// Unreadable: write a new version rather than fail.
		return false, nil
	}
	return seen == len(files), nil
}

func (w *Writer) visibleLinksPresent(files map[string]File) bool {
	for _, name := range topLevel(files) {
		if target, err := os.Readlink(filepath.Join(w.Dir, name)); err != nil || target != path.Join(DataDirName, name) {
			return false
		}
	}
	return true
}

// ensureVisibleLink makes name a symlink to ..data/name, replacing
// whatever else is there.
func (w *Writer) ensureVisibleLink(name string) error {
	p := filepath.Join(w.Dir, name)
	want := path.Join(DataDirName, name)
	if target, err := os.Readlink(p); err == nil && target == want {
		return nil
	}
	tmp := filepath.Join(w.Dir, "..link_tmp")
	os.Remove(tmp)
	if err := os.Symlink(want, tmp); err != nil {
		return fmt.Errorf("atomic write %s: link %s: %w", w.Dir, name, err)
	}
	if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
		// Not ours (rename cannot replace a directory by a symlink).
		if err := os.RemoveAll(p); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("atomic write %s: link %s: %w", w.Dir, name, err)
		}
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("atomic write %s: link %s: %w", w.Dir, name, err)
	}
	return nil
}

// newVersionDir makes a fresh timestamped directory, 0755 (readable by any
// user the pod's containers run as; the files carry their own modes).
func (w *Writer) newVersionDir() (string, error) {
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	abs, err := os.MkdirTemp(w.Dir, now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return "", fmt.Errorf("atomic write %s: %w", w.Dir, err)
	}
	if err := os.Chmod(abs, 0o755); err != nil {
		os.RemoveAll(abs)
		return "", fmt.Errorf("atomic write %s: %w", w.Dir, err)
	}
	return filepath.Base(abs), nil
}

// writeFiles writes every file under root with its exact mode (the umask
// does not apply) and makes its directories 0755.
func writeFiles(root string, files map[string]File) error {
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	}) {
		f := files[p]
		abs := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		if err := os.WriteFile(abs, f.Data, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		if err := os.Chmod(abs, f.Mode.Perm()); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}

// topLevel returns the sorted first path elements of files: the names
// that are symlinks into ..data.
func topLevel(files map[string]File) []string {
	set := map[string]bool{}
	for p := range files {
		set[strings.SplitN(p, "/", 2)[0]] = true
	}
	return slices.Sorted(mapsKeys(set))
}

// effectiveMode is the mode a file of payload mode m has once written.
func (w *Writer) effectiveMode(m fs.FileMode) fs.FileMode {
	if w.FSGroup != nil {
		return m.Perm() | 0o440
	}
	return m.Perm()
}

// groupIs reports whether a written file has the group FSGroup asks for.
func (w *Writer) groupIs(fi fs.FileInfo) bool {
	if w.FSGroup == nil {
		return true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int64(st.Gid) == *w.FSGroup
}

// groupOwnership gives a version directory to group gid (Writer.FSGroup).
func groupOwnership(root string, gid int) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, -1, gid); err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		mode := fi.Mode().Perm() | 0o440
		if d.IsDir() {
			mode |= 0o110 | fs.ModeSetgid
		}
		return os.Chmod(p, mode)
	})
}
