package reconciler

import (
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// stateKey holds the controller's per-deployment memory in the status file
// (store.Status.Extra). Keeping it in the state directory, not in the
// process, is what lets a restarted controller resume a rollout where it
// was, keep a crash loop's backoff, and let `dockctl get` show restarts and
// availability without a controller.
const stateKey = "controller"

// deploymentState is what only the controller knows about one deployment.
type deploymentState struct {
	Rollout RolloutState `json:"rollout"`
	// Containers is keyed by container ID: a container recreated under the
	// same name is a new container with a fresh history.
	Containers map[string]*containerState `json:"containers,omitempty"`
	// Counts are the replica counts of the last sync, to tell progress.
	Counts manifests.DeploymentStatus `json:"counts"`
}

// containerState is the controller's memory of one container.
type containerState struct {
	// Restarts counts how often dockctl started it again after it stopped.
	Restarts int `json:"restarts,omitempty"`
	// CrashCount counts consecutive exits within crashWindow of a start.
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
	// StopDeadline is set once dockctl sent the stop signal to remove it:
	// the time it is killed. It stays terminating until it is gone.
	StopDeadline time.Time `json:"stopDeadline,omitzero"`
}

func readState(st *store.Status) deploymentState {
	var s deploymentState
	if raw, ok := st.Extra[stateKey]; ok {
		// A garbled state is reset rather than blocking the sync: it only
		// costs a rollout restart from what Docker shows.
		_ = json.Unmarshal(raw, &s)
	}
	if s.Containers == nil {
		s.Containers = map[string]*containerState{}
	}
	return s
}

func writeState(st *store.Status, s deploymentState) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode controller state: %w", err)
	}
	extra := maps.Clone(st.Extra)
	if extra == nil {
		extra = map[string]json.RawMessage{}
	}
	extra[stateKey] = b
	st.Extra = extra
	return nil
}

// ContainerView is how the read commands present one container's
// controller-side facts.
type ContainerView struct {
	Ready            bool
	Available        bool
	Restarts         int
	CrashLoopBackOff bool
	// Terminating is set while dockctl stops it to remove it.
	Terminating bool
}

// View computes a deployment's status counts and per-container facts the
// way the controller does, from what Docker reports and what the controller
// recorded (st may be nil: then from Docker alone).
func View(d *manifests.Deployment, st *store.Status, cs []dockerx.Container, now time.Time) (manifests.DeploymentStatus, map[string]ContainerView) {
	s := deploymentState{Containers: map[string]*containerState{}}
	if st != nil {
		s = readState(st)
	}
	probed := func(string) bool { r, _ := controllerProbes(&d.Spec.Template); return r != nil }
	ready := readiness(cs, s.Containers, probed)
	in := PlanInput{Containers: cs, Terminating: map[string]time.Time{}}
	for id, cst := range s.Containers {
		if cst != nil && !cst.StopDeadline.IsZero() {
			in.Terminating[id] = cst.StopDeadline
			delete(ready, id)
		}
	}
	avail, _ := availability(d, cs, ready, s.Containers, now)
	out := map[string]ContainerView{}
	for _, c := range cs {
		v := ContainerView{Ready: ready[c.ID], Available: avail[c.ID]}
		if cst := s.Containers[c.ID]; cst != nil {
			v.Restarts = cst.Restarts
			v.CrashLoopBackOff = c.State == dockerx.StateExited && now.Before(cst.NotBefore)
			v.Terminating = !cst.StopDeadline.IsZero()
		}
		out[c.ID] = v
	}
	return ComputeStatus(d, manifests.TemplateHash(&d.Spec.Template), liveContainers(in), ready, avail), out
}

// readiness decides which containers are ready: running, healthy if they
// have a HEALTHCHECK, and passing the controller-run readiness probe if
// their template has one (not ready until it has passed once).
func readiness(cs []dockerx.Container, states map[string]*containerState, probed func(hash string) bool) map[string]bool {
	out := map[string]bool{}
	for _, c := range cs {
		if !IsReady(c) {
			continue
		}
		if probed(c.TemplateHash) {
			cst := states[c.ID]
			if cst == nil || cst.ProbeReady == nil || !*cst.ProbeReady {
				continue
			}
		}
		out[c.ID] = true
	}
	return out
}

// availability decides which containers are available: ready for
// minReadySeconds — and, beyond Kubernetes, a container that has exited
// since it was created (dockctl restarted it) only after it has run for
// max(minReadySeconds, crashWindow), so that a crashing revision never looks
// available between two crashes. It also returns when the next container
// becomes available, so the sync can requeue for it. A container with no
// recorded ready time counts from its creation (a view without controller).
func availability(d *manifests.Deployment, cs []dockerx.Container, ready map[string]bool, states map[string]*containerState, now time.Time) (map[string]bool, time.Duration) {
	out := map[string]bool{}
	var next time.Duration
	minReady := time.Duration(d.Spec.MinReadySeconds) * time.Second
	for _, c := range cs {
		if !ready[c.ID] {
			continue
		}
		need := minReady
		since := c.Created
		if cst := states[c.ID]; cst != nil {
			if !cst.ReadySince.IsZero() {
				since = cst.ReadySince
			}
			if cst.Restarts > 0 && need < crashWindow {
				need = crashWindow
			}
		}
		if need == 0 {
			out[c.ID] = true
			continue
		}
		if wait := since.Add(need).Sub(now); wait > 0 {
			next = minPositive(next, wait)
			continue
		}
		out[c.ID] = true
	}
	return out, next
}

// observeContainers updates the per-container memory from what Docker
// reports: ready times, the exit that follows a start (crash-loop
// accounting), and forgets containers that are gone. It returns the crash
// backoff deadlines for the planner.
func (c *Controller) observeContainers(s *deploymentState, cs []dockerx.Container, ready map[string]bool, now time.Time) map[string]time.Time {
	live := map[string]bool{}
	notBefore := map[string]time.Time{}
	for _, ct := range cs {
		live[ct.ID] = true
		cst := s.Containers[ct.ID]
		if ready[ct.ID] {
			if cst == nil {
				cst = &containerState{}
				s.Containers[ct.ID] = cst
			}
			if cst.ReadySince.IsZero() {
				cst.ReadySince = now
			}
			continue
		}
		if cst == nil || !cst.StopDeadline.IsZero() {
			continue // a terminating container's exit is no crash
		}
		cst.ReadySince = time.Time{}
		if ct.State != dockerx.StateExited {
			continue
		}
		if !cst.StartedAt.IsZero() && !cst.ExitCounted {
			cst.ExitCounted = true
			if now.Sub(cst.StartedAt) < crashWindow {
				cst.CrashCount++
			} else {
				cst.CrashCount = 0
			}
			cst.NotBefore = time.Time{}
			if cst.CrashCount > 0 {
				delay := c.opts.CrashBackoffBase << (cst.CrashCount - 1)
				if delay > c.opts.CrashBackoffMax || delay <= 0 {
					delay = c.opts.CrashBackoffMax
				}
				cst.NotBefore = now.Add(delay)
			}
		}
		if !cst.NotBefore.IsZero() {
			notBefore[ct.ID] = cst.NotBefore
		}
	}
	for id := range s.Containers {
		if !live[id] {
			delete(s.Containers, id)
		}
	}
	return notBefore
}

// recordStarts notes the containers a plan started again.
func recordStarts(s *deploymentState, plan Plan, now time.Time) {
	for _, op := range plan.Ops {
		if (op.Kind != OpStart || op.Cause != causeStopped) && op.Kind != OpRestart {
			continue
		}
		cst := s.Containers[op.ContainerID]
		if cst == nil {
			cst = &containerState{}
			s.Containers[op.ContainerID] = cst
		}
		cst.Restarts++
		cst.StartedAt = now
		cst.ExitCounted = false
		cst.ReadySince = time.Time{}
		cst.ProbeReady = nil
	}
}
