package reconciler

import "github.com/dockctl/dockctl/reconciler/podruntime"

// ReasonCreateContainerConfigError is kubelet's reason for a container it
// will not create from its configuration: here, runAsNonRoot refused by
// the image's user (the pod runtime's CheckRunAsNonRoot, run by its
// executor before a revision's creates).
const ReasonCreateContainerConfigError = podruntime.ReasonCreateContainerConfigError
