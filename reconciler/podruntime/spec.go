package podruntime

import (
	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// OwnerRef names the object a pod belongs to, as a pod's
// metadata.ownerReferences entry does: data, never a kind the runtime
// knows anything about.
type OwnerRef struct {
	Kind string // e.g. "ReplicaSet", "StatefulSet", "Job"
	Name string
	UID  string
}

// PodSpec is a pod a workload controller wants to exist: what it hands
// the runtime. The runtime makes it real (holder, members, init order,
// sidecars, env and files, claims, probes and hooks, restarts under
// RestartPolicy) and keeps it so until the controller stops asking for it;
// the controller reads back PodStatus. Nothing in it names a workload kind
// but Owner.Kind, which the runtime only records.
type PodSpec struct {
	Namespace string // "" is "default"
	Name      string // the pod's name, also its hostname unless Identity says otherwise
	// Owner is the pod's owner; its UID, when set, is the incarnation
	// the containers created for the pod are labelled with instead of
	// the Sync's (SyncInput.Owner): a pod is its own incarnation's
	// whoever keeps it (an orphan, kept under its keeper's key).
	Owner OwnerRef
	// Template is the pod template the pod runs and TemplateHash its
	// manifests.TemplateHash (the io.dockctl.template-hash label: a
	// container of another hash is another pod).
	Template     *manifests.PodTemplateSpec
	TemplateHash string
	// RestartPolicy overrides the template's restartPolicy when set (a
	// kind whose pods run to completion sets OnFailure or Never).
	RestartPolicy string
	Identity      Identity
	// Refused, when set, says why the pod's template may not be created
	// or started from (a privilege gate, docs/design.md §13, refuses a
	// revision it is kept at): what exists of the pod is kept as it is,
	// nothing of it is created or started, and Sync returns the reason.
	Refused string
	// ContainerName, when set, is the Docker name of the pod's holder (or
	// its one container) when it is not PodContainerName's: a pod its
	// owner's controller made under a name of its own (a Deployment's
	// replica, dockerx.ContainerName) and another keeps as it runs (an
	// orphan, docs/design.md §17.1). "": dockerx.PodContainerName.
	ContainerName string
}

// DockerName is the Docker name of the holder (or the one container) of
// pod s of namespace ns of instance.
func (s *PodSpec) DockerName(instance, ns string) string {
	if s.ContainerName != "" {
		return s.ContainerName
	}
	return dockerx.PodContainerName(instance, ns, s.Name)
}

// Identity is what a kind that gives its pods a stable identity sets (a
// StatefulSet's ordinal, hostname and subdomain); the zero value is a pod
// named and reached by its name alone.
type Identity struct {
	// Ordinal is the pod's index among its owner's pods, when HasOrdinal.
	Ordinal    int
	HasOrdinal bool
	// Hostname and Subdomain are spec.hostname and spec.subdomain: the
	// pod is <hostname>.<subdomain>.<namespace>.svc in the cluster DNS.
	Hostname, Subdomain string
}

// EffectiveRestartPolicy is the policy the runtime applies: RestartPolicy,
// else the template's, else Always.
func (s *PodSpec) EffectiveRestartPolicy() string {
	switch {
	case s.RestartPolicy != "":
		return s.RestartPolicy
	case s.Template != nil && s.Template.Spec.RestartPolicy != "":
		return s.Template.Spec.RestartPolicy
	}
	return manifests.RestartAlways
}
