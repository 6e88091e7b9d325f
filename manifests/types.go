package manifests

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The types below mirror the field names and JSON shape of Kubernetes'
// apps/v1 Deployment so that a manifest runs unchanged on a cluster. They hold
// only the subset dockctl supports; a field that Kubernetes has and dockctl
// lacks is rejected by the decoder as unsupported rather than silently dropped.
//
// Every optional field is omitempty and pointer-or-zero, so that the template
// hash (which serialises the defaulted template) does not change when a later
// release adds a field that old manifests leave unset. Struct-valued fields
// use omitzero (encoding/json ignores omitempty on structs) so that printed
// manifests carry no "resources: {}" or zero timestamps.

const (
	APIVersion = "apps/v1"
	Kind       = "Deployment"

	StrategyRollingUpdate = "RollingUpdate"
	StrategyRecreate      = "Recreate"

	PullAlways       = "Always"
	PullIfNotPresent = "IfNotPresent"
	PullNever        = "Never"

	// AnnotationChangeCause is shown by `rollout history`.
	AnnotationChangeCause = "kubernetes.io/change-cause"
	// AnnotationRestartedAt is set on the template by `rollout restart`.
	AnnotationRestartedAt = "kubectl.kubernetes.io/restartedAt"
	// DockerAnnotationPrefix marks Docker-only settings on the pod template.
	DockerAnnotationPrefix = "dockctl.io/"
	// AnnotationNetwork names the Docker network the containers join.
	AnnotationNetwork = "dockctl.io/network"
)

// TemplateAnnotations are the dockctl.io/ annotations dockctl knows. All are
// read from the pod template, so that they are part of the template hash.
// Validation refuses any other dockctl.io/ key, and these on the
// Deployment's own metadata, so that a typo is an error instead of a setting
// silently ignored: a feature that adds an annotation adds it here.
var TemplateAnnotations = map[string]bool{
	AnnotationNetwork: true,
}

// Deployment is an apps/v1 Deployment, restricted to what dockctl supports.
type Deployment struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   ObjectMeta        `json:"metadata"`
	Spec       DeploymentSpec    `json:"spec"`
	Status     *DeploymentStatus `json:"status,omitempty"`
}

type ObjectMeta struct {
	Name        string            `json:"name,omitempty"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// Generation is server-set: it is ignored on input and filled from the
	// state directory on output.
	Generation        int64      `json:"generation,omitempty"`
	CreationTimestamp *time.Time `json:"creationTimestamp,omitempty"`
	// ManagedFields is server-set too: who manages the object, kept by
	// the state directory beside the object (never in it, so no hash
	// depends on it) and filled on output; ignored on input, as the API
	// server ignores what a client sends there.
	ManagedFields []ManagedFieldsEntry `json:"managedFields,omitempty"`
	// OwnerReferences name the objects this one depends on, as
	// Kubernetes' garbage collector reads them: a Job a CronJob created
	// names the CronJob, and goes with it (docs/design.md §17). Set by
	// dockctl's controllers; ignored on input (serverSet).
	OwnerReferences []OwnerReference `json:"ownerReferences,omitempty"`
}

// OwnerReference is metav1.OwnerReference.
type OwnerReference struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                string `json:"uid,omitempty"`
	Controller         *bool  `json:"controller,omitempty"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty"`
}

// ManagedFieldsEntry is one writer of an object, as in Kubernetes'
// managedFields, without the set of fields: dockctl's managers own whole
// objects.
type ManagedFieldsEntry struct {
	Manager   string     `json:"manager"`
	Operation string     `json:"operation"`
	Time      *time.Time `json:"time,omitempty"`
}

type DeploymentSpec struct {
	Replicas                *int32             `json:"replicas,omitempty"`
	Selector                *LabelSelector     `json:"selector,omitempty"`
	Template                PodTemplateSpec    `json:"template"`
	Strategy                DeploymentStrategy `json:"strategy,omitzero"`
	MinReadySeconds         int32              `json:"minReadySeconds,omitempty"`
	RevisionHistoryLimit    *int32             `json:"revisionHistoryLimit,omitempty"`
	Paused                  bool               `json:"paused,omitempty"`
	ProgressDeadlineSeconds *int32             `json:"progressDeadlineSeconds,omitempty"`
}

type LabelSelector struct {
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

type DeploymentStrategy struct {
	Type          string                   `json:"type,omitempty"`
	RollingUpdate *RollingUpdateDeployment `json:"rollingUpdate,omitempty"`
}

type RollingUpdateDeployment struct {
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	MaxSurge       *intstr.IntOrString `json:"maxSurge,omitempty"`
}

type PodTemplateSpec struct {
	Metadata TemplateMeta `json:"metadata,omitzero"`
	Spec     PodSpec      `json:"spec"`
}

type TemplateMeta struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type PodSpec struct {
	RestartPolicy                 string      `json:"restartPolicy,omitempty"`
	TerminationGracePeriodSeconds *int64      `json:"terminationGracePeriodSeconds,omitempty"`
	HostNetwork                   bool        `json:"hostNetwork,omitempty"`
	HostPID                       bool        `json:"hostPID,omitempty"`
	ShareProcessNamespace         *bool       `json:"shareProcessNamespace,omitempty"`
	Volumes                       []Volume    `json:"volumes,omitempty"`
	InitContainers                []Container `json:"initContainers,omitempty"`
	Containers                    []Container `json:"containers"`
	// Pod fields with a meaning on one host.
	SecurityContext *PodSecurityContext `json:"securityContext,omitempty"`
	HostAliases     []HostAlias         `json:"hostAliases,omitempty"`
	DNSConfig       *PodDNSConfig       `json:"dnsConfig,omitempty"`
	// Hostname and Subdomain are the pod's identity in the cluster DNS
	// (docs/design.md §10): its containers' hostname is Hostname (else
	// the pod's name) and, with a Subdomain, its fully qualified name
	// HOSTNAME.SUBDOMAIN.NS.svc.cluster.local, which the cluster DNS
	// answers while a headless Service named Subdomain selects it, as
	// Kubernetes' DNS specification says.
	Hostname  string `json:"hostname,omitempty"`
	Subdomain string `json:"subdomain,omitempty"`
	// DNSPolicy is "" (ClusterFirst, stored unset: SetDefaults), Default
	// (the host's resolver) or None (dnsConfig alone).
	DNSPolicy string `json:"dnsPolicy,omitempty"`
	// ImagePullSecrets name kubernetes.io/dockerconfigjson Secrets of the
	// pod's namespace whose credentials its image pulls may use
	// (podruntime.PullSecrets).
	ImagePullSecrets []LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// EnableServiceLinks: nil or true gives each container the variables
	// of the Services of its namespace (reconciler/serviceenv.go), as
	// Kubernetes defaults it. Read when a container is created, as the
	// kubelet reads it, and left out of the template hash (hash:"-"):
	// the field was once accepted and dropped, so hashing it would roll
	// out, on upgrade, every Deployment whose manifest sets it.
	EnableServiceLinks *bool `json:"enableServiceLinks,omitempty" hash:"-"`
}

// PodSecurityContext holds the pod-level settings every container inherits
// unless its own SecurityContext overrides them (as Kubernetes).
type PodSecurityContext struct {
	RunAsUser          *int64          `json:"runAsUser,omitempty"`
	RunAsGroup         *int64          `json:"runAsGroup,omitempty"`
	RunAsNonRoot       *bool           `json:"runAsNonRoot,omitempty"`
	SupplementalGroups []int64         `json:"supplementalGroups,omitempty"`
	FSGroup            *int64          `json:"fsGroup,omitempty"`
	SeccompProfile     *SeccompProfile `json:"seccompProfile,omitempty"`
	Sysctls            []Sysctl        `json:"sysctls,omitempty"`
}

type SeccompProfile struct {
	Type             string  `json:"type"` // RuntimeDefault, Unconfined, Localhost
	LocalhostProfile *string `json:"localhostProfile,omitempty"`
}

type Sysctl struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type HostAlias struct {
	IP        string   `json:"ip"`
	Hostnames []string `json:"hostnames,omitempty"`
}

type PodDNSConfig struct {
	Nameservers []string             `json:"nameservers,omitempty"`
	Searches    []string             `json:"searches,omitempty"`
	Options     []PodDNSConfigOption `json:"options,omitempty"`
}

type PodDNSConfigOption struct {
	Name  string  `json:"name,omitempty"`
	Value *string `json:"value,omitempty"`
}

type Volume struct {
	Name     string                `json:"name"`
	HostPath *HostPathVolumeSource `json:"hostPath,omitempty"`
	EmptyDir *EmptyDirVolumeSource `json:"emptyDir,omitempty"`
	// File volumes (docs/design.md §11) and claims (§12); types in
	// config_types.go.
	ConfigMap             *ConfigMapVolumeSource             `json:"configMap,omitempty"`
	Secret                *SecretVolumeSource                `json:"secret,omitempty"`
	Projected             *ProjectedVolumeSource             `json:"projected,omitempty"`
	DownwardAPI           *DownwardAPIVolumeSource           `json:"downwardAPI,omitempty"`
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty"`
}

type HostPathVolumeSource struct {
	Path string `json:"path"`
	Type string `json:"type,omitempty"`
}

type EmptyDirVolumeSource struct {
	Medium    string             `json:"medium,omitempty"`
	SizeLimit *resource.Quantity `json:"sizeLimit,omitempty"`
}

type Container struct {
	Name            string               `json:"name"`
	Image           string               `json:"image"`
	ImagePullPolicy string               `json:"imagePullPolicy,omitempty"`
	Command         []string             `json:"command,omitempty"`
	Args            []string             `json:"args,omitempty"`
	WorkingDir      string               `json:"workingDir,omitempty"`
	Env             []EnvVar             `json:"env,omitempty"`
	Ports           []ContainerPort      `json:"ports,omitempty"`
	Resources       ResourceRequirements `json:"resources,omitzero"`
	VolumeMounts    []VolumeMount        `json:"volumeMounts,omitempty"`
	ReadinessProbe  *Probe               `json:"readinessProbe,omitempty"`
	LivenessProbe   *Probe               `json:"livenessProbe,omitempty"`
	SecurityContext *SecurityContext     `json:"securityContext,omitempty"`
	// Environment from configuration, startup probes, lifecycle hooks,
	// stdin and tty, native sidecars: the rest of core/v1's Container
	// fields with a meaning on one host.
	EnvFrom      []EnvFromSource `json:"envFrom,omitempty"`
	StartupProbe *Probe          `json:"startupProbe,omitempty"`
	Lifecycle    *Lifecycle      `json:"lifecycle,omitempty"`
	Stdin        bool            `json:"stdin,omitempty"`
	StdinOnce    bool            `json:"stdinOnce,omitempty"`
	TTY          bool            `json:"tty,omitempty"`
	// RestartPolicy is only valid on an init container, and only Always:
	// a native sidecar, started in order with the init containers and
	// kept running beside the app containers.
	RestartPolicy string `json:"restartPolicy,omitempty"`
}

type EnvVar struct {
	Name      string        `json:"name"`
	Value     string        `json:"value,omitempty"`
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource is resolved by the controller when it creates a container:
// exactly one field is set.
type EnvVarSource struct {
	FieldRef         *ObjectFieldSelector   `json:"fieldRef,omitempty"`
	ResourceFieldRef *ResourceFieldSelector `json:"resourceFieldRef,omitempty"`
	ConfigMapKeyRef  *ConfigMapKeySelector  `json:"configMapKeyRef,omitempty"`
	SecretKeyRef     *SecretKeySelector     `json:"secretKeyRef,omitempty"`
}

type ObjectFieldSelector struct {
	APIVersion string `json:"apiVersion,omitempty"`
	FieldPath  string `json:"fieldPath"`
}

type ResourceFieldSelector struct {
	ContainerName string             `json:"containerName,omitempty"`
	Resource      string             `json:"resource"`
	Divisor       *resource.Quantity `json:"divisor,omitempty"`
}

type ConfigMapKeySelector struct {
	Name     string `json:"name,omitempty"`
	Key      string `json:"key"`
	Optional *bool  `json:"optional,omitempty"`
}

type SecretKeySelector struct {
	Name     string `json:"name,omitempty"`
	Key      string `json:"key"`
	Optional *bool  `json:"optional,omitempty"`
}

type EnvFromSource struct {
	Prefix       string              `json:"prefix,omitempty"`
	ConfigMapRef *ConfigMapEnvSource `json:"configMapRef,omitempty"`
	SecretRef    *SecretEnvSource    `json:"secretRef,omitempty"`
}

type ConfigMapEnvSource struct {
	Name     string `json:"name,omitempty"`
	Optional *bool  `json:"optional,omitempty"`
}

type SecretEnvSource struct {
	Name     string `json:"name,omitempty"`
	Optional *bool  `json:"optional,omitempty"`
}

type Lifecycle struct {
	PostStart *LifecycleHandler `json:"postStart,omitempty"`
	PreStop   *LifecycleHandler `json:"preStop,omitempty"`
}

// LifecycleHandler is one of exec, httpGet, tcpSocket (deprecated in
// Kubernetes, accepted) or sleep.
type LifecycleHandler struct {
	Exec      *ExecAction      `json:"exec,omitempty"`
	HTTPGet   *HTTPGetAction   `json:"httpGet,omitempty"`
	TCPSocket *TCPSocketAction `json:"tcpSocket,omitempty"`
	Sleep     *SleepAction     `json:"sleep,omitempty"`
}

type SleepAction struct {
	Seconds int64 `json:"seconds"`
}

type ContainerPort struct {
	Name          string `json:"name,omitempty"`
	HostPort      int32  `json:"hostPort,omitempty"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol,omitempty"`
	HostIP        string `json:"hostIP,omitempty"`
}

// ResourceList keys are "cpu" and "memory".
type ResourceList map[string]resource.Quantity

type ResourceRequirements struct {
	Limits   ResourceList `json:"limits,omitempty"`
	Requests ResourceList `json:"requests,omitempty"`
}

type VolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	SubPath   string `json:"subPath,omitempty"`
}

type Probe struct {
	Exec                *ExecAction      `json:"exec,omitempty"`
	HTTPGet             *HTTPGetAction   `json:"httpGet,omitempty"`
	TCPSocket           *TCPSocketAction `json:"tcpSocket,omitempty"`
	GRPC                *GRPCAction      `json:"grpc,omitempty"`
	InitialDelaySeconds int32            `json:"initialDelaySeconds,omitempty"`
	TimeoutSeconds      int32            `json:"timeoutSeconds,omitempty"`
	PeriodSeconds       int32            `json:"periodSeconds,omitempty"`
	SuccessThreshold    int32            `json:"successThreshold,omitempty"`
	FailureThreshold    int32            `json:"failureThreshold,omitempty"`
}

type ExecAction struct {
	Command []string `json:"command,omitempty"`
}

type HTTPGetAction struct {
	Path        string             `json:"path,omitempty"`
	Port        intstr.IntOrString `json:"port"`
	Host        string             `json:"host,omitempty"`
	Scheme      string             `json:"scheme,omitempty"`
	HTTPHeaders []HTTPHeader       `json:"httpHeaders,omitempty"`
}

type HTTPHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type GRPCAction struct {
	Port    int32   `json:"port"`
	Service *string `json:"service,omitempty"`
}

type TCPSocketAction struct {
	Port intstr.IntOrString `json:"port"`
	Host string             `json:"host,omitempty"`
}

type SecurityContext struct {
	Privileged             *bool         `json:"privileged,omitempty"`
	ReadOnlyRootFilesystem *bool         `json:"readOnlyRootFilesystem,omitempty"`
	RunAsUser              *int64        `json:"runAsUser,omitempty"`
	Capabilities           *Capabilities `json:"capabilities,omitempty"`
	// The rest of core/v1's SecurityContext with a meaning on one host.
	RunAsGroup               *int64          `json:"runAsGroup,omitempty"`
	RunAsNonRoot             *bool           `json:"runAsNonRoot,omitempty"`
	AllowPrivilegeEscalation *bool           `json:"allowPrivilegeEscalation,omitempty"`
	SeccompProfile           *SeccompProfile `json:"seccompProfile,omitempty"`
}

type Capabilities struct {
	Add  []string `json:"add,omitempty"`
	Drop []string `json:"drop,omitempty"`
}

// DeploymentStatus is output only. Counts are computed from what Docker
// reports; ObservedGeneration and Conditions come from the controller.
type DeploymentStatus struct {
	ObservedGeneration  int64                 `json:"observedGeneration,omitempty"`
	Replicas            int32                 `json:"replicas"`
	UpdatedReplicas     int32                 `json:"updatedReplicas"`
	ReadyReplicas       int32                 `json:"readyReplicas"`
	AvailableReplicas   int32                 `json:"availableReplicas"`
	UnavailableReplicas int32                 `json:"unavailableReplicas,omitempty"`
	Conditions          []DeploymentCondition `json:"conditions,omitempty"`
}

// Condition types and reasons, as in Kubernetes.
const (
	ConditionAvailable      = "Available"
	ConditionProgressing    = "Progressing"
	ConditionReplicaFailure = "ReplicaFailure"
)

type DeploymentCondition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"` // "True", "False", "Unknown"
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
	LastUpdateTime     time.Time `json:"lastUpdateTime,omitzero"`
	LastTransitionTime time.Time `json:"lastTransitionTime,omitzero"`
}

// Replicas returns the desired replica count (defaulted to 1).
func (d *Deployment) Replicas() int32 {
	if d.Spec.Replicas == nil {
		return DefaultReplicas
	}
	return *d.Spec.Replicas
}

// NeedsHolder reports whether a pod of this spec runs with a holder
// container owning its shared namespaces: it has more than one container,
// init containers included, or volumes that must outlive container
// restarts and be written before its containers start (file volumes).
// A pod of one container without those is that container alone, as every
// replica was before pods (docs/design.md §9).
func NeedsHolder(ps *PodSpec) bool {
	return len(ps.Containers)+len(ps.InitContainers) > 1 || ps.HasFileVolumes()
}

// IsSidecar reports whether an init container is a native sidecar
// (restartPolicy: Always): started in order with the init containers, kept
// running beside the app containers, stopped after them.
func (c *Container) IsSidecar() bool { return c.RestartPolicy == ContainerRestartPolicyAlways }

// HostPort returns the first host port any container of the pod publishes
// (0: none). It is the one home of the hostPort rule: a pod that publishes
// one cannot run twice on one host — validation refuses more than one
// replica, rollouts go without surge, `scale` refuses.
func (ps *PodSpec) HostPort() int32 {
	for _, c := range ps.AllContainers() {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				return p.HostPort
			}
		}
	}
	return 0
}

// ContainerRestartPolicyAlways is the only restartPolicy an init container
// may have.
const ContainerRestartPolicyAlways = "Always"

// AllContainers returns every container of the pod in the order a pod
// starts them: the init containers (sidecars among them) in their order,
// then the app containers in theirs. The pointers are into ps, so a caller
// may change the containers through them.
func (ps *PodSpec) AllContainers() []*Container {
	out := make([]*Container, 0, len(ps.InitContainers)+len(ps.Containers))
	for i := range ps.InitContainers {
		out = append(out, &ps.InitContainers[i])
	}
	for i := range ps.Containers {
		out = append(out, &ps.Containers[i])
	}
	return out
}

// FindContainer returns the container (init or app) of that name, or nil.
// Validation makes names unique across both lists, so there is at most one.
func (ps *PodSpec) FindContainer(name string) *Container {
	for _, c := range ps.AllContainers() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Container returns the pod template's first app container: the only one
// of a pod without a holder (NeedsHolder false). Code that must see every
// container of a pod uses PodSpec.AllContainers.
func (d *Deployment) Container() *Container {
	if len(d.Spec.Template.Spec.Containers) == 0 {
		return &Container{}
	}
	return &d.Spec.Template.Spec.Containers[0]
}
