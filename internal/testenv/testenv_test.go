package testenv

import (
	"fmt"
	"strings"
	"testing"
)

type recorder struct {
	fatal, skip string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }
func (r *recorder) Skip(args ...any)                  { r.skip = fmt.Sprint(args...) }

// A test whose machine lacks what it needs skips on a developer's machine
// and fails under CI, naming why either way.
func TestUnavailableFailsUnderCIAndSkipsElsewhere(t *testing.T) {
	for _, tc := range []struct {
		name               string
		ci                 bool
		wantFail, wantSkip bool
	}{
		{"a developer's machine skips", false, false, true},
		{"CI fails", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{}
			unavailable(r, tc.ci, "chown needs root")
			if (r.fatal != "") != tc.wantFail || (r.skip != "") != tc.wantSkip {
				t.Fatalf("fatal %q, skip %q; want a failure %v, a skip %v", r.fatal, r.skip, tc.wantFail, tc.wantSkip)
			}
			if !strings.Contains(r.fatal+r.skip, "chown needs root") {
				t.Errorf("the reason is not named: fatal %q, skip %q", r.fatal, r.skip)
			}
		})
	}
}

func TestCIIsTrueOnlyForCIEqualsTrue(t *testing.T) {
	for _, tc := range []struct {
		val  string
		want bool
	}{{"true", true}, {"", false}, {"false", false}, {"1", false}} {
		t.Setenv("CI", tc.val)
		if got := CI(); got != tc.want {
			t.Errorf("CI=%q: CI() = %v, want %v", tc.val, got, tc.want)
		}
	}
}
