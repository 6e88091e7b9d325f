package reconciler

import (
	"context"
	"fmt"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// createInputs fills what a create needs from outside the template: the
// image's user (setImageUser) and a Localhost seccomp profile's content,
// read where the controller runs from manifests.LocalhostProfilePath —
// which the privilege gate allowed (--allow-host-path), as a hostPath.
func (c *Controller) createInputs(ctx context.Context, req *dockerx.CreateRequest, op Op) error {
	if err := c.setImageUser(ctx, req, op); err != nil {
		return err
	}
	if op.Role == dockerx.RoleHolder || op.From == nil {
		return nil
	}
	ps := &op.From.Template.Spec
	ctr := ps.FindContainer(op.Container)
	if op.Container == "" && len(ps.Containers) > 0 {
		ctr = &ps.Containers[0]
	}
	if ctr == nil {
		return nil
	}
	p := dockerx.LocalhostProfile(ps, ctr)
	if p == "" {
		return nil
	}
	content, err := podruntime.ReadSeccompProfile(profilePath(p))
	if err != nil {
		return fmt.Errorf("create %s: seccomp profile: %w", op.Name, err)
	}
	req.SeccompProfile = content
	return nil
}

// profilePath is manifests.LocalhostProfilePath; tests point it elsewhere.
var profilePath = manifests.LocalhostProfilePath
