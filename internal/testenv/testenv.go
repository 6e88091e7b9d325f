// Package testenv decides what a test does when this machine lacks what it
// needs (root, a pseudo-terminal, unshare, a tmpfs mount): a developer's
// run skips it, a CI run fails it. Nothing outside tests uses it.
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// CI reports whether this is a CI run: CI=true, as .ci/run's caller sets
// it (and .ci/run requires it).
func CI() bool { return os.Getenv("CI") == "true" }

// Unavailable ends the test because the machine lacks what it needs: a
// skip on a developer's machine, a failure under CI, where a skip would
// let the test disappear from a green run.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	unavailable(t, CI(), fmt.Sprintf(format, args...))
}

// failer is the part of testing.TB unavailable uses.
type failer interface {
	Helper()
	Fatalf(format string, args ...any)
	Skip(args ...any)
}

func unavailable(t failer, ci bool, reason string) {
	t.Helper()
	if ci {
		t.Fatalf("%s; CI=true: CI runs every test and fails this one rather than skip it", reason)
		return
	}
	t.Skip(reason)
}
