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
