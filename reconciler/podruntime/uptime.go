package podruntime

import (
	"strconv"
	"strings"
	"time"
)

// uptimeBounds reads the uptime Docker shows in a running container's
// status ("Up 5 seconds", "Up About a minute (healthy)") as the interval it
// certainly lies in. Docker words it with go-units' HumanDuration: seconds
// below a minute, then whole minutes, then hours rounded, then days, weeks,
// months and years. ok is false for anything else.
func uptimeBounds(status string) (lo, hi time.Duration, ok bool) {
	rest, found := strings.CutPrefix(status, "Up ")
	if !found {
		return 0, 0, false
	}
	if i := strings.Index(rest, " ("); i >= 0 {
		rest = rest[:i] // "(healthy)", "(Paused)"
	}
	const day, week, month, year = 24 * time.Hour, 7 * 24 * time.Hour, 30 * 24 * time.Hour, 365 * 24 * time.Hour
	switch rest {
	case "Less than a second":
		return 0, time.Second, true
	case "About a minute":
		return time.Minute, 2 * time.Minute, true
	case "About an hour":
		return time.Hour, 90 * time.Minute, true
	}
	num, unit, found := strings.Cut(rest, " ")
	n, err := strconv.Atoi(num)
	if !found || err != nil || n < 0 {
		return 0, 0, false
	}
	d := time.Duration(n)
	switch strings.TrimSuffix(unit, "s") {
	case "second":
		return d * time.Second, (d + 1) * time.Second, true
	case "minute":
		return d * time.Minute, (d + 1) * time.Minute, true
	case "hour": // rounded
		return d*time.Hour - 30*time.Minute, d*time.Hour + 30*time.Minute, true
	case "day": // whole days of rounded hours
		return d*day - 30*time.Minute, (d+1)*day + 30*time.Minute, true
	case "week":
		return d*week - day, (d+1)*week + day, true
	case "month":
		return d*month - week, (d+1)*month + week, true
	case "year":
		return d*year - month, (d+1)*year + month, true
	}
	return 0, 0, false
}
