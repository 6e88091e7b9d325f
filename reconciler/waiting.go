package reconciler

import (
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// The pods a deployment wants but could not create, with the kubelet's
// waiting reason (docs/design.md §5, status `waiting`). Which failure a
// pod shows, how a wait keeps its start and becomes ImagePullBackOff, and
// the reason of a pod that waits for a reference are the pod runtime's
// (podruntime.CreateWait, SettleWaits, UnmadeReason); the Deployment
// controller collects the waits of each sync by deployment key (the
// executor's outcome of each create) and adds the pods of a revision that
// waits for a missing reference (Plan.Unmade), so that `get pods`,
// `describe pod` and `rollout status` show them as kubectl shows a pod
// that is Pending, ErrImagePull, ImagePullBackOff,
// CreateContainerConfigError or CreateContainerError.

// waitError is the outcome of a create not carried out (errNotRun) for a
// reason the pod shows: its image could not be pulled, its claim is not
// usable (podruntime.WaitError).
type waitError = podruntime.WaitError

// noteCreate records the outcome of a create op, when it is a failure the
// pod shows (podruntime.CreateWait).
func (c *Controller) noteCreate(in PlanInput, op Op, err error) {
	if op.Kind != OpCreate {
		return
	}
	if w, ok := podruntime.CreateWait(opPodRef(in, op).Name, op.Hash, op.Container, op.Role == dockerx.RoleHolder, err); ok {
		c.waits.Note(in.key(), w)
	}
}

// waitingPods is the status's list of waiting pods after a sync: those
// whose create failed in it, and the pods a waiting revision needs, each
// with the kubelet's event (podruntime.UnmadeReason), settled against the
// last status (podruntime.SettleWaits).
func (c *Controller) waitingPods(a *assessment, created []podruntime.WaitingPod, prev []podruntime.WaitingPod, now time.Time) []podruntime.WaitingPod {
	out := created
	for _, u := range a.plan.Unmade {
		t := templateLookup(a.d, a.in.Hash, a.rec.Revisions)(u.Hash)
		w := podruntime.WaitingPod{Name: u.Name, Hash: u.Hash, Reason: podruntime.WaitContainerCreating, Message: a.in.Waiting[u.Hash]}
		if t != nil {
			w.Reason = podruntime.UnmadeReason(a.rec.NamespaceOrDefault(), &t.Spec, c.opts.Config)
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
	return podruntime.SettleWaits(out, prev, now)
}
