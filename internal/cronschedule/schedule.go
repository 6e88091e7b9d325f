// Package cronschedule holds the scheduling decisions of a CronJob as pure
// functions of its schedule, its status and the time: when a Job is due,
// how many start times went by unmet, and when to look again. It is the
// ground the CronJob controller stands on (docs/design.md, workload kinds),
// with the semantics of Kubernetes' CronJob controller
// (pkg/controller/cronjob: mostRecentScheduleTime, nextScheduleTime,
// nextScheduleTimeDuration), so that a CronJob behaves here as on a cluster.
//
// Invariants:
//   - Schedules are parsed by github.com/robfig/cron/v3's ParseStandard, the
//     parser Kubernetes uses: five fields, the @yearly…@hourly macros and
//     @every, and a CRON_TZ= or TZ= prefix. Parsing never panics (fuzzed).
//   - Nothing here reads a clock, a file or the environment: every function
//     takes the time it decides for, so equal inputs give equal decisions.
//   - Missed start times are counted, never enumerated past a bound: a
//     clock decades off costs the same as one minute off, and at most one
//     Job is due per decision (the most recent unmet time), never a burst.
//   - The Job of a scheduled time has a name derived from that time alone
//     (JobName), so deciding twice never starts the same run twice.
//   - Time zones come from time.LoadLocation. As the time/tzdata package
//     says, a library does not embed the IANA database: the program that
//     serves CronJobs imports time/tzdata, so that a timeZone means the same
//     on a host without /usr/share/zoneinfo (a scratch image).
package cronschedule

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// TooManyMissed is the number of unmet start times above which Kubernetes'
// controller warns (its TooManyMissedTimes event) instead of treating the
// backlog as ordinary lateness: more than a long weekend of an hourly
// schedule, less than what a wrong clock produces.
const TooManyMissed = 100

// Schedule is a parsed CronJob schedule together with the time zone its
// fields are read in.
type Schedule struct {
	spec cron.Schedule
	// loc is the zone the times are given to the parser in when the
	// schedule names none itself (no timeZone, no CRON_TZ=): Kubernetes
	// reads such a schedule in the controller's local zone.
	loc *time.Location
	// InlineTZ tells that the schedule itself carries CRON_TZ= or TZ=.
	// Kubernetes refuses that on create (use timeZone), but still runs an
	// object stored with one, warning (its UnsupportedSchedule event);
	// timeZone is then ignored, as Kubernetes ignores it.
	InlineTZ bool
}

// Parse parses a CronJob's spec.schedule read in spec.timeZone (nil: the
// zone local, the controller's own, as Kubernetes reads a schedule without
// timeZone in kube-controller-manager's; a nil local is UTC). An unknown
// time zone is an error, as it stops Kubernetes' controller from
// scheduling (UnknownTimeZone).
func Parse(schedule string, timeZone *string, local *time.Location) (*Schedule, error) {
	if local == nil {
		local = time.UTC
	}
	s := &Schedule{loc: local}
	// An unknown timeZone stops Kubernetes' controller even when the
	// schedule carries its own zone (which then wins).
	if timeZone != nil {
		loc, err := LoadTimeZone(*timeZone)
		if err != nil {
			return nil, err
		}
		s.loc = loc
	}
	s.InlineTZ = strings.Contains(schedule, "TZ")
	spec, err := parseStandard(schedule)
	if err != nil {
		return nil, fmt.Errorf("unparseable schedule %q: %w", schedule, err)
	}
	s.spec = spec
	return s, nil
}

// Check reports whether schedule parses as Kubernetes parses a CronJob's
// schedule, with the parser's own error (what the API server reports).
func Check(schedule string) error {
	_, err := parseStandard(schedule)
	return err
}

// parseStandard is cron.ParseStandard, which panics on some inputs in
// v3.0.1 (a CRON_TZ= prefix with nothing after it indexes past the end of
// the fields): a panic is turned into an error, so that no schedule in a
// manifest can bring the controller down.
func parseStandard(text string) (spec cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			spec, err = nil, fmt.Errorf("invalid schedule: %v", r)
		}
	}()
	return cron.ParseStandard(text)
}

var timeZonePart = regexp.MustCompile(`^[A-Za-z.\-_0-9+]{1,14}$`)

// LoadTimeZone returns the location of an IANA time zone name, refusing
// what Kubernetes' validation refuses: the empty name and "Local" (a
// CronJob's zone must not depend on where the controller runs).
func LoadTimeZone(name string) (*time.Location, error) {
	if name == "" {
		return nil, errors.New("timeZone must be nil or non-empty string")
	}
	// The IANA naming rules Kubernetes checks before loading: no "." or
	// ".." component (no path out of the database), none starting with
	// "-", each of at most 14 letters, digits, ".", "-", "_" or "+".
	for _, part := range strings.Split(name, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !timeZonePart.MatchString(part) {
			return nil, fmt.Errorf("unknown time zone %s", name)
		}
	}
	if strings.EqualFold(name, "Local") {
		return nil, errors.New("timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones")
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %s", name)
	}
	return loc, nil
}

// Next returns the first schedule time strictly after t, or the zero time
// when the schedule never matches (a valid-looking "0 0 30 2 *").
func (s *Schedule) Next(t time.Time) time.Time {
	if s.InlineTZ {
		return s.spec.Next(t)
	}
	// robfig/cron reads a schedule without a zone in the zone of the time
	// it is given: give it the schedule's.
	return s.spec.Next(t.In(s.loc))
}

// State is what a CronJob's decision depends on besides its schedule.
type State struct {
	// Created is the CronJob's creation time: the first schedule time
	// considered is the first after it.
	Created time.Time
	// LastScheduleTime is status.lastScheduleTime (nil: never scheduled).
	LastScheduleTime *time.Time
	// StartingDeadlineSeconds is spec.startingDeadlineSeconds (nil: no
	// deadline): a start time older than that is not started any more.
	StartingDeadlineSeconds *int64
}

// Decision is what the controller should do about a CronJob at one time.
type Decision struct {
	// Scheduled is the scheduled time a Job is due for (the most recent
	// unmet one), nil when none is due. Earlier unmet times are dropped,
	// as Kubernetes drops them.
	Scheduled *time.Time
	// TooLate: Scheduled is past its starting deadline; Kubernetes then
	// starts nothing and records a MissSchedule warning.
	TooLate bool
	// Missed is the number of unmet start times since the earliest time
	// considered (the last schedule time or the creation, or the starting
	// deadline when later), estimated as Kubernetes estimates it: from the
	// interval between two consecutive start times.
	Missed int64
	// TooManyMissed: Missed is above TooManyMissed. Kubernetes warns
	// (TooManyMissedTimes: set or decrease startingDeadlineSeconds, or
	// check clock skew) and still starts only Scheduled.
	TooManyMissed bool
	// Next is when to decide again with this state: the first start time
	// after the most recent one, unmet or not (Kubernetes requeues there,
	// plus a little padding for clock skew, which is the caller's).
	// After starting Scheduled, decide again with it as LastScheduleTime.
	Next time.Time
}

// ErrInterval is returned for a schedule whose consecutive start times are
// less than a second apart, or that never matches: Kubernetes refuses to
// schedule it (InvalidSchedule).
var ErrInterval = errors.New("time difference between two schedules is less than 1 second")

// Decide decides for state st at now, as Kubernetes' controller does in a
// sync: the most recent unmet start time within the starting deadline,
// whether it is too late, how many went by, and when to look again.
func (s *Schedule) Decide(st State, now time.Time) (Decision, error) {
	var d Decision
	due, err := s.mostRecent(st, now, true)
	if err == nil && due.time != nil && !due.time.After(now) {
		d.Scheduled = due.time
		d.Missed = due.missed
		d.TooManyMissed = due.missed > TooManyMissed
		if sds := st.StartingDeadlineSeconds; sds != nil {
			d.TooLate = due.time.Add(time.Duration(*sds) * time.Second).Before(now)
		}
	}
	d.Next = s.requeue(st, now)
	return d, err
}

// unmet is what mostRecent finds.
type unmet struct {
	earliest time.Time  // the time unmet start times are counted from
	time     *time.Time // the most recent unmet start time, nil for none
	missed   int64      // unmet start times, estimated
}

// mostRecent finds the most recent start time in (earliest, now], where
// earliest is the last schedule time, or the creation time before any, or
// (withDeadline) now minus the starting deadline when that is later.
//
// Listing every start time since earliest would cost as much as the clock
// is wrong; instead, as Kubernetes does, the number missed is estimated
// from the interval between the first two start times, the search jumps to
// two intervals before the estimated last one and walks from there. On a
// schedule of irregular intervals ("30 6-16/4 * * 1-5") the estimate can be
// off, so the walk may find nothing though some were missed: missed then
// still says so.
func (s *Schedule) mostRecent(st State, now time.Time, withDeadline bool) (unmet, error) {
	u := unmet{earliest: st.Created}
	if st.LastScheduleTime != nil {
		u.earliest = *st.LastScheduleTime
	}
	if sds := st.StartingDeadlineSeconds; withDeadline && sds != nil {
		if deadline := now.Add(-time.Duration(*sds) * time.Second); deadline.After(u.earliest) {
			u.earliest = deadline
		}
	}
	t1 := s.Next(u.earliest)
	t2 := s.Next(t1)
	if now.Before(t1) {
		return u, nil
	}
	if now.Before(t2) {
		u.time, u.missed = &t1, 1
		return u, nil
	}
	// A schedule that never matches gives zero times, whose difference is
	// no interval at all.
	interval := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if t1.IsZero() || t2.IsZero() || interval < 1 {
		return u, ErrInterval
	}
	u.missed = int64(now.Sub(t1).Seconds())/interval + 1
	from := t1.Add(time.Duration((u.missed-2)*interval) * time.Second)
	var last time.Time
	for t := s.Next(from); !t.IsZero() && !t.After(now); t = s.Next(t) {
		last = t
	}
	if !last.IsZero() {
		u.time = &last
	}
	return u, nil
}

// requeue is the time to decide again, as Kubernetes'
// nextScheduleTimeDuration (without its padding): the start time after the
// most recent one (the deadline left out, so that a missed run is still
// noticed), after now when the search failed or found times missed but
// not which.
func (s *Schedule) requeue(st State, now time.Time) time.Time {
	u, err := s.mostRecent(st, now, false)
	from := now
	switch {
	case err != nil:
	case u.time != nil:
		from = *u.time
	case u.missed == 0:
		from = u.earliest
	}
	return s.Next(from)
}

// JobName is the name of the Job a CronJob starts for a scheduled time:
// the CronJob's name and the minutes since the Unix epoch, as Kubernetes
// names it, so that the same run always has the same name (a second
// attempt to create it finds it instead). Kubernetes limits CronJob names
// to 52 characters so that this stays a DNS label.
func JobName(cronJob string, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cronJob, scheduled.Unix()/60)
}
