package podruntime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

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
	// JOB_COMPLETION_INDEX from its index label); nil leaves it literal,
	// and a template whose environment needs resolving is refused.
	Config ConfigStore
}

// SyncResult is what the owner reads back.
type SyncResult struct {
	// Pods is each wanted pod's status, by name.
	Pods map[string]PodStatus
	// RequeueAfter, when non-zero, asks for another Sync then: a
	// container waits out its crash-loop backoff.
	RequeueAfter time.Duration
}

// syncMemory is the runtime's per-container memory (ContainerState) of
// the owners Sync runs, by SyncInput.Key.
type syncMemory struct {
	mu     sync.Mutex
	states map[string]map[string]*ContainerState
}

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
// a container of no wanted pod is handed to the Stopper (a graceful stop,
// then its removal). The first create that fails ends the pass's creates
// (the rest wait for the next Sync). It returns each wanted pod's status.
//
// Sync runs pods of one container (no holder: manifests.NeedsHolder
// false); a pod that needs a holder is refused with an error, as its
// creates (volumes, init order, files) are still the Deployment
// controller's executor's. One owner's Syncs must not overlap (a work
// queue's guarantee).
func (r *Runtime) Sync(ctx context.Context, d SyncDocker, in SyncInput) (SyncResult, error) {
	states := r.memory.of(in.Key)
	notBefore := ObserveExits(states, in.Observed, nil, nil, in.Now, r.backoff)
	busy, _ := r.stopper.InFlight(in.Key)
	byName := make(map[string]*dockerx.Container, len(in.Observed))
	for i := range in.Observed {
		c := &in.Observed[i]
		byName[c.Name] = c
	}
	res := SyncResult{Pods: make(map[string]PodStatus, len(in.Pods))}
	wanted := map[string]bool{}
	var errs []error
	// The first create that fails stops the pass's creates, as
	// Kubernetes' slowStartBatch and the Deployment controller's
	// SlowStart stop theirs: a broken image or a full disk costs one
	// Docker call, not one per wanted pod; the next Sync tries again.
	createFailed := false
	for i := range in.Pods {
		spec := &in.Pods[i]
		name := dockerx.PodContainerName(in.Instance, in.Namespace, spec.Name)
		wanted[name] = true
		if spec.Template == nil || manifests.NeedsHolder(&spec.Template.Spec) {
			errs = append(errs, fmt.Errorf("pod %s: only a pod of one container runs outside a Deployment yet", spec.Name))
			continue
		}
		c := byName[name]
		var err error
		switch {
		case c == nil && createFailed:
		case c == nil:
			c, err = r.createPod(ctx, d, in, spec, name)
			createFailed = err != nil
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
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", spec.Name, err))
		}
		res.Pods[spec.Name] = podStatusOf(in, spec, c, states, notBefore)
	}
	for i := range in.Observed {
		c := &in.Observed[i]
		if wanted[c.Name] || busy[c.ID] {
			continue
		}
		r.stopper.Submit(in.Key, StopRequest{Kind: StopRemove, ContainerID: c.ID, Name: c.Name, Grace: DefaultGracePeriod}, in.Now)
	}
	return res, errors.Join(errs...)
}

// createPod creates and starts the container of a pod of one container.
func (r *Runtime) createPod(ctx context.Context, d SyncDocker, in SyncInput, spec *PodSpec, name string) (*dockerx.Container, error) {
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
	from := &dockerx.PodTemplate{Namespace: in.Namespace, Owner: in.Owner.Name, OwnerKind: in.Owner.Kind, OwnerUID: in.Owner.UID, Hostname: host, Template: t}
	req := dockerx.CreateRequest{Instance: in.Instance, Namespace: in.Namespace, Name: name, TemplateHash: hash, From: from}
	if in.Config != nil && len(t.Spec.Containers) > 0 {
		pod := PodIdentity{Name: spec.Name, Namespace: OrDefaultNamespace(in.Namespace), Labels: t.Metadata.Labels,
			Annotations: t.Metadata.Annotations, ServiceAccountName: "default"}
		env, err := ResolveEnv(&t.Spec, &t.Spec.Containers[0], pod, in.Config)
		if err != nil {
			return nil, fmt.Errorf("environment of %s: %w", name, err)
		}
		req.Env = env.Vars
	}
	id, err := d.CreateContainer(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	c := &dockerx.Container{ID: id, Name: name, TemplateHash: hash, State: dockerx.StateCreated, Created: in.Now}
	return c, r.start(ctx, d, r.memory.of(in.Key), c, in.Now, false)
}

// start starts container c, recording it in the runtime's memory as the
// Deployment controller does (a start again counts as a restart; a start
// Docker refused is a crash, backed off).
func (r *Runtime) start(ctx context.Context, d SyncDocker, states map[string]*ContainerState, c *dockerx.Container, now time.Time, again bool) error {
	cst := stateOf(states, c.ID)
	if again {
		cst.Restarts++
		cst.StartedAt, cst.ExitCounted, cst.ReadySince, cst.StartError = now, false, time.Time{}, ""
	}
	if err := d.StartContainer(ctx, c.ID); err != nil {
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
func podStatusOf(in SyncInput, spec *PodSpec, c *dockerx.Container, states map[string]*ContainerState, notBefore map[string]time.Time) PodStatus {
	pv := PodView{Name: spec.Name, Namespace: OrDefaultNamespace(in.Namespace), Owner: in.Owner, RestartPolicy: spec.EffectiveRestartPolicy(),
		Hash: spec.TemplateHash}
	pc := PodContainer{Container: c}
	if len(spec.Template.Spec.Containers) > 0 {
		pc.Name = spec.Template.Spec.Containers[0].Name
	}
	if c != nil {
		pv.Created = c.Created
		if cst := states[c.ID]; cst != nil {
			pc.View.Restarts = cst.Restarts
			pv.Restarts = cst.Restarts
		}
		pc.View.CrashLoopBackOff = notBefore[c.ID].After(in.Now) && c.State != dockerx.StateRunning
	}
	pv.Containers = []PodContainer{pc}
	return pv.PodStatus()
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
