package job

import (
	"testing"
	"time"
)

func TestPodFailureBackoffDoublesFrom10SecondsTo6Minutes(t *testing.T) {
	for _, tc := range []struct {
		failures int
		want     time.Duration
	}{
		{0, 0},
		{1, 10 * time.Second},
		{2, 20 * time.Second},
		{3, 40 * time.Second},
		{5, 160 * time.Second},
		{6, 320 * time.Second},
		{7, 6 * time.Minute},
		{64, 6 * time.Minute},
		{1 << 30, 6 * time.Minute},
	} {
		if got := backoffDelay(tc.failures); got != tc.want {
			t.Errorf("after %d failures: %v, want %v", tc.failures, got, tc.want)
		}
	}
}
