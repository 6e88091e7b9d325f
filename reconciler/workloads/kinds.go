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
// (docs/design.md §17.1), and the Deployment, whose orphans only it keeps.
func Kinds() []Kind {
	return []Kind{JobKind(), CronJobKind(), ReplicaSetKind(), DaemonSetKind(), StatefulSetKind(), PodKind(), DeploymentKind()}
}

// DeploymentKind keeps the orphans of a Deployment (docs/design.md
// §17.1): the pods a deletion with --cascade=orphan left, and no
// Deployment of the name adopted, are nobody's to the Deployment
// controller (package reconciler), which runs a Deployment's own pods;
// the frame keeps them as any other kind's orphans, each by the template
// it was made from: the revision of the Deployment's history (rollout
// history, undo: store.Record.Revisions) whose hash is its containers'
// template hash, as Kubernetes' orphaned ReplicaSet keeps running the
// template of the revision it was made for. A Deployment's template's
// restartPolicy is Always.
func DeploymentKind() Kind {
	k := Kind{Name: manifests.Kind, orphansOnly: true}
	k.template = func(obj any) *manifests.PodTemplateSpec { return &obj.(*manifests.Deployment).Spec.Template }
	k.made = func(obj any, _ func(into any) error, history []workload.Revision, pod string, ct dockerx.Container) (podruntime.PodSpec, bool) {
		d := obj.(*manifests.Deployment)
		cur := workload.NewRevision(d.Metadata.Name, &d.Spec.Template, manifests.TemplateHash(&d.Spec.Template))
		for _, r := range withCurrent(cur, history) {
			if r.Hash == ct.TemplateHash && r.Template != nil {
				return podruntime.PodSpec{Name: pod, Template: r.Template, TemplateHash: r.Hash}, true
			}
		}
		return podruntime.PodSpec{}, false
	}
	return k
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
	// Discarded are the pods (name@creation) the Job removed while not
	// failing — on suspend, a lower parallelism, its completions reached
	// — that still exist: they count neither as failed nor as succeeded,
	// whatever their exit, as Kubernetes' Job controller takes their
	// tracking finalizer off before it deletes them (deleteJobPods).
	Discarded []string `json:"discardedPods,omitempty"`
}

// podID is how a Job's status names a pod: its name and creation (the
// Job's pod namer gives a removed pod's name again).
func podID(p *workload.ObservedPod) string {
	return p.Name + "@" + strconv.FormatInt(p.Created.UnixNano(), 36)
}

// JobKind runs a Job with the Job controller's decision (package job).
func JobKind() Kind {
	k := WithPods(For(manifests.KindJob, func(j *manifests.Job) *manifests.PodTemplateSpec { return &j.Spec.Template },
		func(env Env, j *manifests.Job, prev JobStatus, pods []workload.ObservedPod) (Outcome, error) {
			all := pods
			// The pods it discarded are out of its view once they
			// stopped running: nothing of them counts.
			discarded := map[string]bool{}
			for _, id := range prev.Discarded {
				discarded[id] = true
			}
			isDiscarded := func(p *workload.ObservedPod) bool {
				// A pod deleted while it was being created was
				// discarded under its name alone (no creation
				// yet): the one its create made, terminating, is
				// that pod.
				return discarded[podID(p)] || p.Terminating() && discarded[podID(&workload.ObservedPod{Name: p.Name})]
			}
			var view []workload.ObservedPod
			for i := range pods {
				if !isDiscarded(&pods[i]) || pods[i].Active() {
					view = append(view, pods[i])
				}
			}
			pods = view
			st := JobStatus{CountedSucceeded: prev.CountedSucceeded, CountedFailed: prev.CountedFailed}
			// A failing Job counted the pods it stopped as failed when it
			// began to fail (job.Failing): their exits add nothing.
			if !job.Failing(prev.JobStatus) && (j.Spec.CompletionMode == nil || *j.Spec.CompletionMode != string(batchv1.IndexedCompletion)) {
				st.CountedSucceeded = countFinished(&prev.Succeeded, prev.CountedSucceeded, pods, corev1.PodSucceeded)
				if j.Spec.PodFailurePolicy == nil {
					st.CountedFailed = countFinished(&prev.Failed, prev.CountedFailed, pods, corev1.PodFailed)
				}
			}
			d := job.Sync(j, prev.JobStatus, pods, env.Now)
			st.JobStatus = d.Status
			// What it deletes while not failing is discarded (a failing
			// Job counted its pods failed: job.Failing); the list keeps
			// the pods that still exist.
			del := map[string]bool{}
			if !job.Failing(d.Status) {
				for _, n := range d.Delete {
					del[n] = true
				}
			}
			remove := d.Delete
			for _, p := range all {
				id := podID(&p)
				gone := isDiscarded(&p)
				if gone || del[p.Name] {
					st.Discarded = append(st.Discarded, id)
				}
				if gone && !p.Active() && !del[p.Name] {
					// Still there (its removal failed): removed again,
					// never restarted as a pod of the Job.
					remove = append(remove, p.Name)
				}
			}
			return Outcome{Status: st, Create: d.Create, Delete: remove, Events: d.Events, RequeueAt: d.RequeueAt, DeleteOwner: d.DeleteJob}, nil
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
	k.keep = func(obj any, _ func(into any) error, _ []workload.Revision, pod string, ct dockerx.Container) (podruntime.PodSpec, bool) {
		spec := job.KeptPod(obj.(*manifests.Job), pod, ct.Labels)
		if ct.TemplateHash != "" {
			spec.TemplateHash = ct.TemplateHash
		}
		return spec, true
	}
	// An orphan is kept as the Job made it (the frame checks the hash:
	// a Job of the name applied again with another template made none
	// of its orphans).
	k.made = func(obj any, _ func(into any) error, _ []workload.Revision, pod string, ct dockerx.Container) (podruntime.PodSpec, bool) {
		return job.KeptPod(obj.(*manifests.Job), pod, ct.Labels), true
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
		id := podID(p)
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

// ReplicaSetStatus is a standalone ReplicaSet's stored status: v1
// ReplicaSetStatus, and the pod templates its pods run, by hash: its own,
// and each earlier one a pod of it still runs. Kubernetes' ReplicaSet
// controller never changes a pod it has: a pod made from an earlier
// template keeps it (its probes and hooks, a member made again), which
// the frame can only give it from here.
type ReplicaSetStatus struct {
	appsv1.ReplicaSetStatus
	Templates []PodTemplate `json:"templates,omitempty"`
}

// PodTemplate is one pod template and its manifests.TemplateHash.
type PodTemplate struct {
	Hash     string                    `json:"hash"`
	Template manifests.PodTemplateSpec `json:"template"`
}

// ReplicaSetKind keeps a standalone ReplicaSet's replicas (package
// replicaset).
func ReplicaSetKind() Kind {
	k := WithPods(For(manifests.KindReplicaSet, func(rs *manifests.ReplicaSet) *manifests.PodTemplateSpec { return &rs.Spec.Template },
		func(env Env, rs *manifests.ReplicaSet, prev ReplicaSetStatus, pods []workload.ObservedPod) (Outcome, error) {
			d := replicaset.Sync(rs, pods, env.Now)
			st := ReplicaSetStatus{ReplicaSetStatus: appsv1.ReplicaSetStatus{ObservedGeneration: d.Status.ObservedGeneration, Replicas: d.Status.Replicas,
				FullyLabeledReplicas: d.Status.FullyLabeledReplicas, ReadyReplicas: d.Status.ReadyReplicas, AvailableReplicas: d.Status.AvailableReplicas}}
			// Its template, and the earlier ones its pods still run.
			hash := manifests.TemplateHash(&rs.Spec.Template)
			st.Templates = []PodTemplate{{Hash: hash, Template: rs.Spec.Template}}
			used := map[string]bool{}
			for i := range pods {
				used[pods[i].Labels[dockerx.LabelTemplateHash]] = true
			}
			for _, t := range prev.Templates {
				if t.Hash != hash && used[t.Hash] {
					st.Templates = append(st.Templates, t)
				}
			}
			return Outcome{Status: st, Create: d.CreatePods, Delete: d.DeletePods, Events: d.Events, RequeueAt: d.RequeueAt}, nil
		}), "replicas", (*manifests.ReplicaSet).Replicas)
	// A pod of an earlier template is kept with it, when it is stored.
	k.keep = func(obj any, status func(into any) error, _ []workload.Revision, pod string, ct dockerx.Container) (podruntime.PodSpec, bool) {
		rs := obj.(*manifests.ReplicaSet)
		var prev ReplicaSetStatus
		if ct.TemplateHash == "" || ct.TemplateHash == manifests.TemplateHash(&rs.Spec.Template) || status(&prev) != nil {
			return podruntime.PodSpec{}, false
		}
		for _, t := range prev.Templates {
			if t.Hash == ct.TemplateHash {
				tmpl := t.Template
				return podruntime.PodSpec{Name: pod, Template: &tmpl, TemplateHash: t.Hash, RestartPolicy: tmpl.Spec.RestartPolicy}, true
			}
		}
		return podruntime.PodSpec{}, false
	}
	// An orphan runs its own template, or the earlier one the status of
	// the set that made it keeps.
	keep := k.keep
	k.made = func(obj any, status func(into any) error, history []workload.Revision, pod string, ct dockerx.Container) (podruntime.PodSpec, bool) {
		rs := obj.(*manifests.ReplicaSet)
		if hash := manifests.TemplateHash(&rs.Spec.Template); ct.TemplateHash == hash {
			return podruntime.PodSpec{Name: pod, Template: &rs.Spec.Template, TemplateHash: hash}, true
		}
		return keep(obj, status, history, pod, ct)
	}
	return k
}

// DaemonSetKind runs a DaemonSet's one pod on this host (package
// daemonset), from its record's revisions (Env.History, its
// ControllerRevisions): a pod of an earlier revision is kept, judged and
// restarted from its own revision's template until the rollout (or, under
// OnDelete, a deletion) replaces it, as the kubelet runs the spec a pod
// was made with.
func DaemonSetKind() Kind {
	k := For(manifests.KindDaemonSet, func(ds *manifests.DaemonSet) *manifests.PodTemplateSpec { return &ds.Spec.Template },
		func(env Env, ds *manifests.DaemonSet, _ appsv1.DaemonSetStatus, pods []workload.ObservedPod) (Outcome, error) {
			d := daemonset.Sync(ds, Node, withCurrent(daemonset.RevisionOf(ds), env.History), pods, env.Now)
			s := d.Status
			st := appsv1.DaemonSetStatus{ObservedGeneration: s.ObservedGeneration, DesiredNumberScheduled: s.DesiredNumberScheduled,
				CurrentNumberScheduled: s.CurrentNumberScheduled, NumberMisscheduled: s.NumberMisscheduled, NumberReady: s.NumberReady,
				NumberAvailable: s.NumberAvailable, NumberUnavailable: s.NumberUnavailable, UpdatedNumberScheduled: s.UpdatedNumberScheduled}
			return Outcome{Status: st, Create: d.CreatePods, Delete: d.DeletePods, Events: d.Events, RequeueAt: d.RequeueAt}, nil
		})
	k.keep = func(obj any, _ func(into any) error, recorded []workload.Revision, pod string, ct dockerx.Container) (podruntime.PodSpec, bool) {
		ds := obj.(*manifests.DaemonSet)
		rev, ok := madeFrom(withCurrent(daemonset.RevisionOf(ds), recorded), ct)
		if !ok {
			return podruntime.PodSpec{}, false // the set's template
		}
		return daemonset.PodAt(ds, rev, pod), true
	}
	k.made = k.keep
	return k
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
	k := For(manifests.KindPod, tmpl,
		func(env Env, p *manifests.Pod, prev PodStatus, pods []workload.ObservedPod) (Outcome, error) {
			var out Outcome
			st := prev
			seen := false
			for i := range pods {
				if pods[i].Name != p.Metadata.Name {
					out.Delete = append(out.Delete, pods[i].Name)
					continue
				}
				seen = true
				if prev.Phase == corev1.PodSucceeded || prev.Phase == corev1.PodFailed {
					// A pod's phase never leaves Succeeded or Failed
					// (the API server refuses it): what Docker shows of
					// it later — its container being removed — changes
					// nothing.
					continue
				}
				ps := pods[i].Status
				st.Phase, st.Conditions, st.Restarts, st.Ran = ps.Phase, ps.Conditions, ps.Restarts, true
				st.Containers = st.Containers[:0]
				for _, c := range ps.Containers {
					st.Containers = append(st.Containers, c.State)
				}
			}
			if st.Ran && !seen {
				// Its container was removed out of band: a pod that
				// finished stays so; one that had not is not finished.
				// The kubelet starts a missing container of a pod under
				// Always, or OnFailure short of success; under Never the
				// pod fails (ContainerStatusUnknown), never Running
				// without a container.
				switch rp := tmpl(p).Spec.RestartPolicy; {
				case rp == manifests.RestartNever && st.Phase != corev1.PodSucceeded:
					st.Phase, st.Containers = corev1.PodFailed, nil
					st.Conditions = slices.Clone(st.Conditions)
					for i, c := range st.Conditions {
						if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
							st.Conditions[i].Status = corev1.ConditionFalse
						}
					}
				case rp == manifests.RestartOnFailure && st.Phase == corev1.PodSucceeded, rp == manifests.RestartNever:
				default:
					st.Ran = false
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
	// Its pod's name is its own name: never another one (orphanNames).
	k.stableNames = true
	return k
}

// recordsStatus reports whether the kind has a workload status file
// (store.UpdateWorkloadStatus) where the frame records what the read
// commands judge its pods by (recorded.go). A Deployment's status is the
// Deployment controller's own file: what its orphans' keeper learns
// stays in the controller's memory, and `get` shows them from the
// deleted Deployment's last status.
func (k Kind) recordsStatus() bool { return !k.orphansOnly }
