package reconciler

import (
	"context"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// createInputs fills what a create needs from outside the template (the
// image's user, a Localhost seccomp profile's content): the pod
// runtime's CreateInputs, with this controller's Docker and profilePath.
func (c *Controller) createInputs(ctx context.Context, req *dockerx.CreateRequest, op Op) error {
	return podruntime.CreateInputs(ctx, c.docker, profilePath, req, op)
}

// profilePath is manifests.LocalhostProfilePath; tests point it elsewhere.
var profilePath = manifests.LocalhostProfilePath
