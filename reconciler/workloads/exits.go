package workloads

import (
	"fmt"
	"maps"
	"sync"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// Exits seen before Docker lists them (dockerx.Client.EventsWithExits).
// Engine 20.10 sends a container's die while it still lists the container
// running; the frame's events were held back until an inspect settled
// them, and that wait, under load, was most of the time from a Job pod's
// exit to its replacement's create. A die carries its exit code, as a
// kubelet's pod status update carries what the Job controller's informer
// needs: the frame takes it from the event. A die of a background kind's
// pod (a Job's) queues its owner at once and is remembered, and a sync of
// an owner whose pods never run again once exited (restartPolicy Never)
// takes a pod the list still shows running for what the die said:
// exited, with its code. No such pod can be running again, so the die is
// the truth a list only catches up with (docs/design.md §17.1). An owner
// whose pods restart in place does not use it: its sync waits for the
// settled die, which queues it again.

// exitMemory is the dies seen before they were settled, by container ID.
type exitMemory struct {
	mu sync.Mutex
	m  map[string]*earlyExit
}

// earlyExit is one die seen unsettled: the owner's key, its exit code,
// and whether a sync took it (used: its settled die queues nothing more).
type earlyExit struct {
	key  string
	code int
	used bool
}

// saw remembers container id's die, with its exit code, for owner key.
func (m *exitMemory) saw(id, key string, code int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string]*earlyExit{}
	}
	m.m[id] = &earlyExit{key: key, code: code}
}

// settled forgets container id's die (its settled die came, a list made
// from now on shows it): it reports whether a sync took it, so that the
// settled die need not queue its owner again.
func (m *exitMemory) settled(id string) (used bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[id]
	delete(m.m, id)
	return ok && e.used
}

// forget forgets container id's die (it started again, or is gone).
func (m *exitMemory) forget(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, id)
}

// reset forgets every die (the event stream broke: what follows is a
// resync's).
func (m *exitMemory) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m = nil
}

// take is the dies of owner key a sync is to apply to the list it is
// about to make (taken before the list: a die settled meanwhile is in the
// list), by container ID, each marked used.
func (m *exitMemory) take(key string) map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out map[string]int
	for id, e := range m.m {
		if e.key != key {
			continue
		}
		if out == nil {
			out = map[string]int{}
		}
		e.used = true
		out[id] = e.code
	}
	return out
}

// withExits is all with the containers that exits names and all shows
// still running, paused or restarting shown exited with their code, as
// the next list will show them; all itself is not changed.
func withExits(all []dockerx.Container, exits map[string]int) []dockerx.Container {
	if len(exits) == 0 {
		return all
	}
	out := all
	copied := false
	for i, ct := range all {
		code, ok := exits[ct.ID]
		if !ok || ct.State == dockerx.StateExited || ct.State == dockerx.StateDead || ct.State == dockerx.StateCreated {
			continue
		}
		if !copied {
			out = append([]dockerx.Container(nil), all...)
			copied = true
		}
		ct.State, ct.ExitCode, ct.Health = dockerx.StateExited, code, ""
		ct.Status = fmt.Sprintf("Exited (%d) Less than a second ago", code)
		if len(ct.Networks) > 0 {
			// An exited container has no address on its networks.
			nets := maps.Clone(ct.Networks)
			for n := range nets {
				nets[n] = ""
			}
			ct.Networks = nets
		}
		out[i] = ct
	}
	return out
}

// exitsApply reports whether a sync of an owner of template tmpl takes
// its pods' unsettled dies (exitMemory): only when its pods are of one
// container that is never started again once exited (restartPolicy
// Never; no init container, whose steps and sidecars the runtime starts).
func exitsApply(k Kind, tmpl *manifests.PodTemplateSpec) bool {
	return k.background && tmpl != nil && tmpl.Spec.RestartPolicy == manifests.RestartNever &&
		len(tmpl.Spec.InitContainers) == 0 && len(tmpl.Spec.Containers) == 1
}
