package podruntime

import (
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// What an owner's status records of its runtime memory (docs/design.md
// §5, §17.1): the Deployment controller keeps its whole memory in its
// status file; an owner of the workload frame keeps it in the Runtime and
// records only what the read commands need to judge its pods as Sync
// does — each container's restarts and its readiness-probe verdict with
// the time it was first seen ready in its current run, and, while an
// exited container waits out its crash-loop backoff, when it may start
// again (so `get pods` says CrashLoopBackOff, as kubectl does from the
// kubelet's waiting reason). Nothing here changes per probe run: an
// unchanged verdict records the same, so an idle owner's status is
// written no more than before; a crash changes it twice (the backoff
// begins, the restart counts), as it changes the kubelet's pod status.

// Recorded is owner key's memory of its observed containers (the Sync
// key's memory, read after its Sync: one owner's Syncs never overlap) as
// its status records it: per live container with something to say —
// restarts, a verdict, a backoff — a ContainerState holding only
// Restarts, ProbeReady, with a ready verdict ReadySince, and while it is
// exited or created (never started) in a backoff NotBefore. A container
// gone from observed has no entry; nil when none has one.
func (r *Runtime) Recorded(key string, observed []dockerx.Container) map[string]*ContainerState {
	r.memory.mu.Lock()
	states := r.memory.states[key]
	r.memory.mu.Unlock()
	var out map[string]*ContainerState
	for _, c := range observed {
		cst := states[c.ID]
		if cst == nil {
			continue
		}
		backingOff := !cst.NotBefore.IsZero() && (c.State == dockerx.StateExited || c.State == dockerx.StateCreated)
		if cst.Restarts == 0 && cst.ProbeReady == nil && !backingOff {
			continue
		}
		rec := &ContainerState{Restarts: cst.Restarts}
		if backingOff {
			rec.NotBefore = cst.NotBefore
		}
		if cst.ProbeReady != nil {
			v := *cst.ProbeReady
			rec.ProbeReady = &v
			if v {
				rec.ReadySince = cst.ReadySince
			}
		}
		if out == nil {
			out = map[string]*ContainerState{}
		}
		out[c.ID] = rec
	}
	return out
}

// Recall seeds owner key's memory from what its status recorded (load,
// called only then) when the Runtime has none of it — the first Sync of a
// restarted controller — so that restart counts survive the restart, as
// the Deployment controller's do. A verdict is not taken: the Prober
// judges every container afresh, as the kubelet's probe workers start
// with a failure for readiness, so a container restarted while no
// controller ran is never ready on an earlier run's verdict.
func (r *Runtime) Recall(key string, load func() map[string]*ContainerState) {
	r.memory.mu.Lock()
	_, known := r.memory.states[key]
	r.memory.mu.Unlock()
	if known {
		return
	}
	recorded := load()
	r.memory.mu.Lock()
	defer r.memory.mu.Unlock()
	if _, known := r.memory.states[key]; known {
		return
	}
	if r.memory.states == nil {
		r.memory.states = map[string]map[string]*ContainerState{}
	}
	states := map[string]*ContainerState{}
	for id, rec := range recorded {
		if rec != nil && rec.Restarts > 0 {
			states[id] = &ContainerState{Restarts: rec.Restarts}
		}
	}
	r.memory.states[key] = states
}

// CurrentVerdicts is recorded (a status's record, Recorded) as the read
// commands judge containers cs by it at now: a ready verdict holds for
// the run it was given in, so it is dropped for a container whose current
// run certainly began after it was first seen ready (Docker's uptime,
// "Up 5 seconds", says so: the container was started again meanwhile,
// by hand or by a daemon restart, while no controller judged it), and
// for one whose ready time is unknown. recorded itself is not changed.
func CurrentVerdicts(recorded map[string]*ContainerState, cs []dockerx.Container, now time.Time) map[string]*ContainerState {
	if len(recorded) == 0 {
		return recorded
	}
	out := make(map[string]*ContainerState, len(recorded))
	for _, c := range cs {
		rec := recorded[c.ID]
		if rec == nil {
			continue
		}
		cp := *rec
		if cp.ProbeReady != nil && *cp.ProbeReady && !verdictOfCurrentRun(c, cp.ReadySince, now) {
			cp.ProbeReady, cp.ReadySince = nil, time.Time{}
		}
		out[c.ID] = &cp
	}
	return out
}

// verdictOfCurrentRun reports whether a verdict first seen ready at since
// may be of container c's current run: it is running, and its uptime
// does not certainly start after since.
func verdictOfCurrentRun(c dockerx.Container, since, now time.Time) bool {
	if since.IsZero() || c.State != dockerx.StateRunning {
		return false
	}
	_, hi, ok := uptimeBounds(c.Status)
	if !ok {
		return true // no uptime to judge by: the recorded verdict stands
	}
	return !now.Add(-hi).After(since)
}
