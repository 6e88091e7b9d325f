package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// tempMarker is part of every temporary file name; with the leading dot it
// lets listings and the watcher skip files that are not (yet) state.
const tempMarker = ".tmp-"

// pendingWrite is a temporary file, complete and fsynced, waiting to be
// renamed over its target.
type pendingWrite struct {
	tmp, target string
}

// prepareWrite writes data to a fresh temporary file next to dir/name and
// fsyncs it. Nothing is visible under name until commitWrites.
func prepareWrite(dir, name string, data []byte) (pendingWrite, error) {
	f, err := os.CreateTemp(dir, "."+name+tempMarker+"*") // created 0600
	if err != nil {
		return pendingWrite{}, err
	}
	p := pendingWrite{tmp: f.Name(), target: filepath.Join(dir, name)}
	_, err = f.Write(data)
	if err == nil {
		// Without fsync before rename, a crash can leave the renamed file
		// empty on some filesystems (ext4 delayed allocation).
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(p.tmp)
		// err already names the temporary file's full path.
		return pendingWrite{}, fmt.Errorf("writing %s: %w", name, err)
	}
	return p, nil
}

// commitWrites renames every pending file over its target, then fsyncs the
// directories so that the renames themselves survive a crash. It stops at
// the first failed rename and removes the temporary files not yet renamed.
func commitWrites(ws []pendingWrite) error {
	dirs := map[string]bool{}
	for i, w := range ws {
		if err := os.Rename(w.tmp, w.target); err != nil {
			abortWrites(ws[i:])
			return err // an *os.LinkError, naming both paths
		}
		dirs[filepath.Dir(w.target)] = true
	}
	var errs []error
	for d := range dirs {
		if err := syncDir(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// abortWrites removes temporary files that will not be committed.
func abortWrites(ws []pendingWrite) {
	for _, w := range ws {
		_ = os.Remove(w.tmp)
	}
}

// writeFileAtomic replaces dir/name with data atomically.
func writeFileAtomic(dir, name string, data []byte) error {
	p, err := prepareWrite(dir, name, data)
	if err != nil {
		return err
	}
	return commitWrites([]pendingWrite{p})
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}

func isTempName(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, tempMarker)
}

// removeTempFiles deletes temporary files left in dir by a crashed writer.
// The caller must hold the write lock, otherwise it could delete the
// temporary file of a live transaction.
func removeTempFiles(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("cleaning %s: %w", dir, err)
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() && isTempName(e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("cleaning %s: %w", dir, err))
			}
		}
	}
	return errors.Join(errs...)
}
