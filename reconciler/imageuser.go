package reconciler

import (
	"context"
	"fmt"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// ReasonCreateContainerConfigError is kubelet's reason for a container it
// will not create from its configuration: here, runAsNonRoot refused by
// the image's user (checkRunAsNonRoot).
const ReasonCreateContainerConfigError = "CreateContainerConfigError"

// checkRunAsNonRoot runs podruntime.CheckRunAsNonRoot for the revisions a
// plan creates: a revision that breaks it is added to blocked and none of
// its containers is created; the refusal, worded as kubelet's, becomes the
// ReplicaFailure condition (CreateContainerConfigError, or FailedCreate
// when an image could not be inspected).
func (c *Controller) checkRunAsNonRoot(ctx context.Context, creates []Op, templates map[string]*manifests.Deployment, blocked map[string]bool) (failure, error) {
	tmpls := make(map[string]*manifests.PodTemplateSpec, len(templates))
	for hash, d := range templates {
		tmpls[hash] = &d.Spec.Template
	}
	r, err := podruntime.CheckRunAsNonRoot(ctx, c.docker, tmpls, func(hash string) string { return firstPodName(creates, hash) }, blocked)
	if err == nil {
		return failure{}, nil
	}
	if r.ConfigError {
		return failure{ReasonCreateContainerConfigError, r.Message}, err
	}
	return failure{ReasonFailedCreate, r.Message}, err
}

// firstPodName names, for a message, the first pod of revision hash the creates
// make: a holder pod's name, or a pod without holder's only container.
func firstPodName(creates []Op, hash string) string {
	for _, op := range creates {
		if op.Hash != hash {
			continue
		}
		if op.Pod != nil {
			return op.Pod.Name
		}
		return op.Name
	}
	return hash
}

// setImageUser gives a create the user of its image when the template
// container sets runAsGroup without runAsUser (dockerx.NeedsImageUser):
// Docker takes a group only with a user, and kubelet takes the image's.
func (c *Controller) setImageUser(ctx context.Context, req *dockerx.CreateRequest, op Op) error {
	if op.Role == dockerx.RoleHolder || op.From == nil {
		return nil
	}
	ps := &op.From.Spec.Template.Spec
	ctr := ps.FindContainer(op.Container)
	if op.Container == "" && len(ps.Containers) > 0 {
		ctr = &ps.Containers[0]
	}
	if ctr == nil {
		return nil // BuildConfig reports it
	}
	e := manifests.EffectiveSecurityContext(ps, ctr)
	if e.RunAsUser != nil || e.RunAsGroup == nil {
		return nil
	}
	u, err := c.docker.ImageUser(ctx, ctr.Image)
	if err != nil {
		return fmt.Errorf("create %s: inspect image %s: %w", op.Name, ctr.Image, err)
	}
	req.ImageUser = u
	return nil
}
