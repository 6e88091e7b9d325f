package reconciler

import (
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// ComputeStatus derives a deployment's replica counts from what Docker
// reports. It needs no controller state, which is why `dockctl get` is right
// even when no controller runs. A container is available once it has been
// ready for minReadySeconds; without a recorded ready time the container's
// creation time stands in, which can only make it look available later, never
// earlier.
func ComputeStatus(d *manifests.Deployment, hash string, cs []dockerx.Container, now time.Time) manifests.DeploymentStatus {
	var st manifests.DeploymentStatus
	minReady := time.Duration(d.Spec.MinReadySeconds) * time.Second
	for _, c := range cs {
		if c.State == dockerx.StateRemoving {
			continue
		}
		st.Replicas++
		if c.TemplateHash == hash {
			st.UpdatedReplicas++
		}
		if IsReady(c) {
			st.ReadyReplicas++
			if minReady == 0 || now.Sub(c.Created) >= minReady {
				st.AvailableReplicas++
			}
		}
	}
	if un := d.Replicas() - st.AvailableReplicas; un > 0 {
		st.UnavailableReplicas = un
	}
	return st
}

// Conditions computes the Available and Progressing conditions from the
// counts, carrying over transition times from prev when a condition's status
// has not changed, as Kubernetes does.
func Conditions(d *manifests.Deployment, st manifests.DeploymentStatus, failure string, prev []manifests.DeploymentCondition, now time.Time) []manifests.DeploymentCondition {
	want := d.Replicas()
	_, maxUnavailable, err := manifests.ParseMaxSurgeUnavailable(d)
	if err != nil || d.Spec.Strategy.Type == manifests.StrategyRecreate {
		maxUnavailable = 0
	}
	var out []manifests.DeploymentCondition
	if st.AvailableReplicas >= want-maxUnavailable {
		out = append(out, cond(manifests.ConditionAvailable, "True", "MinimumReplicasAvailable", "Deployment has minimum availability."))
	} else {
		out = append(out, cond(manifests.ConditionAvailable, "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."))
	}
	complete := st.UpdatedReplicas == want && st.Replicas == want && st.AvailableReplicas == want
	if complete {
		out = append(out, cond(manifests.ConditionProgressing, "True", "NewReplicaSetAvailable", "Deployment has successfully progressed."))
	} else {
		out = append(out, cond(manifests.ConditionProgressing, "True", "ReplicaSetUpdated", "Deployment is progressing."))
	}
	if failure != "" {
		out = append(out, cond(manifests.ConditionReplicaFailure, "True", "FailedCreate", failure))
	}
	for i := range out {
		out[i].LastUpdateTime = now
		out[i].LastTransitionTime = now
		for _, p := range prev {
			if p.Type != out[i].Type || p.Status != out[i].Status {
				continue
			}
			out[i].LastTransitionTime = p.LastTransitionTime
			if p.Reason == out[i].Reason && p.Message == out[i].Message {
				// Nothing changed: keep the old update time too, so that an
				// idle controller rewrites nothing.
				out[i].LastUpdateTime = p.LastUpdateTime
			}
		}
	}
	return out
}

func cond(typ, status, reason, msg string) manifests.DeploymentCondition {
	return manifests.DeploymentCondition{Type: typ, Status: status, Reason: reason, Message: msg}
}
