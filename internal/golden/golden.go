// Package golden compares a test's output with a golden file, or rewrites
// the file when the test binary runs with -update. The golden file is the
// contract: a difference fails the test with both sides printed, and a
// missing file fails it too (never written silently outside -update).
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// Update is the -update flag of every test binary that imports golden.
var Update = flag.Bool("update", false, "rewrite the golden files")

// Check compares got with the file at path (under -update: writes it,
// creating its directory, then compares).
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
		return // for a testing.TB whose Fatalf returns
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s:\n--- got\n%s\n--- want\n%s", filepath.Base(path), path, got, want)
	}
}
