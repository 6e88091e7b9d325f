package podruntime

import (
	"context"
	"fmt"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// CreateInputs fills what the create of op's container needs from outside
// its template: the image's user (when the template sets runAsGroup
// without runAsUser, dockerx.NeedsImageUser: Docker takes a group only
// with a user, and the kubelet takes the image's) and a Localhost seccomp
// profile's content, read where the controller runs from profilePath's
// path (manifests.LocalhostProfilePath, which the privilege gate allowed
// as a hostPath). A holder, or an op naming no template, needs neither.
func CreateInputs(ctx context.Context, d ImageUserDocker, profilePath func(string) string, req *dockerx.CreateRequest, op Op) error {
	if op.Role == dockerx.RoleHolder || op.From == nil {
		return nil
	}
	ps := &op.From.Template.Spec
	ctr := ps.FindContainer(op.Container)
	if op.Container == "" && len(ps.Containers) > 0 {
		ctr = &ps.Containers[0]
	}
	if ctr == nil {
		return nil // BuildConfig reports it
	}
	if e := manifests.EffectiveSecurityContext(ps, ctr); e.RunAsUser == nil && e.RunAsGroup != nil {
		u, err := d.ImageUser(ctx, ctr.Image)
		if err != nil {
			return fmt.Errorf("create %s: inspect image %s: %w", op.Name, ctr.Image, err)
		}
		req.ImageUser = u
	}
	p := dockerx.LocalhostProfile(ps, ctr)
	if p == "" {
		return nil
	}
	content, err := ReadSeccompProfile(profilePath(p))
	if err != nil {
		return fmt.Errorf("create %s: seccomp profile: %w", op.Name, err)
	}
	req.SeccompProfile = content
	return nil
}
