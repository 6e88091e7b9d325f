package reconciler

import (
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// A crash count from a hand-edited or garbled status file (zero or below)
// must not panic the sync when the next start fails: crashDelay shifted by
// n-1 before it checked n, and a negative shift panics.
func TestCrashDelayToleratesCrashCountFromStatusFile(t *testing.T) {
	c := New(nil, nil, Options{CrashBackoffBase: time.Second, CrashBackoffMax: time.Minute})
	for _, n := range []int{0, -1, -1 << 40} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("crashDelay(%d) panicked: %v", n, r)
				}
			}()
			if d := c.crashDelay(n); d < time.Second || d > time.Minute {
				t.Errorf("crashDelay(%d) = %v, want within [base, max]", n, d)
			}
		}()
		s := deploymentState{Containers: map[string]*containerState{"x": {CrashCount: n - 1}}}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("recordStartFailures with crashCount %d from the status file panicked: %v", n-1, r)
				}
			}()
			c.recordStartFailures(&s, Plan{}, &startError{id: "x", name: "x", err: dockerx.ErrConflict}, t0)
		}()
	}
}
