package workloads

import (
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/workload"
)

// A kind whose pods are created in the background (Kind.background: the
// Job) decides on the pods it has and on those being created that no
// list shows yet, as Kubernetes' controllers count the creates they asked
// for (their expectations) until their informer shows the pods: a pod
// being created is the owner's, Pending, so that the next decision
// neither creates it again nor takes its index (an Indexed Job's) for a
// free one. A pod the decision deletes while it is being created is not
// made, or is removed once listed (podruntime.Runtime.CancelCreates).

// withCreating is pods and, after them, the pods being created that are
// none of them, as the decision sees a pod: its template's labels and
// annotations (an Indexed Job's index), its status Pending.
func withCreating(pods []workload.ObservedPod, creating []podruntime.CreatingPod) []workload.ObservedPod {
	if len(creating) == 0 {
		return pods
	}
	seen := make(map[string]bool, len(pods))
	for _, p := range pods {
		seen[p.Name] = true
	}
	out := pods[:len(pods):len(pods)]
	for _, cp := range creating {
		if seen[cp.Spec.Name] {
			continue
		}
		p := workload.ObservedPod{Name: cp.Spec.Name, Status: cp.Status}
		// One the decision deleted is terminating until it is gone
		// (never made, or removed once listed).
		p.Status.Terminating = cp.Cancelled
		if t := cp.Spec.Template; t != nil {
			p.Labels, p.Annotations = t.Metadata.Labels, t.Metadata.Annotations
		}
		out = append(out, p)
	}
	return out
}
