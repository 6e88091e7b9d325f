// Package testfs holds the file helpers that the tests of several packages
// share. Nothing outside tests uses it.
package testfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// CopyState copies the fixture tree src into a fresh directory of the
// test's and returns its path, directories 0700 and files 0600 as dockctl
// makes its state directory: a checkout does not keep modes.
func CopyState(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "state")
	if err := copyDir(dst, src); err != nil {
		t.Fatal(err)
	}
	return dst
}

func copyDir(dst, src string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
}
