//go:build !linux && !darwin

package dataplane

// initIdleProbe: no non-blocking peek here; a pooled connection found
// closed once a request is written is retried as before (replayable
// requests only).
func (bc *backendConn) initIdleProbe() {}

func (bc *backendConn) idleClean() bool { return true }
