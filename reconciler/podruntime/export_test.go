package podruntime

import "k8s.io/utils/clock"

// Handles on a Prober's internals for the tests of package
// podruntime_test, which share probe runners with package reconciler's
// (reconciler/internal/podtest).

// SetClock makes p time its probes and hooks with c.
func (p *Prober) SetClock(c clock.Clock) { p.clock = c }

// SetDocker makes p inspect and exec through d.
func (p *Prober) SetDocker(d ProbeDocker) { p.docker = d }

// MarkProbedOnce makes the next worker of container id one that is not
// its first (as if owner's sync had started one before).
func (p *Prober) MarkProbedOnce(id, owner string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.probedOnce[id] = owner
}

// HookedLen is how many containers' postStart runs p remembers.
func (p *Prober) HookedLen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.hooked)
}

// SetHooks makes s run preStop hooks with h.
func (s *Stopper) SetHooks(h HookRunner) { s.hooks = h }

// SetRecorder makes s record its events in r.
func (s *Stopper) SetRecorder(r Recorder) { s.events = r }

// OwnersRemembered is how many owners r keeps memory of, map by map: its
// containers' states, its files, the stopper's lists and ended stops.
func (r *Runtime) OwnersRemembered() map[string]int {
	r.memory.mu.Lock()
	states := len(r.memory.states)
	r.memory.mu.Unlock()
	r.files.mu.Lock()
	files := len(r.files.written)
	r.files.mu.Unlock()
	s := r.stopper
	s.mu.Lock()
	defer s.mu.Unlock()
	return map[string]int{"states": states, "files": files, "listed": len(s.listed), "finished": len(s.finished), "inflight": len(s.inflight)}
}
