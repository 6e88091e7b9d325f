package manifests

import (
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The workload kinds beyond Deployment (docs/design.md, workload kinds):
// apps/v1 StatefulSet, DaemonSet and ReplicaSet, batch/v1 Job and CronJob,
// and the standalone core/v1 Pod. As the Deployment's, the types mirror
// Kubernetes' field names and JSON shape, hold the subset with a meaning on
// one host (a field Kubernetes has and these lack is refused as unsupported,
// never dropped), and every pod template is the Deployment's PodTemplateSpec,
// validated, defaulted, gated and hashed by the same code.
//
// apply serves every one of them (servedWorkloadKinds).

const (
	BatchAPIVersion = "batch/v1"

	KindStatefulSet = "StatefulSet"
	KindDaemonSet   = "DaemonSet"
	KindReplicaSet  = "ReplicaSet"
	KindJob         = "Job"
	KindCronJob     = "CronJob"
	KindPod         = "Pod"

	// StatefulSet podManagementPolicy.
	PodManagementOrderedReady = "OrderedReady"
	PodManagementParallel     = "Parallel"
	// StatefulSet and DaemonSet updateStrategy.type (with
	// StrategyRollingUpdate).
	StrategyOnDelete = "OnDelete"
	// StatefulSet persistentVolumeClaimRetentionPolicy.
	ClaimRetain = "Retain"
	ClaimDelete = "Delete"

	// Pod restartPolicy.
	RestartAlways    = "Always"
	RestartOnFailure = "OnFailure"
	RestartNever     = "Never"

	// Job completionMode.
	CompletionNonIndexed = "NonIndexed"
	CompletionIndexed    = "Indexed"

	// CronJob concurrencyPolicy.
	ConcurrencyAllow   = "Allow"
	ConcurrencyForbid  = "Forbid"
	ConcurrencyReplace = "Replace"

	// Job podFailurePolicy rule actions and exit-code operators.
	PodFailureFailJob   = "FailJob"
	PodFailureFailIndex = "FailIndex"
	PodFailureIgnore    = "Ignore"
	PodFailureCount     = "Count"
	ExitCodesIn         = "In"
	ExitCodesNotIn      = "NotIn"
)

// StatefulSet is an apps/v1 StatefulSet: pods NAME-0…NAME-(N-1) with a
// stable identity and a claim per pod from each volumeClaimTemplate.
type StatefulSet struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   ObjectMeta      `json:"metadata"`
	Spec       StatefulSetSpec `json:"spec"`
}

type StatefulSetSpec struct {
	Replicas             *int32                  `json:"replicas,omitempty"`
	Selector             *LabelSelector          `json:"selector,omitempty"`
	Template             PodTemplateSpec         `json:"template"`
	VolumeClaimTemplates []PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`
	// ServiceName names the headless Service that gives each pod its
	// DNS name (NAME-i.SERVICE.NS.svc.cluster.local); optional (as in
	// k8s.io/api v0.34).
	ServiceName                          string                                           `json:"serviceName,omitempty"`
	PodManagementPolicy                  string                                           `json:"podManagementPolicy,omitempty"`
	UpdateStrategy                       StatefulSetUpdateStrategy                        `json:"updateStrategy,omitzero"`
	RevisionHistoryLimit                 *int32                                           `json:"revisionHistoryLimit,omitempty"`
	MinReadySeconds                      int32                                            `json:"minReadySeconds,omitempty"`
	PersistentVolumeClaimRetentionPolicy *StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
	Ordinals                             *StatefulSetOrdinals                             `json:"ordinals,omitempty"`
}

type StatefulSetUpdateStrategy struct {
	Type          string                            `json:"type,omitempty"`
	RollingUpdate *RollingUpdateStatefulSetStrategy `json:"rollingUpdate,omitempty"`
}

type RollingUpdateStatefulSetStrategy struct {
	Partition      *int32              `json:"partition,omitempty"`
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

type StatefulSetPersistentVolumeClaimRetentionPolicy struct {
	WhenDeleted string `json:"whenDeleted,omitempty"`
	WhenScaled  string `json:"whenScaled,omitempty"`
}

type StatefulSetOrdinals struct {
	Start int32 `json:"start,omitempty"`
}

// DaemonSet is an apps/v1 DaemonSet: on one host, the only node, one pod.
type DaemonSet struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Metadata   ObjectMeta    `json:"metadata"`
	Spec       DaemonSetSpec `json:"spec"`
}

type DaemonSetSpec struct {
	Selector             *LabelSelector          `json:"selector,omitempty"`
	Template             PodTemplateSpec         `json:"template"`
	UpdateStrategy       DaemonSetUpdateStrategy `json:"updateStrategy,omitzero"`
	MinReadySeconds      int32                   `json:"minReadySeconds,omitempty"`
	RevisionHistoryLimit *int32                  `json:"revisionHistoryLimit,omitempty"`
}

type DaemonSetUpdateStrategy struct {
	Type          string                  `json:"type,omitempty"`
	RollingUpdate *RollingUpdateDaemonSet `json:"rollingUpdate,omitempty"`
}

type RollingUpdateDaemonSet struct {
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	MaxSurge       *intstr.IntOrString `json:"maxSurge,omitempty"`
}

// ReplicaSet is a standalone apps/v1 ReplicaSet: replicas kept, no rollout.
type ReplicaSet struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   ObjectMeta     `json:"metadata"`
	Spec       ReplicaSetSpec `json:"spec"`
}

type ReplicaSetSpec struct {
	Replicas        *int32          `json:"replicas,omitempty"`
	Selector        *LabelSelector  `json:"selector,omitempty"`
	Template        PodTemplateSpec `json:"template"`
	MinReadySeconds int32           `json:"minReadySeconds,omitempty"`
}

// Job is a batch/v1 Job. Its selector is the one the Job controller
// generates (manualSelector is not supported), so the manifest has none.
type Job struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       JobSpec    `json:"spec"`
}

type JobSpec struct {
	Parallelism             *int32            `json:"parallelism,omitempty"`
	Completions             *int32            `json:"completions,omitempty"`
	ActiveDeadlineSeconds   *int64            `json:"activeDeadlineSeconds,omitempty"`
	PodFailurePolicy        *PodFailurePolicy `json:"podFailurePolicy,omitempty"`
	BackoffLimit            *int32            `json:"backoffLimit,omitempty"`
	BackoffLimitPerIndex    *int32            `json:"backoffLimitPerIndex,omitempty"`
	MaxFailedIndexes        *int32            `json:"maxFailedIndexes,omitempty"`
	Template                PodTemplateSpec   `json:"template"`
	TTLSecondsAfterFinished *int32            `json:"ttlSecondsAfterFinished,omitempty"`
	CompletionMode          *string           `json:"completionMode,omitempty"`
	Suspend                 *bool             `json:"suspend,omitempty"`
}

type PodFailurePolicy struct {
	Rules []PodFailurePolicyRule `json:"rules"`
}

type PodFailurePolicyRule struct {
	Action          string                                   `json:"action"`
	OnExitCodes     *PodFailurePolicyOnExitCodesRequirement  `json:"onExitCodes,omitempty"`
	OnPodConditions []PodFailurePolicyOnPodConditionsPattern `json:"onPodConditions,omitempty"`
}

type PodFailurePolicyOnExitCodesRequirement struct {
	ContainerName *string `json:"containerName,omitempty"`
	Operator      string  `json:"operator"`
	Values        []int32 `json:"values"`
}

type PodFailurePolicyOnPodConditionsPattern struct {
	Type   string `json:"type"`
	Status string `json:"status,omitempty"`
}

// CronJob is a batch/v1 CronJob; its schedule is read by
// internal/cronschedule.
type CronJob struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Metadata   ObjectMeta  `json:"metadata"`
	Spec       CronJobSpec `json:"spec"`
}

type CronJobSpec struct {
	Schedule                   string          `json:"schedule"`
	TimeZone                   *string         `json:"timeZone,omitempty"`
	StartingDeadlineSeconds    *int64          `json:"startingDeadlineSeconds,omitempty"`
	ConcurrencyPolicy          string          `json:"concurrencyPolicy,omitempty"`
	Suspend                    *bool           `json:"suspend,omitempty"`
	JobTemplate                JobTemplateSpec `json:"jobTemplate"`
	SuccessfulJobsHistoryLimit *int32          `json:"successfulJobsHistoryLimit,omitempty"`
	FailedJobsHistoryLimit     *int32          `json:"failedJobsHistoryLimit,omitempty"`
}

type JobTemplateSpec struct {
	Metadata TemplateMeta `json:"metadata,omitzero"`
	Spec     JobSpec      `json:"spec"`
}

// Pod is a standalone core/v1 Pod, run once with its restartPolicy.
type Pod struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       PodSpec    `json:"spec"`
}

// Workload is an object of a kind that runs pods from a template: the seam
// the pod runtime, the privilege gates and the CLI see every kind through.
type Workload interface {
	WorkloadKind() string
	ObjectMeta() *ObjectMeta
	// PodTemplate returns the pod template and its path in the object.
	// A Pod's is a view of its own metadata and spec (path ""): changes
	// to it do not reach the Pod.
	PodTemplate() (*PodTemplateSpec, string)
}

func (s *StatefulSet) WorkloadKind() string    { return KindStatefulSet }
func (s *StatefulSet) ObjectMeta() *ObjectMeta { return &s.Metadata }
func (s *StatefulSet) PodTemplate() (*PodTemplateSpec, string) {
	return &s.Spec.Template, "spec.template"
}

func (d *DaemonSet) WorkloadKind() string    { return KindDaemonSet }
func (d *DaemonSet) ObjectMeta() *ObjectMeta { return &d.Metadata }
func (d *DaemonSet) PodTemplate() (*PodTemplateSpec, string) {
	return &d.Spec.Template, "spec.template"
}

func (r *ReplicaSet) WorkloadKind() string    { return KindReplicaSet }
func (r *ReplicaSet) ObjectMeta() *ObjectMeta { return &r.Metadata }
func (r *ReplicaSet) PodTemplate() (*PodTemplateSpec, string) {
	return &r.Spec.Template, "spec.template"
}

func (j *Job) WorkloadKind() string    { return KindJob }
func (j *Job) ObjectMeta() *ObjectMeta { return &j.Metadata }
func (j *Job) PodTemplate() (*PodTemplateSpec, string) {
	return &j.Spec.Template, "spec.template"
}

func (c *CronJob) WorkloadKind() string    { return KindCronJob }
func (c *CronJob) ObjectMeta() *ObjectMeta { return &c.Metadata }
func (c *CronJob) PodTemplate() (*PodTemplateSpec, string) {
	return &c.Spec.JobTemplate.Spec.Template, "spec.jobTemplate.spec.template"
}

func (p *Pod) WorkloadKind() string    { return KindPod }
func (p *Pod) ObjectMeta() *ObjectMeta { return &p.Metadata }
func (p *Pod) PodTemplate() (*PodTemplateSpec, string) {
	return &PodTemplateSpec{Metadata: TemplateMeta{Labels: p.Metadata.Labels, Annotations: p.Metadata.Annotations}, Spec: p.Spec}, ""
}

// TemplateHash is the StatefulSet's revision: TemplateHash of its
// defaulted pod template, the Deployment's function, so that the hash rules
// of docs/design.md §8 hold for it (a stored hash never changes across
// releases; ignored fields stay out).
func (s *StatefulSet) TemplateHash() string { return TemplateHash(&s.Spec.Template) }

// TemplateHash is the DaemonSet's revision, as StatefulSet.TemplateHash.
func (d *DaemonSet) TemplateHash() string { return TemplateHash(&d.Spec.Template) }

// Replicas returns the desired number of pods (defaulted to 1).
func (s *StatefulSet) Replicas() int32 { return replicasOr1(s.Spec.Replicas) }

// Replicas returns the desired number of pods (defaulted to 1).
func (r *ReplicaSet) Replicas() int32 { return replicasOr1(r.Spec.Replicas) }

func replicasOr1(r *int32) int32 {
	if r == nil {
		return DefaultReplicas
	}
	return *r
}
