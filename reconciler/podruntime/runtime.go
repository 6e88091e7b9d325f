package podruntime

// Runtime is the pod runtime a workload controller holds: the parts of the
// kubelet that run beside its sync workers, as goroutines of their own. A
// controller builds one at start and stops it when it stops.
//
// Today it runs the Prober (probes and postStart hooks); the graceful
// stopper and the executor of a pod's container operations are still
// package reconciler's (docs/design.md §17).
type Runtime struct {
	prober *Prober
}

// RuntimeConfig is what a Runtime is built from.
type RuntimeConfig struct {
	Prober ProberConfig
}

// NewRuntime returns a Runtime whose goroutines start as pods are synced.
func NewRuntime(cfg RuntimeConfig) *Runtime {
	return &Runtime{prober: NewProber(cfg.Prober)}
}

// Prober is the runtime's prober.
func (r *Runtime) Prober() *Prober { return r.prober }

// Stop ends the runtime's goroutines and waits for them.
func (r *Runtime) Stop() { r.prober.Stop() }
