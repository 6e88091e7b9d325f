package reconciler

import (
	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// templatePullSecrets returns the pull secrets of pod template d in
// namespace ns, logging what it skipped.
func (c *Controller) templatePullSecrets(ns string, d *dockerx.PodTemplate) []dockerx.RegistryCredential {
	refs := d.Template.Spec.ImagePullSecrets
	if len(refs) == 0 {
		return nil
	}
	creds, skipped := podruntime.PullSecrets(c.opts.Config, ns, refs)
	for _, why := range skipped {
		c.log.Warn("image pull secret not used", "deployment", ns+"/"+d.Owner, "reason", why)
	}
	return creds
}
