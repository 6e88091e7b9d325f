package podruntime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// The creates of a plan (Runtime.Execute): templates checked, images and
// claims' volumes ensured (ClaimVolumes), the holder image made present, then each
// container created and started under slow start. The owner's share —
// which templates it refuses, its pull credentials and events, the network and what a create needs from outside the template (its
// environment, address, seccomp profile, subPath checks), what a name
// conflict means — are its CreateHooks.

// Failure reasons of creates, in the kubelet's and the controllers' words.
const (
	ReasonFailedCreate = "FailedCreate"
	ReasonErrImagePull = "ErrImagePull"
	// ReasonCreateContainerConfigError is kubelet's reason for a
	// container it will not create from its configuration: here,
	// runAsNonRoot refused by the image's user (CheckRunAsNonRoot).
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
)

// WaitError is the outcome of a create not carried out (ErrNotRun) for a
// reason the pod shows: its image could not be pulled, its claim is not
// usable, an earlier create failed.
type WaitError struct {
	Reason, Message string
}

func (e *WaitError) Error() string { return e.Reason + ": " + e.Message }
func (e *WaitError) Unwrap() error { return ErrNotRun }

// CreateHooks are the owner controller's share of a plan's creates.
type CreateHooks interface {
	// Refusal says why the template of hash must not be created from
	// ("" when it may): the privilege and trust gates, applied here as
	// well as in the plan so that nothing is created from a template
	// that was not checked.
	Refusal(hash string, t *manifests.PodTemplateSpec) string
	// PullSecrets are the pull credentials of a template's images.
	PullSecrets(t *dockerx.PodTemplate) []dockerx.RegistryCredential
	// PullFailed is told an image of t could not be made present.
	PullFailed(t *dockerx.PodTemplate, image string, err error)
	// Created is told op's create succeeded, with the images whose
	// imagePullPolicy Always pull fell back to a local copy (ref → the
	// pull's error).
	Created(op Op, fellBack *sync.Map)
	// HelperImageUsed is told before and after a helper image (the
	// holder's) is made present, so that the owner's sweep collects it
	// once unused.
	HelperImageUsed()
	// Network is the instance network pods are created on (nil: none).
	Network(ctx context.Context) (*store.NetworkStatus, error)
	// Prepare fills req with what a create needs from outside the
	// template (a writer holder's image, the network, environment, pod
	// address, seccomp profile) and checks it (subPaths); release is
	// called once the create ended. When Prepare fails — with an error,
	// or a panic that GuardOps turns into the op's error — it lets go of
	// what it took itself (a pod address's lock): no release comes.
	Prepare(ctx context.Context, op Op, req *dockerx.CreateRequest, network *store.NetworkStatus) (release func(), err error)
	// NameConflict is the outcome of a create Docker refused because its
	// name is taken (err wraps dockerx.ErrConflict).
	NameConflict(ctx context.Context, op Op, err error) error
}

// creates carries out one wave's creates: templates checked, images and
// claims' volumes ensured, then slow start. refused reports a template
// that must not be created from, which ends the execution.
//
// window is the slow-start window, carried from one wave to the next.
func (r *Runtime) creates(ctx context.Context, in ExecInput, h ExecHooks, creates []Op, ended func(Op, error), window *int) (fail Failure, errs []error, refused bool) {
	// Counted from here, before their images, claims and network are
	// ensured: the Services' helpers wait behind all of it.
	defer r.starting.begin(len(creates))()
	templates, err := templatesOf(creates)
	if err == nil {
		// Defence in depth, and deliberately here rather than in the
		// plan: the planner creates no refused revision, and this check
		// trusts no plan, so that nothing is ever created from a template
		// that was not checked.
		for hash, d := range templates {
			if msg := h.Refusal(hash, d.Template); msg != "" {
				err = fmt.Errorf("create from %s", msg)
			}
		}
	}
	if err != nil {
		for _, op := range creates {
			ended(op, ErrNotRun)
		}
		return Failure{ReasonFailedCreate, err.Error()}, []error{err}, true
	}
	// imagePullPolicy Always fallen back to a local copy: each pod created
	// from it says so (h.Created), not only the log.
	var fellBack sync.Map // image ref → the pull's error
	pullCtx := dockerx.WithPullFallback(ctx, func(ref string, err error) { fellBack.Store(ref, err) })
	missing, pullErrs, imageFail, err := ensureImages(pullCtx, in.Docker, h, templates)
	if err != nil {
		fail = imageFail
		errs = append(errs, err)
	}
	// Checked revision by revision, so that each pod refused shows its
	// own revision's refusal.
	refusedAsRoot := map[string]Failure{}
	for _, hash := range slices.Sorted(maps.Keys(templates)) {
		one := map[string]*dockerx.PodTemplate{hash: templates[hash]}
		if f, err := checkRunAsNonRoot(ctx, in.Docker, creates, one, missing); err != nil {
			if len(refusedAsRoot) == 0 {
				fail = f
			}
			refusedAsRoot[hash] = f
			errs = append(errs, err)
		}
	}
	unbound, claimFail, claimsDone, err := r.claims.Ensure(ctx, in.Docker, in.Config, in.Instance, in.Namespace, templates)
	defer claimsDone()
	if err != nil {
		fail = claimFail
		errs = append(errs, err)
	}
	holderImage, err := ensureHolderImage(ctx, in, h, creates)
	if err != nil {
		fail = Failure{ReasonFailedCreate, err.Error()}
		errs = append(errs, err)
	}
	network, err := h.Network(ctx)
	if err != nil {
		// A pod created off the instance network would never resolve a
		// Service name (DNS is fixed at create): none is created.
		for _, op := range creates {
			ended(op, ErrNotRun)
		}
		return Failure{ReasonFailedCreate, err.Error()}, append(errs, err), false
	}
	// Only the revisions whose image is missing wait for it: an old
	// revision keeps healing while a new one cannot be pulled.
	ready := creates[:0:0]
	ran := map[OpID]bool{}
	var mu sync.Mutex
	for _, op := range creates {
		if !missing[op.Hash] && !unbound[op.Hash] && (op.Role != dockerx.RoleHolder || holderImage != "") {
			ready = append(ready, op)
		}
	}
	failed, reached := SlowStart(ready, in.MaxInFlight, *window, GuardOps(func(op Op) error {
		err := create(ctx, in, h, op, holderImage, network)
		if err == nil {
			h.Created(op, &fellBack)
		}
		mu.Lock()
		ran[op.ID] = true
		mu.Unlock()
		ended(op, err)
		return err
	}))
	for _, op := range creates {
		switch {
		case ran[op.ID]:
		case missing[op.Hash] && pullErrs[op.Hash] != "":
			ended(op, &WaitError{WaitErrImagePull, pullErrs[op.Hash]})
		case refusedAsRoot[op.Hash].Reason != "":
			// The kubelet's verifyRunAsNonRoot fails the container's
			// config; an image it could not inspect, its create.
			f, reason := refusedAsRoot[op.Hash], WaitCreateContainerError
			if f.Reason == ReasonCreateContainerConfigError {
				reason = WaitCreateContainerConfigError
			}
			ended(op, &WaitError{reason, f.Message})
		case unbound[op.Hash] && claimFail.Reason != "":
			ended(op, &WaitError{WaitPending, claimFail.Message})
		case op.Role == dockerx.RoleHolder || op.Pod == nil:
			// Slow start stopped after a failure: the pod waits for the
			// next sync's attempt.
			ended(op, &WaitError{WaitContainerCreating, "waiting for an earlier create to succeed"})
		default:
			ended(op, ErrNotRun)
		}
	}
	for _, err := range failed {
		var se *StartError
		if !errors.Is(err, dockerx.ErrConflict) && !errors.As(err, &se) {
			fail = Failure{ReasonFailedCreate, err.Error()}
		}
	}
	if len(failed) == 0 {
		*window = reached
	} else {
		*window = 1 // a failure: the next wave starts carefully again
	}
	return fail, append(errs, failed...), false
}

// templatesOf returns, per template hash to create, the pod template the
// plan creates it from.
func templatesOf(creates []Op) (map[string]*dockerx.PodTemplate, error) {
	out := map[string]*dockerx.PodTemplate{}
	for _, op := range creates {
		if op.From == nil {
			return nil, fmt.Errorf("create %s: the plan names no template to create it from", op.Name)
		}
		out[op.Hash] = op.From
	}
	return out, nil
}

// ensureImages makes sure every image to create from is present, pulling
// as each template's imagePullPolicy says. It returns the template hashes
// whose image is missing, each with why (the pull of its own image: the
// pods of one revision never show another's), and the failure to report
// for the owner (the first).
func ensureImages(ctx context.Context, d ExecDocker, h ExecHooks, templates map[string]*dockerx.PodTemplate) (map[string]bool, map[string]string, Failure, error) {
	missing := map[string]bool{}
	why := map[string]string{}
	var fail Failure
	var errs []error
	for _, hash := range slices.Sorted(maps.Keys(templates)) {
		secrets := h.PullSecrets(templates[hash])
		for _, ctr := range templates[hash].Template.Spec.AllContainers() {
			if err := d.EnsureImage(ctx, ctr.Image, ctr.ImagePullPolicy, secrets); err != nil {
				missing[hash] = true
				msg := fmt.Sprintf("image %s: %v", ctr.Image, err)
				if why[hash] == "" {
					why[hash] = msg
				}
				h.PullFailed(templates[hash], ctr.Image, err)
				if fail.Reason == "" {
					fail = Failure{ReasonErrImagePull, msg}
				}
				errs = append(errs, fmt.Errorf("ensure image %s: %w", ctr.Image, err))
			}
		}
	}
	return missing, why, fail, errors.Join(errs...)
}

// checkRunAsNonRoot runs CheckRunAsNonRoot for the revisions a wave
// creates: a revision that breaks it is added to blocked and none of its
// containers is created; the refusal, worded as kubelet's, becomes the
// owner's failure (CreateContainerConfigError, or FailedCreate when an
// image could not be inspected).
func checkRunAsNonRoot(ctx context.Context, d ImageUserDocker, creates []Op, templates map[string]*dockerx.PodTemplate, blocked map[string]bool) (Failure, error) {
	tmpls := make(map[string]*manifests.PodTemplateSpec, len(templates))
	for hash, t := range templates {
		tmpls[hash] = t.Template
	}
	r, err := CheckRunAsNonRoot(ctx, d, tmpls, func(hash string) string { return firstPodName(creates, hash) }, blocked)
	if err == nil {
		return Failure{}, nil
	}
	if r.ConfigError {
		return Failure{ReasonCreateContainerConfigError, r.Message}, err
	}
	return Failure{ReasonFailedCreate, r.Message}, err
}

// firstPodName names, for a message, the first pod of revision hash the
// creates make: a holder pod's name, or a pod without holder's only
// container.
func firstPodName(creates []Op, hash string) string {
	for _, op := range creates {
		if op.Hash != hash {
			continue
		}
		if op.Pod != nil {
			return op.Pod.Name
		}
		return op.Name
	}
	return hash
}

// ensureHolderImage makes the holder image present when the wave creates a
// holder, and returns its reference ("" when none is needed).
func ensureHolderImage(ctx context.Context, in ExecInput, h ExecHooks, creates []Op) (string, error) {
	for _, op := range creates {
		if op.Role == dockerx.RoleHolder {
			h.HelperImageUsed() // for the sweep to collect it once unused
			ref, err := in.Docker.EnsureHolderImage(ctx, in.Instance)
			// The image may be new: the sweep must look for it once no
			// holder is left, even if no sweep ever sees one of these
			// holders (they may all be gone before the next one). Told
			// again once loaded, so that a collection whose list missed
			// it does not clear the owner's flag after us.
			h.HelperImageUsed()
			if err != nil {
				return "", fmt.Errorf("holder image: %w", err)
			}
			return ref, nil
		}
	}
	return "", nil
}

// create makes and starts one container of op. The network owner of a pod
// (a replica without holder, or a holder) is created on the instance
// network (nil: none to use) unless it shares the host's: a create-time
// setting, never part of the template hash or the plan (h.Prepare).
func create(ctx context.Context, in ExecInput, h ExecHooks, op Op, holderImage string, network *store.NetworkStatus) error {
	if op.From == nil {
		return fmt.Errorf("create %s: the plan names no template to create it from", op.Name)
	}
	from := *op.From
	// Labelled with the owner's incarnation, so that the one applied
	// again after an orphaning deletion tells its pods from its own.
	from.OwnerUID = in.OwnerUID
	req := dockerx.CreateRequest{
		Instance: in.Instance, Namespace: in.Namespace, Name: op.Name, TemplateHash: op.Hash, From: &from,
		Role: op.Role, Pod: op.Pod, Container: op.Container,
	}
	if op.Role == dockerx.RoleHolder {
		req.Image = holderImage
	}
	release, err := h.Prepare(ctx, op, &req, network)
	if err != nil {
		return err
	}
	defer release()
	id, err := in.Docker.CreateContainer(ctx, req)
	if errors.Is(err, dockerx.ErrConflict) {
		return h.NameConflict(ctx, op, err)
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", op.Name, err)
	}
	if err := in.Docker.StartContainer(ctx, id); err != nil {
		return &StartError{ID: id, Name: op.Name, Err: err}
	}
	return nil
}
