package podruntime

import (
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// CrashWindow is how long a container must run, since its creation or
// since dockctl last started it, for its next exit not to count as a crash
// (see ObserveExits); a container dockctl restarted also counts as
// available only after running this long.
const CrashWindow = 10 * time.Second

// ContainerState is the runtime's memory of one container, kept in the
// owner's status in the state directory (store.Status.Extra: its JSON is
// part of the state layout, docs/design.md §5) so that a restarted
// controller keeps a crash loop's backoff and `dockctl get` shows restarts
// without one.
type ContainerState struct {
	// Restarts counts how often dockctl started it again after it stopped.
	Restarts int `json:"restarts,omitempty"`
	// CrashCount counts consecutive exits within CrashWindow of a start.
	CrashCount int `json:"crashCount,omitempty"`
	// StartedAt is when dockctl last started it (zero: never restarted).
	StartedAt time.Time `json:"startedAt,omitzero"`
	// NotBefore is the earliest next start while in a crash-loop backoff.
	NotBefore time.Time `json:"notBefore,omitzero"`
	// ExitCounted is set once the exit after StartedAt was counted.
	ExitCounted bool `json:"exitCounted,omitempty"`
	// ReadySince is when it was first seen ready in its current run.
	ReadySince time.Time `json:"readySince,omitzero"`
	// ProbeReady is the verdict of a controller-run readiness probe (nil
	// when the container has none).
	ProbeReady *bool `json:"probeReady,omitempty"`
	// StartError is why Docker refused to start it the last time, while it
	// is still not started (it stays `created`).
	StartError string `json:"startError,omitempty"`
	// StopDeadline is set once dockctl sent the stop signal to remove it:
	// the time it is killed. It stays terminating until it is gone.
	StopDeadline time.Time `json:"stopDeadline,omitzero"`
}

// stateOf returns the memory of container id, made empty if there is none
// yet.
func stateOf(states map[string]*ContainerState, id string) *ContainerState {
	cst := states[id]
	if cst == nil {
		cst = &ContainerState{}
		states[id] = cst
	}
	return cst
}

// Backoff is the crash-loop backoff: after the n-th crash in a row a
// container waits Base·2ⁿ⁻¹, capped at Max, before its next start.
type Backoff struct {
	Base, Max time.Duration
}

// Delay is the backoff after the n-th crash in a row (n >= 1): base,
// 2×base, 4×base… up to the maximum.
func (b Backoff) Delay(n int) time.Duration {
	// n comes from the status file, which is not trusted: a count below 1
	// (or one that wrapped around) is a first crash, never a negative shift.
	n = max(n, 1)
	delay := b.Base << (n - 1)
	if delay > b.Max || delay <= 0 || n > 62 {
		delay = b.Max
	}
	return delay
}

// ObserveExits updates the per-container memory from what Docker
// reports: ready times, the exit that follows a start (crash-loop
// accounting), and forgets containers that are gone. It returns the crash
// backoff deadlines for the planner.
//
// An init container that exited 0 (completed) did its job: its exit is no
// crash.
func ObserveExits(states map[string]*ContainerState, cs []dockerx.Container, ready, completed map[string]bool, now time.Time, b Backoff) map[string]time.Time {
	live := map[string]bool{}
	notBefore := map[string]time.Time{}
	for _, ct := range cs {
		live[ct.ID] = true
		cst := states[ct.ID]
		if cst != nil && (ct.State == dockerx.StateRunning || ct.State == dockerx.StatePaused) {
			// It started since. (A failed start leaves it `created` on
			// today's Docker; some versions say `exited`, code 127.)
			cst.StartError = ""
		}
		if ready[ct.ID] {
			cst = stateOf(states, ct.ID)
			if cst.ReadySince.IsZero() {
				cst.ReadySince = now
			}
			continue
		}
		if cst != nil && !cst.StopDeadline.IsZero() {
			continue // a terminating container's exit is no crash
		}
		if cst != nil {
			cst.ReadySince = time.Time{}
			if ct.State == dockerx.StateCreated && !cst.NotBefore.IsZero() {
				notBefore[ct.ID] = cst.NotBefore // its start failed: backing off
			}
		}
		if ct.State != dockerx.StateExited || completed[ct.ID] {
			continue
		}
		// A first exit is a crash too when the container had not run for
		// CrashWindow since it was created: a release that exits at once
		// is crash-looping from its first exit, as a pod's is.
		cst = stateOf(states, ct.ID)
		if !cst.ExitCounted {
			started := cst.StartedAt
			if started.IsZero() {
				started = ct.Created // never restarted: it ran since it was created
			}
			cst.ExitCounted = true
			if now.Sub(started) < CrashWindow {
				cst.CrashCount++
			} else {
				cst.CrashCount = 0
			}
			cst.NotBefore = time.Time{}
			if cst.CrashCount > 0 {
				cst.NotBefore = now.Add(b.Delay(cst.CrashCount))
			}
		}
		if !cst.NotBefore.IsZero() {
			notBefore[ct.ID] = cst.NotBefore
		}
	}
	for id := range states {
		if !live[id] {
			delete(states, id)
		}
	}
	return notBefore
}
