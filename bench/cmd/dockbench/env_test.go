package main

import "testing"

// TestRemovalConcurrency: the harness's removals go one at a time on an
// Engine whose libnetwork can deadlock when two containers of one network
// leave it together (before 20.10.27), and on one whose version is not
// known; 8 at a time otherwise.
func TestRemovalConcurrency(t *testing.T) {
	for _, tt := range []struct {
		version string
		want    int
	}{
		{"20.10.24+dfsg1", 1},
		{"20.10.26", 1},
		{"19.03.15", 1},
		{"", 1},
		{"20.10.27", 8},
		{"24.0.7", 8},
		{"28.2.2", 8},
	} {
		if got := removalConcurrency(tt.version); got != tt.want {
			t.Errorf("removalConcurrency(%q) = %d, want %d", tt.version, got, tt.want)
		}
	}
}
