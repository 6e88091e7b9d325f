package podruntime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// DefaultGracePeriod is the grace period of a pod removed by Sync, whose
// spec is no longer known: Kubernetes' default
// terminationGracePeriodSeconds.
const DefaultGracePeriod = 30 * time.Second

// SyncDocker is what Sync needs of Docker beside the Stopper's: creates
// and starts.
type SyncDocker interface {
	CreateContainer(ctx context.Context, req dockerx.CreateRequest) (string, error)
	StartContainer(ctx context.Context, id string) error
}

// SyncInput is one owner's wanted pods and what Docker shows of its
// containers.
type SyncInput struct {
	Instance string
	// Key names the owner to the Stopper (the string its controller
	// queues: Done calls back with it) and keys the runtime's memory of
	// its containers.
	Key       string
	Namespace string
	Owner     OwnerRef
	// Pods are the pods the owner wants; a container of the owner that
	// is no pod of them is stopped gracefully and removed.
	Pods []PodSpec
	// Observed are the owner's containers as listed (a list begun after
	// Stopper().Listing(Key)).
	Observed []dockerx.Container
	Now      time.Time
	// Config, when set, resolves a created container's environment from
	// ConfigMaps, Secrets and the pod (ResolveEnv: a Job's
	// JOB_COMPLETION_INDEX from its index label); nil: the Runtime's
	// RuntimeConfig.Config. With neither, it is left literal.
	Config ConfigStore
	// Volumes are the owner's pod volumes as listed (emptyDirs and file
	// volumes of its holder pods); one whose pod has no container left in
	// Observed is removed (CollectVolumes). nil: none is collected.
	Volumes []dockerx.Volume
	// Network, when set, is the network a created pod's network owner
	// (its container, or its holder) joins at its create, with its
	// resolver settings: the instance network, resolving through
	// dockctl's DNS server (docs/design.md §10), as a Deployment's pods
	// are created. nil: Docker's default network (a pod connected to the
	// instance network later keeps Docker's resolver, as DNS settings
	// are fixed at the create).
	Network *dockerx.PodNetwork
	// CreateInBackground: the missing pods of one container are created
	// and started by a goroutine of the runtime, and Sync does not wait
	// for them (bgcreate.go); until a list shows them they are in
	// SyncResult.Creating, and the end of each is told to
	// RuntimeConfig.Created. false: Sync creates them itself.
	CreateInBackground bool
}

// SyncResult is what the owner reads back.
type SyncResult struct {
	// Pods is each wanted pod's status, by name.
	Pods map[string]PodStatus
	// RequeueAfter, when non-zero, asks for another Sync then: a
	// container waits out its crash-loop backoff.
	RequeueAfter time.Duration
	// Creating are the owner's pods created in the background that no
	// list has shown yet (CreateInBackground): created, Pending.
	Creating []CreatingPod
	// CreateErrors are the background creates and starts that failed,
	// as this Sync took them in (each is reported once).
	CreateErrors []error
	// CreatedMembers says this Sync created a container of a holder
	// pod (its holder, or its next init or app container): the list it
	// was given does not show it, so a further Sync of the owner before
	// the next list would create it again.
	CreatedMembers bool
}

// syncMemory is the runtime's per-container memory (ContainerState) of
// the owners Sync runs, by SyncInput.Key.
type syncMemory struct {
	mu     sync.Mutex
	states map[string]map[string]*ContainerState
	// windows is each owner's slow-start window as its last creates
	// left it (createPods; absent: 1).
	windows map[string]int
	// creates are each owner's background creates by container name
	// (bgcreate.go), until a Sync settles them.
	creates map[string]map[string]*bgCreate
}

// window is owner key's slow-start window to begin its next creates with.
func (m *syncMemory) window(key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return max(m.windows[key], 1)
}

// setWindow records the window owner key's creates reached: 1 again after
// a failed one, as a first wave.
func (m *syncMemory) setWindow(key string, w int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.windows == nil {
		m.windows = map[string]int{}
	}
	m.windows[key] = w
}

// of is owner key's memory, made empty if there is none (forget drops it
// once the owner has nothing left).
func (m *syncMemory) of(key string) map[string]*ContainerState {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.states == nil {
		m.states = map[string]map[string]*ContainerState{}
	}
	if m.states[key] == nil {
		m.states[key] = map[string]*ContainerState{}
	}
	return m.states[key]
}

// Sync makes an owner's pods real and keeps them so, the kubelet's
// SyncPod for any owner (docs/design.md §17): a wanted pod without a
// container is created (PodContainerName, labelled with its owner's kind
// and name) and started; a container that exited is started again as its
// restartPolicy says (ShouldRestart) once its crash-loop backoff
// (ObserveExits) has passed, and a finished pod (FinishedPhase) is kept;
// the missing pods of one container are created together with slow
// start (createPods);
// a container of no wanted pod is handed to the Stopper (a graceful stop,
// then its removal). The first create that fails ends the pass's creates
// (the rest wait for the next Sync). It returns each wanted pod's status.
//
// A pod of one container is that container; a pod that needs a holder
// (manifests.NeedsHolder) is made through the steps the Deployment
// controller's pods take (syncpod.go: its volumes, holder, files, init
// containers in order, sidecars, app containers, env from the
// RuntimeConfig's Config and ServiceEnv, claims). One owner's Syncs must
// not overlap (a work queue's guarantee).
func (r *Runtime) Sync(ctx context.Context, d SyncDocker, in SyncInput) (SyncResult, error) {
	states := r.memory.of(in.Key)
	bgInFlight, bgCancelled, bgErrs := r.settleCreates(in.Key, states)
	templates := wantedTemplates(in)
	lookup := func(hash string) *manifests.PodTemplateSpec { return templates[hash] }
	probes := r.probe(ctx, in, states, lookup)
	_, pods := GroupPods(in.Observed, lookup, nil)
	notBefore := ObserveExits(states, in.Observed, probes.ready, completedInits(pods, templates), in.Now, r.backoff)
	busy, _ := r.stopper.InFlight(in.Key)
	byName := make(map[string]*dockerx.Container, len(in.Observed))
	for i := range in.Observed {
		c := &in.Observed[i]
		byName[c.Name] = c
	}
	podByBase := make(map[string]*Pod, len(pods))
	for _, p := range pods {
		if p.Holder != nil || podByBase[p.Base] == nil {
			podByBase[p.Base] = p
		}
	}
	res := SyncResult{Pods: make(map[string]PodStatus, len(in.Pods)), CreateErrors: bgErrs}
	wanted := map[string]bool{}
	for name, bc := range bgInFlight {
		// Being created: the background's until a list shows it, kept
		// whatever this pass wants (cancelled: removed once listed).
		wanted[name] = true
		res.Creating = append(res.Creating, CreatingPod{Spec: bc.spec, Cancelled: bc.cancelled})
	}
	var errs []error
	// The first create that fails stops the pass's creates, as
	// Kubernetes' slowStartBatch and the Deployment controller's
	// SlowStart stop theirs: a broken image or a full disk costs one
	// Docker call, not one per wanted pod; the next Sync tries again.
	createFailed := false
	var creates []podCreate
	for i := range in.Pods {
		spec := &in.Pods[i]
		name := spec.DockerName(in.Instance, in.Namespace)
		if bgCancelled[name] {
			// Its owner deleted it while it was being created: removed
			// as a pod it does not want.
			continue
		}
		if bc := bgInFlight[name]; bc != nil {
			res.Pods[spec.Name] = podStatusOf(in, spec, byName[name], states, notBefore, probes.ready)
			continue
		}
		wanted[name] = true
		if spec.Template == nil {
			errs = append(errs, fmt.Errorf("pod %s: no template", spec.Name))
			continue
		}
		if manifests.NeedsHolder(&spec.Template.Spec) {
			hp := r.holderPodOf(in, spec, name, podByBase[name])
			if hp.lostHolder() {
				// Its namespaces are gone: the pod is removed as a whole
				// and made again by a later sync, as the Deployment
				// controller replaces a dead pod and the kubelet a pod
				// whose sandbox died. Pending meanwhile, as a new pod.
				if !busy[hp.pod.Key] {
					r.stopper.Submit(in.Key, StopRequest{Kind: StopRemove, ContainerID: hp.pod.Key, Name: hp.base, Grace: gracePeriod(hp.t),
						Phases: StopPhases(hp.pod, hp.t)}, in.Now)
				}
				gone := hp
				gone.pod = nil
				res.Pods[spec.Name] = gone.status(in, states, notBefore, probes.ready)
				continue
			}
			if p := hp.pod; p != nil && busy[p.Key] {
				res.Pods[spec.Name] = hp.status(in, states, notBefore, probes.ready)
				continue // being stopped: the Stopper's, until its job ends
			}
			if st := hp.status(in, states, notBefore, probes.ready); hp.pod != nil && (st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed) {
				// A terminal pod: nothing of it runs again. As the
				// kubelet stops the sandbox of a terminal pod and kills
				// its sidecars, what still runs of it is stopped —
				// holder included — and kept for its logs.
				if hp.pod.AnyRunning() {
					r.stopper.Submit(in.Key, StopRequest{Kind: StopHalt, ContainerID: hp.pod.Key, Name: hp.base, Grace: gracePeriod(hp.t),
						Phases: StopPhases(hp.pod, hp.t)}, in.Now)
				}
				res.Pods[spec.Name] = st
				continue
			}
			if hp.pod == nil && createFailed {
				res.Pods[spec.Name] = hp.status(in, states, notBefore, probes.ready)
				continue // the pass's creates ended at a refused one
			}
			st, err := r.syncHolderPod(ctx, d, in, hp, syncFacts{notBefore: notBefore, busy: busy, probes: probes}, &res)
			if err != nil {
				errs = append(errs, fmt.Errorf("pod %s: %w", spec.Name, err))
				createFailed = createFailed || hp.pod == nil
			}
			res.Pods[spec.Name] = st
			continue
		}
		c := byName[name]
		var err error
		switch {
		case spec.Refused != "" && (c == nil || c.State == dockerx.StateCreated || c.State == dockerx.StateExited && ShouldRestart(spec.EffectiveRestartPolicy(), c.ExitCode)):
			err = errors.New(spec.Refused)
		case c == nil && createFailed:
		case c == nil:
			// Created with the pass's other missing pods, at once
			// (below).
			creates = append(creates, podCreate{spec: spec, name: name})
			continue
		case busy[c.ID]:
			// Being stopped: the Stopper's, until its job ends.
		case c.State == dockerx.StateCreated && notBefore[c.ID].IsZero():
			err = r.start(ctx, d, states, c, in.Now, false)
		case c.State == dockerx.StateExited && ShouldRestart(spec.EffectiveRestartPolicy(), c.ExitCode):
			if nb := notBefore[c.ID]; nb.After(in.Now) {
				res.RequeueAfter = minPositive(res.RequeueAfter, nb.Sub(in.Now))
				break
			}
			err = r.start(ctx, d, states, c, in.Now, true)
		case c.State == dockerx.StateRunning && probes.livenessFailed[c.ID]:
			// Its liveness (or startup) probe or postStart hook failed:
			// stopped gracefully, then started again by a later sync as
			// its restartPolicy says, after its backoff (the kubelet's
			// kill of an unhealthy container).
			t, _, _ := runTemplate(in, spec)
			r.stopper.Submit(in.Key, StopRequest{Kind: StopRestart, ContainerID: c.ID, Name: c.Name, Grace: gracePeriod(t),
				PreStop: preStopHook(TemplateContainer(t, c), c, c.ID)}, in.Now)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", spec.Name, err))
		}
		res.Pods[spec.Name] = podStatusOf(in, spec, c, states, notBefore, probes.ready)
	}
	if in.CreateInBackground {
		if !createFailed {
			errs = append(errs, r.createInBackground(ctx, d, in, creates))
		}
	} else {
		errs = append(errs, r.createPods(ctx, d, in, creates, createFailed)...)
	}
	for _, pc := range creates {
		res.Pods[pc.spec.Name] = podStatusOf(in, pc.spec, pc.c, states, notBefore, probes.ready)
	}
	for i := range res.Creating {
		cp := &res.Creating[i]
		cp.Status = podStatusOf(in, &cp.Spec, nil, states, notBefore, probes.ready)
	}
	r.removeUnwanted(in, pods, templates, wanted, busy)
	errs = append(errs, collectVolumes(ctx, d, in))
	if len(in.Pods) == 0 && len(in.Observed) == 0 && !r.memory.hasCreates(in.Key) {
		r.forget(in.Key)
	}
	return res, errors.Join(errs...)
}

// forget drops the runtime's memory of owner key, which wants no pod and
// has no container left (a deleted Job's key is never synced again): its
// containers' states, its files, the stopper's record of its lists — not
// while a stop of it is in flight, whose end queues it again. Owners come
// and go (a CronJob's Jobs): what is keyed by owner must go with them.
func (r *Runtime) forget(key string) {
	if !r.stopper.Forget(key) {
		return
	}
	r.memory.mu.Lock()
	delete(r.memory.states, key)
	delete(r.memory.windows, key)
	r.memory.mu.Unlock()
	r.files.Forget(key, nil)
}

// removeUnwanted hands the owner's containers and holder pods that are no
// pod it wants to the Stopper: a graceful stop (a holder pod's in its
// phases, StopPhases), then their removal.
func (r *Runtime) removeUnwanted(in SyncInput, pods map[string]*Pod, templates map[string]*manifests.PodTemplateSpec, wanted, busy map[string]bool) {
	inPod := map[string]bool{}
	for _, p := range pods {
		for _, c := range p.Containers() {
			inPod[c.ID] = true
		}
		if wanted[p.Base] || busy[p.Key] {
			continue
		}
		r.stopper.Submit(in.Key, StopRequest{Kind: StopRemove, ContainerID: p.Key, Name: p.Base, Grace: DefaultGracePeriod,
			Phases: StopPhases(p, templates[p.Hash])}, in.Now)
	}
	for i := range in.Observed {
		c := &in.Observed[i]
		if wanted[c.Name] || busy[c.ID] || inPod[c.ID] {
			continue
		}
		r.stopper.Submit(in.Key, StopRequest{Kind: StopRemove, ContainerID: c.ID, Name: c.Name, Grace: DefaultGracePeriod}, in.Now)
	}
}

// collectVolumes removes the owner's pod volumes whose pod is gone.
func collectVolumes(ctx context.Context, d SyncDocker, in SyncInput) error {
	ops := CollectVolumes(in.Volumes, in.Observed)
	if len(ops) == 0 {
		return nil
	}
	hd, ok := d.(HolderDocker)
	if !ok {
		return errors.New("this runtime's Docker cannot remove volumes")
	}
	var errs []error
	for _, op := range ops {
		if err := hd.RemoveVolume(ctx, op.Name); err != nil {
			errs = append(errs, fmt.Errorf("remove volume %s: %w", op.Name, err))
		}
	}
	return errors.Join(errs...)
}

// wantedTemplates are the templates of the wanted pods, by hash.
func wantedTemplates(in SyncInput) map[string]*manifests.PodTemplateSpec {
	out := map[string]*manifests.PodTemplateSpec{}
	for i := range in.Pods {
		if in.Pods[i].Template != nil {
			t, hash, _ := runTemplate(in, &in.Pods[i])
			out[hash] = t
		}
	}
	return out
}

// completedInits are the init containers of holder pods that ran to their
// successful exit: no crash to back off.
func completedInits(pods map[string]*Pod, templates map[string]*manifests.PodTemplateSpec) map[string]bool {
	out := map[string]bool{}
	for _, p := range pods {
		t := templates[p.Hash]
		if t == nil {
			continue
		}
		for i := range t.Spec.InitContainers {
			ic := &t.Spec.InitContainers[i]
			if m := p.Members[ic.Name]; m != nil && !ic.IsSidecar() && m.State == dockerx.StateExited && m.ExitCode == 0 {
				out[m.ID] = true
			}
		}
	}
	return out
}

// holderPodOf is wanted pod spec, whose holder is named base, with what
// Docker shows of it (p; nil: nothing).
func (r *Runtime) holderPodOf(in SyncInput, spec *PodSpec, base string, p *Pod) holderPod {
	t, hash, from := runTemplate(in, spec)
	cp := *spec
	cp.TemplateHash = hash
	return holderPod{spec: &cp, t: t, from: from, base: base, pod: p}
}

// runTemplate is the template wanted pod spec runs (its restartPolicy
// applied), its hash (the spec's, else computed) and what its containers
// are created from.
func runTemplate(in SyncInput, spec *PodSpec) (*manifests.PodTemplateSpec, string, *dockerx.PodTemplate) {
	t := spec.Template
	if spec.RestartPolicy != "" && spec.RestartPolicy != t.Spec.RestartPolicy {
		cp := *t
		cp.Spec.RestartPolicy = spec.RestartPolicy
		t = &cp
	}
	hash := spec.TemplateHash
	if hash == "" {
		hash = manifests.TemplateHash(t)
	}
	t = withIdentity(t, spec.Identity)
	host := t.Spec.Hostname
	if host == "" {
		host = spec.Name
	}
	uid := in.Owner.UID
	if spec.Owner.UID != "" {
		uid = spec.Owner.UID
	}
	return t, hash, &dockerx.PodTemplate{Namespace: in.Namespace, Owner: in.Owner.Name, OwnerKind: in.Owner.Kind, OwnerUID: uid, Hostname: host, Template: t}
}

// configOf is the config store a Sync resolves environments with: the
// owner's, else the Runtime's.
func (r *Runtime) configOf(in SyncInput) ConfigStore {
	if in.Config != nil {
		return in.Config
	}
	return r.config
}

// createPod creates and starts the container of a pod of one container.
// MaxCreatesInFlight caps the creates of one owner's Sync in flight at
// once, as the Deployment controller's default does.
const MaxCreatesInFlight = 8

// podCreate is a pod of one container a Sync creates, and the container
// made (nil: not created).
type podCreate struct {
	spec *PodSpec
	name string
	c    *dockerx.Container
}

// createPods creates and starts the pass's missing pods of one container
// (none when an earlier create of the pass failed) with slow start
// (SlowStart), as Kubernetes' controllers batch pod creation: pods that
// finished together (a Job's wave) are replaced together, not one
// create+start after the other, while a broken image costs one call. The
// window begins where the owner's last creates left it, so that a Job
// refilling a slot at a time keeps its parallelism in flight; a failure
// brings it back to 1.
func (r *Runtime) createPods(ctx context.Context, d SyncDocker, in SyncInput, creates []podCreate, failedBefore bool) []error {
	if len(creates) == 0 || failedBefore {
		return nil
	}
	var mu sync.Mutex
	errs, reached := SlowStart(creates, MaxCreatesInFlight, r.memory.window(in.Key), func(pc podCreate) error {
		c, err := r.createPod(ctx, d, in, pc.spec, pc.name, &mu)
		mu.Lock()
		defer mu.Unlock()
		for i := range creates {
			if creates[i].name == pc.name {
				creates[i].c = c
			}
		}
		if err != nil {
			return fmt.Errorf("pod %s: %w", pc.spec.Name, err)
		}
		return nil
	})
	if len(errs) > 0 {
		reached = 1
	}
	r.memory.setWindow(in.Key, reached)
	return errs
}

// createPod creates and starts pod spec's container name; mu guards the
// owner's memory, which creates running at once share.
func (r *Runtime) createPod(ctx context.Context, d SyncDocker, in SyncInput, spec *PodSpec, name string, mu *sync.Mutex) (*dockerx.Container, error) {
	req, err := r.createRequest(in, spec, name)
	if err != nil {
		return nil, err
	}
	c, err := createContainer(ctx, d, req, in.Now)
	if err != nil {
		return nil, err
	}
	err = d.StartContainer(ctx, c.ID)
	mu.Lock()
	defer mu.Unlock()
	return c, r.started(r.memory.of(in.Key), c, in.Now, false, err)
}

// createRequest is the create of pod spec's container name: its
// template, network and environment resolved.
func (r *Runtime) createRequest(in SyncInput, spec *PodSpec, name string) (dockerx.CreateRequest, error) {
	t, hash, from := runTemplate(in, spec)
	req := dockerx.CreateRequest{Instance: in.Instance, Namespace: in.Namespace, Name: name, TemplateHash: hash, From: from}
	if !t.Spec.HostNetwork {
		req.Network = in.Network
	}
	if cfg := r.configOf(in); cfg != nil && len(t.Spec.Containers) > 0 {
		pod := PodIdentity{Name: spec.Name, Namespace: OrDefaultNamespace(in.Namespace), Labels: t.Metadata.Labels,
			Annotations: t.Metadata.Annotations, ServiceAccountName: "default"}
		env, err := ResolveEnv(&t.Spec, &t.Spec.Containers[0], pod, cfg)
		if err != nil {
			return req, fmt.Errorf("environment of %s: %w", name, err)
		}
		req.Env = env.Vars
	}
	return req, nil
}

// start starts container c, recording it in the runtime's memory as the
// Deployment controller does (a start again counts as a restart; a start
// Docker refused is a crash, backed off).
func (r *Runtime) start(ctx context.Context, d SyncDocker, states map[string]*ContainerState, c *dockerx.Container, now time.Time, again bool) error {
	cst := stateOf(states, c.ID)
	if again {
		cst.Restarts++
		cst.StartedAt, cst.ExitCounted, cst.ReadySince, cst.StartError = now, false, time.Time{}, ""
		cst.ProbeReady = nil // the new run is judged by its own probes
	}
	return r.started(states, c, now, again, d.StartContainer(ctx, c.ID))
}

// started records the start of c that Docker answered with err.
func (r *Runtime) started(states map[string]*ContainerState, c *dockerx.Container, now time.Time, again bool, err error) error {
	cst := stateOf(states, c.ID)
	if err != nil {
		if !again {
			cst.Restarts++
		}
		cst.CrashCount++
		cst.ExitCounted = true
		cst.NotBefore = now.Add(r.backoff.Delay(cst.CrashCount))
		cst.StartError = err.Error()
		return fmt.Errorf("start %s: %w", c.Name, err)
	}
	c.State, c.ExitCode = dockerx.StateRunning, 0
	return nil
}

// podStatusOf is the status of a pod of one container c (nil: not
// created).
func podStatusOf(in SyncInput, spec *PodSpec, c *dockerx.Container, states map[string]*ContainerState, notBefore map[string]time.Time, ready map[string]bool) PodStatus {
	pv := PodView{Name: spec.Name, Namespace: OrDefaultNamespace(in.Namespace), Owner: in.Owner, RestartPolicy: spec.EffectiveRestartPolicy(),
		Hash: spec.TemplateHash}
	pc := PodContainer{Container: c}
	if len(spec.Template.Spec.Containers) > 0 {
		pc.Name = spec.Template.Spec.Containers[0].Name
	}
	if c != nil {
		pv.Created = c.Created
		pc.View = containerView(in, c, states, notBefore, ready)
		pv.ReadySince = pc.View.ReadySince
	}
	pv.Containers = []PodContainer{pc}
	pv.tally()
	return pv.PodStatus()
}

// BackingOff reports whether container c, which may start again at
// notBefore (zero: no backoff), is in its crash-loop backoff at now: the
// kubelet's CrashLoopBackOff waiting reason, as views show it.
func BackingOff(c *dockerx.Container, notBefore, now time.Time) bool {
	return notBefore.After(now) && c.State != dockerx.StateRunning
}

// containerView is what Sync knows of container c: its restarts, its
// backoff, and its readiness (ready: Readiness's verdicts, the Prober's
// included).
func containerView(in SyncInput, c *dockerx.Container, states map[string]*ContainerState, notBefore map[string]time.Time, ready map[string]bool) ContainerView {
	v := ContainerView{CrashLoopBackOff: BackingOff(c, notBefore[c.ID], in.Now), Ready: ready[c.ID]}
	if cst := states[c.ID]; cst != nil {
		v.Restarts = cst.Restarts
		if v.Ready {
			v.ReadySince = cst.ReadySince
		}
	}
	return v
}

// syncProbes is what the Prober says of an owner's containers, as Sync
// reads it.
type syncProbes struct {
	// ready holds the ready containers (Readiness: running, healthy,
	// and passing the readiness probe the runtime runs).
	ready map[string]bool
	// livenessFailed holds the running containers to restart (a failed
	// liveness or startup probe, or postStart hook); unstarted those
	// whose postStart hook or startup probe is not done (a sidecar's
	// successors wait for them).
	livenessFailed, unstarted map[string]bool
}

// probe registers the owner's running containers with the Prober (and
// stops the workers of those gone), as the Deployment controller does:
// its verdicts are recorded in the owner's memory (ProbeReady), and a
// change of one queues the owner (ProberConfig.Notify with in.Key).
func (r *Runtime) probe(ctx context.Context, in SyncInput, states map[string]*ContainerState, templates func(string) *manifests.PodTemplateSpec) syncProbes {
	out := syncProbes{livenessFailed: map[string]bool{}, unstarted: map[string]bool{}}
	for id, pr := range r.prober.Sync(ctx, in.Key, in.Observed, templates) {
		if pr.Ready != nil {
			v := *pr.Ready
			stateOf(states, id).ProbeReady = &v
		}
		if !pr.Alive {
			out.livenessFailed[id] = true
		}
		if !pr.Started {
			out.unstarted[id] = true
		}
	}
	out.ready = Readiness(in.Observed, states, Probed(templates))
	return out
}

// gracePeriod is the grace of a graceful stop of a pod of template t:
// its terminationGracePeriodSeconds, else Kubernetes' default.
func gracePeriod(t *manifests.PodTemplateSpec) time.Duration {
	if g := t.Spec.TerminationGracePeriodSeconds; g != nil && *g >= 0 {
		return time.Duration(*g) * time.Second
	}
	return DefaultGracePeriod
}

// preStopHook is the preStop hook of running container c (template
// container tc), run before its stop signal; netOwner is the container
// whose address an httpGet hook goes to. nil: none.
func preStopHook(tc *manifests.Container, c *dockerx.Container, netOwner string) *Hook {
	if tc == nil || tc.Lifecycle == nil || tc.Lifecycle.PreStop == nil || c.State != dockerx.StateRunning {
		return nil
	}
	return &Hook{Handler: tc.Lifecycle.PreStop, ID: c.ID, Name: c.Name, NetOwner: netOwner, Ports: tc.Ports}
}

// minPositive is the smaller of a and b, a zero a being none.
func minPositive(a, b time.Duration) time.Duration {
	if a == 0 || b < a {
		return b
	}
	return a
}

// withIdentity is t with the identity's hostname and subdomain as its
// spec.hostname and spec.subdomain, as Kubernetes' controllers set them in
// the pods they create (the template's own stand where the identity sets
// none): what the container's hostname, domain and DNS labels come from
// (dockerx.PodTemplate). t itself, the owner's, is left as it is; the
// hash the pod is labelled with is the owner's template's.
func withIdentity(t *manifests.PodTemplateSpec, id Identity) *manifests.PodTemplateSpec {
	if (id.Hostname == "" || id.Hostname == t.Spec.Hostname) && (id.Subdomain == "" || id.Subdomain == t.Spec.Subdomain) {
		return t
	}
	cp := *t
	if id.Hostname != "" {
		cp.Spec.Hostname = id.Hostname
	}
	if id.Subdomain != "" {
		cp.Spec.Subdomain = id.Subdomain
	}
	return &cp
}
