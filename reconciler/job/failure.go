package job

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/workload"
)

// Which failures count, as Kubernetes' Job controller judges them.

// onlyReplaceFailed: with a podFailurePolicy, no replacement starts
// before a pod being stopped is gone (its exit codes are what the rules
// judge); without one, a pod being stopped holds no place and is
// replaced at once (Kubernetes' podReplacementPolicy, TerminatingOrFailed
// by default and Failed with a podFailurePolicy).
func onlyReplaceFailed(j *manifests.Job) bool { return j.Spec.PodFailurePolicy != nil }

// failed reports whether the pod counts as failed: it ended in phase
// Failed. Kubernetes also counts a pod deleted before it finished, unless
// the Job controller deleted it itself; dockctl removes a deleted pod and
// keeps no record of who deleted it, so such a pod is only replaced,
// never counted (a pod the Job stops because the Job failed is counted
// when it is stopped, see endActive).
func failed(p *workload.ObservedPod) bool { return p.Status.Phase == corev1.PodFailed }

// verdict is what the podFailurePolicy makes of a failed pod.
type verdict struct {
	action string // the matching rule's action, "" when none matched
	// count: the failure counts towards backoffLimit (all but Ignore).
	count bool
	// failJob is the message of a FailJob rule's match.
	failJob string
}

// judge matches a failed pod against the rules in order, first match
// wins (Kubernetes' matchPodFailurePolicy): an exit-code rule against the
// terminated containers with a non-zero exit, app containers before init
// containers; a condition rule against the pod's conditions (e.g. a
// DisruptionTarget the runtime sets).
func judge(j *manifests.Job, p *workload.ObservedPod) verdict {
	pfp := j.Spec.PodFailurePolicy
	if pfp == nil {
		return verdict{count: true}
	}
	ns := j.Metadata.Namespace
	if ns == "" {
		ns = "default"
	}
	for i, r := range pfp.Rules {
		var what string
		switch {
		case r.OnExitCodes != nil:
			name, code, ok := matchExitCodes(p, r.OnExitCodes)
			if !ok {
				continue
			}
			what = fmt.Sprintf("Container %s for pod %s/%s failed with exit code %d", name, ns, p.Name, code)
		case len(r.OnPodConditions) > 0:
			cond, ok := matchConditions(p, r.OnPodConditions)
			if !ok {
				continue
			}
			what = fmt.Sprintf("Pod %s/%s has condition %s", ns, p.Name, cond)
		default:
			continue
		}
		v := verdict{action: r.Action, count: r.Action != manifests.PodFailureIgnore}
		if r.Action == manifests.PodFailureFailJob {
			v.failJob = fmt.Sprintf("%s matching %s rule at index %d", what, r.Action, i)
		}
		return v
	}
	return verdict{count: true}
}

func matchExitCodes(p *workload.ObservedPod, req *manifests.PodFailurePolicyOnExitCodesRequirement) (string, int32, bool) {
	for _, init := range []bool{false, true} {
		for _, c := range p.Status.Containers {
			t := c.State.Terminated
			if c.Init != init || t == nil || t.ExitCode == 0 {
				continue
			}
			if req.ContainerName != nil && *req.ContainerName != c.Name {
				continue
			}
			in := slices.Contains(req.Values, t.ExitCode)
			if (req.Operator == manifests.ExitCodesIn && in) || (req.Operator == manifests.ExitCodesNotIn && !in) {
				return c.Name, t.ExitCode, true
			}
		}
	}
	return "", 0, false
}

func matchConditions(p *workload.ObservedPod, pats []manifests.PodFailurePolicyOnPodConditionsPattern) (corev1.PodConditionType, bool) {
	for _, c := range p.Status.Conditions {
		for _, pat := range pats {
			status := pat.Status
			if status == "" {
				status = string(corev1.ConditionTrue)
			}
			if string(c.Type) == pat.Type && string(c.Status) == status {
				return c.Type, true
			}
		}
	}
	return "", false
}

// pastBackoffLimitOnFailure: under restartPolicy OnFailure a failing
// container is restarted in place and its pod never fails, so Kubernetes
// counts the restarts of the pods still pending or running against
// backoffLimit (any restart with a limit of 0).
func pastBackoffLimitOnFailure(j *manifests.Job, pods []workload.ObservedPod) bool {
	if j.Spec.Template.Spec.RestartPolicy != manifests.RestartOnFailure {
		return false
	}
	var n int32
	for i := range pods {
		if p := &pods[i]; !p.Finished() {
			n += restarts(p)
		}
	}
	limit := backoffLimit(j)
	if limit == 0 {
		return n > 0
	}
	return n >= limit
}
