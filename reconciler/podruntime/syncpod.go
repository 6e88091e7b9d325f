package podruntime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// Holder pods under Sync (docs/design.md §9, §11, §12, §17): a pod whose
// template needs a holder is made as the Deployment controller's pods
// are, through the same steps — ExpandPodOps for a new pod (its volumes,
// its holder, the write of its files, its first containers),
// PlanPodSteps for a pod that exists (init containers in order, sidecars,
// app containers, repairs) — carried out one op after the other, each
// only once the ops it needs succeeded.

// HolderDocker is what Sync needs of Docker beside SyncDocker's to run
// holder pods: the holder and helper images, volumes, claims' volumes,
// the files writer, unpauses and removals of containers and volumes. dockerx.Client has it.
type HolderDocker interface {
	SyncDocker
	EnsureHolderImage(ctx context.Context, instance string) (string, error)
	EnsureHelperImage(ctx context.Context, instance string) (string, error)
	CreateVolume(ctx context.Context, req dockerx.VolumeRequest) (string, error)
	RemoveVolume(ctx context.Context, name string) error
	CreateClaimVolume(ctx context.Context, req dockerx.ClaimVolumeRequest) (string, error)
	RunFilesWriter(ctx context.Context, req dockerx.FilesWriterRequest, stdin []byte, timeout time.Duration) (exit int, stdout []byte, err error)
	EnsureImage(ctx context.Context, ref, policy string, secrets []dockerx.RegistryCredential) error
	UnpauseContainer(ctx context.Context, id string) error
	RemoveContainer(ctx context.Context, id string) error
}

// holderPod is one holder pod of a Sync: the spec, the template it runs
// (restartPolicy applied) and what Docker shows of it (nil: none yet).
type holderPod struct {
	spec *PodSpec
	t    *manifests.PodTemplateSpec
	from *dockerx.PodTemplate
	base string
	pod  *Pod
}

// syncHolderPod moves one holder pod on, and returns its status.
// lostHolder reports whether the pod lost its holder — removed, exited,
// or started again after a member that runs (Pod.Unit: dead) — and is to
// be replaced: not under restartPolicy Never once something of it ran,
// as the kubelet makes no new sandbox for such a pod (it is Failed).
func (hp holderPod) lostHolder() bool {
	p := hp.pod
	if p == nil || p.Unit(hp.t).State != dockerx.StateDead || hp.terminal() {
		return false // a finished pod's holder is stopped with it (StopHalt)
	}
	return hp.spec.EffectiveRestartPolicy() != manifests.RestartNever || len(p.Members) == 0 && len(p.Extra) == 0
}

// terminal reports whether the pod reached a terminal phase by its
// containers (PodView.Terminal): nothing of it runs again, whatever its
// holder.
func (hp holderPod) terminal() bool {
	if hp.pod == nil {
		return false
	}
	pv := PodView{RestartPolicy: hp.spec.EffectiveRestartPolicy(), Containers: podContainers(hp.t, hp.pod, nil)}
	_, ok := pv.Terminal()
	return ok
}

// syncFacts is what Sync observed of an owner's containers, shared by
// its pods.
type syncFacts struct {
	notBefore map[string]time.Time
	busy      map[string]bool
	probes    syncProbes
}

func (r *Runtime) syncHolderPod(ctx context.Context, d SyncDocker, in SyncInput, hp holderPod, f syncFacts, res *SyncResult) (PodStatus, error) {
	notBefore := f.notBefore
	hd, ok := d.(HolderDocker)
	if !ok {
		return PodStatus{}, errors.New("this runtime's Docker cannot make holder pods")
	}
	states := r.memory.of(in.Key)
	var ops []Op
	var blocked []error // why containers of the pod were not created or started
	switch {
	case hp.spec.Refused != "" && (hp.pod == nil || hp.pod.Holder == nil):
		return hp.status(in, states, notBefore, f.probes.ready), errors.New(hp.spec.Refused)
	case hp.pod == nil || hp.pod.Holder == nil:
		ops = ExpandPodOps([]Op{{Kind: OpCreate, Name: hp.base, Hash: hp.spec.TemplateHash, From: hp.from, Role: dockerx.RoleHolder,
			Pod:    &dockerx.PodRef{Name: hp.spec.Name, UID: NewPodUID(hp.base, in.Now), Holder: hp.base},
			Reason: ReasonMissing, Cause: fmt.Sprintf("pod %s missing", hp.spec.Name)}}, ExpandInput{Instance: in.Instance})
	default:
		steps := PodSteps{}
		PlanPodSteps(hp.pod, PodStepsInput{Now: in.Now, Template: hp.t, From: hp.from, Refused: hp.spec.Refused != "", Files: r.podFiles(ctx, hd, in, hp),
			LivenessGrace: gracePeriod(hp.t), StartNotBefore: notBefore, Stopping: f.busy, LivenessFailed: f.probes.livenessFailed,
			Unstarted: f.probes.unstarted}, &steps)
		if steps.RequeueAfter > 0 {
			res.RequeueAfter = minPositive(res.RequeueAfter, steps.RequeueAfter)
		}
		ops = ExpandPodOps(steps.Ops, ExpandInput{Instance: in.Instance})
		for _, why := range steps.Blocked {
			blocked = append(blocked, errors.New(why))
		}
		if steps.Refused {
			blocked = append(blocked, errors.New(hp.spec.Refused))
		}
	}
	err := r.runPodOps(ctx, hd, in, hp, ops, states)
	res.CreatedMembers = res.CreatedMembers || slices.ContainsFunc(ops, func(op Op) bool { return op.Kind == OpCreate })
	return hp.status(in, states, notBefore, f.probes.ready), errors.Join(append(blocked, err)...)
}

// runPodOps carries out one pod's ops in order; an op whose needs did not
// succeed is not carried out.
func (r *Runtime) runPodOps(ctx context.Context, d HolderDocker, in SyncInput, hp holderPod, ops []Op, states map[string]*ContainerState) error {
	failed := map[OpID]bool{}
	var errs []error
	for i := range ops {
		op := ops[i]
		op.ID = OpID(i + 1)
		unmet := false
		for _, n := range op.Needs {
			unmet = unmet || failed[n]
		}
		if unmet {
			failed[op.ID] = true
			continue
		}
		if err := r.runPodOp(ctx, d, in, hp, op, states); err != nil {
			failed[op.ID] = true
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// runPodOp maps one op of a holder pod to its Docker calls.
func (r *Runtime) runPodOp(ctx context.Context, d HolderDocker, in SyncInput, hp holderPod, op Op, states map[string]*ContainerState) error {
	switch op.Kind {
	case OpCreateVolume:
		if _, err := d.CreateVolume(ctx, *op.Volume); err != nil {
			return fmt.Errorf("create volume %s: %w", op.Name, err)
		}
	case OpCreate:
		return r.createMember(ctx, d, in, hp, op, states)
	case OpWriteFiles:
		return r.writeFiles(ctx, d, in, hp, op)
	case OpStart:
		c := &dockerx.Container{ID: op.ContainerID, Name: op.Name}
		return r.start(ctx, d, states, c, in.Now, op.CountsAsRestart())
	case OpUnpause:
		if err := d.UnpauseContainer(ctx, op.ContainerID); err != nil {
			return fmt.Errorf("unpause %s: %w", op.Name, err)
		}
	case OpRemove, OpRestart:
		if op.Kind == OpRemove && op.Grace == 0 && op.Phases == nil {
			if err := d.RemoveContainer(ctx, op.ContainerID); err != nil {
				return fmt.Errorf("remove %s: %w", op.Name, err)
			}
			return nil
		}
		r.stopper.Submit(in.Key, op.StopRequest(), in.Now)
	default:
		return fmt.Errorf("%s %s: not an op of a pod", op.Kind, op.Name)
	}
	return nil
}

// createMember creates and starts the holder or a member of a pod: the
// holder from the holder image (the helper image when the pod has file
// volumes, its writer's), a member with its environment resolved and its
// claims' volumes made.
func (r *Runtime) createMember(ctx context.Context, d HolderDocker, in SyncInput, hp holderPod, op Op, states map[string]*ContainerState) error {
	req := dockerx.CreateRequest{Instance: in.Instance, Namespace: in.Namespace, Name: op.Name, TemplateHash: op.Hash, From: op.From,
		Role: op.Role, Pod: op.Pod, Container: op.Container}
	var err error
	if op.Role == dockerx.RoleHolder {
		// The holder owns the pod's network; its members join it.
		if !hp.t.Spec.HostNetwork {
			req.Network = in.Network
		}
		req.Image, err = r.holderImage(ctx, d, in, hp.t)
	} else {
		err = r.ensureImage(ctx, d, in, hp.t, op.Container)
		if err == nil {
			err = r.ensureClaims(ctx, d, in, hp.t)
		}
		if err == nil {
			req.Env, err = r.memberEnv(in, hp, op)
		}
		if err == nil {
			image := func(ctx context.Context) (string, error) { return helperImage(ctx, d, in.Instance) }
			err = CheckSubPaths(ctx, d, FilesRun{Instance: in.Instance, From: op.From, Hash: op.Hash, Pod: *op.Pod}, image, op.Container)
		}
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", op.Name, err)
	}
	id, err := d.CreateContainer(ctx, req)
	if err != nil {
		return fmt.Errorf("create %s: %w", op.Name, err)
	}
	c := &dockerx.Container{ID: id, Name: op.Name, TemplateHash: op.Hash, State: dockerx.StateCreated, Created: in.Now}
	return r.start(ctx, d, states, c, in.Now, false)
}

// holderImage is the image of a pod's holder.
func (r *Runtime) holderImage(ctx context.Context, d HolderDocker, in SyncInput, t *manifests.PodTemplateSpec) (string, error) {
	if manifests.NeedsWriter(&t.Spec) {
		return helperImage(ctx, d, in.Instance)
	}
	img, err := d.EnsureHolderImage(ctx, in.Instance)
	if err != nil {
		return "", fmt.Errorf("holder image: %w", err)
	}
	return img, nil
}

// ensureImage makes the image of template container name present, pulling
// as its imagePullPolicy says with the pod's pull secrets.
func (r *Runtime) ensureImage(ctx context.Context, d HolderDocker, in SyncInput, t *manifests.PodTemplateSpec, name string) error {
	ctr := t.Spec.FindContainer(name)
	if ctr == nil {
		return fmt.Errorf("no container %q in the template", name)
	}
	var secrets []dockerx.RegistryCredential
	if refs := t.Spec.ImagePullSecrets; len(refs) > 0 {
		secrets, _ = PullSecrets(r.configOf(in), OrDefaultNamespace(in.Namespace), refs)
	}
	if err := d.EnsureImage(ctx, ctr.Image, ctr.ImagePullPolicy, secrets); err != nil {
		return fmt.Errorf("ensure image %s: %w", ctr.Image, err)
	}
	return nil
}

// helperImage is the image of a holder with file volumes and of its
// writers.
func helperImage(ctx context.Context, d HolderDocker, instance string) (string, error) {
	img, err := d.EnsureHelperImage(ctx, instance)
	if err != nil {
		return "", fmt.Errorf("helper image: %w", err)
	}
	return img, nil
}

// ensureClaims checks that every claim the template mounts is live and
// makes its volume (docs/design.md §12): no container mounts a claim that
// does not exist or is being deleted, as the kubelet starts no pod on one.
func (r *Runtime) ensureClaims(ctx context.Context, d HolderDocker, in SyncInput, t *manifests.PodTemplateSpec) error {
	ns := OrDefaultNamespace(in.Namespace)
	for _, claim := range TemplateClaims(&t.Spec) {
		if err := ClaimUsable(r.configOf(in), ns, claim); err != nil {
			return err
		}
		if _, err := d.CreateClaimVolume(ctx, dockerx.ClaimVolumeRequest{Instance: in.Instance, Namespace: ns, Claim: claim}); err != nil {
			return fmt.Errorf("persistentvolumeclaim %q: %w", claim, err)
		}
	}
	return nil
}

// ClaimUsable says why no new pod may mount claim of namespace ns (nil:
// it may): it does not exist, or is being deleted, or its record cannot be
// read (cs nil: no claim exists).
func ClaimUsable(cs ConfigStore, ns, claim string) error {
	if cs == nil {
		return fmt.Errorf("persistentvolumeclaim %q not found", claim)
	}
	_, deleted, err := cs.LookupClaim(ns, claim)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("persistentvolumeclaim %q not found", claim)
	case err != nil:
		return fmt.Errorf("persistentvolumeclaim %q: %w", claim, err)
	case deleted:
		// As the kubelet: no new pod may use a claim being deleted.
		return fmt.Errorf("persistentvolumeclaim %q is being deleted", claim)
	}
	return nil
}

// memberEnv resolves the environment of the template container op
// creates, from the ConfigStore, the pod and the Services' variables.
func (r *Runtime) memberEnv(in SyncInput, hp holderPod, op Op) ([]string, error) {
	ps := &hp.t.Spec
	ctr := ps.FindContainer(op.Container)
	if ctr == nil {
		return nil, fmt.Errorf("no container %q in the template", op.Container)
	}
	ns := OrDefaultNamespace(in.Namespace)
	labels := PodDownwardIdentity(ns, hp.spec.Name, op.Pod.UID, op.Hash, hp.t).Labels
	pod := PodIdentity{Name: hp.spec.Name, Namespace: ns, UID: op.Pod.UID, Labels: labels, Annotations: hp.t.Metadata.Annotations,
		ServiceAccountName: "default"}
	var services map[string]string
	if r.serviceEnv != nil {
		services = r.serviceEnv(ns)
	}
	env, err := ResolveEnvWithServices(ps, ctr, pod, r.configOf(in), services)
	if err != nil {
		return nil, err
	}
	return env.Vars, nil
}

// status is the pod's status as observed at the start of the sync (a pod
// created by it is Pending).
func (hp holderPod) status(in SyncInput, states map[string]*ContainerState, notBefore map[string]time.Time, ready map[string]bool) PodStatus {
	pv := PodView{Name: hp.spec.Name, Namespace: OrDefaultNamespace(in.Namespace), Owner: in.Owner, RestartPolicy: hp.spec.EffectiveRestartPolicy(),
		Hash: hp.spec.TemplateHash}
	if hp.pod == nil {
		// Not made yet: each of its containers waits.
		pv.Containers = podContainers(hp.t, &Pod{Members: map[string]*dockerx.Container{}}, nil)
		return pv.PodStatus()
	}
	views := map[string]ContainerView{}
	for _, c := range hp.pod.Containers() {
		views[c.ID] = containerView(in, c, states, notBefore, ready)
	}
	pv.Holder = hp.pod.Holder
	if hp.pod.Holder != nil {
		pv.Created = hp.pod.Holder.Created
	}
	pv.Containers = podContainers(hp.t, hp.pod, views)
	pv.tally()
	if h := hp.pod.Holder; h == nil || h.State != dockerx.StateRunning || hp.pod.Stranded() {
		pv.Ready = 0 // its namespaces are gone: nothing in it serves (as Views)
	}
	return pv.PodStatus()
}
