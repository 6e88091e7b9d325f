package manifests

// LocalObjectReference names an object in the referring object's
// namespace, as Kubernetes' core/v1 LocalObjectReference.
//
// spec.imagePullSecrets is a list of them. As the API server, dockctl
// accepts any name there (the strict decoder refuses any other key): a
// name that names no Secret, or an empty one, is skipped when pulling,
// with a warning, as the kubelet does.
type LocalObjectReference struct {
	Name string `json:"name,omitempty"`
}
