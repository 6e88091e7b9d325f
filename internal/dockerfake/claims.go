package dockerfake

import (
	"context"
	"fmt"
	"slices"

	"github.com/dockctl/dockctl/dockerx"
)

// CreateClaimVolume creates a claim's volume as dockerx.Client does: named
// dockerx.ClaimVolumeName(…), labelled dockerx.ClaimVolumeLabels(req). A
// volume of that name that exists is Docker's answer: accepted only when
// its labels are the claim's, otherwise an error wrapping ErrConflict
// (dockerx.ClaimAdoptionError). Counted as "volume:create".
func (e *Engine) CreateClaimVolume(ctx context.Context, req dockerx.ClaimVolumeRequest) (string, error) {
	if req.Instance == "" || req.Claim == "" {
		return "", fmt.Errorf("create claim volume: instance and claim are required, have %q, %q", req.Instance, req.Claim)
	}
	name := req.Name()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls["volume:create"]++
	if e.down {
		return "", fmt.Errorf("create volume %s: %w", name, dockerx.ErrUnreachable)
	}
	if e.volumes == nil {
		e.volumes = map[string]*fakeVolume{}
	}
	if fv := e.volumes[name]; fv != nil {
		if !dockerx.IsClaimVolumeOf(fv.v.Labels, req) {
			return "", fmt.Errorf("create volume for persistentvolumeclaim %q: %w", req.Claim, dockerx.ClaimAdoptionError(name, fv.v.Labels))
		}
		return name, nil
	}
	e.volumes[name] = &fakeVolume{v: volumeOf(name, dockerx.ClaimVolumeLabels(req))}
	return name, nil
}

// mountedLocked returns the named volumes container id mounts, sorted (a
// list answer's Mounts), nil for none.
func (e *Engine) mountedLocked(id string) []string {
	if len(e.mounts[id]) == 0 {
		return nil
	}
	out := slices.Clone(e.mounts[id])
	slices.Sort(out)
	return out
}
