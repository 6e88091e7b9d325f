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
}

// Staleness says why no controller can be counted on at now ("" when the
// heartbeat is fresh): none ever beat here, the last one stopped, or its
// last beat is older than HeartbeatMisses intervals. A beat from the
// future (a clock stepped back) counts as fresh.
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
	if since := now.Sub(h.Beat); since > HeartbeatMisses*interval {
		return fmt.Sprintf("the controller was last seen %s ago", age(since))
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
