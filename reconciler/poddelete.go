package reconciler

import (
	"fmt"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// Pods a user deleted (`dockctl delete pod`, store.PodDeletion). A pod is
// deleted as Kubernetes deletes one of a ReplicaSet: it is stopped
// through the same graceful path as a scale-down's removal (drained out
// of the Services, its preStop hooks, its stop signal, the kill after its
// grace period, or the request's), and since the deployment still wants
// the replica, its revision is short of one at once and a new pod is
// created in the same plan. The deleted pod counts toward replicas +
// maxSurge until it is gone, as every terminating replica does
// (docs/design.md §8), so a deployment that allows no surge (maxSurge 0, a
// host port, the host's network) creates the replacement only once it is
// gone. A user's delete is no eviction: maxUnavailable does not hold it
// back, as no PodDisruptionBudget holds back a `kubectl delete pod`, nor
// does a refusal of the deployment (deletionsOnly). From the request on the
// pod is terminating, its stop begun or not (deleted): neither ready nor a
// replica, and out of its Services' endpoints (podEndpoints), as a pod
// with a deletion timestamp is.
//
// A request names the pod's containers (and a holder pod's uid) as the
// CLI observed them, so it never hits a newer pod of the same name; once
// no observed container of it is left — it was removed, or never
// existed — the plan reports it done (Plan.DeletionsDone) and the
// controller clears it.

// causePodDeleted is the Cause of a ReasonPodDeleted removal.
const causePodDeleted = "deleted by user"

// deletions indexes in.Deletions by the units they name
// (podruntime.Deletions); nil when there is none.
func (in PlanInput) deletions() *podruntime.Deletions {
	return podruntime.NewDeletions(in.Deletions, in.Pods)
}

// deleteOp plans the removal of unit c that req deleted: a removal's
// graceful stop (removeOp, a stop under way included), with the request's
// grace period in place of the pod's own when it gives one.
//
// A grace of 0 (--grace-period=0 --force) is a stop as well, as the
// kubelet stops a force-deleted pod: the API object is gone at once (here
// the pod leaves its Services' endpoints in the same sync: podEndpoints),
// but the containers still get their stop signal and the least grace the
// kubelet gives (minimumGracePeriodInSeconds, 2 s: podruntime.MinPodGrace), after
// their drain and preStop hooks, never a bare kill.
//
// A stop already in flight here is shortened, never lengthened, when the
// request's grace ends before the stop's deadline (a pod deleted again
// with a shorter grace, or with --force, while Terminating), as the
// kubelet cancels a termination whose grace period was shortened and
// stops its containers again within the new one.
func (in PlanInput) deleteOp(c *dockerx.Container, req *store.PodDeletion) (Op, bool) {
	seconds, cause := req.GracePeriodSeconds, causePodDeleted
	if seconds != nil && *seconds <= 0 {
		least := int64(podruntime.MinPodGrace / time.Second)
		seconds, cause = &least, causePodDeleted+" with --force: stopped within the least grace period"
	}
	grace := in.stopGrace(c, seconds)
	if !in.Stopping[c.ID] {
		return in.removeOpWith(c, ReasonPodDeleted, cause, grace)
	}
	deadline, removing := in.Terminating[c.ID]
	kill := in.Now.Add(grace)
	if !removing || !kill.Before(deadline) {
		return Op{}, false // a liveness restart in flight, or a kill as near already
	}
	return Op{Kind: OpRemove, Name: c.Name, ContainerID: c.ID, Reason: ReasonPodDeleted, Grace: grace, Deadline: kill,
		Cause: fmt.Sprintf("%s: its stop under way shortened (kill at %s)", cause, kill.UTC().Format(time.RFC3339))}, true
}

// requestedDeadline is when the pod of c a pending request names is to
// be killed, as the API server's deletionTimestamp of a deleted pod: the
// request's time and its grace; zero when no request names it.
func (in PlanInput) requestedDeadline(c *dockerx.Container) time.Time {
	req := in.deletions().Of(c)
	if req == nil {
		return time.Time{}
	}
	seconds := req.GracePeriodSeconds
	if seconds != nil && *seconds <= 0 {
		least := int64(podruntime.MinPodGrace / time.Second)
		seconds = &least
	}
	return req.RequestedAt.Add(in.stopGrace(c, seconds))
}

// deleted returns the units a pending request names: terminating from the
// request on, as a Kubernetes pod is from its deletion timestamp on, so
// neither ready nor available nor a replica (status, `get pods`, the
// Services' endpoints), whether or not its stop has begun.
func (in PlanInput) deleted() map[string]bool {
	dels := in.deletions()
	if dels == nil {
		return nil
	}
	out := map[string]bool{}
	for i := range in.Containers {
		if dels.Of(&in.Containers[i]) != nil {
			out[in.Containers[i].ID] = true
		}
	}
	return out
}

// unready takes the units a pending request names out of ready, as a
// terminating one is (deploymentState.addTerminating), and returns them.
func (in PlanInput) unready(ready map[string]bool) map[string]bool {
	deleted := in.deleted()
	for id := range deleted {
		delete(ready, id)
	}
	return deleted
}

// deletionsOnly is the plan of a deployment the controller refuses (an
// invalid record, a privilege it does not grant, the replica cap): the
// pods users deleted are removed all the same — Kubernetes deletes a pod
// whatever the state of its ReplicaSet — and nothing else is done: no
// replacement is created, no other container touched.
func (in PlanInput) deletionsOnly() Plan {
	var plan Plan
	dels := in.deletions()
	for _, c := range sortedByName(in.Containers) {
		req := dels.Of(&c)
		if req == nil || c.State == dockerx.StateRemoving {
			continue
		}
		if op, ok := in.deleteOp(&c, req); ok {
			plan.Ops = append(plan.Ops, op)
		}
	}
	plan.DeletionsDone = dels.Done()
	plan.Ops = in.expandPods(plan.Ops)
	in.setDrains(plan.Ops)
	in.setPreStops(plan.Ops)
	link(plan.Ops)
	plan.State = in.State
	return plan
}

// podDeletions reads the pending requests of a deployment. An unreadable
// file is logged and read as none: it must not stop the sync, and a
// request that cannot be read is never acted on.
func (c *Controller) podDeletions(ns, name string) []store.PodDeletion {
	reqs, err := c.store.PodDeletions(ns, name)
	if err != nil {
		c.log.Warn("pod deletions unreadable: ignored", "deployment", store.Key(ns, name), "err", err)
		return nil
	}
	return reqs
}

// clearPodDeletions clears the requests whose pod is gone. A failure is
// logged: the next sync finds them done again.
func (c *Controller) clearPodDeletions(ns, name string, done []store.PodDeletion) {
	if len(done) == 0 {
		return
	}
	if err := c.store.ClearPodDeletions(ns, name, done); err != nil {
		c.log.Warn("clear pod deletions", "deployment", store.Key(ns, name), "err", err)
		return
	}
	for _, d := range done {
		c.log.Info("pod deletion done", "deployment", store.Key(ns, name), "pod", d.Pod)
	}
}
