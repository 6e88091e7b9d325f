package cronschedule

import (
	"testing"
	"time"
)

// FuzzParse: no schedule and time zone, however malformed, panics the
// parser or a decision on what it accepts.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"* * * * *", "@hourly", "@every 1h", "@every", "CRON_TZ=", "TZ=UTC", "TZ=UTC ",
		"CRON_TZ=Europe/Paris 0 3 * * *", "0 0 30 2 *", "*/0 * * * *", "1-0 * * * *",
		"59-1/2 * * * *", "? ? ? ? ?", "0 0 * * 7", "@every -1s", "@every 1000000h",
	} {
		f.Add(s, "")
		f.Add(s, "Europe/Paris")
	}
	created := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, schedule, timeZone string) {
		var tz *string
		if timeZone != "" {
			tz = &timeZone
		}
		s, err := Parse(schedule, tz, time.UTC)
		if err != nil {
			return
		}
		_, _ = s.Decide(State{Created: created}, created.Add(90*time.Minute))
	})
}
