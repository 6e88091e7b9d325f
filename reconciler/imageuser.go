package reconciler

import (
	"context"

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
func (c *Controller) checkRunAsNonRoot(ctx context.Context, creates []Op, templates map[string]*dockerx.PodTemplate, blocked map[string]bool) (failure, error) {
	tmpls := make(map[string]*manifests.PodTemplateSpec, len(templates))
	for hash, d := range templates {
		tmpls[hash] = d.Template
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
