// Package dockerfake is an in-memory Docker Engine for tests. It keeps the
// real API's semantics where the controller depends on them: a missing
// container is ErrNotFound (404), a taken name is ErrConflict (409), remove
// of a running container needs force (always used by dockctl), events are
// delivered in order per subscriber and a subscriber can be cut off to
// simulate a stream gap.
//
// It is no kinder than Docker where that would hide bugs: a removal passes
// through `removing` (the name stays taken) and can end `dead`; Created
// times have Docker's one-second resolution, so "newest" ties happen;
// CreateContainer builds the real configuration with dockerx.BuildConfig and
// fails where the real client would; EnsureImage follows imagePullPolicy;
// and the daemon can go down (DaemonDown), which subscribers see as a Down
// event, as from the real client. Containers that join another's
// namespaces (a pod's members joining its holder) behave as on Docker
// 20.10; see "Joined containers" below.
//
// A pod's named volumes and the helper images (volumes.go, images.go) keep
// Docker's rules too: a container that mounts a missing volume name makes
// an unlabelled volume, which CreateVolume then refuses to adopt; a volume
// or image that a container still existing (in any state) uses cannot be
// removed (ErrConflict); and EnsureHolderImage gives the real holder
// image's reference, which a create needs present.
//
// Networks (networks.go) are Docker's: the default bridge, host and none
// exist; addresses are allocated when a container starts and released
// when it stops (a stopped container's address goes to the next one at
// once); static addresses are checked at start as Docker checks them;
// a container can be connected in place; a network in use by a running
// container cannot be removed, and one not dockctl's is never adopted.
// Helper containers (helpers.go) run under Docker's restart policy
// "always"; ExecOutput answers through a handler (HandleExec), so that a
// test can play a helper.
package dockerfake

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/docker/go-units"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// Engine is a fake Docker Engine. The zero value is not usable; call New.
type Engine struct {
	mu         sync.Mutex
	containers map[string]*dockerx.Container // by ID
	ns         map[string]*namespaces        // by ID: what each container owns or joins
	images     map[string]bool
	imageUsers map[string]string // SetImageUser (imageuser.go)
	nextID     int
	subs       map[int]*subscriber
	nextSub    int
	calls      map[string]int
	now        func() time.Time

	// pullSecrets holds, by image, the last EnsureImage's (PullSecrets).
	pullSecrets map[string][]dockerx.RegistryCredential

	// Hooks let tests inject faults. They run with the lock released.
	OnCreate func(req dockerx.CreateRequest) error
	OnStart  func(id string) error
	OnRemove func(id string) error
	// OnExec answers Exec; without it every command exits 0.
	OnExec func(id string, cmd []string) (int, error)
	// StartFault, when set, runs under the engine's lock as a container
	// starts, with a copy of it, and returns the state and health it is in
	// once started ("" keeps running, no health change). It makes
	// start-then-exit and start-unhealthy atomic: no list ever sees the
	// container running and healthy in between. It must not call the engine.
	StartFault func(c dockerx.Container) (state, health string)

	peaks map[string]int // per deployment label: most containers at once

	// DeadOnRemove, when it returns true for a container, makes its
	// removal fail as Docker's does when it cannot remove the filesystem
	// ("device or resource busy"): the container ends `dead`, its name
	// still taken, until a later removal succeeds.
	DeadOnRemove func(id string) bool

	holdRemovals bool            // removals wait in `removing` for FinishRemovals
	remote       map[string]bool // images a pull can fetch (AddRemoteImage)
	down         bool            // DaemonDown: unreachable until DaemonUp
	up           chan struct{}   // closed by DaemonUp

	// IgnoresStop tells which containers ignore their stop signal (a
	// process that traps SIGTERM): StopContainer then returns only when
	// Docker would kill it, after the timeout. Without it, or when it says
	// false, a container exits at once on its stop signal.
	IgnoresStop func(c dockerx.Container) bool
	// After times the kill of a stop (default time.After), so that a test
	// can decide when a grace period ends.
	After func(d time.Duration) <-chan time.Time

	podObjects // volumes and helper images: volumes.go, images.go
	netObjects // networks and exec handlers: networks.go, helpers.go
}

type subscriber struct {
	instance string
	ch       chan dockerx.Event
	cut      chan struct{}
}

// New returns an engine that knows the given images.
func New(images ...string) *Engine {
	e := &Engine{
		containers: map[string]*dockerx.Container{},
		ns:         map[string]*namespaces{},
		images:     map[string]bool{},
		remote:     map[string]bool{},
		subs:       map[int]*subscriber{},
		calls:      map[string]int{},
		now:        time.Now,
	}
	for _, img := range images {
		e.images[img] = true
	}
	return e
}

// SetNow replaces the engine's clock (creation and event times), for tests
// that drive the controller's clock. Call it before using the engine.
func (e *Engine) SetNow(now func() time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.now = now
}

// Calls returns how many times each operation was called.
func (e *Engine) Calls() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for k, v := range e.calls {
		out[k] = v
	}
	return out
}

// ResetCalls zeroes the call counters.
func (e *Engine) ResetCalls() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = map[string]int{}
}

// WriteCalls counts calls that change state.
func (e *Engine) WriteCalls() int {
	c := e.Calls()
	return c["create"] + c["start"] + c["remove"] + c["unpause"] + c["stop"]
}

func (e *Engine) ListContainers(ctx context.Context, instance string) ([]dockerx.Container, error) {
	return e.list(instance, "")
}

// ListHelpers lists the instance's containers of one role. It counts as
// "list" and, on its own, as "list:ROLE".
func (e *Engine) ListHelpers(ctx context.Context, instance, role string) ([]dockerx.Container, error) {
	e.mu.Lock()
	e.calls["list:"+role]++
	e.mu.Unlock()
	cs, err := e.list(instance, "")
	return slices.DeleteFunc(cs, func(c dockerx.Container) bool { return c.Role != role }), err
}

// ListDeploymentContainers lists one deployment's containers. It counts as
// "list" and, on its own, as "list:deployment".
func (e *Engine) ListDeploymentContainers(ctx context.Context, instance, deployment string) ([]dockerx.Container, error) {
	e.mu.Lock()
	e.calls["list:deployment"]++
	e.mu.Unlock()
	return e.list(instance, deployment)
}

func (e *Engine) list(instance, deployment string) ([]dockerx.Container, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls["list"]++
	if e.down {
		return nil, fmt.Errorf("list containers: %w", dockerx.ErrUnreachable)
	}
	var out []dockerx.Container
	for _, c := range e.containers {
		if c.Labels[dockerx.LabelInstance] != instance || (deployment != "" && c.Labels[dockerx.LabelDeployment] != deployment) {
			continue
		}
		cp := *c
		cp.Labels = copyMap(c.Labels)
		cp.Networks = e.addressesLocked(c)
		cp.StaticIPv4 = e.staticLocked(c)
		if ns := e.ns[cp.ID]; ns != nil {
			cp.NetworkMode = ns.network
		}
		cp.Volumes = e.mountedLocked(cp.ID)
		if cp.Status == "" && cp.State == dockerx.StateRunning {
			// As Docker words it: the uptime since its last start.
			started := cp.Created
			if ns := e.ns[cp.ID]; ns != nil && !ns.startedAt.IsZero() {
				started = ns.startedAt
			}
			cp.Status = "Up " + units.HumanDuration(e.now().Sub(started))
		}
		out = append(out, cp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (e *Engine) CreateContainer(ctx context.Context, req dockerx.CreateRequest) (string, error) {
	// The real client asks the daemon for the mountpoints of the volumes
	// of its subPath binds, then builds the configuration: whatever it
	// refuses never reaches the daemon, and the controller must report it.
	if names := dockerx.SubPathVolumes(req); len(names) > 0 {
		req.VolumeMountpoints = map[string]string{}
		for _, n := range names {
			req.VolumeMountpoints[n] = "/var/lib/docker/volumes/" + n + "/_data"
		}
	}
	cfg, hc, nc, err := dockerx.BuildConfig(req)
	if err != nil {
		return "", err
	}
	if err := e.reachable("create container " + req.Name); err != nil {
		return "", err
	}
	if e.OnCreate != nil {
		if err := e.OnCreate(req); err != nil {
			return "", err
		}
	}
	ns := &namespaces{
		network:   string(hc.NetworkMode),
		ipc:       string(hc.IpcMode),
		pid:       string(hc.PidMode),
		shareable: string(hc.IpcMode) == "shareable",
		endpoints: endpointsOf(hc, nc),
	}
	// The named volumes it mounts (a pod's emptyDirs), compared by value so
	// that this package needs no Docker type.
	var volumes []mountedVolume
	for _, m := range hc.Mounts {
		if m.Type == "volume" && m.Source != "" {
			mv := mountedVolume{name: m.Source}
			if m.VolumeOptions != nil {
				mv.labels = m.VolumeOptions.Labels
			}
			volumes = append(volumes, mv)
		}
	}
	id, err := e.add(dockerx.Container{Name: req.Name, Image: cfg.Image, Labels: cfg.Labels, State: dockerx.StateCreated}, "create", ns, volumes)
	if err != nil {
		return "", err
	}
	// As the real client: the additional networks are connected before
	// the create returns, and a container that cannot join one is removed.
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, a := range dockerx.ExtraNetworks(req) {
		if err := e.connectLocked(a.Network, id, a.Endpoint); err != nil {
			_ = e.removeLocked(id)
			return "", fmt.Errorf("create container %s: %w", req.Name, err)
		}
	}
	return id, nil
}

// reachable fails while the daemon is down (DaemonDown).
func (e *Engine) reachable(what string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.down {
		return fmt.Errorf("%s: %w", what, dockerx.ErrUnreachable)
	}
	return nil
}

// Add puts a container into the engine as if created through the API (for
// hand-made strays and other instances' containers), on the default bridge
// with namespaces of its own. It returns its ID.
func (e *Engine) Add(c dockerx.Container, op string) (string, error) {
	return e.add(c, op, &namespaces{network: "bridge", endpoints: defaultEndpoints("bridge")}, nil)
}

// add creates a container with the given namespaces that mounts the named
// volumes (see mountVolumesLocked).
func (e *Engine) add(c dockerx.Container, op string, ns *namespaces, volumes []mountedVolume) (string, error) {
	return e.addWithID(c, "", op, ns, volumes)
}

// addWithID is add keeping the given ID (Restore: a container captured on
// a real daemon), or giving the next one when id is "".
func (e *Engine) addWithID(c dockerx.Container, id, op string, ns *namespaces, volumes []mountedVolume) (string, error) {
	e.mu.Lock()
	if op != "" {
		e.calls[op]++
	}
	for _, other := range e.containers {
		if other.Name == c.Name {
			e.mu.Unlock()
			return "", fmt.Errorf("create %s: name already in use: %w", c.Name, dockerx.ErrConflict)
		}
	}
	if c.Image != "" && !e.images[c.Image] {
		e.mu.Unlock()
		return "", fmt.Errorf("create %s: no such image %s: %w", c.Name, c.Image, dockerx.ErrNotFound)
	}
	if err := e.resolveJoinsLocked(ns); err != nil {
		e.mu.Unlock()
		return "", fmt.Errorf("create container %s: %w", c.Name, err)
	}
	if _, taken := e.containers[id]; id == "" || taken {
		e.nextID++
		id = fmt.Sprintf("%064x", e.nextID)
	}
	c.ID = id
	c.Instance = c.Labels[dockerx.LabelInstance]
	c.Deployment = c.Labels[dockerx.LabelDeployment]
	c.TemplateHash = c.Labels[dockerx.LabelTemplateHash]
	c.Namespace = dockerx.ParseNamespace(c.Labels, c.Name)
	c.Role = c.Labels[dockerx.LabelRole]
	if c.Role == "" {
		c.Role = dockerx.RoleReplica // made before roles existed
	}
	c.Pod = c.Labels[dockerx.LabelPod]
	c.PodUID = c.Labels[dockerx.LabelPodUID]
	c.ContainerName = c.Labels[dockerx.LabelContainer]
	c.Service = c.Labels[dockerx.LabelService]
	c.ConfigHash = c.Labels[dockerx.LabelConfigHash]
	c.Networks = nil // reported from its endpoints
	if c.State == "" {
		c.State = dockerx.StateCreated
	}
	if c.Created.IsZero() {
		c.Created = e.now()
	}
	// Docker lists creation times in whole seconds: containers created in
	// the same second tie, and ranking must cope.
	c.Created = c.Created.Truncate(time.Second)
	cp := c
	e.containers[c.ID] = &cp
	e.ns[c.ID] = ns
	if runningOrPaused(&cp) {
		// Made running (a hand-made container): it has its addresses, or
		// none where Docker would have refused its start.
		_ = e.startNetworksLocked(c.ID)
	}
	e.mountVolumesLocked(c.ID, volumes)
	e.notePeakLocked(cp.Deployment)
	e.emitLocked(&cp, "create")
	e.mu.Unlock()
	return c.ID, nil
}

func (e *Engine) StartContainer(ctx context.Context, id string) error {
	if err := e.reachable("start container " + short(id)); err != nil {
		return err
	}
	if e.OnStart != nil {
		if err := e.OnStart(id); err != nil {
			return err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls["start"]++
	c, ok := e.containers[id]
	if !ok {
		return fmt.Errorf("start %s: %w", short(id), dockerx.ErrNotFound)
	}
	if c.State == dockerx.StateRunning {
		return nil
	}
	if c.State == dockerx.StatePaused {
		return fmt.Errorf("start %s: cannot start a paused container: %w", c.Name, dockerx.ErrConflict)
	}
	if c.State == dockerx.StateRemoving || c.State == dockerx.StateDead {
		// As Docker: such a container never runs again.
		return fmt.Errorf("start %s: container is marked for removal and cannot be started: %w", c.Name, dockerx.ErrConflict)
	}
	ns := e.ns[id]
	if err := e.joinLocked(ns); err != nil {
		return fmt.Errorf("start container %s: %w", c.Name, err)
	}
	if err := e.startNetworksLocked(id); err != nil {
		return fmt.Errorf("start container %s: %w", c.Name, err)
	}
	ns.starts++
	ns.startedAt = e.now()
	c.State = dockerx.StateRunning
	c.ExitCode = 0
	e.emitLocked(c, "start")
	if e.StartFault != nil {
		cp := *c
		cp.Labels = copyMap(c.Labels)
		state, health := e.StartFault(cp)
		if health != "" {
			c.Health = health
			e.emitLocked(c, "health_status: "+health)
		}
		if state != "" && state != dockerx.StateRunning {
			c.State = state
			e.emitLocked(c, "die")
			e.stoppedLocked(c.ID, true)
		}
	}
	return nil
}

// Joined containers. Measured on Docker 20.10.24 (API 1.41) with a tiny
// scratch image, a holder H (IpcMode shareable) and members created with
// NetworkMode and IpcMode (and PidMode) container:H:
//   - Create: Docker resolves container:<name> to H's ID in all three
//     modes, so a member stays bound to that one holder, never to another
//     container later created under H's name. With NetworkMode alone a
//     missing H is no error (the name is kept and resolved at start); with
//     IpcMode or PidMode container:<missing> the create fails with 400
//     "No such container: H" (no sentinel: dockerx maps 404 and 409 only).
//   - Start of a member: H removed → 404 "No such container: <H's ID>"
//     (ErrNotFound, although the member itself exists); H created but not
//     started, exited (or removing, dead) → 409 "cannot join network of a
//     non running container: <ID>" (ErrConflict); the IPC of a donor that
//     is not shareable → 500 "can't join IPC of container <ID>:
//     non-shareable IPC"; the network is checked before IPC and PID.
//   - H stops (stop, kill, crash, rm -f): members in H's PID namespace
//     (shareProcessNamespace) die with it (exit 137: when the init of a
//     PID namespace dies the kernel kills every process in it); members
//     sharing only network and IPC keep running, in a network namespace
//     that is no longer H's: a restarted H gets a new one, which they join
//     only when they are started again (Stranded reports them).
//   - `docker rm -f H` succeeds while members run joined to it (Docker
//     does not refuse it), as does `docker rm H` of a stopped H with
//     members; the members' next start fails with 404 as above.
//   - Docker refuses a hostname, exposed or published ports on a member
//     (400 "conflicting options: ... and the network mode"): BuildConfig
//     sets none.
//   - Inspect of a member shows no network settings and no address:
//     whoever probes a member must use its holder's address.

// namespaces is what a container owns or joins, as created: the network,
// IPC and PID modes, a join ("container:<ID>") naming the donor by ID once
// resolved.
type namespaces struct {
	network, ipc, pid string
	shareable         bool // IpcMode shareable: others may join its IPC
	starts            int  // how many times it started: each start of a holder makes new namespaces
	startedAt         time.Time
	joined            int // of a member: its holder's starts when it last started
	// endpoints are the networks it is attached to, by name (none when
	// it joined another's network namespace).
	endpoints map[string]*endpoint
	// restartAlways is Docker's restart policy "always" (helpers): a
	// process that exits is started again (Exit).
	restartAlways bool
}

const joinPrefix = "container:"

func joinRef(mode string) string {
	if strings.HasPrefix(mode, joinPrefix) {
		return mode[len(joinPrefix):]
	}
	return ""
}

func (n *namespaces) netJoin() string { return joinRef(n.network) }

// lookupLocked finds a container by ID or name, as Docker resolves a
// reference.
func (e *Engine) lookupLocked(ref string) *dockerx.Container {
	if c, ok := e.containers[ref]; ok {
		return c
	}
	for _, c := range e.containers {
		if c.Name == ref {
			return c
		}
	}
	return nil
}

func runningOrPaused(c *dockerx.Container) bool {
	return c.State == dockerx.StateRunning || c.State == dockerx.StatePaused
}

// resolveJoinsLocked binds a new container's joins to their donors' IDs,
// failing as Docker's create does when an IPC or PID donor is missing.
func (e *Engine) resolveJoinsLocked(ns *namespaces) error {
	for _, mode := range []*string{&ns.ipc, &ns.pid} {
		if ref := joinRef(*mode); ref != "" {
			donor := e.lookupLocked(ref)
			if donor == nil {
				return fmt.Errorf("No such container: %s", ref) // a 400: no sentinel
			}
			*mode = joinPrefix + donor.ID
		}
	}
	if ref := ns.netJoin(); ref != "" {
		if donor := e.lookupLocked(ref); donor != nil {
			ns.network = joinPrefix + donor.ID
		}
	}
	return nil
}

// joinLocked checks, as a container starts, that the donors of its joined
// namespaces can be joined, in Docker's order and with its errors, and
// records which start of its network holder it joins.
func (e *Engine) joinLocked(ns *namespaces) error {
	if ref := ns.netJoin(); ref != "" {
		h := e.lookupLocked(ref)
		if h == nil {
			return fmt.Errorf("No such container: %s: %w", ref, dockerx.ErrNotFound)
		}
		if !runningOrPaused(h) {
			return fmt.Errorf("cannot join network of a non running container: %s: %w", h.ID, dockerx.ErrConflict)
		}
		ns.network = joinPrefix + h.ID
		ns.joined = e.ns[h.ID].starts
	}
	if ref := joinRef(ns.ipc); ref != "" {
		h := e.lookupLocked(ref)
		switch {
		case h == nil:
			return fmt.Errorf("can't join IPC of container %s: No such container: %s", ref, ref)
		case !runningOrPaused(h):
			return fmt.Errorf("can't join IPC of container %s: container %s is not running", h.ID, h.ID)
		case !e.ns[h.ID].shareable:
			return fmt.Errorf("can't join IPC of container %s: non-shareable IPC (hint: use IpcMode:shareable for the donor container)", h.ID)
		}
	}
	if ref := joinRef(ns.pid); ref != "" {
		h := e.lookupLocked(ref)
		switch {
		case h == nil:
			return fmt.Errorf("No such container: %s", ref)
		case !runningOrPaused(h):
			return fmt.Errorf("container %s is not running", h.ID)
		}
	}
	return nil
}

// stoppedLocked follows a container that has just stopped running: the
// running members of its PID namespace die with it (with a die event
// unless silent, as when it died while the daemon was down).
func (e *Engine) stoppedLocked(id string, emit bool) {
	ids := make([]string, 0)
	for mid, ns := range e.ns {
		if joinRef(ns.pid) == id {
			ids = append(ids, mid)
		}
	}
	sort.Strings(ids) // events in a stable order
	for _, mid := range ids {
		m := e.containers[mid]
		if !runningOrPaused(m) {
			continue
		}
		m.State = dockerx.StateExited
		if emit {
			e.emitLocked(m, "die")
		}
	}
}

// Stranded reports whether a running container that joined another's
// network namespace runs in one its holder no longer has: the holder
// stopped, restarted or was removed since the container started. Docker
// leaves such a container running, cut off from its pod's network, until
// it is started again.
func (e *Engine) Stranded(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.containers[id]
	if !ok || !runningOrPaused(c) {
		return false
	}
	ns := e.ns[id]
	ref := ns.netJoin()
	if ref == "" {
		return false
	}
	h := e.lookupLocked(ref)
	return h == nil || !runningOrPaused(h) || e.ns[h.ID].starts != ns.joined
}

// notePeakLocked records the number of containers of a deployment if it is
// the most seen so far. Counted under the lock as each container lands, so
// that no concurrent create can hide a peak from a test.
func (e *Engine) notePeakLocked(deployment string) {
	n := 0
	for _, c := range e.containers {
		if c.Deployment == deployment {
			n++
		}
	}
	if e.peaks == nil {
		e.peaks = map[string]int{}
	}
	e.peaks[deployment] = max(e.peaks[deployment], n)
}

// PeakContainers returns the most containers carrying the deployment label
// that existed at once since New or the last ResetPeak.
func (e *Engine) PeakContainers(deployment string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.peaks[deployment]
}

// ResetPeak restarts peak tracking from the current count.
func (e *Engine) ResetPeak(deployment string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.peaks, deployment)
	e.notePeakLocked(deployment)
}

func (e *Engine) UnpauseContainer(ctx context.Context, id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls["unpause"]++
	if e.down {
		return fmt.Errorf("unpause %s: %w", short(id), dockerx.ErrUnreachable)
	}
	c, ok := e.containers[id]
	if !ok {
		return fmt.Errorf("unpause %s: %w", short(id), dockerx.ErrNotFound)
	}
	if c.State != dockerx.StatePaused {
		return fmt.Errorf("unpause %s: not paused: %w", c.Name, dockerx.ErrConflict)
	}
	c.State = dockerx.StateRunning
	e.emitLocked(c, "unpause")
	return nil
}

// RemoveContainer force-removes, like `docker rm -f`: a missing container is
// ErrNotFound, which the real client maps to nil; the fake does the same so
// that the controller sees what it would see against Docker. The removal
// completes asynchronously (see removeLocked).
func (e *Engine) RemoveContainer(ctx context.Context, id string) error {
	if err := e.reachable("remove container " + short(id)); err != nil {
		return err
	}
	if e.OnRemove != nil {
		if err := e.OnRemove(id); err != nil {
			return err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls["remove"]++
	return e.removeLocked(id)
}

// removeLocked kills the container and leaves it `removing`, its name still
// taken, as Docker does while it removes the filesystem; the removal
// completes moments later, or, with HoldRemovals, at FinishRemovals. A
// second removal meanwhile succeeds at once (Docker's "removal already in
// progress", which dockerx maps to nil).
func (e *Engine) removeLocked(id string) error {
	c, ok := e.containers[id]
	if !ok || c.State == dockerx.StateRemoving {
		return nil
	}
	wasRunning := c.State == dockerx.StateRunning || c.State == dockerx.StatePaused
	if wasRunning {
		e.emitLocked(c, "kill")
		e.emitLocked(c, "die")
	}
	c.State = dockerx.StateRemoving
	c.Health = dockerx.HealthNone
	if wasRunning {
		e.stoppedLocked(id, true)
	}
	if !e.holdRemovals {
		go e.finishRemoval(id)
	}
	return nil
}

// finishRemoval ends one removal: the container is destroyed and its name
// freed, or, when DeadOnRemove says so, it is left `dead`.
func (e *Engine) finishRemoval(id string) {
	dead := e.DeadOnRemove != nil && e.DeadOnRemove(id)
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.containers[id]
	if !ok || c.State != dockerx.StateRemoving {
		return
	}
	if dead {
		c.State = dockerx.StateDead
		return
	}
	delete(e.containers, id)
	delete(e.ns, id)
	e.emitLocked(c, "destroy")
}

// HoldRemovals makes removals stop in `removing` until FinishRemovals (or
// HoldRemovals(false)), so that a test decides when names are freed.
func (e *Engine) HoldRemovals(hold bool) {
	e.mu.Lock()
	e.holdRemovals = hold
	e.mu.Unlock()
	if !hold {
		e.FinishRemovals()
	}
}

// FinishRemovals completes every removal in progress now, and returns how
// many there were.
func (e *Engine) FinishRemovals() int {
	e.mu.Lock()
	var ids []string
	for id, c := range e.containers {
		if c.State == dockerx.StateRemoving {
			ids = append(ids, id)
		}
	}
	e.mu.Unlock()
	sort.Strings(ids)
	for _, id := range ids {
		e.finishRemoval(id)
	}
	return len(ids)
}

// PullSecrets returns the pull secrets the last EnsureImage of ref was
// given (credentials print as their source and registry only).
func (e *Engine) PullSecrets(ref string) []dockerx.RegistryCredential {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pullSecrets[ref]
}

// EnsureImage follows imagePullPolicy as dockerx.Client.EnsureImage does:
// Never uses only a present image (else ErrNotFound); IfNotPresent ("")
// pulls only an absent one; Always pulls, and falls back to a present copy
// when the pull fails. A pull succeeds for images made pullable with
// AddRemoteImage and is counted as the call "pull"; the pull secrets of
// the last call for ref are kept for PullSecrets.
func (e *Engine) EnsureImage(ctx context.Context, ref, policy string, secrets []dockerx.RegistryCredential) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls["image"]++
	if e.pullSecrets == nil {
		e.pullSecrets = map[string][]dockerx.RegistryCredential{}
	}
	e.pullSecrets[ref] = secrets
	if e.down {
		return fmt.Errorf("image %q: %w", ref, dockerx.ErrUnreachable)
	}
	pull := func() error {
		e.calls["pull"]++
		if !e.remote[ref] {
			return fmt.Errorf("pull %q: not found in any registry: %w", ref, dockerx.ErrImagePull)
		}
		e.images[ref] = true
		return nil
	}
	switch policy {
	case manifests.PullNever:
		if !e.images[ref] {
			return fmt.Errorf("image %q not present and imagePullPolicy is Never: %w", ref, dockerx.ErrNotFound)
		}
		return nil
	case manifests.PullIfNotPresent, "":
		if e.images[ref] {
			return nil
		}
		return pull()
	case manifests.PullAlways:
		if err := pull(); err != nil {
			if !e.images[ref] {
				return err
			}
			dockerx.ReportPullFallback(ctx, ref, err)
		}
		return nil
	default:
		return fmt.Errorf("image %q: unknown imagePullPolicy %q", ref, policy)
	}
}

// AddRemoteImage makes an image pullable (present in a registry) without
// making it present locally.
func (e *Engine) AddRemoteImage(ref string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.remote[ref] = true
}

// DaemonDown makes the daemon unreachable, as a stopped dockerd: every
// event subscription breaks and reports a Down event, lists, creates,
// starts, stops, removals, inspects, execs, unpauses and image checks
// fail with ErrUnreachable, until DaemonUp. Containers keep their state
// (--live-restore).
func (e *Engine) DaemonDown() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.down {
		return
	}
	e.down = true
	e.up = make(chan struct{})
	for id, s := range e.subs {
		close(s.cut)
		delete(e.subs, id)
	}
}

// DaemonUp ends DaemonDown: subscribers reconnect and receive a Gap.
func (e *Engine) DaemonUp() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.down {
		e.down = false
		close(e.up)
	}
}

// Events subscribes; the first message is a gap, as the real client sends on
// every (re)connection.
func (e *Engine) Events(ctx context.Context, instance string) <-chan dockerx.Event {
	out := make(chan dockerx.Event, 1024)
	go func() {
		defer close(out)
		first := true
		var cause error
		for ctx.Err() == nil {
			e.mu.Lock()
			if e.down {
				// A subscription attempt against a stopped daemon fails.
				up := e.up
				e.mu.Unlock()
				cause = fmt.Errorf("event stream: %w", dockerx.ErrUnreachable)
				select {
				case out <- dockerx.Event{Down: true, Err: cause, Time: e.now()}:
				case <-ctx.Done():
					return
				}
				select {
				case <-up:
				case <-ctx.Done():
					return
				}
				first = false
				continue
			}
			id := e.nextSub
			e.nextSub++
			sub := &subscriber{instance: instance, ch: make(chan dockerx.Event, 4096), cut: make(chan struct{})}
			e.subs[id] = sub
			e.mu.Unlock()
			gap := dockerx.Event{Gap: true, Time: e.now()}
			if !first {
				gap.Err = cause
			}
			first = false
			select {
			case out <- gap:
			case <-ctx.Done():
			}
		relay:
			for {
				select {
				case <-ctx.Done():
					break relay
				case <-sub.cut:
					cause = fmt.Errorf("event stream cut: %w", dockerx.ErrUnreachable)
					break relay
				case ev := <-sub.ch:
					select {
					case out <- ev:
					case <-ctx.Done():
						break relay
					}
				}
			}
			e.mu.Lock()
			delete(e.subs, id)
			down, up := e.down, e.up
			e.mu.Unlock()
			if ctx.Err() != nil {
				return
			}
			// As the real client: a broken stream is reported at once,
			// and while the daemon is down nothing reconnects.
			select {
			case out <- dockerx.Event{Down: true, Err: cause, Time: e.now()}:
			case <-ctx.Done():
				return
			}
			if down {
				select {
				case <-up:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

// CutEvents breaks every subscription, dropping events queued in it, as a
// daemon restart does. Subscribers reconnect and receive a gap.
func (e *Engine) CutEvents() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for id, s := range e.subs {
		close(s.cut)
		delete(e.subs, id)
	}
}

func (e *Engine) emitLocked(c *dockerx.Container, action string) {
	ev := dockerx.Event{Action: action, ContainerID: c.ID, Name: c.Name, Deployment: c.Labels[dockerx.LabelDeployment],
		Namespace: dockerx.ParseNamespace(c.Labels, c.Name), Role: c.Labels[dockerx.LabelRole],
		OwnerKind: c.Labels[dockerx.LabelOwnerKind], Owner: c.Labels[dockerx.LabelOwner], Time: e.now()}
	for _, s := range e.subs {
		if c.Labels[dockerx.LabelInstance] != s.instance {
			continue
		}
		select {
		case s.ch <- ev:
		default: // a slow subscriber loses events, as with the real daemon
		}
	}
}

// InspectContainer reports a container's details, by ID or, as Docker
// does, by name, with its networks and its addresses there while it runs.
func (e *Engine) InspectContainer(ctx context.Context, id string) (dockerx.ContainerDetails, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls["inspect"]++
	if e.down {
		return dockerx.ContainerDetails{}, fmt.Errorf("inspect %s: %w", short(id), dockerx.ErrUnreachable)
	}
	c, ok := e.containers[id]
	for _, other := range e.containers {
		if !ok && other.Name == id {
			c, ok = other, true
		}
	}
	if !ok {
		return dockerx.ContainerDetails{}, fmt.Errorf("inspect %s: %w", short(id), dockerx.ErrNotFound)
	}
	d := dockerx.ContainerDetails{ID: c.ID, Name: c.Name, Image: c.Image, Labels: copyMap(c.Labels), State: c.State, Health: c.Health}
	// As Docker reports them: the host's network has no address of the
	// container's, and a container in another's network namespace has no
	// network settings at all (its address is its holder's).
	d.Networks = e.addressesLocked(c)
	switch ns := e.ns[c.ID]; {
	case ns.network == "host":
		d.HostNetwork = true
	case d.Networks["bridge"] != "":
		d.IPAddress = d.Networks["bridge"] // the top-level address is the default bridge's
	default:
		names := make([]string, 0, len(d.Networks))
		for name := range d.Networks {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if d.Networks[name] != "" {
				d.IPAddress = d.Networks[name]
				break
			}
		}
	}
	return d, nil
}

// Exec runs nothing: OnExec decides the exit code.
func (e *Engine) Exec(ctx context.Context, id string, cmd []string, timeout time.Duration) (int, error) {
	e.mu.Lock()
	e.calls["exec"]++
	if e.down {
		e.mu.Unlock()
		return 0, fmt.Errorf("exec in %s: %w", short(id), dockerx.ErrUnreachable)
	}
	c, ok := e.containers[id]
	running := ok && c.State == dockerx.StateRunning
	e.mu.Unlock()
	if !running {
		return 0, fmt.Errorf("exec in %s: not running: %w", short(id), dockerx.ErrConflict)
	}
	if e.OnExec != nil {
		return e.OnExec(id, cmd)
	}
	return 0, nil
}

// StopContainer stops a running container, as `docker stop -t` does: it
// sends the stop signal (a "kill" event), and the container exits at once,
// or, if it ignores the signal (IgnoresStop), is killed when the timeout
// runs out; the call returns then. A call abandoned through ctx leaves a
// container that ignored its signal running, as the real daemon does when
// its client goes away mid-stop.
func (e *Engine) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	e.mu.Lock()
	e.calls["stop"]++
	if e.down {
		e.mu.Unlock()
		return fmt.Errorf("stop %s: %w", short(id), dockerx.ErrUnreachable)
	}
	c, ok := e.containers[id]
	if !ok {
		e.mu.Unlock()
		return fmt.Errorf("stop %s: %w", short(id), dockerx.ErrNotFound)
	}
	if c.State != dockerx.StateRunning && c.State != dockerx.StatePaused {
		e.mu.Unlock()
		return nil
	}
	e.emitLocked(c, "kill")
	cp := *c
	cp.Labels = copyMap(c.Labels)
	e.mu.Unlock()

	if timeout > 0 && e.IgnoresStop != nil && e.IgnoresStop(cp) {
		after := e.After
		if after == nil {
			after = time.After
		}
		select {
		case <-after(timeout):
		case <-ctx.Done():
			return fmt.Errorf("stop %s: %w", cp.Name, ctx.Err())
		}
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok = e.containers[id]
	if !ok || (c.State != dockerx.StateRunning && c.State != dockerx.StatePaused) {
		return nil // removed or stopped meanwhile
	}
	c.State = dockerx.StateExited
	e.emitLocked(c, "die")
	e.emitLocked(c, "stop")
	e.stoppedLocked(id, true)
	return nil
}

// Mutations as a user would make them with the docker CLI.

// Kill stops a running container without dockctl's involvement (docker kill,
// docker stop, or a crash), emitting die.
func (e *Engine) Kill(id string) error { return e.setState(id, dockerx.StateExited, "die") }

// Pause pauses a running container.
func (e *Engine) Pause(id string) error { return e.setState(id, dockerx.StatePaused, "pause") }

// Remove removes a container as `docker rm -f` does.
func (e *Engine) Remove(id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.containers[id]; !ok {
		return dockerx.ErrNotFound
	}
	return e.removeLocked(id)
}

// KillSilently stops a container and emits no event, as when it dies while
// dockerd is down.
func (e *Engine) KillSilently(id string) error { return e.setState(id, dockerx.StateExited, "") }

// SetHealth sets a container's health.
func (e *Engine) SetHealth(id, health string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.containers[id]
	if !ok {
		return dockerx.ErrNotFound
	}
	c.Health = health
	e.emitLocked(c, "health_status: "+health)
	return nil
}

// AddImage makes an image present.
func (e *Engine) AddImage(ref string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.images[ref] = true
}

func (e *Engine) setState(id, state, action string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.containers[id]
	if !ok {
		return dockerx.ErrNotFound
	}
	wasRunning := c.State == dockerx.StateRunning || c.State == dockerx.StatePaused
	c.State = state
	if action != "" {
		e.emitLocked(c, action)
	}
	if wasRunning && state != dockerx.StateRunning && state != dockerx.StatePaused {
		e.stoppedLocked(id, action != "")
	}
	return nil
}

// Snapshot returns every container regardless of instance, sorted by name.
func (e *Engine) Snapshot() []dockerx.Container {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []dockerx.Container
	for _, c := range e.containers {
		cp := *c
		cp.Labels = copyMap(c.Labels)
		out = append(out, cp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
