package store

import (
	"errors"
	"fmt"
	"time"
)

// heartbeatFile is the acting controller's heartbeat (docs/design.md §5).
const heartbeatFile = "controller.json"

// HeartbeatMisses is how many heartbeat intervals may pass without a beat
// before the controller is taken for gone, as a kubelet's node lease is
// judged by a multiple of its renew interval.
const HeartbeatMisses = 3

// Heartbeat is the acting controller's sign of life in the state
// directory, so that the CLI can tell that an `apply` will be acted on:
// the controller lock says only that a process holds it, on this host,
// not that it is making progress (docs/design.md §5).
type Heartbeat struct {
	// Version is the file format; WriteHeartbeat sets it.
	Version  int       `json:"version"`
	Instance string    `json:"instance,omitempty"`
	PID      int       `json:"pid"`
	Host     string    `json:"host,omitempty"`
	Started  time.Time `json:"started"`
	// Beat is when the controller last refreshed the file.
	Beat time.Time `json:"beat"`
	// Interval is how often it refreshes it.
	Interval time.Duration `json:"interval"`
	// Stopped is when it shut down cleanly; zero while it runs (or after
	// a crash, which the age of Beat tells).
	Stopped time.Time `json:"stopped,omitzero"`
	// LastPass is when the controller last finished a whole pass over
	// Docker (zero: none yet), and PassEvery how often it starts one (its
	// resync period; zero: a controller of a release that did not say).
	// A beat says the process runs; these say its loop makes progress.
	LastPass  time.Time     `json:"lastPass,omitzero"`
	PassEvery time.Duration `json:"passEvery,omitempty"`
}

// MinStallThreshold is the least time a running controller may go
// without finishing a pass before it is taken for wedged: the kubelet's
// PLEG is judged unhealthy after three minutes without a relist.
const MinStallThreshold = 3 * time.Minute

// Stall says why a controller whose heartbeat is fresh cannot be counted
// on at now ("" when its loop makes progress): it has finished no pass
// over Docker for HeartbeatMisses of its resync periods (at least
// MinStallThreshold) — since it started, when it has finished none —
// or its last pass (start) is further than that in the future.
// Call it only on a heartbeat Staleness finds fresh.
func (h *Heartbeat) Stall(now time.Time) string {
	if h == nil || h.PassEvery <= 0 {
		return ""
	}
	threshold := max(HeartbeatMisses*h.PassEvery, MinStallThreshold)
	// A time further in the future than the threshold (a clock stepped
	// back) is, as Staleness's beat from the future, one a loop that
	// makes progress would have replaced on the new clock: it has ended
	// no pass since, wedged before the step.
	if h.LastPass.IsZero() {
		switch since := now.Sub(h.Started); {
		case since > threshold:
			return fmt.Sprintf("it has finished no pass over Docker in the %s since it started (Docker may not be answering)", age(since))
		case -since > threshold:
			return fmt.Sprintf("it has finished no pass over Docker since it started %s in the future (Docker may not be answering)", age(-since))
		}
		return ""
	}
	switch since := now.Sub(h.LastPass); {
	case since > threshold:
		return fmt.Sprintf("its last pass over Docker ended %s ago, and it starts one every %s (Docker may not be answering)", age(since), h.PassEvery)
	case -since > threshold:
		return fmt.Sprintf("its last pass over Docker ended %s in the future, and none ended since (Docker may not be answering)", age(-since))
	}
	return ""
}

// Staleness says why no controller can be counted on at now ("" when the
// heartbeat is fresh): none ever beat here, the last one stopped, or its
// last beat is older than HeartbeatMisses intervals. A beat from the
// future (a clock stepped back) counts as fresh as long as a running
// controller would not yet have beaten again on the new clock: further
// ahead, it was left by a controller that has not beaten since — one that
// crashed before the step — and trusting it would hide the crash until the
// clock caught up.
func (h *Heartbeat) Staleness(now time.Time) string {
	switch {
	case h == nil:
		return "no controller has run for this state directory"
	case !h.Stopped.IsZero():
		return fmt.Sprintf("the controller stopped %s ago", age(now.Sub(h.Stopped)))
	}
	interval := h.Interval
	if interval <= 0 {
		interval = DefaultHeartbeatInterval
	}
	since := now.Sub(h.Beat)
	switch {
	case since > HeartbeatMisses*interval:
		return fmt.Sprintf("the controller was last seen %s ago", age(since))
	case -since > HeartbeatMisses*interval:
		return fmt.Sprintf("the controller's last beat is %s in the future, and none came since", age(-since))
	}
	return ""
}

// DefaultHeartbeatInterval is how often a controller refreshes its
// heartbeat.
const DefaultHeartbeatInterval = 10 * time.Second

func age(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return d.Round(time.Second).String()
}

// ReadHeartbeat returns the recorded heartbeat; (nil, nil) when none was
// ever written.
func (s *Store) ReadHeartbeat() (*Heartbeat, error) {
	var h Heartbeat
	if found, err := s.readState(heartbeatFile, &h, &h.Version); !found || err != nil {
		return nil, err
	}
	return &h, nil
}

// WriteHeartbeat records h, atomically. Only the holder of the controller
// lock writes it.
func (s *Store) WriteHeartbeat(h Heartbeat) error {
	if s.readOnly {
		return ErrReadOnly
	}
	if h.Beat.IsZero() {
		return errors.New("heartbeat: no beat time")
	}
	h.Version = formatVersion
	return s.transaction(func() error { return s.writeJSON(heartbeatFile, h) })
}
