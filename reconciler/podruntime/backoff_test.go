package podruntime

import (
	"testing"
	"time"
)

// TestBackoffDoublesUpToTheMaximum: after the n-th crash in a row a
// container waits base·2ⁿ⁻¹, capped at the maximum; a count from a
// garbled status file (below 1, or huge) is a first crash or the maximum,
// never a negative or overflowed shift.
func TestBackoffDoublesUpToTheMaximum(t *testing.T) {
	b := Backoff{Base: time.Second, Max: time.Minute}
	for _, tt := range []struct {
		n    int
		want time.Duration
	}{
		{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {6, 32 * time.Second}, {7, time.Minute},
		{0, time.Second}, {-5, time.Second}, {63, time.Minute}, {int(^uint(0) >> 1), time.Minute},
	} {
		if got := b.Delay(tt.n); got != tt.want {
			t.Errorf("Delay(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
}
