package reconciler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/workqueue"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// Docker is what the controller needs from the Docker Engine. It is owned
// here, the consumer, so that tests substitute an in-memory engine.
type Docker interface {
	ListContainers(ctx context.Context, instance string) ([]dockerx.Container, error)
	ListDeploymentContainers(ctx context.Context, instance, deployment string) ([]dockerx.Container, error)
	CreateContainer(ctx context.Context, req dockerx.CreateRequest) (string, error)
	StartContainer(ctx context.Context, id string) error
	UnpauseContainer(ctx context.Context, id string) error
	RemoveContainer(ctx context.Context, id string) error
	EnsureImage(ctx context.Context, ref, pullPolicy string) error
	Events(ctx context.Context, instance string) <-chan dockerx.Event
	// For controller-run probes and liveness restarts.
	InspectContainer(ctx context.Context, id string) (dockerx.ContainerDetails, error)
	Exec(ctx context.Context, id string, cmd []string, timeout time.Duration) (int, error)
	StopContainer(ctx context.Context, id string, timeout time.Duration) error
}

// Store is what the controller needs from the state directory.
type Store interface {
	Lookup(name string) (*store.Record, error)
	ListAll() ([]*store.Record, []error)
	ReadStatus(name string) (*store.Status, error)
	WriteStatus(name string, st *store.Status) error
	Watch(ctx context.Context) (<-chan string, error)
}

// Options tune the controller. Zero values take the defaults.
type Options struct {
	Instance     string
	ResyncPeriod time.Duration // default 30s
	// PruneOrphans removes containers whose deployment this state directory
	// never knew. Off by default so that a wrong or empty state directory
	// can never wipe a host.
	PruneOrphans bool
	// MaxCreatesInFlight caps slow-start creates per deployment (default 8:
	// the engine gains no throughput past that).
	MaxCreatesInFlight int
	Workers            int // deployments synced in parallel, default 4
	// SelfID is the controller's own container ID (or a prefix of it) when it
	// runs in a container: it never manages itself, whatever its labels say.
	SelfID string
	// CrashBackoffBase and CrashBackoffMax bound the delay before a
	// container that keeps exiting is started again (defaults 1s and 5m).
	CrashBackoffBase time.Duration
	CrashBackoffMax  time.Duration
	// SettleTime is how long every new container must have been ready
	// before it counts as available (the settle rule: the effective need is
	// max(minReadySeconds, SettleTime)). Zero takes DefaultSettleTime; a
	// negative value turns the rule off (Kubernetes' behaviour).
	SettleTime time.Duration
	Logger     *slog.Logger
	// Observer receives sync outcomes and counts (metrics); may be nil.
	Observer Observer
	// QueueMetrics, when set, receives the work queue's metrics.
	QueueMetrics workqueue.MetricsProvider
	// Allow is what this controller grants (its --allow-* flags); a
	// deployment that needs any other privilege is refused (ReplicaFailure).
	Allow manifests.Policy
	Now   func() time.Time
	// MaxReplicas caps spec.replicas (default DefaultMaxReplicas): a
	// deployment over it is refused with a ReplicaFailure condition.
	MaxReplicas int32
	// MaxGracePeriod bounds terminationGracePeriodSeconds (default
	// DefaultMaxGracePeriod).
	MaxGracePeriod time.Duration
}

// orphanSweepKey is queued for a whole-instance pass: it finds orphans and
// deployments that have containers but no live record. It cannot collide
// with a deployment name, which is a DNS-1123 label.
const orphanSweepKey = "*"

// crashWindow is how long a container must run after dockctl started it for
// its next exit not to count as a crash-loop restart.
const crashWindow = 10 * time.Second

// Controller keeps the instance's containers matching the state directory.
type Controller struct {
	docker Docker
	store  Store
	opts   Options
	log    *slog.Logger
	queue  workqueue.TypedRateLimitingInterface[string]

	mu      sync.Mutex
	orphans map[string]bool            // container IDs already reported
	invalid map[string]string          // deployment → invalid record problems already logged
	blocked map[string]map[string]bool // deployment → names held by others

	dockerOK atomic.Bool
	prober   *prober
	stopper  *stopper
}

// New returns a controller; Run starts it.
func New(docker Docker, st Store, opts Options) *Controller {
	if opts.Instance == "" {
		opts.Instance = "default"
	}
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = 30 * time.Second
	}
	if opts.MaxCreatesInFlight <= 0 {
		opts.MaxCreatesInFlight = 8
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.CrashBackoffBase <= 0 {
		opts.CrashBackoffBase = time.Second
	}
	if opts.CrashBackoffMax <= 0 {
		opts.CrashBackoffMax = 5 * time.Minute
	}
	switch {
	case opts.SettleTime == 0:
		opts.SettleTime = DefaultSettleTime
	case opts.SettleTime < 0:
		opts.SettleTime = 0
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	if opts.Allow.Host.Resolve == nil {
		// Host paths are judged as they resolve here; never lexically.
		opts.Allow.Host.Resolve = filepath.EvalSymlinks
	}
	limiter := workqueue.NewTypedMaxOfRateLimiter(
		// Per deployment: a failing sync is retried 200ms, 400ms, … up to 1m.
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, time.Minute),
	)
	c := &Controller{
		docker:  docker,
		store:   st,
		opts:    opts,
		log:     opts.Logger.With("instance", opts.Instance),
		queue:   workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[string]{Name: "deployments", MetricsProvider: opts.QueueMetrics}),
		orphans: map[string]bool{},
	}
	c.prober = newProber(docker, newDockerProbeRunner(docker), func(name string) { c.queue.Add(name) }, c.log)
	c.stopper = newStopper(docker, c.log, func(name string, err error) {
		if err != nil {
			c.queue.AddRateLimited(name)
			return
		}
		c.queue.Add(name)
	}, c.prober.forget)
	return c
}

// Ready reports whether the last contact with Docker succeeded.
func (c *Controller) Ready() bool { return c.dockerOK.Load() }

// Run reconciles until ctx is cancelled. It returns after in-flight syncs
// finish; it never stops or removes workloads on the way out.
func (c *Controller) Run(ctx context.Context) error {
	// Subscribe before the first list so that nothing that happens between
	// the two is missed: the subscription's first message is a gap, which
	// queues the initial full sync.
	events := c.docker.Events(ctx, c.opts.Instance)
	changes, err := c.store.Watch(ctx)
	if err != nil {
		return fmt.Errorf("watch state directory: %w", err)
	}

	var wg sync.WaitGroup
	for i := 0; i < c.opts.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.processNext(ctx) {
			}
		}()
	}

	c.log.Info("controller started", "resync", c.opts.ResyncPeriod, "pruneOrphans", c.opts.PruneOrphans)
	c.queue.Add(orphanSweepKey)
	ticker := time.NewTicker(c.opts.ResyncPeriod)
	defer ticker.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			c.handleEvent(ev)
		case name, ok := <-changes:
			if !ok {
				changes = nil
				continue
			}
			if name == "" {
				c.queue.Add(orphanSweepKey)
			} else {
				c.queue.Add(name)
			}
		case <-ticker.C:
			// The periodic resync is what makes the controller level-based:
			// whatever events were lost (a container that died while dockerd
			// was down emits none), the next full pass sees it.
			c.queue.Add(orphanSweepKey)
		}
	}
	c.log.Info("controller stopping: waiting for in-flight syncs; workloads keep running")
	c.queue.ShutDownWithDrain()
	wg.Wait()
	c.prober.stop()
	c.stopper.shutdown()
	return nil
}

func (c *Controller) handleEvent(ev dockerx.Event) {
	switch {
	case ev.Down:
		// The daemon is unreachable: say so at once (/readyz) rather than
		// at the next failed list. Nothing to sync until it is back.
		c.dockerOK.Store(false)
		return
	case ev.Gap:
		if ev.Err != nil {
			c.opts.Observer.EventStreamGap()
			c.log.Warn("docker event stream interrupted; full resync follows", "err", ev.Err)
		}
		// A gap means the stream is up again: the sweep's list confirms
		// readiness and repairs whatever happened meanwhile.
		c.queue.Add(orphanSweepKey)
		return
	}
	if ev.Deployment == "" || !validDeploymentName(ev.Deployment) {
		// No deployment, or one no record can have: an orphan's event,
		// which only the sweep handles.
		c.queue.Add(orphanSweepKey)
		return
	}
	c.queue.Add(ev.Deployment)
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)

	requeue, err := c.syncKey(ctx, key)
	switch {
	case err != nil:
		c.log.Error("sync failed; retrying with backoff", "deployment", key, "err", err)
		c.queue.AddRateLimited(key)
	case requeue > 0:
		c.queue.Forget(key)
		c.queue.AddAfter(key, requeue)
	default:
		c.queue.Forget(key)
	}
	return true
}

// syncKey runs one sync of key. A panic in it (a bug, or a record no check
// foresaw) is recovered and becomes that key's error, so that it is backed
// off alone while every other deployment keeps being reconciled.
func (c *Controller) syncKey(ctx context.Context, key string) (requeue time.Duration, err error) {
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("sync panicked; retrying this deployment with backoff", "deployment", key, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("sync of %s panicked: %v", key, r)
		}
		if key != orphanSweepKey {
			c.opts.Observer.SyncDone(key, time.Since(start), err)
		}
	}()
	if key == orphanSweepKey {
		return 0, c.sweep(ctx)
	}
	return c.syncDeployment(ctx, key)
}

// validDeploymentName reports whether name can be a deployment's (a
// DNS-1123 label, as the store requires): a container labelled with any
// other is an orphan, whatever the state directory holds.
func validDeploymentName(name string) bool {
	return len(validation.IsDNS1123Label(name)) == 0
}

// list returns the instance's containers (or, with a name, one
// deployment's), minus the controller's own.
func (c *Controller) list(ctx context.Context, deployment string) ([]dockerx.Container, error) {
	var cs []dockerx.Container
	var err error
	if deployment == "" {
		cs, err = c.docker.ListContainers(ctx, c.opts.Instance)
	} else {
		cs, err = c.docker.ListDeploymentContainers(ctx, c.opts.Instance, deployment)
	}
	if err != nil {
		c.dockerOK.Store(false)
		return nil, fmt.Errorf("list containers: %w", err)
	}
	c.dockerOK.Store(true)
	out := cs[:0]
	for _, ct := range cs {
		if c.opts.SelfID != "" && strings.HasPrefix(ct.ID, c.opts.SelfID) {
			continue
		}
		if ct.Instance != c.opts.Instance || (deployment != "" && ct.Deployment != deployment) {
			// Defence in depth: a fake or a filter bug must never make us
			// touch another instance's containers.
			continue
		}
		out = append(out, ct)
	}
	return out, nil
}

// sweep is the periodic (and after-gap) pass over the whole instance, with
// ONE list call: it assesses every deployment against that snapshot and
// queues only those that need work — a plan with operations, a status that
// would change, a probe to start — and reports (or prunes) orphans. A
// queued deployment is then synced from a fresh list of its own, so nothing
// is ever done on the strength of the snapshot alone; an idle instance costs
// one list per resync period.
func (c *Controller) sweep(ctx context.Context) error {
	records, errs := c.store.ListAll()
	for _, err := range errs {
		// A torn or garbage file is that deployment's problem alone; the
		// others keep being reconciled.
		c.log.Error("unreadable deployment record", "err", err)
	}
	cs, err := c.list(ctx, "")
	if err != nil {
		return err
	}
	byDeployment := map[string][]dockerx.Container{}
	for _, ct := range cs {
		byDeployment[ct.Deployment] = append(byDeployment[ct.Deployment], ct)
	}
	known := map[string]bool{}
	now := c.opts.Now()
	for _, r := range records {
		known[r.Name] = true
		observed := byDeployment[r.Name]
		if r.Deleted {
			if len(observed) > 0 {
				c.queue.Add(r.Name)
			}
			continue
		}
		if c.needsSync(r, observed, now) {
			c.queue.Add(r.Name)
		}
	}
	for name, group := range byDeployment {
		if known[name] {
			continue
		}
		if validDeploymentName(name) {
			// Only a record that is certainly absent makes an orphan: an
			// unreadable one must never lead to a removal. A name that is
			// not a deployment name cannot have a record at all.
			if _, err := c.store.Lookup(name); !errors.Is(err, store.ErrNotFound) {
				continue
			}
		}
		// Carrying our instance label but naming no deployment (made by
		// hand) or one never known here: orphans.
		for _, ct := range group {
			if err := c.handleOrphan(ctx, ct); err != nil {
				return err
			}
		}
	}
	return nil
}

// needsSync assesses a deployment against the sweep's snapshot without
// acting, and reports whether a sync would do anything.
func (c *Controller) needsSync(rec *store.Record, observed []dockerx.Container, now time.Time) (needs bool) {
	defer func() {
		// One deployment that panics must not stop the sweep for all the
		// others: its own sync recovers, logs and backs off.
		if r := recover(); r != nil {
			needs = true
		}
	}()
	a := c.assess(nil, rec, observed, now)
	if a.prober.missing {
		return true // a probe to start: only a sync starts it
	}
	if len(a.plan.Ops) > 0 || a.plan.RequeueAfter > 0 || a.availableIn > 0 {
		return true
	}
	next, _, err := c.nextStatus(a, a.standingFailure(), now)
	return err != nil || !statusEqual(a.prev, next)
}

// assessment is one deployment observed and planned, before anything is done.
type assessment struct {
	rec         *store.Record
	d           *manifests.Deployment
	prev        *store.Status
	state       deploymentState
	in          PlanInput
	ready       map[string]bool
	plan        Plan
	refusal     failure
	availableIn time.Duration
	prober      struct{ missing bool }
}

// assess runs observe → plan for a live deployment. With a context (a
// sync) it starts the probe workers the containers need; without one (the
// sweep) it only reads the verdicts of those already running.
func (c *Controller) assess(ctx context.Context, rec *store.Record, observed []dockerx.Container, now time.Time) *assessment {
	a := &assessment{rec: rec}
	prev, err := c.store.ReadStatus(rec.Name)
	if err != nil || prev == nil {
		// A garbled status only costs the controller's memory; the
		// desired state is intact, so carry on from what Docker shows.
		prev = &store.Status{}
	}
	a.prev = prev
	a.state = readState(prev)
	d := rec.Deployment
	a.d = &d
	hash := manifests.TemplateHash(&d.Spec.Template)
	a.in = PlanInput{Instance: c.opts.Instance, Name: rec.Name, Containers: observed, Now: now,
		Desired: a.d, Hash: hash, Revisions: rec.Revisions, State: a.state.Rollout, LivenessFailed: map[string]bool{}}
	templates := templateLookup(a.d, hash, rec.Revisions)
	var probes map[string]probeResult
	if ctx != nil {
		probes = c.prober.sync(ctx, rec.Name, observed, templates)
	} else {
		a.prober.missing = c.prober.missing(observed, templates)
		probes = c.prober.results(observed)
	}
	for id, r := range probes {
		if r.Ready != nil {
			cst := a.state.Containers[id]
			if cst == nil {
				cst = &containerState{}
				a.state.Containers[id] = cst
			}
			v := *r.Ready
			cst.ProbeReady = &v
		}
		if !r.Alive {
			a.in.LivenessFailed[id] = true
		}
	}
	a.ready = readiness(observed, a.state.Containers, probed(templates))
	a.in.Ready = a.ready
	c.stopInputs(&a.in, a.state, a.ready)
	// A stop in flight that the status does not hold — begun while the
	// deployment was deleted, before it was applied again — is recorded as
	// one this sync begins would be: `get` shows it terminating, and a
	// restarted controller resumes it instead of taking it for a replica.
	recordInFlight(&a.state, a.in)
	a.in.StartNotBefore = c.observeContainers(&a.state, observed, a.ready, now)
	a.in.Available, a.availableIn = availability(a.d, observed, a.ready, a.state.Containers, c.opts.SettleTime, now)
	settle := c.opts.SettleTime
	a.state.Settle = &settle // for `dockctl get`, which has no controller options
	if a.refusal = c.refused(rec, a.d); a.refusal.reason == "" {
		a.in.Refused = c.refusedRevisions(rec, hash, &a.in)
		a.in.BlockedNames = c.blockedNames(rec.Name)
		a.plan = ComputePlan(a.in)
		if a.plan.Refused != "" {
			a.refusal = failure{ReasonFailedCreate, a.plan.Refused}
		}
	} else {
		a.plan.State = a.state.Rollout
	}
	return a
}

// standingFailure is the failure the assessment alone shows, before
// anything is executed: a refusal, or revisions whose containers the plan
// may not start or create.
func (a *assessment) standingFailure() failure {
	if a.refusal.reason != "" {
		return a.refusal
	}
	if len(a.plan.Blocked) > 0 {
		return failure{ReasonFailedCreate, strings.Join(a.plan.Blocked, "; ")}
	}
	return startFailure(a.state, a.in.Containers)
}

func (c *Controller) handleOrphan(ctx context.Context, ct dockerx.Container) error {
	if !c.opts.PruneOrphans {
		c.mu.Lock()
		first := !c.orphans[ct.ID]
		c.orphans[ct.ID] = true
		c.mu.Unlock()
		if first {
			c.log.Warn("orphan container left running: its deployment is unknown to this state directory (start with --prune-orphans to remove)",
				"container", ct.Name, "deployment", ct.Deployment)
		}
		return nil
	}
	c.log.Info("removing orphan container", "container", ct.Name, "deployment", ct.Deployment)
	if err := c.docker.RemoveContainer(ctx, ct.ID); err != nil {
		return fmt.Errorf("remove orphan %s: %w", ct.Name, err)
	}
	return nil
}

// syncDeployment is one observe → plan → execute pass for one deployment.
func (c *Controller) syncDeployment(ctx context.Context, name string) (time.Duration, error) {
	if !validDeploymentName(name) {
		c.queue.Add(orphanSweepKey) // its containers are orphans
		return 0, nil
	}
	rec, err := c.store.Lookup(name)
	if errors.Is(err, store.ErrNotFound) {
		// Never known here: its containers, if any, are orphans for the sweep.
		c.prober.drop(name)
		c.queue.Add(orphanSweepKey)
		return 0, nil
	}
	if err != nil {
		// Unreadable record: never guess, and above all never remove.
		return 0, fmt.Errorf("read deployment %s: %w", name, err)
	}
	c.stopper.listing(name)
	observed, err := c.list(ctx, name)
	if err != nil {
		return 0, err
	}
	now := c.opts.Now()
	if rec.Deleted {
		c.prober.drop(name) // its containers are going: so are their probes
		c.forgetBlocked(name)
		in := PlanInput{Instance: c.opts.Instance, Name: name, Containers: observed, Now: now, Revisions: rec.Revisions}
		c.stopInputs(&in, deploymentState{}, nil)
		plan := ComputePlan(in)
		c.logPlan(name, plan)
		_, execErr := c.execute(ctx, rec, in, plan)
		if len(observed) == 0 {
			c.opts.Observer.DeploymentForgotten(name)
		}
		return 0, execErr
	}

	a := c.assess(ctx, rec, observed, now)
	fail := a.refusal
	var execErr error
	if fail.reason == "" {
		c.logPlan(name, a.plan)
		fail, execErr = c.execute(ctx, rec, a.in, a.plan)
		fail = backOffImagePull(fail, a.prev.Conditions)
	} else {
		// Refused: no container of it is created, started or removed, so
		// the running revision keeps serving until the user fixes it.
		c.log.Warn("deployment refused", "deployment", name, "reason", fail.message)
	}
	recordStarts(&a.state, a.plan, now)
	recordStops(&a.state, a.plan, now)
	if ctx.Err() == nil { // a start cut short by shutdown is no crash
		c.recordStartFailures(&a.state, a.plan, execErr, now)
	}
	if fail.reason == "" {
		fail = a.standingFailure()
	}
	if execErr == nil {
		// Only an executed plan moves the rollout on; after an error the
		// next sync recomputes from what Docker then shows.
		a.state.Rollout = a.plan.State
	}
	next, deadlineIn, err := c.nextStatus(a, fail, now)
	if err == nil && !statusEqual(a.prev, next) {
		next.UpdatedAt = now
		err = c.store.WriteStatus(name, next)
	}
	if err != nil {
		c.log.Error("write status", "deployment", name, "err", err)
	}
	if execErr != nil {
		return 0, execErr
	}
	requeue := minPositive(a.plan.RequeueAfter, a.availableIn)
	return minPositive(requeue, deadlineIn), nil
}

// refused returns why the deployment may not be acted on — an unsafe
// invalid record (see checkRecord) or a privilege this controller was not
// started to grant — or no failure.
func (c *Controller) refused(rec *store.Record, d *manifests.Deployment) failure {
	fail, invalid := checkRecord(rec)
	c.reportInvalid(rec.Name, invalid)
	if fail.reason != "" {
		return fail
	}
	if msg := c.privilegeRefusal(d); msg != "" {
		return failure{ReasonFailedCreate, msg}
	}
	return failure{}
}

func (c *Controller) logPlan(name string, plan Plan) {
	for _, op := range plan.Ops {
		c.log.Info("planned", "deployment", name, "op", op.Kind, "container", op.Name, "cause", op.Cause)
	}
}

// execute carries out a plan: removals first (so that a replacement never
// fights its predecessor for a host port), then starts and unpauses, then
// creates with slow start. It returns a user-facing failure message for the
// ReplicaFailure condition when replicas could not be created.
func (c *Controller) execute(ctx context.Context, rec *store.Record, in PlanInput, plan Plan) (failure, error) {
	var errs []error
	var removals, restarts []Op
	for _, op := range plan.Ops {
		switch op.Kind {
		case OpRemove:
			if op.Grace > 0 {
				// Graceful: handed to the stopper, never holding a worker.
				c.stopper.submit(in.Name, op, in.Now)
				continue
			}
			removals = append(removals, op)
		case OpRestart:
			// The stopper gives the new run fresh probes once it started.
			c.stopper.submit(in.Name, op, in.Now)
		case OpStart, OpUnpause:
			restarts = append(restarts, op)
		}
	}
	errs = append(errs, parallel(removals, c.opts.MaxCreatesInFlight, func(op Op) error {
		if err := c.docker.RemoveContainer(ctx, op.ContainerID); err != nil {
			return &removeError{id: op.ContainerID, name: op.Name, err: err}
		}
		return nil
	})...)
	errs = append(errs, parallel(restarts, c.opts.MaxCreatesInFlight, func(op Op) error {
		switch op.Kind {
		case OpUnpause:
			if err := c.docker.UnpauseContainer(ctx, op.ContainerID); err != nil {
				return fmt.Errorf("unpause %s: %w", op.Name, err)
			}
			return nil
		}
		if err := c.docker.StartContainer(ctx, op.ContainerID); err != nil {
			return &startError{id: op.ContainerID, name: op.Name, err: err}
		}
		return nil
	})...)

	creates := plan.Creates()
	var fail failure
	if len(errs) > 0 {
		fail = removalFailure(errs)
		if len(creates) > 0 && !createsSafe(in, plan, errs) {
			// A removal failed: creating now could exceed maxSurge. The
			// retry recomputes from what Docker then shows.
			return fail, errors.Join(errs...)
		}
	}
	if len(creates) > 0 {
		templates, err := templatesFor(rec, in, creates)
		if err == nil {
			// Defence in depth: the planner creates no refused revision,
			// and nothing is created from a template that was not checked.
			for h, d := range templates {
				if msg := c.templateRefusal(h, &d.Spec.Template); msg != "" {
					err = fmt.Errorf("create from %s", msg)
				}
			}
		}
		if err != nil {
			return failure{ReasonFailedCreate, err.Error()}, err
		}
		missing, f, err := c.ensureImages(ctx, templates)
		if err != nil {
			fail = f
			errs = append(errs, err)
		}
		// Only the revisions whose image is missing wait for it: an old
		// revision keeps healing while a new one cannot be pulled.
		ready := creates[:0:0]
		for _, op := range creates {
			if !missing[op.Hash] {
				ready = append(ready, op)
			}
		}
		failed := slowStart(ready, c.opts.MaxCreatesInFlight, func(op Op) error {
			return c.create(ctx, in, templates[op.Hash], op)
		})
		for _, err := range failed {
			var se *startError
			if !errors.Is(err, dockerx.ErrConflict) && !errors.As(err, &se) {
				fail = failure{ReasonFailedCreate, err.Error()}
			}
		}
		errs = append(errs, failed...)
	}
	return fail, errors.Join(errs...)
}

// templatesFor returns, per template hash to create, the deployment to
// create it from: the desired one, or an old revision's template during a
// rollout (a replica of the old revision that was removed by hand).
func templatesFor(rec *store.Record, in PlanInput, creates []Op) (map[string]*manifests.Deployment, error) {
	out := map[string]*manifests.Deployment{}
	for _, op := range creates {
		if _, ok := out[op.Hash]; ok {
			continue
		}
		if op.Hash == in.Hash {
			out[op.Hash] = in.Desired
			continue
		}
		rev := rec.Revision(op.Hash)
		if rev == nil {
			return nil, fmt.Errorf("create %s: revision %s is no longer in the history", op.Name, op.Hash)
		}
		d := in.Desired.DeepCopy()
		d.Spec.Template = rev.Template
		out[op.Hash] = d
	}
	return out, nil
}

// ensureImages makes sure every image to create from is present, pulling
// as each template's imagePullPolicy says. It returns the template hashes
// whose image is missing, with the failure to report for them.
func (c *Controller) ensureImages(ctx context.Context, templates map[string]*manifests.Deployment) (map[string]bool, failure, error) {
	missing := map[string]bool{}
	var fail failure
	var errs []error
	for _, hash := range slices.Sorted(maps.Keys(templates)) {
		ctr := templates[hash].Container()
		if err := c.docker.EnsureImage(ctx, ctr.Image, ctr.ImagePullPolicy); err != nil {
			missing[hash] = true
			if fail.reason == "" {
				fail = failure{ReasonErrImagePull, fmt.Sprintf("image %s: %v", ctr.Image, err)}
			}
			errs = append(errs, fmt.Errorf("ensure image %s: %w", ctr.Image, err))
		}
	}
	return missing, fail, errors.Join(errs...)
}

func (c *Controller) create(ctx context.Context, in PlanInput, d *manifests.Deployment, op Op) error {
	id, err := c.docker.CreateContainer(ctx, dockerx.CreateRequest{
		Instance: in.Instance, Name: op.Name, TemplateHash: op.Hash, Deployment: d,
	})
	if errors.Is(err, dockerx.ErrConflict) {
		return c.nameConflict(ctx, in, op, err)
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", op.Name, err)
	}
	if err := c.docker.StartContainer(ctx, id); err != nil {
		return &startError{id: id, name: op.Name, err: err}
	}
	return nil
}

// nextStatus computes the status to record: observed generation,
// conditions and the controller's memory. The caller writes it only when it
// differs from the previous one, so that an idle controller writes nothing.
// It also returns when the progress deadline would expire, for a requeue.
func (c *Controller) nextStatus(a *assessment, fail failure, now time.Time) (*store.Status, time.Duration, error) {
	counts := ComputeStatus(a.d, a.in.Hash, liveContainers(a.in), a.ready, a.in.Available)
	c.opts.Observer.DeploymentObserved(a.rec.Name, int(a.d.Replicas()), int(counts.Replicas), int(counts.ReadyReplicas), int(counts.AvailableReplicas))
	next := *a.prev
	next.ObservedGeneration = a.rec.Generation
	var deadlineIn time.Duration
	newGeneration := a.rec.Generation != a.prev.ObservedGeneration
	next.Conditions, deadlineIn = Conditions(a.d, counts, a.state.Counts, newGeneration, fail, a.prev.Conditions, now)
	next.Message = fail.message
	state := a.state // a.state.Counts still holds the previous marks
	state.Counts = progressMarks(a.state.Counts, counts, newGeneration)
	if err := writeState(&next, state); err != nil {
		return nil, deadlineIn, err
	}
	return &next, deadlineIn, nil
}

// progressMarks are the counts the next sync's progress is judged against:
// the current ones after a change of the rollout itself (a new generation,
// more updated replicas, fewer old ones), else the most ready and available
// replicas seen since. A crash-looping replica that is seen running now and
// then is ready again, not more ready: were it judged against the previous
// sync alone, every crash cycle would count as progress and a broken
// rollout would never exceed its progress deadline.
func progressMarks(marks, st manifests.DeploymentStatus, newGeneration bool) manifests.DeploymentStatus {
	if newGeneration || st.UpdatedReplicas > marks.UpdatedReplicas ||
		st.Replicas-st.UpdatedReplicas < marks.Replicas-marks.UpdatedReplicas {
		return st
	}
	out := marks
	out.ReadyReplicas = max(marks.ReadyReplicas, st.ReadyReplicas)
	out.AvailableReplicas = max(marks.AvailableReplicas, st.AvailableReplicas)
	return out
}

// sameJSON compares two JSON documents ignoring layout: what was read back
// from the state directory is indented, what was just encoded is not.
func sameJSON(x, y json.RawMessage) bool {
	var cx, cy bytes.Buffer
	if json.Compact(&cx, x) != nil || json.Compact(&cy, y) != nil {
		return bytes.Equal(x, y)
	}
	return bytes.Equal(cx.Bytes(), cy.Bytes())
}

func statusEqual(a, b *store.Status) bool {
	if !maps.EqualFunc(a.Extra, b.Extra, sameJSON) {
		return false
	}
	if a.ObservedGeneration != b.ObservedGeneration || a.Message != b.Message || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message ||
			!x.LastTransitionTime.Equal(y.LastTransitionTime) || !x.LastUpdateTime.Equal(y.LastUpdateTime) {
			return false
		}
	}
	return true
}
