package reconciler

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/grpcprobe"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
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

// probeTarget is where a probe goes.
type probeTarget struct {
	ContainerID string
	Address     string // IP, or 127.0.0.1 for host networking
	Ports       []manifests.ContainerPort
	// HostNetwork: the pod shares the host's network, so it is probed
	// directly, never through the relay (whose loopback is its own).
	HostNetwork bool

	// netOwner is the container whose address probes go to (the
	// container, or a member's holder); located is the instance network
	// the address was looked up for, onNetwork whether it is on it.
	netOwner  string
	located   string
	onNetwork bool
	// ref is the pod its events are about.
	ref store.InvolvedObject
}

// probeRunner runs one probe attempt; nil error is success.
type probeRunner interface {
	Run(ctx context.Context, target probeTarget, p *manifests.Probe) error
}

// dockerProbeRunner runs probes for real: HTTP and TCP from the
// controller to the container's address, or relayed through the DNS
// helper when the controller cannot reach the instance network (route.go);
// exec through the Docker API.
type dockerProbeRunner struct {
	docker Docker
	client *http.Client
	// nd runs relayed probes (nil: Docker without networks); route says
	// whether to relay (nil: never).
	nd    NetworkDocker
	route *probeRoute
	// dial connects a direct probe (tests substitute it).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

func newDockerProbeRunner(d Docker, nd NetworkDocker, route *probeRoute) *dockerProbeRunner {
	r := &dockerProbeRunner{docker: d, nd: nd, route: route}
	var dialer net.Dialer
	r.dial = dialer.DialContext
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) { return r.dial(ctx, network, addr) }
	// As kubelet, and as the relay (internal/dataplane): never through a
	// proxy from the environment, HTTPS without verifying the
	// certificate, so that a pod is judged alike in either mode.
	transport.Proxy = nil
	transport.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // kubelet's semantics
	r.client = &http.Client{
		Transport: transport,
		// A probe judges the container's own answer, as kubelet does.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return r
}

func (r *dockerProbeRunner) Run(ctx context.Context, t probeTarget, p *manifests.Probe) error {
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	if p.Exec == nil && !t.HostNetwork && r.nd != nil {
		if helper, relay := r.route.via(); relay {
			if !t.onNetwork {
				// Its address is not one the relay can reach (a pod of an
				// earlier release the sweep has not connected yet).
				return fmt.Errorf("%w: the pod is not on the instance network yet", errNoVerdict)
			}
			return r.relay(ctx, helper, t, p, timeout)
		}
	}
	err := r.direct(ctx, t, p, timeout)
	if p.Exec == nil {
		err = r.route.judgeDirect(err)
	}
	return err
}

// relay runs an httpGet, tcpSocket or grpc probe in the DNS helper.
func (r *dockerProbeRunner) relay(ctx context.Context, helper string, t probeTarget, p *manifests.Probe, timeout time.Duration) error {
	if helper == "" {
		r.route.relayLost("", fmt.Errorf("no DNS helper runs"))
		return fmt.Errorf("%w: no DNS helper runs to relay it", errNoVerdict)
	}
	spec, err := relaySpec(t, p, timeout)
	if err != nil {
		return err
	}
	cmd, err := relayCommand(spec)
	if err != nil {
		return fmt.Errorf("%w: %v", errNoVerdict, err)
	}
	code, out, err := r.nd.ExecOutput(ctx, helper, cmd, timeout+relayMargin)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.route.relayLost(helper, err)
		return fmt.Errorf("%w: relay through the DNS helper: %v", errNoVerdict, err)
	}
	return relayVerdict(code, out, timeout)
}

// relaySpec is the probe as the relay runs it: Kubernetes' semantics, to
// the same address and port a direct probe would dial.
func relaySpec(t probeTarget, p *manifests.Probe, timeout time.Duration) (helperapi.ProbeSpec, error) {
	spec := helperapi.ProbeSpec{Address: t.Address, TimeoutMillis: timeout.Milliseconds()}
	var port intstr.IntOrString
	switch {
	case p.HTTPGet != nil:
		g := p.HTTPGet
		spec.Kind, port, spec.Scheme, spec.Path = "http", g.Port, strings.ToUpper(g.Scheme), g.Path
		if spec.Scheme == "" {
			spec.Scheme = "HTTP"
		}
		if g.Host != "" {
			spec.Address = g.Host
		}
		for _, h := range g.HTTPHeaders {
			if strings.EqualFold(h.Name, "Host") {
				spec.Host = h.Value
				continue
			}
			if spec.Headers == nil {
				spec.Headers = map[string]string{}
			}
			spec.Headers[h.Name] = h.Value
		}
	case p.TCPSocket != nil:
		spec.Kind, port = "tcp", p.TCPSocket.Port
		if p.TCPSocket.Host != "" {
			spec.Address = p.TCPSocket.Host
		}
	case p.GRPC != nil:
		spec.Kind, port = "grpc", intstr.FromInt32(p.GRPC.Port)
		if p.GRPC.Service != nil {
			spec.Service = *p.GRPC.Service
		}
	default:
		return spec, fmt.Errorf("probe has no handler to relay")
	}
	n, err := resolvePort(port, t.Ports)
	if err != nil {
		return spec, err
	}
	spec.Port = n
	if spec.Address == "" {
		return spec, fmt.Errorf("container has no address to probe (network mode none?)")
	}
	return spec, nil
}

// direct runs a probe from the controller itself.
func (r *dockerProbeRunner) direct(ctx context.Context, t probeTarget, p *manifests.Probe, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case p.Exec != nil:
		code, err := r.docker.Exec(ctx, t.ContainerID, p.Exec.Command, timeout)
		if err != nil {
			return err
		}
		if code != 0 {
			return fmt.Errorf("%s exited %d", strings.Join(p.Exec.Command, " "), code)
		}
		return nil
	case p.HTTPGet != nil:
		g := p.HTTPGet
		port, err := resolvePort(g.Port, t.Ports)
		if err != nil {
			return err
		}
		host := g.Host
		if host == "" {
			host = t.Address
		}
		if host == "" {
			return fmt.Errorf("container has no address to probe (network mode none?)")
		}
		scheme := strings.ToLower(g.Scheme)
		if scheme == "" {
			scheme = "http"
		}
		path := g.Path
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+net.JoinHostPort(host, strconv.Itoa(port))+path, nil)
		if err != nil {
			return err
		}
		req.Header.Set("User-Agent", "dockctl-probe")
		for _, h := range g.HTTPHeaders {
			if strings.EqualFold(h.Name, "Host") {
				req.Host = h.Value // net/http ignores a Host header
				continue
			}
			req.Header.Set(h.Name, h.Value)
		}
		// Whether a connection was made tells a dial that never got
		// through from an answer: net/http reports a dial cut short by the
		// timeout as the context's error, not as the dial's.
		var connected atomic.Bool
		req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			GotConn: func(httptrace.GotConnInfo) { connected.Store(true) },
		}))
		resp, err := r.client.Do(req)
		if err != nil {
			var op *net.OpError
			if !connected.Load() && !errors.As(err, &op) {
				return &net.OpError{Op: "dial", Net: "tcp", Err: err}
			}
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("HTTP probe %s: status %d", req.URL, resp.StatusCode)
		}
		return nil
	case p.TCPSocket != nil:
		port, err := resolvePort(p.TCPSocket.Port, t.Ports)
		if err != nil {
			return err
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = t.Address
		}
		if host == "" {
			return fmt.Errorf("container has no address to probe (network mode none?)")
		}
		conn, err := r.dial(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	case p.GRPC != nil:
		if t.Address == "" {
			return fmt.Errorf("container has no address to probe (network mode none?)")
		}
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return grpcprobe.Check(ctx, r.dial, t.Address, int(p.GRPC.Port), service)
	}
	return fmt.Errorf("probe has no handler")
}

// resolvePort turns a probe port (a number or a container port's name)
// into a number.
func resolvePort(p intstr.IntOrString, ports []manifests.ContainerPort) (int, error) {
	if p.Type == intstr.Int {
		return int(p.IntVal), nil
	}
	for _, cp := range ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("no container port named %q", p.StrVal)
}

// prober keeps one worker per running container that has controller-run
// probes, and remembers their results. It names deployments by their key
// ("namespace/name"), as the work queue does.
type prober struct {
	runner probeRunner
	// events records probe and hook failures (Unhealthy,
	// FailedPostStartHook); never nil.
	events EventRecorder
	docker Docker
	// clock times the probes (tests use a fake one).
	clock clock.Clock
	// route names the instance network, whose address probes target
	// (nil: none).
	route  *probeRoute
	notify func(deployment string)
	log    *slog.Logger

	mu      sync.Mutex
	workers map[string]*probeWorker // by container ID
	// probedOnce holds the containers (ID → deployment key) that have
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
	deployment string
	cancel     context.CancelFunc
	done       chan struct{}

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

func newProber(d Docker, runner probeRunner, route *probeRoute, notify func(string), log *slog.Logger) *prober {
	return &prober{events: NopRecorder{}, runner: runner, docker: d, clock: clock.RealClock{}, route: route, notify: notify, log: log, workers: map[string]*probeWorker{}, probedOnce: map[string]string{},
		hooked: map[string]hookRun{}, born: time.Now()}
}

// probeResult is what the planner and status need from the prober.
type probeResult struct {
	Ready *bool // nil: readiness is not the controller's to judge
	Alive bool
	// Started: its postStart hook and startup probe are done, or it has
	// neither.
	Started bool
}

// sync starts workers for the deployment's running containers that need
// one and stops those whose container is gone or no longer running.
// templates maps a template hash to its pod template.
func (p *prober) sync(ctx context.Context, deployment string, cs []dockerx.Container, templates func(hash string) *manifests.PodTemplateSpec) map[string]probeResult {
	results := map[string]probeResult{}
	running, listed := map[string]bool{}, map[string]bool{}
	holders := holdersByPod(cs)
	for _, c := range cs {
		listed[c.ID] = true
		if c.State != dockerx.StateRunning {
			continue
		}
		tc := podruntime.TemplateContainer(templates(c.TemplateHash), &c)
		probes := podruntime.ControllerProbes(tc)
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
			w = p.start(ctx, deployment, c, netOwner, tc.Ports, probes, again)
			p.workers[c.ID] = w
			p.probedOnce[c.ID] = deployment
		}
		p.mu.Unlock()
		results[c.ID] = w.result()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, w := range p.workers {
		if w.deployment == deployment && !running[id] {
			w.cancel()
			delete(p.workers, id)
		}
	}
	for id, d := range p.probedOnce {
		if d == deployment && !listed[id] {
			delete(p.probedOnce, id) // gone: its ID never comes back
			delete(p.hooked, id)
		}
	}
	return results
}

// missing reports whether a running container needs a probe worker that
// it does not have yet (after a controller restart, say).
func (p *prober) missing(cs []dockerx.Container, templates func(hash string) *manifests.PodTemplateSpec) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		if c.State != dockerx.StateRunning || p.workers[c.ID] != nil {
			continue
		}
		if !podruntime.ControllerProbes(podruntime.TemplateContainer(templates(c.TemplateHash), &c)).None() {
			return true
		}
	}
	return false
}

// results returns the current verdicts for the containers that have a
// worker, starting none.
func (p *prober) results(cs []dockerx.Container) map[string]probeResult {
	out := map[string]probeResult{}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		if w := p.workers[c.ID]; w != nil {
			out[c.ID] = w.result()
		}
	}
	return out
}

func (w *probeWorker) result() probeResult {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := probeResult{Alive: w.alive, Started: w.started}
	if w.ready != nil && w.judged {
		v := *w.ready // a copy: the worker keeps writing its own
		r.Ready = &v
	}
	return r
}

// forget stops the worker of a container that is being restarted, so that
// the new run starts with fresh results and a fresh initial delay.
func (p *prober) forget(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w := p.workers[id]; w != nil {
		w.cancel()
		delete(p.workers, id)
	}
}

// drop stops every worker of a deployment that is deleted or unknown: no
// later sync of it will run prober.sync to stop them.
func (p *prober) drop(deployment string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, w := range p.workers {
		if w.deployment == deployment {
			w.cancel()
			delete(p.workers, id)
		}
	}
	for id, d := range p.probedOnce {
		if d == deployment {
			delete(p.probedOnce, id)
			delete(p.hooked, id)
		}
	}
}

// retire drops worker w of container id when it ended on an error of its
// own (the container could not be inspected), not cancelled: a worker that
// stays registered but runs nothing would leave the container unstarted
// and unready for good. The deployment is queued a second later, so that
// its next sync starts a new worker without hammering a daemon that just
// failed.
func (p *prober) retire(id string, w *probeWorker) {
	p.mu.Lock()
	if p.workers[id] == w {
		delete(p.workers, id)
	}
	p.mu.Unlock()
	go func() {
		<-p.clock.After(time.Second)
		p.notify(w.deployment)
	}()
}

// stop ends every worker and waits for them.
func (p *prober) stop() {
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
func (p *prober) start(ctx context.Context, deployment string, c dockerx.Container, netOwner string, ports []manifests.ContainerPort, probes podruntime.Probes, again bool) *probeWorker {
	ctx, cancel := context.WithCancel(ctx)
	w := &probeWorker{deployment: deployment, cancel: cancel, done: make(chan struct{}), alive: true, judged: again,
		started: probes.PostStart == nil && probes.Startup == nil}
	if probes.GatesReadiness() {
		notReady := false
		w.ready = &notReady // not ready until the probe says so, as in Kubernetes
	}
	ns, dep, _ := store.SplitKey(deployment)
	target := probeTarget{ContainerID: c.ID, Ports: ports, netOwner: netOwner, ref: containerPodRef(ns, dep, &c)}
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
			p.notify(deployment) // a sidecar's successors may start
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
				p.notify(deployment)
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
func (p *prober) locate(ctx context.Context, t *probeTarget) error {
	network := p.route.networkName()
	det, err := p.docker.InspectContainer(ctx, t.netOwner)
	if err != nil {
		return err
	}
	t.located, t.HostNetwork = network, det.HostNetwork
	ip, on := det.Networks[network]
	t.onNetwork = on && ip != "" && network != ""
	switch {
	case det.HostNetwork:
		t.Address = "127.0.0.1"
	case t.onNetwork:
		t.Address = ip
	default:
		t.Address = det.IPAddress
	}
	return nil
}

// relocate looks the address up again before a probe when it may have
// changed: the instance network appeared (or changed), or the pod was not
// connected to it yet (the sweep connects it).
func (p *prober) relocate(ctx context.Context, t *probeTarget) {
	if t.HostNetwork {
		return
	}
	network := p.route.networkName()
	if network == t.located && (t.onNetwork || network == "") {
		return
	}
	if err := p.locate(ctx, t); err != nil && ctx.Err() == nil {
		p.log.Debug("probe: cannot inspect container; probing its last address", "container", t.ContainerID, "err", err)
	}
}

// run runs one probe. A probe that panics (a bug meeting an odd response
// or setting) is a failed probe, logged with its stack: one container's
// probe must never take the controller, and every deployment, down.
func (p *prober) run(ctx context.Context, t probeTarget, pr *manifests.Probe) (err error) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("probe panicked; counted as a failure", "container", t.ContainerID, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("probe panicked: %v", r)
		}
	}()
	return p.runner.Run(ctx, t, pr)
}

// loop runs a probe every periodSeconds after initialDelaySeconds, and
// reports a verdict each time successThreshold successes or
// failureThreshold failures in a row are reached. It ends when ctx ends
// or verdict returns false.
func (p *prober) loop(ctx context.Context, t probeTarget, kind string, pr *manifests.Probe, verdict func(bool) bool) {
	period := time.Duration(max(pr.PeriodSeconds, 1)) * time.Second
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
		if err := p.run(ctx, t, pr); errors.Is(err, errNoVerdict) {
			// Not run (the relay is missing): no verdict either way.
		} else if err != nil {
			if ctx.Err() != nil {
				return
			}
			successes = 0
			failures++
			// kubelet's event, one per failed probe (the log counts them).
			Eventf(p.events, t.ref, store.EventWarning, "Unhealthy", "%s probe failed: %v", kind, err)
			if failures >= int(max(pr.FailureThreshold, 1)) && !verdict(false) {
				return
			}
		} else {
			failures = 0
			successes++
			if successes >= int(max(pr.SuccessThreshold, 1)) && !verdict(true) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-p.clock.After(period):
		}
	}
}
