package reconciler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// ReasonCreateContainerConfigError is kubelet's reason for a container it
// will not create from its configuration: here, runAsNonRoot refused by
// the image's user (checkRunAsNonRoot).
const ReasonCreateContainerConfigError = "CreateContainerConfigError"

// checkRunAsNonRoot is kubelet's verifyRunAsNonRoot, run before any create
// of a revision: for every container (init containers and sidecars
// included) whose effective securityContext has runAsNonRoot, the user it
// would run as — its runAsUser, else its image's USER — must be a uid
// other than 0. A revision that breaks it is added to blocked and none of
// its containers is created (kubelet leaves such a pod waiting, nothing of
// it running); the failure, worded as kubelet's, becomes the ReplicaFailure
// condition. The images are present (ensureImages ran); a revision whose
// image is missing is skipped.
func (c *Controller) checkRunAsNonRoot(ctx context.Context, creates []Op, templates map[string]*manifests.Deployment, blocked map[string]bool) (failure, error) {
	var fail failure
	var errs []error
	users := map[string]string{} // image → its User, inspected once
	for _, hash := range slices.Sorted(maps.Keys(templates)) {
		if blocked[hash] {
			continue
		}
		ps := &templates[hash].Spec.Template.Spec
		for _, ctr := range ps.AllContainers() {
			e := manifests.EffectiveSecurityContext(ps, ctr)
			if e.RunAsNonRoot == nil || !*e.RunAsNonRoot {
				continue
			}
			user := ""
			if e.RunAsUser == nil {
				u, ok := users[ctr.Image]
				if !ok {
					var err error
					if u, err = c.docker.ImageUser(ctx, ctr.Image); err != nil {
						blocked[hash] = true
						err = fmt.Errorf("inspect image %s of container %s: %w", ctr.Image, ctr.Name, err)
						if fail.reason == "" {
							fail = failure{ReasonFailedCreate, err.Error()}
						}
						errs = append(errs, err)
						break
					}
					users[ctr.Image] = u
				}
				user = u
			}
			if err := dockerx.VerifyRunAsNonRoot(e, user, firstPodName(creates, hash), ctr.Name); err != nil {
				blocked[hash] = true
				if fail.reason == "" {
					fail = failure{ReasonCreateContainerConfigError, err.Error()}
				}
				errs = append(errs, err)
				break
			}
		}
	}
	if len(errs) == 0 {
		return failure{}, nil
	}
	return fail, errors.Join(errs...)
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
