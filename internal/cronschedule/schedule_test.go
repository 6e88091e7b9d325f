package cronschedule

import (
	"errors"
	"strings"
	"testing"
	"time"
	// The tests read time zones from the embedded database, as the
	// program serving CronJobs must (package doc), not the host's.
	_ "time/tzdata"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func tp(s string) *time.Time { t := utc(s); return &t }

func i64(v int64) *int64 { return &v }

func str(s string) *string { return &s }

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestParseAcceptsWhatKubernetesParserAccepts(t *testing.T) {
	for _, tc := range []struct {
		schedule string
		timeZone *string
		inline   bool
	}{
		{schedule: "*/5 * * * *"},
		{schedule: "0 3 * * 1-5"},
		{schedule: "30 6-16/4 * * MON-FRI"},
		{schedule: "0 0 1 JAN *"},
		{schedule: "@hourly"},
		{schedule: "@daily"},
		{schedule: "@midnight"},
		{schedule: "@weekly"},
		{schedule: "@monthly"},
		{schedule: "@yearly"},
		{schedule: "@annually"},
		// Kubernetes accepts @every (cron.ParseStandard does) and its
		// controller schedules it from the last schedule time.
		{schedule: "@every 90m"},
		{schedule: "0 3 * * *", timeZone: str("Europe/Paris")},
		{schedule: "CRON_TZ=Asia/Tokyo 0 9 * * *", inline: true},
		{schedule: "TZ=UTC 0 9 * * *", inline: true},
		// A valid schedule that never matches parses: deciding on it
		// is what fails (ErrInterval).
		{schedule: "0 0 30 2 *"},
	} {
		s, err := Parse(tc.schedule, tc.timeZone, time.UTC)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.schedule, err)
			continue
		}
		if s.InlineTZ != tc.inline {
			t.Errorf("Parse(%q).InlineTZ = %v, want %v", tc.schedule, s.InlineTZ, tc.inline)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		schedule string
		timeZone *string
		want     string
	}{
		{schedule: "", want: "empty spec string"},
		{schedule: "* * * * * *", want: "expected exactly 5 fields"},
		{schedule: "61 * * * *", want: "above maximum"},
		{schedule: "* * * * 8", want: "above maximum"},
		{schedule: "@every", want: "unrecognized descriptor"},
		{schedule: "@fortnightly", want: "unrecognized descriptor"},
		// robfig/cron v3.0.1 panics on a zone prefix without fields.
		{schedule: "CRON_TZ=", want: "invalid schedule"},
		{schedule: "TZ=UTC", want: "invalid schedule"},
		{schedule: "CRON_TZ=Nowhere/Town 0 9 * * *", want: "provided bad location"},
		{schedule: "0 3 * * *", timeZone: str("Europe/Pariss"), want: "unknown time zone Europe/Pariss"},
		{schedule: "0 3 * * *", timeZone: str(""), want: "must be nil or non-empty"},
		{schedule: "0 3 * * *", timeZone: str("Local"), want: "explicit time zone"},
		{schedule: "0 3 * * *", timeZone: str("local"), want: "explicit time zone"},
		{schedule: "0 3 * * *", timeZone: str("../../etc/passwd"), want: "unknown time zone"},
		{schedule: "0 3 * * *", timeZone: str("America/-Chicago"), want: "unknown time zone"},
		{schedule: "0 3 * * *", timeZone: str("Europe/Paris "), want: "unknown time zone"},
		// An unknown timeZone stops the controller even when the
		// schedule carries a zone of its own.
		{schedule: "CRON_TZ=UTC 0 3 * * *", timeZone: str("Mars/Olympus"), want: "unknown time zone"},
	} {
		_, err := Parse(tc.schedule, tc.timeZone, time.UTC)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q, %v) = %v, want an error containing %q", tc.schedule, tc.timeZone, err, tc.want)
		}
	}
}

func TestNextReadsTheScheduleInItsTimeZone(t *testing.T) {
	tokyo := mustLoad(t, "Asia/Tokyo")
	for _, tc := range []struct {
		name     string
		schedule string
		timeZone *string
		local    *time.Location
		from     time.Time
		want     []time.Time
	}{
		{
			name: "timeZone: Paris summer then winter", schedule: "0 3 * * *", timeZone: str("Europe/Paris"),
			from: utc("2026-10-24T12:00:00Z"),
			// 03:00 CEST is 01:00 UTC; from 25 October 03:00 CET is 02:00 UTC.
			want: []time.Time{utc("2026-10-25T02:00:00Z"), utc("2026-10-26T02:00:00Z")},
		},
		{
			name: "no timeZone: the controller's local zone", schedule: "0 9 * * *", local: tokyo,
			from: utc("2026-12-06T00:30:00Z"),
			want: []time.Time{utc("2026-12-07T00:00:00Z")},
		},
		{
			name: "CRON_TZ in the schedule wins over timeZone", schedule: "CRON_TZ=Asia/Tokyo 0 9 * * *", timeZone: str("Europe/Paris"),
			from: utc("2026-12-06T00:30:00Z"),
			want: []time.Time{utc("2026-12-07T00:00:00Z")},
		},
		{
			// Spring forward: 02:30 does not exist on 8 March in New
			// York; robfig/cron, and so Kubernetes, skips that day.
			name: "DST spring forward skips the missing time", schedule: "30 2 * * *", timeZone: str("America/New_York"),
			from: utc("2026-03-07T12:00:00Z"),
			want: []time.Time{utc("2026-03-09T06:30:00Z"), utc("2026-03-10T06:30:00Z")},
		},
		{
			// Fall back: 01:30 happens twice on 1 November in New
			// York; robfig/cron, and so Kubernetes, runs at both.
			name: "DST fall back repeats the doubled time", schedule: "30 1 * * *", timeZone: str("America/New_York"),
			from: utc("2026-10-31T12:00:00Z"),
			want: []time.Time{utc("2026-11-01T05:30:00Z"), utc("2026-11-01T06:30:00Z"), utc("2026-11-02T06:30:00Z")},
		},
		{
			name: "@every counts from the time given", schedule: "@every 90m",
			from: utc("2026-12-06T10:00:00Z"),
			want: []time.Time{utc("2026-12-06T11:30:00Z"), utc("2026-12-06T13:00:00Z")},
		},
		{
			name: "@hourly", schedule: "@hourly",
			from: utc("2026-12-06T10:59:59Z"),
			want: []time.Time{utc("2026-12-06T11:00:00Z"), utc("2026-12-06T12:00:00Z")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(tc.schedule, tc.timeZone, tc.local)
			if err != nil {
				t.Fatal(err)
			}
			at := tc.from
			for i, want := range tc.want {
				at = s.Next(at)
				if !at.Equal(want) {
					t.Fatalf("Next #%d = %s, want %s", i+1, at.UTC(), want)
				}
			}
		})
	}
}

func TestDecide(t *testing.T) {
	created := utc("2026-12-06T10:00:30Z")
	for _, tc := range []struct {
		name      string
		schedule  string
		timeZone  *string
		state     State
		now       time.Time
		scheduled *time.Time
		missed    int64
		tooMany   bool
		next      time.Time
		err       error
	}{
		{
			name: "before the first start time: nothing due", schedule: "* * * * *",
			state: State{Created: created}, now: utc("2026-12-06T10:00:45Z"),
			next: utc("2026-12-06T10:01:00Z"),
		},
		{
			name: "the first start time after creation is due", schedule: "* * * * *",
			state: State{Created: created}, now: utc("2026-12-06T10:01:05Z"),
			scheduled: tp("2026-12-06T10:01:00Z"), missed: 1,
			next: utc("2026-12-06T10:02:00Z"),
		},
		{
			name: "exactly at the start time it is due", schedule: "* * * * *",
			state: State{Created: created}, now: utc("2026-12-06T10:01:00Z"),
			scheduled: tp("2026-12-06T10:01:00Z"), missed: 1,
			next: utc("2026-12-06T10:02:00Z"),
		},
		{
			name: "the start time already scheduled is not due again", schedule: "* * * * *",
			state: State{Created: created, LastScheduleTime: tp("2026-12-06T10:01:00Z")}, now: utc("2026-12-06T10:01:30Z"),
			next: utc("2026-12-06T10:02:00Z"),
		},
		{
			name: "a few missed: only the most recent is due", schedule: "* * * * *",
			state: State{Created: created, LastScheduleTime: tp("2026-12-06T10:01:00Z")}, now: utc("2026-12-06T10:05:10Z"),
			scheduled: tp("2026-12-06T10:05:00Z"), missed: 4,
			next: utc("2026-12-06T10:06:00Z"),
		},
		{
			name: "controller down a long weekend: 88 missed (not too many), one run", schedule: "@hourly",
			state: State{Created: utc("2026-12-04T17:01:00Z")}, now: utc("2026-12-08T09:15:00Z"),
			scheduled: tp("2026-12-08T09:00:00Z"), missed: 88,
			next: utc("2026-12-08T10:00:00Z"),
		},
		{
			name: "clock decades off: bounded work, one run", schedule: "* * * * *",
			state: State{Created: utc("1970-01-01T00:00:00Z")}, now: utc("2026-12-06T10:00:30Z"),
			scheduled: tp("2026-12-06T10:00:00Z"), missed: 29942520, tooMany: true,
			next: utc("2026-12-06T10:01:00Z"),
		},
		{
			name: "101 missed is too many", schedule: "* * * * *",
			state: State{Created: utc("2026-12-06T08:00:00Z")}, now: utc("2026-12-06T09:41:00Z"),
			scheduled: tp("2026-12-06T09:41:00Z"), missed: 101, tooMany: true,
			next: utc("2026-12-06T09:42:00Z"),
		},
		{
			name: "100 missed is not too many", schedule: "* * * * *",
			state: State{Created: utc("2026-12-06T08:00:00Z")}, now: utc("2026-12-06T09:40:00Z"),
			scheduled: tp("2026-12-06T09:40:00Z"), missed: 100,
			next: utc("2026-12-06T09:41:00Z"),
		},
		{
			// The starting deadline bounds the search: the 10:00 run
			// was more than 200 s ago, so nothing is due, and the
			// controller looks again at 11:00.
			name: "start time past the starting deadline is not due", schedule: "@hourly",
			state: State{Created: utc("2026-12-01T00:00:00Z"), LastScheduleTime: tp("2026-12-06T09:00:00Z"), StartingDeadlineSeconds: i64(200)},
			now:   utc("2026-12-06T10:04:00Z"),
			next:  utc("2026-12-06T11:00:00Z"),
		},
		{
			name: "start time within the starting deadline is due", schedule: "@hourly",
			state:     State{Created: utc("2026-12-01T00:00:00Z"), LastScheduleTime: tp("2026-12-06T09:00:00Z"), StartingDeadlineSeconds: i64(200)},
			now:       utc("2026-12-06T10:03:00Z"),
			scheduled: tp("2026-12-06T10:00:00Z"), missed: 1,
			next: utc("2026-12-06T11:00:00Z"),
		},
		{
			// With a deadline, missed start times are counted from it,
			// not from the last schedule time: a long outage is not
			// "too many" for a CronJob that bounds its lateness.
			name: "starting deadline bounds the count of missed", schedule: "* * * * *",
			state:     State{Created: utc("1970-01-01T00:00:00Z"), StartingDeadlineSeconds: i64(300)},
			now:       utc("2026-12-06T10:00:30Z"),
			scheduled: tp("2026-12-06T10:00:00Z"), missed: 5,
			next: utc("2026-12-06T10:01:00Z"),
		},
		{
			name: "irregular intervals: the most recent is found", schedule: "30 6-16/4 * * 1-5",
			// Friday 4 December 2026: 06:30, 10:30, 14:30.
			state:     State{Created: utc("2026-11-01T00:00:00Z"), LastScheduleTime: tp("2026-12-04T06:30:00Z")},
			now:       utc("2026-12-04T15:00:00Z"),
			scheduled: tp("2026-12-04T14:30:00Z"), missed: 2,
			next: utc("2026-12-07T06:30:00Z"),
		},
		{
			name: "over a weekend the next weekday's first time is due", schedule: "30 6-16/4 * * 1-5",
			state:     State{Created: utc("2026-11-01T00:00:00Z"), LastScheduleTime: tp("2026-12-04T14:30:00Z")},
			now:       utc("2026-12-07T07:00:00Z"),
			scheduled: tp("2026-12-07T06:30:00Z"), missed: 1,
			next: utc("2026-12-07T10:30:00Z"),
		},
		{
			name: "timeZone: due at 03:00 Paris time", schedule: "0 3 * * *", timeZone: str("Europe/Paris"),
			state: State{Created: utc("2026-12-05T12:00:00Z")}, now: utc("2026-12-06T02:00:01Z"),
			scheduled: tp("2026-12-06T02:00:00Z"), missed: 1,
			next: utc("2026-12-07T02:00:00Z"),
		},
		{
			name: "timeZone across spring forward: the missing day is not due", schedule: "30 2 * * *", timeZone: str("America/New_York"),
			state: State{Created: utc("2026-03-01T00:00:00Z"), LastScheduleTime: tp("2026-03-07T07:30:00Z")},
			now:   utc("2026-03-08T12:00:00Z"),
			next:  utc("2026-03-09T06:30:00Z"),
		},
		{
			name: "timeZone across fall back: the second 01:30 is due too", schedule: "30 1 * * *", timeZone: str("America/New_York"),
			state:     State{Created: utc("2026-10-01T00:00:00Z"), LastScheduleTime: tp("2026-11-01T05:30:00Z")},
			now:       utc("2026-11-01T06:30:05Z"),
			scheduled: tp("2026-11-01T06:30:00Z"), missed: 1,
			next: utc("2026-11-02T06:30:00Z"),
		},
		{
			name: "@every runs from the last schedule time", schedule: "@every 90m",
			state:     State{Created: utc("2026-12-06T08:00:00Z"), LastScheduleTime: tp("2026-12-06T09:00:00Z")},
			now:       utc("2026-12-06T10:31:00Z"),
			scheduled: tp("2026-12-06T10:30:00Z"), missed: 1,
			next: utc("2026-12-06T12:00:00Z"),
		},
		{
			name: "@every after several missed intervals", schedule: "@every 90m",
			state:     State{Created: utc("2026-12-06T00:00:00Z")},
			now:       utc("2026-12-06T10:00:00Z"),
			scheduled: tp("2026-12-06T09:00:00Z"), missed: 6,
			next: utc("2026-12-06T10:30:00Z"),
		},
		{
			// 30 February never comes: Kubernetes refuses to schedule
			// (InvalidSchedule) rather than loop.
			name: "a schedule that never matches is an error", schedule: "0 0 30 2 *",
			state: State{Created: utc("2026-01-01T00:00:00Z")}, now: utc("2026-12-06T10:00:00Z"),
			err: ErrInterval,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(tc.schedule, tc.timeZone, time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			d, err := s.Decide(tc.state, tc.now)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			switch {
			case (d.Scheduled == nil) != (tc.scheduled == nil):
				t.Errorf("Scheduled = %v, want %v", d.Scheduled, tc.scheduled)
			case d.Scheduled != nil && !d.Scheduled.Equal(*tc.scheduled):
				t.Errorf("Scheduled = %s, want %s", d.Scheduled.UTC(), tc.scheduled)
			}
			if d.Missed != tc.missed || d.TooManyMissed != tc.tooMany {
				t.Errorf("Missed, TooManyMissed = %d, %v, want %d, %v", d.Missed, d.TooManyMissed, tc.missed, tc.tooMany)
			}
			if d.TooLate {
				t.Errorf("TooLate = true: the search within the deadline never finds a start time past it")
			}
			if !d.Next.Equal(tc.next) {
				t.Errorf("Next = %s, want %s", d.Next.UTC(), tc.next)
			}
		})
	}
}

// Starting the Job that is due and deciding again with its time as the
// last schedule time gives nothing due until the next start time: a run
// is never started twice.
func TestDecideAfterStartingTheDueRunHasNothingDue(t *testing.T) {
	s, err := Parse("*/15 * * * *", nil, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	st := State{Created: utc("2026-12-06T09:00:00Z")}
	now := utc("2026-12-06T10:16:00Z")
	d, err := s.Decide(st, now)
	if err != nil || d.Scheduled == nil {
		t.Fatalf("Decide = %+v, %v: want a run due", d, err)
	}
	st.LastScheduleTime = d.Scheduled
	again, err := s.Decide(st, now)
	if err != nil || again.Scheduled != nil {
		t.Fatalf("Decide after starting %s = %+v, %v: want nothing due", d.Scheduled, again, err)
	}
	if want := utc("2026-12-06T10:30:00Z"); !again.Next.Equal(want) {
		t.Errorf("Next = %s, want %s", again.Next, want)
	}
}

func TestJobNameIsMinutesSinceTheEpoch(t *testing.T) {
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{utc("1970-01-01T00:00:00Z"), "backup-0"},
		{utc("2026-12-06T21:00:00Z"), "backup-29943180"},
		// Same minute, same name: a second decision finds the run.
		{utc("2026-12-06T21:00:59Z"), "backup-29943180"},
		{time.Date(2026, 12, 6, 22, 0, 0, 0, time.FixedZone("CET", 3600)), "backup-29943180"},
	} {
		if got := JobName("backup", tc.at); got != tc.want {
			t.Errorf("JobName(backup, %s) = %q, want %q", tc.at, got, tc.want)
		}
	}
}
