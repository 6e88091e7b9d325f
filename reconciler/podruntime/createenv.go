package podruntime

import (
	"fmt"
	"maps"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// A create's environment (docs/design.md §17): what the downward API's
// fieldRefs and resourceFieldRefs read of the pod a container is created
// in, and the container's variables resolved from the ConfigStore and the
// Services, as the kubelet builds them at each container start. For an
// executor's hooks (ExecHooks), whose owner knows the pod being made.

// CreatePod is the pod a container is created in, as its owner names it.
type CreatePod struct {
	Name, Namespace, UID string
	// Hash is the pod-template-hash label the pod carries.
	Hash     string
	Template *manifests.PodTemplateSpec
	// HostIP is the host's address as the pod reaches it; PodIP the
	// pod's address on the network it is created on ("" none: off the
	// instance network); AssignedIP, when set, the address assigned to
	// the pod before the create (PodIPs), which both give way to.
	HostIP, PodIP, AssignedIP string
	// Host is the Docker host's name and capacity (HostInfoCache).
	Host dockerx.HostInfo
}

// Identity is what fieldRefs read of the pod: its labels are the
// template's with pod-template-hash, as a workload controller labels its
// pods; a pod on the host's network has the host's address.
func (p CreatePod) Identity() PodIdentity {
	t := p.Template
	labels := maps.Clone(t.Metadata.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels["pod-template-hash"] = p.Hash
	pod := PodIdentity{Name: p.Name, Namespace: p.Namespace, UID: p.UID, Labels: labels, Annotations: t.Metadata.Annotations,
		ServiceAccountName: "default", HostIP: p.HostIP, PodIP: p.PodIP}
	if t.Spec.HostNetwork {
		pod.PodIP = pod.HostIP // the host's network: the pod's address is the host's
	}
	if p.AssignedIP != "" {
		pod.PodIP = p.AssignedIP
	}
	pod.NodeName, pod.NodeCPUs, pod.NodeMemory = p.Host.Name, int64(p.Host.CPUs), p.Host.Memory
	return pod
}

// CreateEnv resolves the environment of container name of pod p's
// template ("" its first container) from cs and the Services' variables.
// The kubelet reports each envFrom source's skipped keys on the pod, at
// each container start: an InvalidEnvironmentVariableNames event on ref.
func CreateEnv(p CreatePod, name string, cs ConfigStore, services map[string]string, rec Recorder, ref store.InvolvedObject) ([]string, error) {
	ps := &p.Template.Spec
	ctr, err := CreateContainer(ps, name)
	if err != nil {
		return nil, err
	}
	env, err := ResolveEnvWithServices(ps, ctr, p.Identity(), cs, services)
	if err != nil {
		return nil, err
	}
	for _, sk := range env.Skipped {
		rec.Event(ref, store.EventWarning, ReasonInvalidEnvNames, sk.Message())
	}
	return env.Vars, nil
}

// CreateContainer is container name of pod spec ps ("" its first
// container), or an error naming it when the template has none of that
// name. An owner checks it before it asks anything of the host for the
// pod (CreatePod.Host): a create the template refuses costs no Docker call.
func CreateContainer(ps *manifests.PodSpec, name string) (*manifests.Container, error) {
	ctr := ps.FindContainer(name)
	if name == "" && len(ps.Containers) > 0 {
		ctr = &ps.Containers[0]
	}
	if ctr == nil {
		return nil, fmt.Errorf("no container %q in the template", name)
	}
	return ctr, nil
}
