package podruntime

import (
	"sync"
	"time"
)

// Runtime is the pod runtime a workload controller holds: the parts of the
// kubelet that run beside its sync workers, as goroutines of their own —
// the Prober (probes, postStart hooks) and the Stopper (graceful stops,
// their drain and preStop hooks). A controller builds one at start and
// stops it when it stops.
//
// Sync (sync.go, syncpod.go) runs the pods of any owner, holder pods
// included; the Deployment controller's executor still carries out its
// own plans, with the pod steps this package plans (docs/design.md §17).
type Runtime struct {
	prober  *Prober
	stopper *Stopper
	// backoff and memory serve Sync (sync.go): the crash-loop backoff
	// and the per-container memory of the owners it runs.
	backoff Backoff
	memory  syncMemory
	// config, serviceEnv and files serve Sync's holder pods (syncpod.go):
	// what their environment and files are made from, and the hash of
	// the files last written into each.
	config     ConfigStore
	serviceEnv func(namespace string) map[string]string
	files      FilesMemory
	// created is told the end of each background create (bgcreate.go),
	// and bg counts the goroutines running them.
	created func(key string, err error)
	bg      sync.WaitGroup
	// claims guards the claims' volumes of Execute's creates against
	// their release (ClaimVolumes).
	claims ClaimVolumes
	// starting counts the creates in flight (nil: not counted).
	starting *Starting
}

// RuntimeConfig is what a Runtime is built from. The Stopper runs its
// preStop hooks with the Prober and gives a restarted container fresh
// probes (Prober.Forget) unless its config says otherwise.
type RuntimeConfig struct {
	Prober  ProberConfig
	Stopper StopperConfig
	// Backoff is Sync's crash-loop backoff (zero: DefaultBackoff).
	Backoff Backoff
	// Config is what Sync resolves its pods' environment, files and
	// claims from (nil: none exists).
	Config ConfigStore
	// ServiceEnv returns the Service variables of a namespace
	// (SERVICE_HOST, SERVICE_PORT…) Sync gives its pods' containers, as
	// the kubelet does (nil: none).
	ServiceEnv func(namespace string) map[string]string
	// Created, when set, is told that a create Sync ran in the background
	// (SyncInput.CreateInBackground) for owner key failed (its create or
	// its start): the owner is to be synced again. A pod made is told by
	// its container's start event. It must not block.
	Created func(key string, err error)
	// Starting, when set, counts the pods this runtime is creating and
	// starting (Execute's creates, Sync's background creates), shared
	// with the other runtimes of the controller.
	Starting *Starting
}

// DefaultBackoff is the crash-loop backoff the Deployment controller
// defaults to (--crash-backoff-base and --crash-backoff-max): 1 s,
// doubling, capped at 5 minutes.
var DefaultBackoff = Backoff{Base: time.Second, Max: 5 * time.Minute}

// NewRuntime returns a Runtime whose goroutines start as pods are synced.
func NewRuntime(cfg RuntimeConfig) *Runtime {
	r := &Runtime{prober: NewProber(cfg.Prober), backoff: cfg.Backoff, config: cfg.Config, serviceEnv: cfg.ServiceEnv,
		created: cfg.Created, starting: cfg.Starting}
	if r.backoff.Base <= 0 || r.backoff.Max <= 0 {
		r.backoff = DefaultBackoff
	}
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

// ClaimVolumes is the guard of the claims' volumes Execute's creates
// mount: a sweep releases a deleted claim's volume through it.
func (r *Runtime) ClaimVolumes() *ClaimVolumes { return &r.claims }

// Stopper is the runtime's stopper.
func (r *Runtime) Stopper() *Stopper { return r.stopper }

// WaitCreates waits until the background creates handed over so far
// (SyncInput.CreateInBackground) have ended.
func (r *Runtime) WaitCreates() { r.bg.Wait() }

// Stop ends the runtime's goroutines and waits for them: the probes, then
// the stops in flight, which are abandoned (their recorded deadlines let
// the next controller resume them), then the background creates (their
// context, the syncs', ends first).
func (r *Runtime) Stop() {
	r.prober.Stop()
	r.stopper.Shutdown()
	r.bg.Wait()
}
