package reconciler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// list returns the instance's containers (or, with a name, those of
// deployment name of namespace ns), minus the controller's own. A
// deployment's list is filtered by the daemon on its name, which
// deployments of other namespaces share, then here on the namespace:
// Docker cannot filter on a label's absence, which is how containers of
// earlier releases say "default".
func (c *Controller) list(ctx context.Context, ns, deployment string) ([]dockerx.Container, error) {
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
		if ct.Instance != c.opts.Instance || (deployment != "" && (ct.Deployment != deployment || containerNamespace(ct) != ns)) {
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
	cs, err := c.list(ctx, "", "")
	if err != nil {
		return err
	}
	// The pass counts once it returns, whatever it meets after the list:
	// one that hangs in a Docker call never does (LastPass).
	defer func() { c.lastPass.Store(c.opts.Now().UnixNano()) }()
	// The instance network first: ensured (re-created if removed by hand)
	// and every pod connected to it. Its failure is the sweep's error once
	// everything else is done.
	netErr := c.syncNetwork(ctx, cs, c.wantsNetwork(records, errs))
	// Containers and volumes by deployment key; those of no deployment
	// (made by hand) under a key of no deployment.
	byDeployment := map[string][]dockerx.Container{}
	holders := false
	for _, ct := range cs {
		if dockerx.IsHelperRole(ct.Role) {
			// A Service's helper (the services loop's) or a port-forward
			// session's (the CLI's, gone with it, unless stale: below):
			// never an orphan here; its image is in use.
			holders = true
			continue
		}
		if ct.Labels[dockerx.LabelOwnerKind] != "" {
			// A pod of another owner than a Deployment (the pod
			// runtime's Sync runs it, docs/design.md §17): its
			// controller's, never a deployment's orphan.
			continue
		}
		k := store.Key(ct.Namespace, ct.Deployment)
		byDeployment[k] = append(byDeployment[k], ct)
		holders = holders || ct.Role == dockerx.RoleHolder
	}
	// An instance that never ran a holder pod costs no call more than its
	// one list: volumes are listed only where pods may have left some.
	c.mu.Lock()
	listVolumes := holders || len(c.hasVolumes) > 0
	c.mu.Unlock()
	for _, r := range records {
		listVolumes = listVolumes || hasHelpers(r)
	}
	claims, syncClaims := c.claims.Inputs() // claims.go
	listVolumes = listVolumes || len(claims) > 0
	var vols []dockerx.Volume
	if listVolumes {
		if vols, err = c.docker.ListVolumes(ctx, c.opts.Instance); err != nil {
			return fmt.Errorf("list volumes: %w", err)
		}
	}
	volsByDeployment := map[string][]dockerx.Volume{}
	for _, v := range vols {
		if isPodVolumeRole(v.Role) && v.Instance == c.opts.Instance {
			k := store.Key(v.Namespace, v.Deployment)
			volsByDeployment[k] = append(volsByDeployment[k], v)
		}
	}
	var claimErr error
	if syncClaims && listVolumes {
		claimErr = c.claims.Sync(ctx, claims, cs, vols)
	}
	c.mu.Lock()
	c.hasVolumes = map[string]bool{}
	for key := range volsByDeployment {
		c.hasVolumes[key] = true
	}
	c.mu.Unlock()
	known := map[string]bool{}
	now := c.opts.Now()
	for _, r := range records {
		key := r.Key()
		known[key] = true
		observed := byDeployment[key]
		if r.Deleted {
			// The pods an orphaning deletion left are nobody's: no
			// sync of the tombstone is owed for them (orphans.go).
			observed, vols, _ := ownedPods(r, observed, volsByDeployment[key])
			if len(observed) > 0 || len(vols) > 0 {
				c.queue.Add(key)
			}
			continue
		}
		if c.needsSync(r, observed, volsByDeployment[key], now) {
			c.queue.Add(key)
		}
	}
	// Every live deployment was fed from this snapshot (needsSync): the
	// Services may now trust the tracker.
	c.tracker.MarkSynced()
	for key, group := range volsByDeployment {
		if known[key] || len(byDeployment[key]) > 0 {
			continue
		}
		if !c.certainlyUnknown(key) {
			continue
		}
		for _, v := range group {
			c.handleOrphanVolume(ctx, v)
		}
	}
	// The holder image goes once no holder is left and no live deployment
	// may need one soon (a pod being replaced, a deployment scaled to 0).
	needed := holders || c.svc.NeedHelpers(records)
	for _, r := range records {
		needed = needed || !r.Deleted && hasHelpers(r)
	}
	if needed {
		c.helperImages.Store(true)
	} else if c.helperImages.Load() {
		c.collectHelperImages(ctx)
	}
	// Port-forward helpers whose CLI stopped before starting them: no
	// orphans, dockctl's own dead helpers (portforward.go).
	staleErr := c.removeStalePortForwardHelpers(ctx, stalePortForwardHelpers(cs, now, c.opts.StalePortForwardAfter))
	for key, group := range byDeployment {
		if known[key] || !c.certainlyUnknown(key) {
			continue
		}
		// Carrying our instance label but naming no deployment (made by
		// hand) or one never known here: orphans.
		for _, ct := range group {
			if err := c.handleOrphan(ctx, ct); err != nil {
				return errors.Join(err, netErr, claimErr, staleErr)
			}
		}
	}
	return errors.Join(netErr, claimErr, staleErr)
}

// needsSync assesses a deployment against the sweep's snapshot without
// acting, and reports whether a sync would do anything.
func (c *Controller) needsSync(rec *store.Record, observed []dockerx.Container, volumes []dockerx.Volume, now time.Time) (needs bool) {
	defer func() {
		// One deployment that panics must not stop the sweep for all the
		// others: its own sync recovers, logs and backs off.
		if r := recover(); r != nil {
			needs = true
		}
	}()
	a := c.assess(nil, rec, observed, volumes, now)
	c.feedTracker(a, true)
	if a.prober.missing {
		return true // a probe to start: only a sync starts it
	}
	if len(a.plan.Ops) > 0 || a.plan.RequeueAfter > 0 || a.availableIn > 0 || len(a.plan.DeletionsDone) > 0 {
		return true
	}
	next, _, err := c.nextStatus(a, a.standingFailure(), now)
	return err != nil || !store.SameStatus(a.prev, next)
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
	// all is every container the per-container memory is kept for: the
	// units and the containers of holder pods (podruntime.Observed.all).
	all []dockerx.Container
}

// assess runs observe → plan for a live deployment. With a context (a
// sync) it starts the probe workers the containers need; without one (the
// sweep) it only reads the verdicts of those already running.
func (c *Controller) assess(ctx context.Context, rec *store.Record, observed []dockerx.Container, volumes []dockerx.Volume, now time.Time) *assessment {
	a := &assessment{rec: rec}
	// The pods of the name it does not own are not observed; their names
	// are taken (orphans.go).
	observed, volumes, held := ownedPods(rec, observed, volumes)
	prev, err := c.store.ReadStatus(rec.Namespace, rec.Name)
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
	c.indexRefs(rec, a.d)
	a.in = PlanInput{Instance: c.opts.Instance, Namespace: rec.Namespace, Name: rec.Name, OwnerUID: store.OwnerUID(rec.CreatedAt), Containers: observed, Now: now,
		Desired: a.d, Hash: hash, Revisions: rec.Revisions, State: a.state.Rollout, LivenessFailed: map[string]bool{},
		Deletions: c.podDeletions(rec.Namespace, rec.Name)}
	templates := templateLookup(a.d, hash, rec.Revisions)
	var probes map[string]podruntime.ProbeResult
	if ctx != nil {
		probes = c.prober.Sync(ctx, rec.Key(), observed, templates)
	} else {
		a.prober.missing = c.prober.Missing(observed, templates)
		probes = c.prober.Results(observed)
	}
	for id, r := range probes {
		if r.Ready != nil {
			cst := a.state.container(id)
			v := *r.Ready
			cst.ProbeReady = &v
		}
		if !r.Alive {
			a.in.LivenessFailed[id] = true
		}
		if !r.Started {
			if a.in.Unstarted == nil {
				a.in.Unstarted = map[string]bool{}
			}
			a.in.Unstarted[id] = true
		}
	}
	// A container whose start can never succeed is replaced as a dead one.
	observed, a.in.NeverStarts = markNeverStarting(observed, a.state.Containers)
	o := podruntime.Judge(observed, a.state.Containers, templates, c.diedHolders(rec.Key(), observed))
	a.ready = o.Ready
	a.in.Ready = a.ready
	a.in.Containers, a.in.Pods, a.in.Volumes = o.Units, o.Pods, volumes
	var lookups lookupCache                                                   // one read of each ConfigMap and Secret per assessment
	a.in.Files = c.podFiles(ctx, &lookups, a.d, rec.Key(), o.Pods, templates) // files.go
	c.stopInputs(&a.in, a.state, a.ready)
	// A stop in flight that the status does not hold — begun while the
	// deployment was deleted, before it was applied again — is recorded as
	// one this sync begins would be: `get` shows it terminating, and a
	// restarted controller resumes it instead of taking it for a replica.
	recordInFlight(&a.state, a.in)
	a.all = o.All
	for key, p := range o.Pods {
		// A member that exits while its pod is stopped is no crash.
		if _, ok := a.in.Terminating[key]; ok || a.in.Stopping[key] {
			for _, ct := range p.Containers() {
				o.Completed[ct.ID] = true
			}
		}
	}
	a.in.StartNotBefore = c.observeContainers(&a.state, o.All, a.ready, o.Completed, now)
	a.in.Available, a.availableIn = availability(a.d, o.Units, a.ready, a.state.Containers, c.opts.SettleTime, now)
	settle := c.opts.SettleTime
	a.state.Settle = &settle // for `dockctl get`, which has no controller options
	if a.refusal = c.refused(rec, a.d, hash); a.refusal.reason == "" {
		a.in.Refused = c.refusedRevisions(rec, hash, &a.in)
		a.in.InFlight = c.reservedNames(ctx, a.in, observed) // conflict.go; before the blocked names it may add to
		a.in.BlockedNames = c.blockedNames(rec.Key())
		for name := range held {
			if a.in.BlockedNames == nil {
				a.in.BlockedNames = map[string]bool{}
			}
			a.in.BlockedNames[name] = true
		}
		a.in.Waiting = c.waitingRevisions(&lookups, rec.Namespace, a.d, hash, rec.Revisions) // envctl.go
		a.in.Waiting = c.hostPortWaits(rec, a.in.Waiting)                                    // services.go
		a.plan = ComputePlan(a.in)
		if a.plan.Refused != "" {
			a.refusal = failure{ReasonFailedCreate, a.plan.Refused}
		}
	} else {
		a.plan = a.in.deletionsOnly() // only the pods users deleted are removed
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
	return startFailure(a.state, a.all)
}

// refused returns why the deployment may not be acted on — an unsafe
// invalid record (see checkRecord) or a privilege this controller was not
// started to grant — or no failure.
func (c *Controller) refused(rec *store.Record, d *manifests.Deployment, hash string) failure {
	fail, invalid := checkRecord(rec, hash)
	c.reportInvalid(rec.Key(), invalid)
	if fail.reason != "" {
		return fail
	}
	if msg := c.privilegeRefusal(d); msg != "" {
		return failure{ReasonFailedCreate, msg}
	}
	return failure{}
}

func (c *Controller) handleOrphan(ctx context.Context, ct dockerx.Container) error {
	return c.orphan(ctx, ct, c.docker.RemoveContainer, "container", "deployment",
		"container", ct.Name, "deployment", ct.Deployment, "namespace", ct.Namespace)
}

// orphan reports an orphan container once, or with PruneOrphans removes
// it (a container already gone is no error). what names it ("container",
// "proxy"), owner the kind of object this state directory never knew.
func (c *Controller) orphan(ctx context.Context, ct dockerx.Container, remove func(context.Context, string) error, what, owner string, attrs ...any) error {
	if !c.opts.PruneOrphans {
		c.mu.Lock()
		first := !c.orphans[ct.ID]
		c.orphans[ct.ID] = true
		c.mu.Unlock()
		if first {
			c.log.Warn(fmt.Sprintf("orphan %s left running: its %s is unknown to this state directory (start with --prune-orphans to remove)", what, owner), attrs...)
			Eventf(c.opts.Recorder, orphanRef(ct, owner), store.EventWarning, "OrphanFound", "Orphan %s %s left running: its %s is unknown to this state directory (start with --prune-orphans to remove)", what, ct.Name, owner)
		}
		return nil
	}
	c.log.Info("removing orphan "+what, attrs...)
	if err := remove(ctx, ct.ID); err != nil && !errors.Is(err, dockerx.ErrNotFound) {
		Eventf(c.opts.Recorder, orphanRef(ct, owner), store.EventWarning, "FailedDelete", "Error removing orphan %s %s: %v", what, ct.Name, err)
		return fmt.Errorf("remove orphan %s %s: %w", what, ct.Name, err)
	}
	Eventf(c.opts.Recorder, orphanRef(ct, owner), store.EventNormal, "OrphanRemoved", "Removed orphan %s %s", what, ct.Name)
	return nil
}

// handleOrphanVolume reports, or with --prune-orphans removes, a pod volume
// whose deployment this state directory never knew.
func (c *Controller) handleOrphanVolume(ctx context.Context, v dockerx.Volume) {
	if !c.opts.PruneOrphans {
		c.mu.Lock()
		first := !c.orphans["volume:"+v.Name]
		c.orphans["volume:"+v.Name] = true
		c.mu.Unlock()
		if first {
			c.log.Warn("orphan volume left in place: its deployment is unknown to this state directory (start with --prune-orphans to remove)",
				"volume", v.Name, "deployment", v.Deployment)
		}
		return
	}
	c.log.Info("removing orphan volume", "volume", v.Name, "deployment", v.Deployment)
	if err := c.docker.RemoveVolume(ctx, v.Name); err != nil {
		c.log.Warn("remove orphan volume", "volume", v.Name, "err", err)
	}
}

// collectHelperImages removes the instance's helper images once no holder
// is left and no live deployment runs pods with one (checked at the first
// sweep, and after a holder was seen or its image loaded), so that
// deleting every deployment leaves the host as it was. An image still
// used (a holder created since the list) stays: Docker
// refuses to remove it, and it is tried again at a later sweep.
func (c *Controller) collectHelperImages(ctx context.Context) {
	// Looked at again only once a holder is seen or created, or if one is
	// left. Cleared before the list, not after: an image loaded once the
	// list is made sets it again (ensureHolderImage), and must not be
	// forgotten.
	c.helperImages.Store(false)
	imgs, err := c.docker.ListHelperImages(ctx, c.opts.Instance)
	if err != nil {
		c.helperImages.Store(true)
		c.log.Warn("list helper images", "err", err)
		return
	}
	for _, img := range imgs {
		if err := c.docker.RemoveImage(ctx, img.ID); err != nil {
			c.helperImages.Store(true)
			if !errors.Is(err, dockerx.ErrConflict) {
				c.log.Warn("remove helper image", "image", img.ID, "err", err)
			}
		}
	}
}

// podVolumes lists the deployment's pod volumes when it may have any: it
// has holder pods, its template or a revision's needs a holder, it was
// deleted, or the last sweep saw volumes of it. A deployment of single-container pods costs no extra call.
func (c *Controller) podVolumes(ctx context.Context, rec *store.Record, observed []dockerx.Container) ([]dockerx.Volume, error) {
	c.mu.Lock()
	need := c.hasVolumes[rec.Key()] // the last sweep saw some
	c.mu.Unlock()
	need = need || rec.Deleted || podruntime.HasPods(observed) || hasHelpers(rec)
	if !need {
		return nil, nil
	}
	vols, err := c.docker.ListVolumes(ctx, c.opts.Instance)
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	out := vols[:0]
	for _, v := range vols {
		if v.Instance == c.opts.Instance && v.Deployment == rec.Name && volumeNamespace(v) == rec.NamespaceOrDefault() && isPodVolumeRole(v.Role) {
			out = append(out, v)
		}
	}
	return out, nil
}

// certainlyUnknown reports whether the state directory certainly has no
// record for the deployment key: only then are its containers and volumes
// orphans. An unreadable record must never lead to a removal; a key that
// no record can have (no deployment label, a name or namespace that is no
// DNS-1123 label) has none.
func (c *Controller) certainlyUnknown(key string) bool {
	ns, name, ok := splitDeploymentKey(key)
	if !ok {
		return true
	}
	_, err := c.store.Lookup(ns, name)
	return errors.Is(err, store.ErrNotFound)
}

// containerNamespace is the namespace a container belongs to (its
// Namespace, which dockerx parses; "" read as default).
func containerNamespace(ct dockerx.Container) string {
	if ct.Namespace == "" {
		return manifests.DefaultNamespace
	}
	return ct.Namespace
}

// volumeNamespace is containerNamespace for a pod volume.
func volumeNamespace(v dockerx.Volume) string {
	if v.Namespace == "" {
		return manifests.DefaultNamespace
	}
	return v.Namespace
}
