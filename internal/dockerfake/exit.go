package dockerfake

import "github.com/dockctl/dockctl/dockerx"

// Exit makes a running container exit with code, as its process ending
// does: Docker lists it exited with that code ("Exited (N) …") and emits
// die. An init container that ran to completion is Exit(id, 0). A helper
// (restart policy always) is started again at once, as Docker's restart
// loop does (die, then start; its backoff is not modelled), with fresh
// addresses.
func (e *Engine) Exit(id string, code int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.containers[id]
	if !ok {
		return dockerx.ErrNotFound
	}
	c.State = dockerx.StateExited
	c.ExitCode = code
	e.emitLocked(c, "die")
	if ns := e.ns[id]; ns.restartAlways && e.startNetworksLocked(id) == nil {
		ns.starts++
		ns.startedAt = e.now()
		c.State = dockerx.StateRunning
		e.emitLocked(c, "start")
	}
	return nil
}
