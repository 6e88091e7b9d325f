package store

import (
	"strings"
	"testing"
	"time"
)

func TestHeartbeatFreshness(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	beat := func(at time.Time) *Heartbeat {
		return &Heartbeat{PID: 42, Started: t0, Beat: at, Interval: 10 * time.Second}
	}
	stopped := beat(t0)
	stopped.Stopped = t0.Add(time.Second)
	for _, tc := range []struct {
		name string
		hb   *Heartbeat
		now  time.Time
		want string // "" when fresh, else a word of the reason
	}{
		{"none ever written", nil, t0, "no controller has run"},
		{"just beaten", beat(t0), t0.Add(time.Second), ""},
		{"within three intervals", beat(t0), t0.Add(30 * time.Second), ""},
		{"older than three intervals", beat(t0), t0.Add(31 * time.Second), "last seen 31s ago"},
		{"stopped cleanly", stopped, t0.Add(2 * time.Second), "stopped"},
		{"a clock stepped back counts as fresh", beat(t0), t0.Add(-5 * time.Second), ""},
		// A running controller beats again within an interval of the
		// step, on the new clock: a beat further ahead than the misses
		// allowed was left by one that has not beaten since — crashed.
		{"a beat far in the future was left by a controller gone since", beat(t0), t0.Add(-time.Hour), "1h0m0s in the future"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.hb.Staleness(tc.now)
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("Staleness = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestHeartbeatRoundTripAndStop(t *testing.T) {
	s := openTemp(t)
	if hb, err := s.ReadHeartbeat(); err != nil || hb != nil {
		t.Fatalf("ReadHeartbeat before any = %v, %v", hb, err)
	}
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	hb := Heartbeat{PID: 7, Started: t0, Beat: t0.Add(10 * time.Second), Interval: 10 * time.Second}
	if err := s.WriteHeartbeat(hb); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(s.Dir(), "default")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ro.ReadHeartbeat()
	if err != nil || got == nil {
		t.Fatalf("ReadHeartbeat = %v, %v", got, err)
	}
	if got.PID != 7 || !got.Beat.Equal(hb.Beat) || got.Interval != hb.Interval || !got.Stopped.IsZero() {
		t.Errorf("read back %+v, wrote %+v", *got, hb)
	}
	if got.Staleness(t0.Add(11*time.Second)) != "" {
		t.Errorf("a beat a second old reads as stale: %q", got.Staleness(t0.Add(11*time.Second)))
	}
	hb.Stopped = t0.Add(12 * time.Second)
	if err := s.WriteHeartbeat(hb); err != nil {
		t.Fatal(err)
	}
	if got, _ := ro.ReadHeartbeat(); got == nil || got.Staleness(t0.Add(13*time.Second)) == "" {
		t.Errorf("a stopped controller's heartbeat reads as fresh: %+v", got)
	}
}

// TestHeartbeatStall: a fresh heartbeat whose loop has finished no pass
// over Docker for three resync periods, and at least three minutes (the
// kubelet's PLEG threshold), is a wedged controller; one of a release
// that did not report passes is never called wedged.
func TestHeartbeatStall(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		hb   Heartbeat
		now  time.Time
		want string
	}{
		{"a recent pass", Heartbeat{Started: t0, PassEvery: 30 * time.Second, LastPass: t0.Add(time.Minute)}, t0.Add(2 * time.Minute), ""},
		{"three minutes at least, whatever the resync", Heartbeat{Started: t0, PassEvery: 10 * time.Second, LastPass: t0}, t0.Add(2 * time.Minute), ""},
		{"past the threshold", Heartbeat{Started: t0, PassEvery: 30 * time.Second, LastPass: t0}, t0.Add(3*time.Minute + time.Second),
			"its last pass over Docker ended 3m1s ago, and it starts one every 30s (Docker may not be answering)"},
		{"three resyncs when longer than three minutes", Heartbeat{Started: t0, PassEvery: 10 * time.Minute, LastPass: t0}, t0.Add(29 * time.Minute), ""},
		{"no pass yet, just started", Heartbeat{Started: t0, PassEvery: 30 * time.Second}, t0.Add(time.Minute), ""},
		{"no pass since the start", Heartbeat{Started: t0, PassEvery: 30 * time.Second}, t0.Add(5 * time.Minute),
			"it has finished no pass over Docker in the 5m0s since it started (Docker may not be answering)"},
		{"a release that did not report passes", Heartbeat{Started: t0}, t0.Add(time.Hour), ""},
		{"a clock stepped back a little: the last pass is recent", Heartbeat{Started: t0, PassEvery: 30 * time.Second, LastPass: t0}, t0.Add(-5 * time.Second), ""},
		// As Staleness's beat from the future: a loop that makes progress
		// ends a pass on the new clock within a resync of the step; a last
		// pass further ahead than the threshold was left by a loop that
		// has ended none since, wedged before the step.
		{"a last pass far in the future, none since: wedged before a clock stepped back", Heartbeat{Started: t0.Add(-time.Hour), PassEvery: 30 * time.Second, LastPass: t0},
			t0.Add(-time.Hour), "its last pass over Docker ended 1h0m0s in the future, and none ended since (Docker may not be answering)"},
		{"no pass since a start far in the future", Heartbeat{Started: t0, PassEvery: 30 * time.Second}, t0.Add(-time.Hour),
			"it has finished no pass over Docker since it started 1h0m0s in the future (Docker may not be answering)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.hb.Stall(tc.now); got != tc.want {
				t.Errorf("Stall = %q, want %q", got, tc.want)
			}
		})
	}
}
