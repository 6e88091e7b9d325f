package reconciler

import (
	"fmt"

	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// guarded runs fn(op), turning a panic into that op's error: a goroutine of
// an executor cannot be recovered by the sync that started it, and one bad
// operation must not take the whole controller down.
func guarded(fn func(Op) error, op Op) error {
	return podruntime.Guard(fmt.Sprintf("%s %s", op.Kind, op.Name), func() error { return fn(op) })
}

// guard is fn with each call guarded, for podruntime.SlowStart and
// podruntime.Parallel: a panic becomes that op's error, naming it.
func guard(fn func(Op) error) func(Op) error {
	return func(op Op) error { return guarded(fn, op) }
}
