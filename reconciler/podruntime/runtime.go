package podruntime

// Runtime is the pod runtime a workload controller holds: the parts of the
// kubelet that run beside its sync workers, as goroutines of their own —
// the Prober (probes, postStart hooks) and the Stopper (graceful stops,
// their drain and preStop hooks). A controller builds one at start and
// stops it when it stops.
//
// The executor of a pod's creates and starts is still package
// reconciler's (docs/design.md §17).
type Runtime struct {
	prober  *Prober
	stopper *Stopper
}

// RuntimeConfig is what a Runtime is built from. The Stopper runs its
// preStop hooks with the Prober and gives a restarted container fresh
// probes (Prober.Forget) unless its config says otherwise.
type RuntimeConfig struct {
	Prober  ProberConfig
	Stopper StopperConfig
}

// NewRuntime returns a Runtime whose goroutines start as pods are synced.
func NewRuntime(cfg RuntimeConfig) *Runtime {
	r := &Runtime{prober: NewProber(cfg.Prober)}
	if cfg.Stopper.Hooks == nil {
		cfg.Stopper.Hooks = r.prober
	}
	if cfg.Stopper.Restarted == nil {
		cfg.Stopper.Restarted = r.prober.Forget
	}
	r.stopper = NewStopper(cfg.Stopper)
	return r
}

// Prober is the runtime's prober.
func (r *Runtime) Prober() *Prober { return r.prober }

// Stopper is the runtime's stopper.
func (r *Runtime) Stopper() *Stopper { return r.stopper }

// Stop ends the runtime's goroutines and waits for them: the probes, then
// the stops in flight, which are abandoned (their recorded deadlines let
// the next controller resume them).
func (r *Runtime) Stop() {
	r.prober.Stop()
	r.stopper.Shutdown()
}
