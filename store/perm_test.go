package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/internal/testenv"
)

// An existing state directory that others may write to, or that another
// user owns, is not used as is (docs/design.md §5): one that is ours is made
// private again (0700), one owned by someone else is refused, because
// whoever can write the state directory decides what the controller runs.
func TestOpenStateDirPermissions(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		owner   int    // the uid Open runs as; -1: the real one
		wantErr string // "" : Open succeeds and every directory is 0700
	}{
		{"fresh", func(*testing.T, string) {}, -1, ""},
		{"world-writable, ours", func(t *testing.T, dir string) { chmod(t, dir, 0o777) }, -1, ""},
		{"group-writable, ours", func(t *testing.T, dir string) { chmod(t, dir, 0o770) }, -1, ""},
		{"world-writable deployments, ours", func(t *testing.T, dir string) { chmod(t, filepath.Join(dir, deploymentsDir), 0o777) }, -1, ""},
		{"group-writable status, ours", func(t *testing.T, dir string) { chmod(t, filepath.Join(dir, statusDir), 0o775) }, -1, ""},
		{"owned by another user", func(*testing.T, string) {}, os.Geteuid() + 4242, "owned by uid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			if _, err := Open(dir, "default"); err != nil {
				t.Fatal(err)
			}
			tt.setup(t, dir)
			if tt.owner >= 0 {
				old := geteuid
				geteuid = func() int { return tt.owner }
				t.Cleanup(func() { geteuid = old })
			}
			_, err := Open(dir, "default")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), dir) {
					t.Fatalf("Open = %v, want an error naming %s and %q", err, dir, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			for _, d := range []string{dir, filepath.Join(dir, deploymentsDir), filepath.Join(dir, statusDir)} {
				fi, err := os.Stat(d)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm()&0o022 != 0 {
					t.Errorf("%s: mode %v, still writable by others", d, fi.Mode().Perm())
				}
			}
		})
	}
}

// A subdirectory owned by another user is refused too (needs root to
// chown; the owner check itself is covered above without it).
func TestOpenRefusesForeignSubdirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, "chown needs root; TestOpenStateDirPermissions covers the owner check")
	}
	dir := filepath.Join(t.TempDir(), "state")
	if _, err := Open(dir, "default"); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, deploymentsDir)
	if err := os.Chown(sub, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, "default"); err == nil || !strings.Contains(err.Error(), sub) || !strings.Contains(err.Error(), "owned by uid 4242") {
		t.Fatalf("Open = %v, want a refusal naming %s", err, sub)
	}
}

func chmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}
