package manifests

import (
	"maps"
	"math"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Kubernetes' defaults for the workload kinds (k8s.io/kubernetes
// pkg/apis/apps/v1 and pkg/apis/batch/v1 defaults.go: SetDefaults_StatefulSet,
// SetDefaults_DaemonSet, SetDefaults_ReplicaSet, SetDefaults_Job,
// SetDefaults_CronJob; pkg/apis/core/v1: SetDefaults_PodSpec), for the
// fields dockctl supports. Each is idempotent, and runs after validation,
// which judges what the user wrote. Pod templates are defaulted by
// setPodSpecDefaults, the Deployment's.
const (
	DefaultBackoffLimit               = 6
	DefaultSuccessfulJobsHistoryLimit = 3
	DefaultFailedJobsHistoryLimit     = 1
	DefaultDaemonSetMaxUnavailable    = 1
	DefaultDaemonSetMaxSurge          = 0
)

// SetStatefulSetDefaults defaults s as the API server does.
func SetStatefulSetDefaults(s *StatefulSet) {
	sp := &s.Spec
	if sp.Replicas == nil {
		sp.Replicas = ptr[int32](DefaultReplicas)
	}
	if sp.PodManagementPolicy == "" {
		sp.PodManagementPolicy = PodManagementOrderedReady
	}
	if sp.UpdateStrategy.Type == "" {
		sp.UpdateStrategy.Type = StrategyRollingUpdate
	}
	if sp.UpdateStrategy.Type == StrategyRollingUpdate {
		if sp.UpdateStrategy.RollingUpdate == nil {
			sp.UpdateStrategy.RollingUpdate = &RollingUpdateStatefulSetStrategy{}
		}
		if sp.UpdateStrategy.RollingUpdate.Partition == nil {
			sp.UpdateStrategy.RollingUpdate.Partition = ptr[int32](0)
		}
		// maxUnavailable is left unset: Kubernetes defaults it to 1 only
		// under the MaxUnavailableStatefulSet feature gate, and unset
		// means one pod at a time all the same.
	}
	if sp.RevisionHistoryLimit == nil {
		sp.RevisionHistoryLimit = ptr[int32](DefaultRevisionHistoryLimit)
	}
	// StatefulSetAutoDeletePVC (GA): claims are kept unless asked.
	if sp.PersistentVolumeClaimRetentionPolicy == nil {
		sp.PersistentVolumeClaimRetentionPolicy = &StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	rp := sp.PersistentVolumeClaimRetentionPolicy
	if rp.WhenDeleted == "" {
		rp.WhenDeleted = ClaimRetain
	}
	if rp.WhenScaled == "" {
		rp.WhenScaled = ClaimRetain
	}
	setPodSpecDefaults(&sp.Template.Spec)
	for i := range sp.VolumeClaimTemplates {
		SetPVCDefaults(&sp.VolumeClaimTemplates[i])
	}
}

// SetDaemonSetDefaults defaults d as the API server does.
func SetDaemonSetDefaults(d *DaemonSet) {
	sp := &d.Spec
	if sp.UpdateStrategy.Type == "" {
		sp.UpdateStrategy.Type = StrategyRollingUpdate
	}
	if sp.UpdateStrategy.Type == StrategyRollingUpdate {
		if sp.UpdateStrategy.RollingUpdate == nil {
			sp.UpdateStrategy.RollingUpdate = &RollingUpdateDaemonSet{}
		}
		ru := sp.UpdateStrategy.RollingUpdate
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptr(intstr.FromInt32(DefaultDaemonSetMaxUnavailable))
		}
		if ru.MaxSurge == nil {
			ru.MaxSurge = ptr(intstr.FromInt32(DefaultDaemonSetMaxSurge))
		}
	}
	if sp.RevisionHistoryLimit == nil {
		sp.RevisionHistoryLimit = ptr[int32](DefaultRevisionHistoryLimit)
	}
	setPodSpecDefaults(&sp.Template.Spec)
}

// SetReplicaSetDefaults defaults r as the API server does.
func SetReplicaSetDefaults(r *ReplicaSet) {
	if r.Spec.Replicas == nil {
		r.Spec.Replicas = ptr[int32](DefaultReplicas)
	}
	setPodSpecDefaults(&r.Spec.Template.Spec)
}

// SetJobDefaults defaults j as the API server does. A Job without labels
// takes its template's, as SetDefaults_Job does.
func SetJobDefaults(j *Job) {
	if len(j.Metadata.Labels) == 0 && j.Spec.Template.Metadata.Labels != nil {
		j.Metadata.Labels = maps.Clone(j.Spec.Template.Metadata.Labels)
	}
	setJobSpecDefaults(&j.Spec)
}

// setJobSpecDefaults is SetDefaults_Job on the spec. Completions and
// parallelism are both 1 only when both are unset: parallelism alone
// leaves completions unset (a work queue: done when any pod succeeds).
func setJobSpecDefaults(sp *JobSpec) {
	if sp.Completions == nil && sp.Parallelism == nil {
		sp.Completions = ptr[int32](1)
		sp.Parallelism = ptr[int32](1)
	}
	if sp.Parallelism == nil {
		sp.Parallelism = ptr[int32](1)
	}
	if sp.BackoffLimit == nil {
		if sp.BackoffLimitPerIndex != nil {
			// Per-index limits replace the global one.
			sp.BackoffLimit = ptr[int32](math.MaxInt32)
		} else {
			sp.BackoffLimit = ptr[int32](DefaultBackoffLimit)
		}
	}
	if sp.CompletionMode == nil {
		sp.CompletionMode = ptr(CompletionNonIndexed)
	}
	if sp.Suspend == nil {
		sp.Suspend = ptr(false)
	}
	if pfp := sp.PodFailurePolicy; pfp != nil {
		for i := range pfp.Rules {
			for j := range pfp.Rules[i].OnPodConditions {
				if c := &pfp.Rules[i].OnPodConditions[j]; c.Status == "" {
					c.Status = "True"
				}
			}
		}
	}
	setPodSpecDefaults(&sp.Template.Spec)
}

// SetCronJobDefaults defaults c as the API server does. Its jobTemplate
// gets only the pod template's defaults, as on a cluster: the Job's own
// (backoffLimit…) are given to each Job when it is created from it.
func SetCronJobDefaults(c *CronJob) {
	sp := &c.Spec
	if sp.ConcurrencyPolicy == "" {
		sp.ConcurrencyPolicy = ConcurrencyAllow
	}
	if sp.Suspend == nil {
		sp.Suspend = ptr(false)
	}
	if sp.SuccessfulJobsHistoryLimit == nil {
		sp.SuccessfulJobsHistoryLimit = ptr[int32](DefaultSuccessfulJobsHistoryLimit)
	}
	if sp.FailedJobsHistoryLimit == nil {
		sp.FailedJobsHistoryLimit = ptr[int32](DefaultFailedJobsHistoryLimit)
	}
	setPodSpecDefaults(&sp.JobTemplate.Spec.Template.Spec)
}

// SetPodDefaults defaults p as the API server does (restartPolicy Always).
func SetPodDefaults(p *Pod) { setPodSpecDefaults(&p.Spec) }
