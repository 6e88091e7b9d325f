package workloads

import (
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/daemonset"
	"github.com/dockctl/dockctl/reconciler/job"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/replicaset"
	"github.com/dockctl/dockctl/reconciler/workload"
)

// Node is the name of the one node a DaemonSet runs on: this host.
const Node = "dockctl"

// Kinds are the registrations of the workload kinds the frame runs:
// Job, CronJob, ReplicaSet, DaemonSet, StatefulSet and the standalone Pod
// (docs/design.md §17.1).
func Kinds() []Kind {
	return []Kind{JobKind(), CronJobKind(), ReplicaSetKind(), DaemonSetKind(), StatefulSetKind(), PodKind()}
}

// JobStatus is a Job's stored status: v1 JobStatus, and the pods counted
// in its succeeded and failed counts.
type JobStatus struct {
	batchv1.JobStatus
	// CountedSucceeded and CountedFailed are the finished pods
	// (name@creation: the Job's pod namer gives a removed pod's name
	// again) of a Job not Indexed that succeeded and failed count (an
	// Indexed Job counts its completedIndexes; failed is counted so only
	// without a podFailurePolicy, which may ignore a failure): a pod
	// whose container is removed (`docker container prune`) keeps its
	// share, and one that finishes after it adds to it, as Kubernetes
	// counts each pod once (its uncountedTerminatedPods and finalizers).
	CountedSucceeded []string `json:"countedSucceededPods,omitempty"`
	CountedFailed    []string `json:"countedFailedPods,omitempty"`
}

// JobKind runs a Job with the Job controller's decision (package job).
func JobKind() Kind {
	k := WithPods(For(manifests.KindJob, func(j *manifests.Job) *manifests.PodTemplateSpec { return &j.Spec.Template },
		func(env Env, j *manifests.Job, prev JobStatus, pods []workload.ObservedPod) (Outcome, error) {
			var st JobStatus
			if j.Spec.CompletionMode == nil || *j.Spec.CompletionMode != string(batchv1.IndexedCompletion) {
				st.CountedSucceeded = countFinished(&prev.Succeeded, prev.CountedSucceeded, pods, corev1.PodSucceeded)
				if j.Spec.PodFailurePolicy == nil {
					st.CountedFailed = countFinished(&prev.Failed, prev.CountedFailed, pods, corev1.PodFailed)
				}
			}
			d := job.Sync(j, prev.JobStatus, pods, env.Now)
			st.JobStatus = d.Status
			return Outcome{Status: st, Create: d.Create, Delete: d.Delete, Events: d.Events, RequeueAt: d.RequeueAt, DeleteOwner: d.DeleteJob}, nil
		}), "parallelism", func(j *manifests.Job) int32 {
		// Kubernetes' Job runs at most parallelism pods, and no more
		// than its completions (parallelism defaults to 1).
		n := int32(1)
		if p := j.Spec.Parallelism; p != nil {
			n = *p
		}
		if c := j.Spec.Completions; c != nil {
			n = min(n, *c)
		}
		return n
	})
	// A pod the Job has is kept as the Job made it (job.KeptPod): an
	// Indexed Job's with its index, and with the hash its containers
	// carry (a Job's template does not change), so that a holder pod's
	// later members are of the same pod.
	k.keep = func(obj any, _ func(into any) error, pod string, ct dockerx.Container) (podruntime.PodSpec, bool) {
		spec := job.KeptPod(obj.(*manifests.Job), pod, ct.Labels)
		if ct.TemplateHash != "" {
			spec.TemplateHash = ct.TemplateHash
		}
		return spec, true
	}
	// Its pods are created in the background: a completion is replaced
	// while the pods created before it still start (background.go).
	k.background = true
	return k
}

// countFinished adds to *count the pods in phase not in counted yet and
// returns the pods counted now (the Job decision keeps the larger of
// *count and the finished pods it sees). A status of an earlier release
// names none: its count stays the decision's.
func countFinished(count *int32, counted []string, pods []workload.ObservedPod, phase corev1.PodPhase) []string {
	legacy := *count > 0 && len(counted) == 0
	counted = slices.Clone(counted)
	seen := make(map[string]bool, len(counted))
	for _, n := range counted {
		seen[n] = true
	}
	for i := range pods {
		p := &pods[i]
		id := p.Name + "@" + strconv.FormatInt(p.Created.UnixNano(), 36)
		if !p.Active() && p.Status.Phase == phase && !seen[id] {
			seen[id] = true
			counted = append(counted, id)
			if !legacy {
				*count++
			}
		}
	}
	return counted
}

// ReplicaSetKind keeps a standalone ReplicaSet's replicas (package
// replicaset).
func ReplicaSetKind() Kind {
	return WithPods(For(manifests.KindReplicaSet, func(rs *manifests.ReplicaSet) *manifests.PodTemplateSpec { return &rs.Spec.Template },
		func(env Env, rs *manifests.ReplicaSet, _ appsv1.ReplicaSetStatus, pods []workload.ObservedPod) (Outcome, error) {
			d := replicaset.Sync(rs, pods, env.Now)
			st := appsv1.ReplicaSetStatus{ObservedGeneration: d.Status.ObservedGeneration, Replicas: d.Status.Replicas,
				FullyLabeledReplicas: d.Status.FullyLabeledReplicas, ReadyReplicas: d.Status.ReadyReplicas, AvailableReplicas: d.Status.AvailableReplicas}
			return Outcome{Status: st, Create: d.CreatePods, Delete: d.DeletePods, Events: d.Events, RequeueAt: d.RequeueAt}, nil
		}), "replicas", (*manifests.ReplicaSet).Replicas)
}

// DaemonSetKind runs a DaemonSet's one pod on this host (package
// daemonset). Its revision history is not kept yet: every sync sees the
// current revision only.
func DaemonSetKind() Kind {
	return For(manifests.KindDaemonSet, func(ds *manifests.DaemonSet) *manifests.PodTemplateSpec { return &ds.Spec.Template },
		func(env Env, ds *manifests.DaemonSet, _ appsv1.DaemonSetStatus, pods []workload.ObservedPod) (Outcome, error) {
			d := daemonset.Sync(ds, Node, []workload.Revision{daemonset.RevisionOf(ds)}, pods, env.Now)
			s := d.Status
			st := appsv1.DaemonSetStatus{ObservedGeneration: s.ObservedGeneration, DesiredNumberScheduled: s.DesiredNumberScheduled,
				CurrentNumberScheduled: s.CurrentNumberScheduled, NumberMisscheduled: s.NumberMisscheduled, NumberReady: s.NumberReady,
				NumberAvailable: s.NumberAvailable, NumberUnavailable: s.NumberUnavailable, UpdatedNumberScheduled: s.UpdatedNumberScheduled}
			return Outcome{Status: st, Create: d.CreatePods, Delete: d.DeletePods, Events: d.Events, RequeueAt: d.RequeueAt}, nil
		})
}

// PodStatus is a standalone Pod's stored status, as v1 PodStatus words
// it.
type PodStatus struct {
	Phase      corev1.PodPhase         `json:"phase,omitempty"`
	Conditions []corev1.PodCondition   `json:"conditions,omitempty"`
	Containers []corev1.ContainerState `json:"containerStates,omitempty"`
	Restarts   int                     `json:"restarts,omitempty"`
	// Ran: the pod's container was created once; a Pod runs once, and
	// is not created again once it finished (the kubelet never
	// re-creates a finished pod).
	Ran bool `json:"ran,omitempty"`
}

// PodKind runs a standalone Pod once with its restartPolicy: the pod is
// the object itself, named as it is.
func PodKind() Kind {
	tmpl := func(p *manifests.Pod) *manifests.PodTemplateSpec { t, _ := p.PodTemplate(); return t }
	return For(manifests.KindPod, tmpl,
		func(env Env, p *manifests.Pod, prev PodStatus, pods []workload.ObservedPod) (Outcome, error) {
			var out Outcome
			st := prev
			for i := range pods {
				if pods[i].Name != p.Metadata.Name {
					out.Delete = append(out.Delete, pods[i].Name)
					continue
				}
				ps := pods[i].Status
				st.Phase, st.Conditions, st.Restarts, st.Ran = ps.Phase, ps.Conditions, ps.Restarts, true
				st.Containers = st.Containers[:0]
				for _, c := range ps.Containers {
					st.Containers = append(st.Containers, c.State)
				}
			}
			if !st.Ran {
				t := tmpl(p)
				out.Create = []podruntime.PodSpec{{Namespace: p.Metadata.Namespace, Name: p.Metadata.Name,
					Owner: podruntime.OwnerRef{Kind: manifests.KindPod, Name: p.Metadata.Name}, Template: t,
					TemplateHash: manifests.TemplateHash(t)}}
				st.Phase = corev1.PodPending
			}
			out.Status = st
			return out, nil
		})
}
