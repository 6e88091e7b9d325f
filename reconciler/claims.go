package reconciler

import (
	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// The claims' sweep is the pod runtime's (podruntime.ClaimSweep,
// docs/design.md §12); the Deployment controller runs it from its sweep
// (observe.go), names a container's owner by its deployment key, and
// queues the sweep when the last container of a deployment that kept a
// deleted claim's volume is gone.

// newClaimSweep is the controller's claims' sweep: Options.Config lists
// the claims when it is the store (podruntime.ClaimLister).
func newClaimSweep(c *Controller) *podruntime.ClaimSweep {
	l, _ := c.opts.Config.(podruntime.ClaimLister)
	return &podruntime.ClaimSweep{
		Instance: c.opts.Instance, Docker: c.docker, Store: c.opts.Config, Lister: l,
		Volumes: c.runtime.ClaimVolumes(), Log: c.log,
		Owner: func(ct dockerx.Container) string { return store.Key(ct.Namespace, ct.Deployment) },
	}
}

// claimUsable says why no new pod may mount claim of namespace ns (nil:
// it may): it does not exist, or is being deleted, or its record cannot be
// read.
func (c *Controller) claimUsable(ns, claim string) error {
	return podruntime.ClaimUsable(c.opts.Config, ns, claim)
}

// claimUsersGone queues the sweep when deployment key, which kept the
// volume of a deleted claim, has no container left that mounts a claim.
func (c *Controller) claimUsersGone(key string, observed []dockerx.Container) {
	if c.claims.UsersGone(key, observed) {
		c.queue.Add(orphanSweepKey)
	}
}
