package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what Check reports.
type recorder struct {
	testing.TB
	errors, fatals []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, format)
}
func (r *recorder) Fatalf(format string, args ...any) { r.fatals = append(r.fatals, format) }

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.golden")
	if err := os.WriteFile(path, []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		path, got    string
		errors, fata int
	}{
		{"equal output passes", path, "same\n", 0, 0},
		{"different output fails with both sides", path, "other\n", 1, 0},
		{"a missing golden file fails, and is not written", filepath.Join(dir, "none.golden"), "x", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Check(r, tc.path, []byte(tc.got))
			if len(r.errors) != tc.errors || len(r.fatals) != tc.fata {
				t.Errorf("errors %q, fatals %q; want %d and %d", r.errors, r.fatals, tc.errors, tc.fata)
			}
			if tc.errors > 0 && !strings.Contains(r.errors[0], "--- got") {
				t.Errorf("the failure does not show both sides: %q", r.errors[0])
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "none.golden")); !os.IsNotExist(err) {
		t.Errorf("Check wrote a golden file without -update: %v", err)
	}
}
