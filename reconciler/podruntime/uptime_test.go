package podruntime

import (
	"testing"
	"time"
)

func TestUptimeBounds(t *testing.T) {
	for _, tt := range []struct {
		status string
		lo, hi time.Duration
		ok     bool
	}{
		{"Up Less than a second", 0, time.Second, true},
		{"Up 1 second", time.Second, 2 * time.Second, true},
		{"Up 59 seconds", 59 * time.Second, 60 * time.Second, true},
		{"Up About a minute", time.Minute, 2 * time.Minute, true},
		{"Up 7 minutes (Paused)", 7 * time.Minute, 8 * time.Minute, true},
		{"Up About an hour", time.Hour, 90 * time.Minute, true},
		{"Up 3 hours (unhealthy)", 150 * time.Minute, 210 * time.Minute, true},
		{"Exited (0) 3 seconds ago", 0, 0, false},
		{"Up forever", 0, 0, false},
	} {
		lo, hi, ok := uptimeBounds(tt.status)
		if lo != tt.lo || hi != tt.hi || ok != tt.ok {
			t.Errorf("uptimeBounds(%q) = %v, %v, %v; want %v, %v, %v", tt.status, lo, hi, ok, tt.lo, tt.hi, tt.ok)
		}
	}
}
