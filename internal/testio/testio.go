// Package testio holds I/O helpers shared by the tests of several
// packages (the command's unit tests and the end-to-end tests). It is
// imported by tests only.
package testio

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that a process or a command may write while a
// test reads it: every call holds one lock.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
