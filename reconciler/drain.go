package reconciler

import (
	"context"

	"github.com/dockctl/dockctl/reconciler/services"
)

// Drainer takes a pod out of every Service before its graceful stop
// begins (docs/design.md §8, §10): the stopper calls it before the stop
// signal, so that no proxy sends a new connection to a pod that is going.
type Drainer interface {
	// Drain marks the pod (namespace, name as `dockctl get pods` shows it)
	// terminating and returns once every Service that selected it has a
	// data plane that acknowledged a configuration without it — at once
	// when no Service selects it. It returns ctx's error, wrapped, when
	// ctx ends first: the caller bounds it and stops the pod anyway.
	Drain(ctx context.Context, namespace, pod string) error
}

var _ Drainer = (*services.Tracker)(nil)

// stopping reports whether a unit's stop (or liveness restart) is in
// flight: a drained pod stays out of every Service while it is.
func (s *stopper) stopping(unitID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.inflight[unitID]
	return ok
}
