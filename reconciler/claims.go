package reconciler

import (
	"context"
	"errors"
	"fmt"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// claimLister is the part of the store the claims' sweep reads: every
// claim record, tombstones included (store.ListClaims). Options.Config
// provides it when it is the store; without it no claim is bound ahead of
// its first pod, and no deleted claim's volume is released.
type claimLister interface {
	ListClaims() ([]*store.ClaimRecord, []error)
}

// claimInputs reads every claim record. ok is false when there is no
// lister (no claims to sync).
func (c *Controller) claimInputs() (claims []podruntime.ClaimInput, ok bool) {
	l, ok := c.opts.Config.(claimLister)
	if !ok {
		return nil, false
	}
	recs, errs := l.ListClaims()
	for _, err := range errs {
		// Its volume is only ever reported, never removed, until it
		// can be read again.
		c.log.Error("unreadable persistentvolumeclaim record", "err", err)
	}
	for _, r := range recs {
		claims = append(claims, podruntime.ClaimInput{Namespace: r.Object.Metadata.NamespaceOrDefault(), Name: r.Object.Metadata.Name, Deleted: r.Deleted})
	}
	return claims, true
}

// syncClaims binds live claims to volumes and releases the volumes of
// deleted claims no container uses, from the sweep's snapshot: cs are the
// instance's containers, vols its volumes. Each op's failure is logged
// and retried at the next sweep; a removal Docker refuses because some
// container (perhaps not dockctl's) uses the volume is pvc-protection
// working, not an error.
func (c *Controller) syncClaims(ctx context.Context, claims []podruntime.ClaimInput, cs []dockerx.Container, vols []dockerx.Volume) error {
	plan := podruntime.PlanClaims(podruntime.ClaimPlanInput{Instance: c.opts.Instance, Claims: claims, Volumes: vols, Users: podruntime.ClaimUsers(c.opts.Instance, cs)})
	for _, n := range plan.Unknown {
		c.noteClaimVolume(n, "claim volume left in place: dockctl never removes a volume whose claim it never knew")
	}
	for _, n := range plan.Protected {
		c.noteClaimVolume(n, "volume of a deleted persistentvolumeclaim kept while containers use it")
	}
	c.awaitClaimUsers(plan.Protected, cs)
	var errs []error
	for _, op := range plan.Ops {
		name := op.Volume.Name()
		switch op.Kind {
		case podruntime.OpBindClaim:
			c.log.Info("binding persistentvolumeclaim", "volume", name, "cause", op.Cause)
			if _, err := c.docker.CreateClaimVolume(ctx, op.Volume); err != nil {
				// A foreign volume of that name: reported once per
				// message, the claim stays Pending.
				c.noteClaimVolume(podruntime.ClaimNote{Volume: name, Why: err.Error()}, "persistentvolumeclaim cannot be bound")
				if !errors.Is(err, dockerx.ErrConflict) {
					errs = append(errs, fmt.Errorf("bind %s: %w", op.Cause, err))
				}
			}
		case podruntime.OpReleaseClaim:
			if err := c.releaseClaim(ctx, op); err != nil {
				if errors.Is(err, dockerx.ErrConflict) {
					// In use by a container the instance's list does not
					// show (another instance's, a hand-made one).
					c.noteClaimVolume(podruntime.ClaimNote{Volume: name, Why: err.Error()}, "volume of a deleted persistentvolumeclaim kept while containers use it")
					continue
				}
				errs = append(errs, fmt.Errorf("release %s: %w", op.Cause, err))
			}
		}
	}
	return errors.Join(errs...)
}

// releaseClaim removes the volume of a deleted claim, unless the claim was
// applied again since the sweep read the records: its volume, data
// included, is then the live claim's again (README: "Applying the claim
// again before the volume is gone binds the same volume"), and never
// under a create in flight that mounts it (podruntime.ClaimVolumes).
func (c *Controller) releaseClaim(ctx context.Context, op podruntime.ClaimOp) error {
	name := op.Volume.Name()
	return c.runtime.ClaimVolumes().Release(name, func(inUse bool) error {
		if c.opts.Config == nil {
			return nil
		}
		if inUse {
			// A create that mounts it is under way: that container will be
			// its user, and the next sweep judges again.
			c.log.Info("volume of a deleted persistentvolumeclaim kept: a container that mounts it is being created", "volume", name)
			return nil
		}
		if _, deleted, err := c.opts.Config.LookupClaim(op.Volume.Namespace, op.Volume.Claim); err != nil || !deleted {
			// Live again, or no longer known at all (its volume is then an
			// unknown claim's: never removed), or unreadable.
			c.log.Info("volume of a persistentvolumeclaim kept: the claim is no longer a deleted one", "volume", name, "cause", op.Cause)
			return nil
		}
		c.log.Info("removing the volume of a deleted persistentvolumeclaim", "volume", name, "cause", op.Cause)
		return c.docker.RemoveVolume(ctx, name)
	})
}

// noteClaimVolume logs a volume left in place once per distinct reason.
func (c *Controller) noteClaimVolume(n podruntime.ClaimNote, msg string) {
	key := "claim:" + n.Volume + ":" + n.Why
	c.mu.Lock()
	first := !c.orphans[key]
	c.orphans[key] = true
	c.mu.Unlock()
	if first {
		c.log.Warn(msg, "volume", n.Volume, "why", n.Why)
	}
}

// claimUsable says why no new pod may mount claim of namespace ns (nil:
// it may): it does not exist, or is being deleted, or its record cannot be
// read.
func (c *Controller) claimUsable(ns, claim string) error {
	return podruntime.ClaimUsable(c.opts.Config, ns, claim)
}

// awaitClaimUsers remembers the deployments whose containers keep the
// protected volumes, so that the sync which sees the last of them gone
// queues the sweep that releases the volume (claimUsersGone), rather than
// leaving it to the next periodic resync.
func (c *Controller) awaitClaimUsers(protected []podruntime.ClaimNote, cs []dockerx.Container) {
	keep := map[string]bool{}
	for _, n := range protected {
		keep[n.Volume] = true
	}
	waiters := map[string]bool{}
	for _, ct := range cs {
		for _, v := range ct.Volumes {
			if keep[v] {
				waiters[store.Key(ct.Namespace, ct.Deployment)] = true
			}
		}
	}
	c.mu.Lock()
	c.claimWaiters = waiters
	c.mu.Unlock()
}

// claimUsersGone queues the sweep when deployment key, which kept the
// volume of a deleted claim, has no container left that mounts a claim.
func (c *Controller) claimUsersGone(key string, observed []dockerx.Container) {
	c.mu.Lock()
	gone := c.claimWaiters[key] && !podruntime.MountsClaims(c.opts.Instance, observed)
	if gone {
		delete(c.claimWaiters, key)
	}
	c.mu.Unlock()
	if gone {
		c.queue.Add(orphanSweepKey)
	}
}

// The store is the claims' lister the controller is given (Options.Config).
var _ claimLister = (*store.Store)(nil)
