package manifests

import "k8s.io/apimachinery/pkg/api/resource"

// Kinds of docs/design.md §11 and §12 (core/v1): configuration, secrets and
// storage, with Kubernetes' field names and JSON shape, the subset dockctl
// supports.
const (
	KindConfigMap             = "ConfigMap"
	KindSecret                = "Secret"
	KindPersistentVolumeClaim = "PersistentVolumeClaim"

	SecretTypeOpaque           = "Opaque"
	SecretTypeDockerConfigJSON = "kubernetes.io/dockerconfigjson"
	SecretTypeDockercfg        = "kubernetes.io/dockercfg"
	SecretTypeTLS              = "kubernetes.io/tls"
	SecretTypeBasicAuth        = "kubernetes.io/basic-auth"
	SecretTypeSSHAuth          = "kubernetes.io/ssh-auth"

	// DockerConfigJSONKey is the key of a kubernetes.io/dockerconfigjson
	// Secret, as in Kubernetes.
	DockerConfigJSONKey = ".dockerconfigjson"
)

// ConfigMap is a core/v1 ConfigMap. Data and BinaryData keys are file
// names (Kubernetes' IsConfigMapKey); their sizes together are at most
// 1 MiB, as the API server's limit.
type ConfigMap struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   ObjectMeta        `json:"metadata"`
	Immutable  *bool             `json:"immutable,omitempty"`
	Data       map[string]string `json:"data,omitempty"`
	// BinaryData values are base64 in the manifest ([]byte in JSON).
	BinaryData map[string][]byte `json:"binaryData,omitempty"`
}

// Secret is a core/v1 Secret. StringData is merged into Data when the
// manifest is decoded (as the API server does) and never stored: a stored
// or printed Secret has Data only. Values are never logged, never in an
// error message, an event or a status.
type Secret struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   ObjectMeta        `json:"metadata"`
	Immutable  *bool             `json:"immutable,omitempty"`
	Type       string            `json:"type,omitempty"` // defaulted to Opaque
	Data       map[string][]byte `json:"data,omitempty"`
	StringData map[string]string `json:"stringData,omitempty"`
}

// PersistentVolumeClaim is a core/v1 PersistentVolumeClaim: on one host, a
// named Docker volume owned by the instance (docs/design.md §12).
type PersistentVolumeClaim struct {
	APIVersion string                      `json:"apiVersion"`
	Kind       string                      `json:"kind"`
	Metadata   ObjectMeta                  `json:"metadata"`
	Spec       PersistentVolumeClaimSpec   `json:"spec"`
	Status     *PersistentVolumeClaimState `json:"status,omitempty"`
}

type PersistentVolumeClaimSpec struct {
	AccessModes      []string                   `json:"accessModes,omitempty"`
	Resources        VolumeResourceRequirements `json:"resources,omitzero"`
	StorageClassName *string                    `json:"storageClassName,omitempty"`
	VolumeMode       *string                    `json:"volumeMode,omitempty"`
	Selector         *LabelSelector             `json:"selector,omitempty"`
	VolumeName       string                     `json:"volumeName,omitempty"`
}

type VolumeResourceRequirements struct {
	Limits   map[string]resource.Quantity `json:"limits,omitempty"`
	Requests map[string]resource.Quantity `json:"requests,omitempty"`
}

// PersistentVolumeClaimState is output only: Phase Pending or Bound, the
// Docker volume's name as VolumeName.
type PersistentVolumeClaimState struct {
	Phase       string                       `json:"phase,omitempty"`
	AccessModes []string                     `json:"accessModes,omitempty"`
	Capacity    map[string]resource.Quantity `json:"capacity,omitempty"`
}

// KeyToPath projects one key of a ConfigMap or Secret (or one field of the
// downward API) to a relative path in the volume.
type KeyToPath struct {
	Key  string `json:"key"`
	Path string `json:"path"`
	Mode *int32 `json:"mode,omitempty"`
}

type ConfigMapVolumeSource struct {
	Name        string      `json:"name,omitempty"`
	Items       []KeyToPath `json:"items,omitempty"`
	DefaultMode *int32      `json:"defaultMode,omitempty"`
	Optional    *bool       `json:"optional,omitempty"`
}

type SecretVolumeSource struct {
	SecretName  string      `json:"secretName,omitempty"`
	Items       []KeyToPath `json:"items,omitempty"`
	DefaultMode *int32      `json:"defaultMode,omitempty"`
	Optional    *bool       `json:"optional,omitempty"`
}

type DownwardAPIVolumeFile struct {
	Path             string                 `json:"path"`
	FieldRef         *ObjectFieldSelector   `json:"fieldRef,omitempty"`
	ResourceFieldRef *ResourceFieldSelector `json:"resourceFieldRef,omitempty"`
	Mode             *int32                 `json:"mode,omitempty"`
}

type DownwardAPIVolumeSource struct {
	Items       []DownwardAPIVolumeFile `json:"items,omitempty"`
	DefaultMode *int32                  `json:"defaultMode,omitempty"`
}

type DownwardAPIProjection struct {
	Items []DownwardAPIVolumeFile `json:"items,omitempty"`
}

type ConfigMapProjection struct {
	Name     string      `json:"name,omitempty"`
	Items    []KeyToPath `json:"items,omitempty"`
	Optional *bool       `json:"optional,omitempty"`
}

type SecretProjection struct {
	Name     string      `json:"name,omitempty"`
	Items    []KeyToPath `json:"items,omitempty"`
	Optional *bool       `json:"optional,omitempty"`
}

// VolumeProjection is one source of a projected volume: exactly one field
// set. serviceAccountToken and clusterTrustBundle have no meaning on one
// host and are refused.
type VolumeProjection struct {
	ConfigMap   *ConfigMapProjection   `json:"configMap,omitempty"`
	Secret      *SecretProjection      `json:"secret,omitempty"`
	DownwardAPI *DownwardAPIProjection `json:"downwardAPI,omitempty"`
}

type ProjectedVolumeSource struct {
	Sources     []VolumeProjection `json:"sources"`
	DefaultMode *int32             `json:"defaultMode,omitempty"`
}

type PersistentVolumeClaimVolumeSource struct {
	ClaimName string `json:"claimName"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}
