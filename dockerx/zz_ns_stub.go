package dockerx

import "github.com/dockctl/dockctl/manifests"

// Namespace support that helper "ns" needed before helper "dx" landed
// (svc.md, "dockerx API additions"): the label, and the namespace of a
// create request. The fields Container.Namespace, Event.Namespace,
// CreateRequest.Namespace, Volume.Namespace and VolumeRequest.Namespace
// live next to their structs' other fields.

// LabelNamespace is the namespace of a Docker object dockctl made (DESIGN
// §8); absent on objects of earlier releases, which are in "default". Read
// it with ParseNamespace.
const LabelNamespace = "io.dockctl.namespace"

// namespace is the namespace req's containers get: req.Namespace, else
// the deployment's own.
func (req CreateRequest) namespace() string {
	if req.Namespace == "" && req.Deployment != nil {
		return req.Deployment.Metadata.NamespaceOrDefault()
	}
	return orDefault(req.Namespace)
}

// orDefault reads "" as the default namespace.
func orDefault(namespace string) string {
	if namespace == "" {
		return manifests.DefaultNamespace
	}
	return namespace
}
