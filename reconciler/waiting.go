package reconciler

import (
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// The pods a deployment wants but could not create, with the kubelet's
// waiting reason (docs/design.md §5, status `waiting`): recorded where a
// create fails (the executor's outcome of each create, waitError for the
// creates not attempted because their image or claim is missing) and for
// the pods of a revision that waits for a missing reference (Plan.Unmade),
// so that `get pods`, `describe pod` and `rollout status` show them as
// kubectl shows a pod that is Pending, ErrImagePull, ImagePullBackOff,
// CreateContainerConfigError or CreateContainerError.

// waitError is the outcome of a create not carried out (errNotRun) for a
// reason the pod shows: its image could not be pulled, its claim is not
// usable (podruntime.WaitError).
type waitError = podruntime.WaitError

// configError is a create refused before Docker was asked because the
// container's configuration could not be built (its environment): the
// kubelet's CreateContainerConfigError.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// createWaits collects, per deployment key, the waiting pods of the sync
// in progress (one sync of a key at a time: the queue's guarantee).
type createWaits struct {
	mu sync.Mutex
	m  map[string][]podruntime.WaitingPod
}

// noteCreate records the outcome of a create op: a failure the pod shows
// (not a name conflict, a start failure — the container exists and shows
// it itself — nor a create skipped for another's failure).
func (c *Controller) noteCreate(in PlanInput, op Op, err error) {
	if op.Kind != OpCreate || err == nil {
		return
	}
	w := podruntime.WaitingPod{Name: opPodRef(in, op).Name, Hash: op.Hash, Container: op.Container, Message: err.Error()}
	var we *waitError
	var ce *configError
	var se *startError
	switch {
	case errors.As(err, &we):
		w.Reason, w.Message, w.Container = we.Reason, we.Message, ""
	case errors.Is(err, errNotRun), errors.Is(err, dockerx.ErrConflict), errors.As(err, &se):
		return
	case errors.As(err, &ce):
		w.Reason = podruntime.WaitCreateContainerConfigError
	default:
		w.Reason = podruntime.WaitCreateContainerError
	}
	if op.Role == dockerx.RoleHolder {
		w.Container = "" // the pod's sandbox: the pod as a whole
	}
	c.waits.mu.Lock()
	defer c.waits.mu.Unlock()
	if c.waits.m == nil {
		c.waits.m = map[string][]podruntime.WaitingPod{}
	}
	c.waits.m[in.key()] = append(c.waits.m[in.key()], w)
}

// takeWaits returns and forgets what noteCreate collected for key.
func (c *Controller) takeWaits(key string) []podruntime.WaitingPod {
	c.waits.mu.Lock()
	defer c.waits.mu.Unlock()
	out := c.waits.m[key]
	delete(c.waits.m, key)
	return out
}

// waitingPods is the status's list of waiting pods after a sync: those
// whose create failed in it, and the pods a waiting revision needs (the
// kubelet's reason for it: CreateContainerConfigError for a missing
// ConfigMap or Secret (key) of its environment, Pending for a claim,
// ContainerCreating for a file volume's source). A pod keeps the time it
// began waiting while its reason stays; a repeated image pull failure
// becomes ImagePullBackOff, as the kubelet backs off its pulls.
func (c *Controller) waitingPods(a *assessment, created []podruntime.WaitingPod, prev []podruntime.WaitingPod, now time.Time) []podruntime.WaitingPod {
	out := created
	for _, u := range a.plan.Unmade {
		t := templateLookup(a.d, a.in.Hash, a.rec.Revisions)(u.Hash)
		w := podruntime.WaitingPod{Name: u.Name, Hash: u.Hash, Reason: podruntime.WaitContainerCreating, Message: a.in.Waiting[u.Hash]}
		if t != nil {
			w.Reason = c.unmadeReason(a.rec.NamespaceOrDefault(), t)
		}
		// The kubelet's event on the pod, repeated (counted) at each try.
		ref := store.InvolvedObject{Kind: "Pod", Namespace: a.rec.NamespaceOrDefault(), Name: w.Name}
		switch w.Reason {
		case podruntime.WaitPending:
			Eventf(c.opts.Recorder, ref, store.EventWarning, "FailedScheduling", "%s", w.Message)
		case podruntime.WaitCreateContainerConfigError:
			Eventf(c.opts.Recorder, ref, store.EventWarning, "Failed", "Error: %s", w.Message)
		}
		out = append(out, w)
	}
	for i := range out {
		w := &out[i]
		w.Since = now
		j := slices.IndexFunc(prev, func(p podruntime.WaitingPod) bool { return p.Name == w.Name && p.Container == w.Container })
		if j < 0 {
			continue
		}
		p := prev[j]
		if w.Reason == podruntime.WaitErrImagePull && (p.Reason == podruntime.WaitErrImagePull || p.Reason == podruntime.WaitImagePullBackOff) {
			w.Reason = podruntime.WaitImagePullBackOff
		}
		if p.Reason == w.Reason || p.Reason == podruntime.WaitErrImagePull && w.Reason == podruntime.WaitImagePullBackOff {
			w.Since = p.Since
		}
	}
	slices.SortFunc(out, func(x, y podruntime.WaitingPod) int {
		if x.Name != y.Name {
			if x.Name < y.Name {
				return -1
			}
			return 1
		}
		if x.Container < y.Container {
			return -1
		}
		if x.Container > y.Container {
			return 1
		}
		return 0
	})
	return slices.CompactFunc(out, func(x, y podruntime.WaitingPod) bool { return x.Name == y.Name && x.Container == y.Container })
}

// unmadeReason is the kubelet's reason for a pod of template t that waits
// for a missing reference (missingRefs).
func (c *Controller) unmadeReason(ns string, t *manifests.PodTemplateSpec) string {
	if podruntime.EnvMissingRefs(ns, &t.Spec, c.opts.Config) != "" {
		return podruntime.WaitCreateContainerConfigError
	}
	for _, claim := range podruntime.TemplateClaims(&t.Spec) {
		if c.claimUsable(ns, claim) != nil {
			return podruntime.WaitPending
		}
	}
	return podruntime.WaitContainerCreating
}
