package podruntime

import (
	"time"

	"github.com/dockctl/dockctl/manifests"
)

// The kubelet's reasons for a container (or, Pending, a pod) that could
// not be created or started, as `kubectl get pods` shows them in STATUS.
const (
	WaitPending                    = "Pending" // not admitted: a claim it mounts is missing or unbound
	WaitContainerCreating          = "ContainerCreating"
	WaitErrImagePull               = "ErrImagePull"
	WaitImagePullBackOff           = "ImagePullBackOff"
	WaitCreateContainerConfigError = "CreateContainerConfigError"
	WaitCreateContainerError       = "CreateContainerError"
)

// WaitingPod is a pod its controller wants but could not create, with the
// kubelet's waiting reason, as the controller recorded it in its status
// (docs/design.md §5): a Kubernetes pod exists from its create on, and a
// failure shows on it, whereas dockctl's pod is its containers — without
// this record, a pod whose image cannot be pulled would show nowhere.
type WaitingPod struct {
	Name string `json:"name"` // the pod's name, Hostname(owner, hash, ordinal)
	Hash string `json:"hash"`
	// Container is the container whose create failed; "" for the pod as a
	// whole (its image or a claim of its revision).
	Container string    `json:"container,omitempty"`
	Reason    string    `json:"reason"`
	Message   string    `json:"message,omitempty"`
	Since     time.Time `json:"since"`
}

// WithWaiting adds to views the pods of waits: a pod not observed becomes
// a view of its template's containers, none created, its status the
// waiting reason; an observed pod that is not running all its containers
// takes the reason too. templates maps a hash to its pod template (nil:
// unknown, the pod is left out: it cannot be made again).
func WithWaiting(views []PodView, waits []WaitingPod, templates func(string) *manifests.PodTemplateSpec, namespace string, owner OwnerRef) []PodView {
	seen := map[string]bool{}
	for i := range waits {
		w := &waits[i]
		if seen[w.Name] {
			continue // the first of a pod's waits is its status (the list is sorted: the pod's own first)
		}
		seen[w.Name] = true
		found := false
		for j := range views {
			if views[j].Name != w.Name || views[j].Terminating {
				continue
			}
			found = true
			if views[j].Status != "Running" && views[j].Status != "Completed" {
				views[j].Waiting = w
				views[j].Status = w.Reason
			}
		}
		t := templates(w.Hash)
		if found || t == nil {
			continue
		}
		pv := PodView{Name: w.Name, Namespace: namespace, Owner: owner, RestartPolicy: t.Spec.RestartPolicy, Hash: w.Hash,
			Status: w.Reason, Created: w.Since, Waiting: w}
		for i := range t.Spec.InitContainers {
			c := &t.Spec.InitContainers[i]
			pv.Containers = append(pv.Containers, PodContainer{Name: c.Name, Init: true, Sidecar: c.IsSidecar()})
			if c.IsSidecar() {
				pv.Total++
			}
		}
		for _, c := range t.Spec.Containers {
			pv.Containers = append(pv.Containers, PodContainer{Name: c.Name})
			pv.Total++
		}
		views = append(views, pv)
	}
	return views
}

// waitingState is the state of container pc of a pod that waits, when
// the wait is its own or the pod's ("Pending" leaves the container's own).
func (e PodView) waitingState(pc PodContainer) (reason, message string, ok bool) {
	w := e.Waiting
	if w == nil || pc.Container != nil || w.Reason == WaitPending || (w.Container != "" && w.Container != pc.Name) {
		return "", "", false
	}
	return w.Reason, w.Message, true
}
