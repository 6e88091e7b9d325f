package dockerx

import "testing"

func TestParseExitCode(t *testing.T) {
	for status, want := range map[string]int{
		"Exited (0) 3 seconds ago":      0,
		"Exited (1) 3 seconds ago":      1,
		"Exited (137) 2 minutes ago":    137,
		"Up 5 seconds":                  0,
		"Created":                       0,
		"Exited (garbage) 1 second ago": 0,
		"Exited (2":                     0,
	} {
		if got := parseExitCode(status); got != want {
			t.Errorf("parseExitCode(%q) = %d, want %d", status, got, want)
		}
	}
}
