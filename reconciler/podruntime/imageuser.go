package podruntime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// ImageUserDocker is what the runAsNonRoot check needs of Docker: the
// User of a present image.
type ImageUserDocker interface {
	ImageUser(ctx context.Context, ref string) (string, error)
}

// NonRootRefusal is the first refusal of CheckRunAsNonRoot, as the
// owner's status reports it: ConfigError when runAsNonRoot refused the
// user (kubelet's CreateContainerConfigError), else an image could not be
// inspected (a failed create).
type NonRootRefusal struct {
	ConfigError bool
	Message     string
}

// CheckRunAsNonRoot is kubelet's verifyRunAsNonRoot, run before any create
// of a revision: for every container (init containers and sidecars
// included) whose effective securityContext has runAsNonRoot, the user it
// would run as — its runAsUser, else its image's USER — must be a uid
// other than 0. templates are the revisions to create, by hash; a
// revision that breaks it is added to blocked and none of its containers
// is created (kubelet leaves such a pod waiting, nothing of it running);
// podName names a revision's first pod for kubelet's message. The images
// are present; a revision already in blocked (its image missing, say) is
// skipped. It returns the first refusal and every error.
func CheckRunAsNonRoot(ctx context.Context, docker ImageUserDocker, templates map[string]*manifests.PodTemplateSpec, podName func(hash string) string, blocked map[string]bool) (NonRootRefusal, error) {
	var fail NonRootRefusal
	var errs []error
	users := map[string]string{} // image → its User, inspected once
	for _, hash := range slices.Sorted(maps.Keys(templates)) {
		if blocked[hash] {
			continue
		}
		ps := &templates[hash].Spec
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
					if u, err = docker.ImageUser(ctx, ctr.Image); err != nil {
						blocked[hash] = true
						err = fmt.Errorf("inspect image %s of container %s: %w", ctr.Image, ctr.Name, err)
						if len(errs) == 0 {
							fail = NonRootRefusal{Message: err.Error()}
						}
						errs = append(errs, err)
						break
					}
					users[ctr.Image] = u
				}
				user = u
			}
			if err := dockerx.VerifyRunAsNonRoot(e, user, podName(hash), ctr.Name); err != nil {
				blocked[hash] = true
				if len(errs) == 0 {
					fail = NonRootRefusal{ConfigError: true, Message: err.Error()}
				}
				errs = append(errs, err)
				break
			}
		}
	}
	return fail, errors.Join(errs...)
}
