// Package golden compares what a test rendered with a golden file under
// testdata/, for the reconciler's packages' plan tests. It is test support:
// only _test.go files import it.
//
// Invariant: a golden file changes only when a test binary runs with
// -update, never as a side effect of a failing comparison.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Check compares got with testdata/NAME.golden (-update rewrites it).
func Check(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("plan differs from %s (run with -update if intended):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
