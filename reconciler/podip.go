package reconciler

import (
	"context"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/store"
)

// assignPodIP gives a pod the Deployment executor creates its
// status.podIP address: the pod runtime's PodIPs.Assign, with this
// controller's Docker and the holders the plan observed.
func (c *Controller) assignPodIP(ctx context.Context, in PlanInput, op Op, req *dockerx.CreateRequest, network *store.NetworkStatus) (ip string, release func(), err error) {
	return c.podIPs.Assign(ctx, c.docker, c.opts.Instance, op, req, network, func(uid string) *dockerx.Container {
		for _, p := range in.Pods {
			if p.UID == uid && p.Holder != nil {
				return p.Holder
			}
		}
		return nil
	})
}
