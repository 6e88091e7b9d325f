package reconciler

import (
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/services"
)

// Drainer takes a pod out of every Service before its graceful stop
// begins: the stopper (podruntime.Stopper) calls it before the stop
// signal, so that no proxy sends a new connection to a pod that is going.
type Drainer = podruntime.Drainer

var _ Drainer = (*services.Tracker)(nil)
