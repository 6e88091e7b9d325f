package podruntime

import "sync"

// Starting counts the pods whose create and start are in flight, across
// the runtimes that share it (the Deployment controller's and the other
// workloads' frame): the Service controller lets them reach the engine
// before the Services' own helpers (docs/design.md §10, a new instance's
// first apply), as the pods are what a published port waits for. Its
// zero value counts; a nil *Starting counts nothing.
type Starting struct {
	mu sync.Mutex
	n  int
	// idle, set once before any count, is called (outside mu) each time
	// the count falls back to zero.
	idle func()
}

// NewStarting returns a count that calls idle (nil: nothing) each time
// the last pod in flight has been created and started, or has failed.
func NewStarting(idle func()) *Starting { return &Starting{idle: idle} }

// Any reports whether some pod's create or start is in flight.
func (s *Starting) Any() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n > 0
}

// begin counts n pods whose creates are about to run; the func it
// returns ends them, once.
func (s *Starting) begin(n int) (end func()) {
	if s == nil || n <= 0 {
		return func() {}
	}
	s.mu.Lock()
	s.n += n
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.n -= n
			idle := s.n == 0
			s.mu.Unlock()
			if idle && s.idle != nil {
				s.idle()
			}
		})
	}
}
