package podruntime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// Who runs which probe. A container has one Docker HEALTHCHECK, and it
// carries an exec readiness probe: Docker runs it, reports the result in
// the container list and emits health_status events, so it costs the
// controller nothing. Everything else — httpGet and tcpSocket readiness
// probes, and every liveness probe (exec included, through the exec API) —
// is run by the controller, one goroutine per container, with the probe's
// own timing fields. Docker never restarts an unhealthy container, so a
// failing liveness probe is acted on by the controller: it restarts the
// container.

// ProbeTarget is where a probe goes.
type ProbeTarget struct {
	ContainerID string
	Address     string // IP, or 127.0.0.1 for host networking
	Ports       []manifests.ContainerPort
	// HostNetwork: the pod shares the host's network, so it is probed
	// directly, never through the relay (whose loopback is its own).
	HostNetwork bool

	// netOwner is the container whose address probes go to (the
	// container, or a member's holder); located is the instance network
	// the address was looked up for, OnNetwork whether it is on it.
	netOwner  string
	located   string
	OnNetwork bool
	// ref is the pod its events are about.
	ref store.InvolvedObject
}

// ProbeRunner runs one probe attempt; nil error is success, and an error
// wrapping ErrNoVerdict is no verdict either way (the attempt could not be
// made).
type ProbeRunner interface {
	Run(ctx context.Context, target ProbeTarget, p *manifests.Probe) error
}

// ErrNoVerdict marks a probe attempt that could not be made (a relay is
// missing): neither a success nor a failure.
var ErrNoVerdict = errors.New("probe not run")

// ProbeDocker is what the prober needs of Docker: the container's address
// (and start time, for postStart hooks), and exec for exec hooks.
type ProbeDocker interface {
	InspectContainer(ctx context.Context, id string) (dockerx.ContainerDetails, error)
	Exec(ctx context.Context, id string, cmd []string, timeout time.Duration) (int, error)
}

// Recorder records an event about a pod (store.InvolvedObject). It must
// not block.
type Recorder interface {
	Event(obj store.InvolvedObject, eventType, reason, message string)
}

type nopRecorder struct{}

func (nopRecorder) Event(store.InvolvedObject, string, string, string) {}

// ProberConfig is what a Prober is built from.
type ProberConfig struct {
	Docker ProbeDocker
	// Runner runs probe attempts and httpGet/tcpSocket hooks.
	Runner ProbeRunner
	// Network names the instance network, whose address probes target
	// (nil or "": none).
	Network func() string
	// Notify queues an owner again: a verdict changed, a container is to
	// be restarted, or a worker ended on an error.
	Notify func(owner string)
	// PodRef names the pod of an owner's container, for events (nil: the
	// container's pod label, else its name).
	PodRef func(owner string, c *dockerx.Container) store.InvolvedObject
	// Recorder records Unhealthy and FailedPostStartHook (nil: none).
	Recorder Recorder
	Log      *slog.Logger
}

// Prober keeps one worker per running container that has controller-run
// probes (ControllerProbes), runs their postStart hooks, and remembers
// their verdicts. It names an owner by the string its controller queues
// (the Deployment controller: "namespace/name").
type Prober struct {
	runner ProbeRunner
	// events records probe and hook failures (Unhealthy,
	// FailedPostStartHook); never nil.
	events Recorder
	docker ProbeDocker
	// clock times the probes (tests use a fake one).
	clock clock.Clock
	// network names the instance network, whose address probes target.
	network func() string
	notify  func(owner string)
	podRef  func(owner string, c *dockerx.Container) store.InvolvedObject
	log     *slog.Logger

	mu      sync.Mutex
	workers map[string]*probeWorker // by container ID
	// probedOnce holds the containers (ID → owner key) that have
	// had a worker since this controller started. Only a container's
	// first worker leaves the recorded verdict standing until it judges:
	// a later one (the container stopped, paused, restarted in between)
	// starts not ready, as any worker did before the hold.
	probedOnce map[string]string
	// hooked maps a container ID to where its postStart hook stands for
	// its current run (hooks.go); born is when this prober began.
	hooked map[string]hookRun
	born   time.Time
}

type probeWorker struct {
	owner  string
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	ready *bool // nil: no controller-run readiness probe nor startup probe
	// judged: the readiness probe has given a verdict. Until then the
	// worker reports none, and the verdict the status file holds stands:
	// a restarted controller must not take every probed replica for
	// unready (and empty its Services) until its probes run again. A new
	// container has no verdict there, so it is not ready until its probe
	// says so, as in Kubernetes. A container's later workers
	// (probedOnce) start judged, not ready.
	judged bool
	alive  bool
	// started: its postStart hook and startup probe, if it has them, are
	// done (what a native sidecar's successors wait for).
	started bool
}

// NewProber returns a Prober with no worker.
func NewProber(cfg ProberConfig) *Prober {
	p := &Prober{events: cfg.Recorder, runner: cfg.Runner, docker: cfg.Docker, clock: clock.RealClock{}, network: cfg.Network, notify: cfg.Notify,
		podRef: cfg.PodRef, log: cfg.Log, workers: map[string]*probeWorker{}, probedOnce: map[string]string{},
		hooked: map[string]hookRun{}, born: time.Now()}
	if p.events == nil {
		p.events = nopRecorder{}
	}
	if p.podRef == nil {
		p.podRef = func(_ string, c *dockerx.Container) store.InvolvedObject {
			name := c.Pod
			if name == "" {
				name = c.Name
			}
			return store.InvolvedObject{Kind: "Pod", Name: name}
		}
	}
	if p.network == nil {
		p.network = func() string { return "" }
	}
	return p
}

// SetRunner replaces the runner of the probe attempts that begin from now
// on (tests substitute one).
func (p *Prober) SetRunner(r ProbeRunner) {
	p.mu.Lock()
	p.runner = r
	p.mu.Unlock()
}

func (p *Prober) probeRunner() ProbeRunner {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runner
}

// Workers returns, for each worker of owner ("": of every owner), a
// channel closed once its goroutines ended.
func (p *Prober) Workers(owner string) []<-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []<-chan struct{}
	for _, w := range p.workers {
		if owner == "" || w.owner == owner {
			out = append(out, w.done)
		}
	}
	return out
}

// ProbeResult is what the planner and status need from the prober.
type ProbeResult struct {
	Ready *bool // nil: readiness is not the controller's to judge
	Alive bool
	// Started: its postStart hook and startup probe are done, or it has
	// neither.
	Started bool
}

// Sync starts workers for the owner's running containers that need
// one and stops those whose container is gone or no longer running.
// templates maps a template hash to its pod template.
func (p *Prober) Sync(ctx context.Context, owner string, cs []dockerx.Container, templates func(hash string) *manifests.PodTemplateSpec) map[string]ProbeResult {
	results := map[string]ProbeResult{}
	running, listed := map[string]bool{}, map[string]bool{}
	holders := holdersByPod(cs)
	for _, c := range cs {
		listed[c.ID] = true
		if c.State != dockerx.StateRunning {
			continue
		}
		tc := TemplateContainer(templates(c.TemplateHash), &c)
		probes := ControllerProbes(tc)
		if probes.None() {
			continue
		}
		netOwner := c.ID
		if c.PodUID != "" {
			// A member has no address of its own: it lives in its
			// holder's network namespace.
			if netOwner = holders[c.PodUID]; netOwner == "" {
				continue
			}
		}
		running[c.ID] = true
		p.mu.Lock()
		w := p.workers[c.ID]
		if w == nil {
			_, again := p.probedOnce[c.ID]
			w = p.start(ctx, owner, c, netOwner, tc.Ports, probes, again)
			p.workers[c.ID] = w
			p.probedOnce[c.ID] = owner
		}
		p.mu.Unlock()
		results[c.ID] = w.result()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, w := range p.workers {
		if w.owner == owner && !running[id] {
			w.cancel()
			delete(p.workers, id)
		}
	}
	for id, d := range p.probedOnce {
		if d == owner && !listed[id] {
			delete(p.probedOnce, id) // gone: its ID never comes back
			delete(p.hooked, id)
		}
	}
	return results
}

// Missing reports whether a running container needs a probe worker that
// it does not have yet (after a controller restart, say).
func (p *Prober) Missing(cs []dockerx.Container, templates func(hash string) *manifests.PodTemplateSpec) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		if c.State != dockerx.StateRunning || p.workers[c.ID] != nil {
			continue
		}
		if !ControllerProbes(TemplateContainer(templates(c.TemplateHash), &c)).None() {
			return true
		}
	}
	return false
}

// Results returns the current verdicts for the containers that have a
// worker, starting none.
func (p *Prober) Results(cs []dockerx.Container) map[string]ProbeResult {
	out := map[string]ProbeResult{}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		if w := p.workers[c.ID]; w != nil {
			out[c.ID] = w.result()
		}
	}
	return out
}

func (w *probeWorker) result() ProbeResult {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := ProbeResult{Alive: w.alive, Started: w.started}
	if w.ready != nil && w.judged {
		v := *w.ready // a copy: the worker keeps writing its own
		r.Ready = &v
	}
	return r
}

// Forget stops the worker of a container that is being restarted, so that
// the new run starts with fresh results and a fresh initial delay.
func (p *Prober) Forget(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w := p.workers[id]; w != nil {
		w.cancel()
		delete(p.workers, id)
	}
}

// Drop stops every worker of an owner that is deleted or unknown: no
// later sync of it will run Prober.Sync to stop them.
func (p *Prober) Drop(owner string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, w := range p.workers {
		if w.owner == owner {
			w.cancel()
			delete(p.workers, id)
		}
	}
	for id, d := range p.probedOnce {
		if d == owner {
			delete(p.probedOnce, id)
			delete(p.hooked, id)
		}
	}
}

// retire drops worker w of container id when it ended on an error of its
// own (the container could not be inspected), not cancelled: a worker that
// stays registered but runs nothing would leave the container unstarted
// and unready for good. The owner is queued a second later, so that
// its next sync starts a new worker without hammering a daemon that just
// failed.
func (p *Prober) retire(id string, w *probeWorker) {
	p.mu.Lock()
	if p.workers[id] == w {
		delete(p.workers, id)
	}
	p.mu.Unlock()
	go func() {
		<-p.clock.After(time.Second)
		p.notify(w.owner)
	}()
}

// Stop ends every worker and waits for them.
func (p *Prober) Stop() {
	p.mu.Lock()
	ws := make([]*probeWorker, 0, len(p.workers))
	for id, w := range p.workers {
		w.cancel()
		ws = append(ws, w)
		delete(p.workers, id)
	}
	p.mu.Unlock()
	for _, w := range ws {
		<-w.done
	}
}

// holdersByPod maps a pod uid to its holder's container ID.
func holdersByPod(cs []dockerx.Container) map[string]string {
	var out map[string]string
	for _, c := range cs {
		if c.Role == dockerx.RoleHolder && c.PodUID != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[c.PodUID] = c.ID
		}
	}
	return out
}

// start runs a container's probes. netOwner is the container whose address
// they go to: the container itself, or a member's holder. again: the
// container had a worker before in this controller's life.
func (p *Prober) start(ctx context.Context, owner string, c dockerx.Container, netOwner string, ports []manifests.ContainerPort, probes Probes, again bool) *probeWorker {
	ctx, cancel := context.WithCancel(ctx)
	w := &probeWorker{owner: owner, cancel: cancel, done: make(chan struct{}), alive: true, judged: again,
		started: probes.PostStart == nil && probes.Startup == nil}
	if probes.GatesReadiness() {
		notReady := false
		w.ready = &notReady // not ready until the probe says so, as in Kubernetes
	}
	target := ProbeTarget{ContainerID: c.ID, Ports: ports, netOwner: netOwner, ref: p.podRef(owner, &c)}
	go func() {
		defer close(w.done)
		if err := p.locate(ctx, &target); err != nil {
			if ctx.Err() == nil {
				p.log.Warn("probe: cannot inspect container", "container", c.Name, "err", err)
				p.retire(c.ID, w)
			}
			return
		}
		if probes.PostStart != nil && !p.postStart(ctx, w, target, c.Name, probes.PostStart) {
			return // failed (the container is restarted) or cancelled
		}
		if probes.Startup != nil && !p.startup(ctx, w, target, c.Name, probes.Startup) {
			return // failed (the container is restarted) or cancelled
		}
		w.mu.Lock()
		first := !w.started
		w.started = true
		w.mu.Unlock()
		if first {
			p.notify(owner) // a sidecar's successors may start
		}
		setReady := func(ok bool) {
			w.mu.Lock()
			changed := *w.ready != ok
			first := !w.judged
			*w.ready, w.judged = ok, true
			w.mu.Unlock()
			if changed {
				p.log.Info("readiness changed", "container", c.Name, "ready", ok)
			}
			if changed || first {
				p.notify(owner)
			}
		}
		if probes.Readiness == nil && probes.GatesReadiness() {
			// Started (and its postStart hook run), and no readiness probe
			// of the controller's: ready (an exec readiness probe is
			// Docker's HEALTHCHECK, still judged alongside).
			setReady(true)
		}
		var wg sync.WaitGroup
		if probes.Readiness != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.loop(ctx, target, "Readiness", probes.Readiness, func(ok bool) bool {
					setReady(ok)
					return true
				})
			}()
		}
		if probes.Liveness != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.loop(ctx, target, "Liveness", probes.Liveness, func(ok bool) bool {
					if !ok {
						p.fail(w, c.Name, "liveness probe failed")
					}
					return true
				})
			}()
		}
		wg.Wait()
	}()
	return w
}

// locate looks up the address probes of t go to: the pod's address on the
// instance network, else (not connected yet, or no instance network) the
// one Docker reports first, or the loopback for the host's network.
func (p *Prober) locate(ctx context.Context, t *ProbeTarget) error {
	network := p.network()
	det, err := p.docker.InspectContainer(ctx, t.netOwner)
	if err != nil {
		return err
	}
	t.located, t.HostNetwork = network, det.HostNetwork
	ip, on := det.Networks[network]
	t.OnNetwork = on && ip != "" && network != ""
	switch {
	case det.HostNetwork:
		t.Address = "127.0.0.1"
	case t.OnNetwork:
		t.Address = ip
	default:
		t.Address = det.IPAddress
	}
	return nil
}

// relocate looks the address up again before a probe when it may have
// changed: the instance network appeared (or changed), or the pod was not
// connected to it yet (the sweep connects it).
func (p *Prober) relocate(ctx context.Context, t *ProbeTarget) {
	if t.HostNetwork {
		return
	}
	network := p.network()
	if network == t.located && (t.OnNetwork || network == "") {
		return
	}
	if err := p.locate(ctx, t); err != nil && ctx.Err() == nil {
		p.log.Debug("probe: cannot inspect container; probing its last address", "container", t.ContainerID, "err", err)
	}
}

// run runs one probe. A probe that panics (a bug meeting an odd response
// or setting) is a failed probe, logged with its stack: one container's
// probe must never take the controller, and every owner, down.
func (p *Prober) run(ctx context.Context, t ProbeTarget, pr *manifests.Probe) (err error) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("probe panicked; counted as a failure", "container", t.ContainerID, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("probe panicked: %v", r)
		}
	}()
	return p.probeRunner().Run(ctx, t, pr)
}

// Until a container is first ready, and for its first periodSeconds of
// probing, a readiness run is followed by the next one after
// readinessRetryFirst, doubling up to readinessRetryMax, rather than a
// whole period: the kubelet's prober manager triggers an immediate
// readiness run at each status update of a pod whose running container
// is not ready (pkg/kubelet/prober prober_manager.go UpdatePodStatus, the
// worker's manualTriggerCh), and those updates follow a container's start
// (PLEG relists every second). A first probe that ran before the process
// listened must not leave a new replica, and its Services, without
// endpoints for a whole period (docs/design.md §10). The runs count as
// any other: failures reach failureThreshold, each is an Unhealthy event.
const (
	readinessRetryFirst = 100 * time.Millisecond
	readinessRetryMax   = time.Second
)

// loop runs a probe every periodSeconds after initialDelaySeconds, and
// reports a verdict each time successThreshold successes or
// failureThreshold failures in a row are reached (a readiness probe runs
// sooner until its container is first ready: readinessRetryFirst). It
// ends when ctx ends or verdict returns false.
func (p *Prober) loop(ctx context.Context, t ProbeTarget, kind string, pr *manifests.Probe, verdict func(bool) bool) {
	period := time.Duration(max(pr.PeriodSeconds, 1)) * time.Second
	soon := soonRuns{on: kind == "Readiness", retry: readinessRetryFirst, period: period} // only readiness is triggered early
	if pr.InitialDelaySeconds > 0 {
		select {
		case <-ctx.Done():
			return
		case <-p.clock.After(time.Duration(pr.InitialDelaySeconds) * time.Second):
		}
	}
	successes, failures := 0, 0
	for {
		p.relocate(ctx, &t)
		wait := period
		if err := p.run(ctx, t, pr); errors.Is(err, ErrNoVerdict) {
			// Not run (the relay is missing): no verdict either way.
		} else if err != nil {
			if ctx.Err() != nil {
				return
			}
			successes = 0
			failures++
			// kubelet's event, one per failed probe (the log counts them).
			p.events.Event(t.ref, store.EventWarning, "Unhealthy", fmt.Sprintf("%s probe failed: %v", kind, err))
			if failures >= int(max(pr.FailureThreshold, 1)) && !verdict(false) {
				return
			}
			wait = soon.next(p.clock.Now())
		} else {
			failures = 0
			successes++
			if successes >= int(max(pr.SuccessThreshold, 1)) {
				soon.on = false // ready: every period from now on
				if !verdict(true) {
					return
				}
			}
			wait = soon.next(p.clock.Now())
		}
		select {
		case <-ctx.Done():
			return
		case <-p.clock.After(wait):
		}
	}
}

// soonRuns times a readiness probe's runs until its container is first
// ready (readinessRetryFirst).
type soonRuns struct {
	on     bool
	first  time.Time // the first run's end (zero: none yet)
	retry  time.Duration
	period time.Duration
}

// next is the wait after a run that judged, ending at now: the next
// doubling delay while on and within the first period, else the period.
func (s *soonRuns) next(now time.Time) time.Duration {
	if s.first.IsZero() {
		s.first = now
	}
	if !s.on || now.Sub(s.first) >= s.period {
		s.on = false
		return s.period
	}
	wait := min(s.retry, readinessRetryMax, s.period)
	s.retry = min(s.retry*2, readinessRetryMax)
	return wait
}
