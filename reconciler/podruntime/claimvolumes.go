package podruntime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/dockctl/dockctl/dockerx"
)

// ClaimVolumeDocker makes a claim's volume.
type ClaimVolumeDocker interface {
	CreateClaimVolume(ctx context.Context, req dockerx.ClaimVolumeRequest) (string, error)
}

// ClaimVolumes makes the claims' volumes the creates of an executor's wave
// mount, and keeps the release of a deleted claim's volume (the sweep's:
// PlanClaims' OpReleaseClaim) from falling under a create that mounts it
// (docs/design.md §12). The zero value is ready to use.
//
// Invariant: a claim's check-and-create (Ensure) and a release (Release)
// never interleave, and a volume counts as in use from its Ensure until
// the done Ensure returned is called, once the creates that mount it
// ended: a release let go under such a create would have Docker give it a
// new, empty volume of the claim's name.
type ClaimVolumes struct {
	mu       sync.Mutex
	inFlight map[string]int // by volume name
}

// Ensure makes sure every claim the templates to create from mount (by
// template hash) is bound to its volume, the instance's own, before any
// container mounts it (a mount of a missing volume would make one; a mount
// of an existing one would adopt it, whoever made it). It returns the
// template hashes that must not be created from — a claim missing, being
// deleted (ClaimUsable), or whose volume's name is taken — with the
// failure naming the claim.
func (v *ClaimVolumes) Ensure(ctx context.Context, d ClaimVolumeDocker, cs ConfigStore, instance, ns string, templates map[string]*dockerx.PodTemplate) (blocked map[string]bool, fail Failure, done func(), err error) {
	blocked = map[string]bool{}
	var errs []error
	ensured := map[string]error{}
	var held []string
	done = func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		for _, name := range held {
			if v.inFlight[name]--; v.inFlight[name] <= 0 {
				delete(v.inFlight, name)
			}
		}
	}
	for _, hash := range slices.Sorted(maps.Keys(templates)) {
		for _, claim := range TemplateClaims(&templates[hash].Template.Spec) {
			err, seen := ensured[claim]
			if !seen {
				err = v.ensure(ctx, d, cs, instance, ns, claim)
				ensured[claim] = err
				if err == nil {
					held = append(held, dockerx.ClaimVolumeName(instance, ns, claim))
				}
			}
			if err == nil {
				continue
			}
			blocked[hash] = true
			if fail.Reason == "" {
				fail = Failure{ReasonFailedCreate, err.Error()}
			}
			if !seen {
				errs = append(errs, err)
			}
		}
	}
	return blocked, fail, done, errors.Join(errs...)
}

// ensure checks that claim of namespace ns is live and creates its volume
// (a create of the volume it already has is a no-op). A planner creates
// nothing of a revision whose claim is not usable; this check stands for
// a claim deleted since.
func (v *ClaimVolumes) ensure(ctx context.Context, d ClaimVolumeDocker, cs ConfigStore, instance, ns, claim string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := ClaimUsable(cs, ns, claim); err != nil {
		return err
	}
	name, err := d.CreateClaimVolume(ctx, dockerx.ClaimVolumeRequest{Instance: instance, Namespace: ns, Claim: claim})
	if err != nil {
		return fmt.Errorf("persistentvolumeclaim %q: %w", claim, err)
	}
	if v.inFlight == nil {
		v.inFlight = map[string]int{}
	}
	v.inFlight[name]++ // until Ensure's done
	return nil
}

// Release runs release, the release of volume name, told whether a create
// that mounts it is under way (inUse: that container will be its user,
// and the next sweep judges again), never between a claim's check and its
// volume's create.
func (v *ClaimVolumes) Release(name string, release func(inUse bool) error) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return release(v.inFlight[name] > 0)
}
