package podruntime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/store"
)

// The claims' sweep (docs/design.md §12): a live claim is bound to its
// volume ahead of its first pod, and a deleted claim's volume is released
// once no container uses it — pvc-protection, as a cluster keeps a claim
// in Terminating while a pod mounts it. PlanClaims decides; ClaimSweep
// carries the plan out against Docker, remembers which owners' containers
// keep a protected volume, and logs a volume left in place once per
// reason.

// ClaimLister is the part of the store the claims' sweep reads: every
// claim record, tombstones included (store.ListClaims). Without it no
// claim is bound ahead of its first pod, and no deleted claim's volume is
// released.
type ClaimLister interface {
	ListClaims() ([]*store.ClaimRecord, []error)
}

// ClaimSweepDocker is what the claims' sweep needs from Docker: a claim's
// volume made, a deleted claim's volume removed.
type ClaimSweepDocker interface {
	ClaimVolumeDocker
	RemoveVolume(ctx context.Context, name string) error
}

// ClaimSweep carries out the claims' sweep of one instance. Its fields are
// set once, before first use; its methods are safe for concurrent use.
type ClaimSweep struct {
	Instance string
	Docker   ClaimSweepDocker
	// Store is what a release asks again whether the claim is still a
	// deleted one; nil releases nothing.
	Store ConfigStore
	// Lister lists the claims (often Store itself); nil: no claims to sync.
	Lister ClaimLister
	// Volumes keeps a release from falling under a create that mounts the
	// volume (the executor's ClaimVolumes).
	Volumes *ClaimVolumes
	// Owner is the key of the owner whose container ct is (the key its
	// controller queues), for UsersGone.
	Owner func(ct dockerx.Container) string
	Log   *slog.Logger

	mu      sync.Mutex
	noted   map[string]bool // volume and reason logged once
	waiters map[string]bool // owners whose containers keep a protected volume
}

// Inputs reads every claim record. ok is false when there is no lister
// (no claims to sync).
func (s *ClaimSweep) Inputs() (claims []ClaimInput, ok bool) {
	if s.Lister == nil {
		return nil, false
	}
	recs, errs := s.Lister.ListClaims()
	for _, err := range errs {
		// Its volume is only ever reported, never removed, until it
		// can be read again.
		s.Log.Error("unreadable persistentvolumeclaim record", "err", err)
	}
	for _, r := range recs {
		claims = append(claims, ClaimInput{Namespace: r.Object.Metadata.NamespaceOrDefault(), Name: r.Object.Metadata.Name, Deleted: r.Deleted})
	}
	return claims, true
}

// Sync binds live claims to volumes and releases the volumes of deleted
// claims no container uses, from the sweep's snapshot: cs are the
// instance's containers, vols its volumes. Each op's failure is logged
// and retried at the next sweep; a removal Docker refuses because some
// container (perhaps not dockctl's) uses the volume is pvc-protection
// working, not an error.
func (s *ClaimSweep) Sync(ctx context.Context, claims []ClaimInput, cs []dockerx.Container, vols []dockerx.Volume) error {
	plan := PlanClaims(ClaimPlanInput{Instance: s.Instance, Claims: claims, Volumes: vols, Users: ClaimUsers(s.Instance, cs)})
	for _, n := range plan.Unknown {
		s.note(n, "claim volume left in place: dockctl never removes a volume whose claim it never knew")
	}
	for _, n := range plan.Protected {
		s.note(n, "volume of a deleted persistentvolumeclaim kept while containers use it")
	}
	s.awaitUsers(plan.Protected, cs)
	var errs []error
	for _, op := range plan.Ops {
		name := op.Volume.Name()
		switch op.Kind {
		case OpBindClaim:
			s.Log.Info("binding persistentvolumeclaim", "volume", name, "cause", op.Cause)
			if _, err := s.Docker.CreateClaimVolume(ctx, op.Volume); err != nil {
				// A foreign volume of that name: reported once per
				// message, the claim stays Pending.
				s.note(ClaimNote{Volume: name, Why: err.Error()}, "persistentvolumeclaim cannot be bound")
				if !errors.Is(err, dockerx.ErrConflict) {
					errs = append(errs, fmt.Errorf("bind %s: %w", op.Cause, err))
				}
			}
		case OpReleaseClaim:
			if err := s.release(ctx, op); err != nil {
				if errors.Is(err, dockerx.ErrConflict) {
					// In use by a container the instance's list does not
					// show (another instance's, a hand-made one).
					s.note(ClaimNote{Volume: name, Why: err.Error()}, "volume of a deleted persistentvolumeclaim kept while containers use it")
					continue
				}
				errs = append(errs, fmt.Errorf("release %s: %w", op.Cause, err))
			}
		}
	}
	return errors.Join(errs...)
}

// release removes the volume of a deleted claim, unless the claim was
// applied again since the sweep read the records: its volume, data
// included, is then the live claim's again (README: "Applying the claim
// again before the volume is gone binds the same volume"), and never
// under a create in flight that mounts it (ClaimVolumes).
func (s *ClaimSweep) release(ctx context.Context, op ClaimOp) error {
	name := op.Volume.Name()
	return s.Volumes.Release(name, func(inUse bool) error {
		if s.Store == nil {
			return nil
		}
		if inUse {
			// A create that mounts it is under way: that container will be
			// its user, and the next sweep judges again.
			s.Log.Info("volume of a deleted persistentvolumeclaim kept: a container that mounts it is being created", "volume", name)
			return nil
		}
		if _, deleted, err := s.Store.LookupClaim(op.Volume.Namespace, op.Volume.Claim); err != nil || !deleted {
			// Live again, or no longer known at all (its volume is then an
			// unknown claim's: never removed), or unreadable.
			s.Log.Info("volume of a persistentvolumeclaim kept: the claim is no longer a deleted one", "volume", name, "cause", op.Cause)
			return nil
		}
		s.Log.Info("removing the volume of a deleted persistentvolumeclaim", "volume", name, "cause", op.Cause)
		return s.Docker.RemoveVolume(ctx, name)
	})
}

// note logs a volume left in place once per distinct reason.
func (s *ClaimSweep) note(n ClaimNote, msg string) {
	key := n.Volume + ":" + n.Why
	s.mu.Lock()
	first := !s.noted[key]
	if s.noted == nil {
		s.noted = map[string]bool{}
	}
	s.noted[key] = true
	s.mu.Unlock()
	if first {
		s.Log.Warn(msg, "volume", n.Volume, "why", n.Why)
	}
}

// awaitUsers remembers the owners whose containers keep the protected
// volumes, so that the sync which sees the last of them gone can queue
// the sweep that releases the volume (UsersGone), rather than leaving it
// to the next periodic resync.
func (s *ClaimSweep) awaitUsers(protected []ClaimNote, cs []dockerx.Container) {
	keep := map[string]bool{}
	for _, n := range protected {
		keep[n.Volume] = true
	}
	waiters := map[string]bool{}
	for _, ct := range cs {
		for _, v := range ct.Volumes {
			if keep[v] {
				waiters[s.Owner(ct)] = true
			}
		}
	}
	s.mu.Lock()
	s.waiters = waiters
	s.mu.Unlock()
}

// UsersGone reports, once, that owner key, which kept the volume of a
// deleted claim, has no container left that mounts a claim (observed:
// its containers): its controller then queues the sweep.
func (s *ClaimSweep) UsersGone(key string, observed []dockerx.Container) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	gone := s.waiters[key] && !MountsClaims(s.Instance, observed)
	if gone {
		delete(s.waiters, key)
	}
	return gone
}

// The store is the claims' lister a controller is given.
var _ ClaimLister = (*store.Store)(nil)
