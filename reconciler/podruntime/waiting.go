package podruntime

import (
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/dockctl/dockctl/dockerx"
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

// ConfigError is a create refused before Docker was asked because the
// container's configuration could not be built (its environment): the
// kubelet's CreateContainerConfigError.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// CreateWait is what a pod shows of a create that failed with err (pod
// its name, container "" for the holder: the pod's sandbox, the pod as a
// whole): a failure the pod shows, ok — not a name conflict, a start
// failure (the container exists and shows it itself), nor a create
// skipped for another's failure (ErrNotRun).
func CreateWait(pod, hash, container string, holder bool, err error) (w WaitingPod, ok bool) {
	if err == nil {
		return WaitingPod{}, false
	}
	w = WaitingPod{Name: pod, Hash: hash, Container: container, Message: err.Error()}
	var we *WaitError
	var ce *ConfigError
	var se *StartError
	switch {
	case errors.As(err, &we):
		w.Reason, w.Message, w.Container = we.Reason, we.Message, ""
	case errors.Is(err, ErrNotRun), errors.Is(err, dockerx.ErrConflict), errors.As(err, &se):
		return WaitingPod{}, false
	case errors.As(err, &ce):
		w.Reason = WaitCreateContainerConfigError
	default:
		w.Reason = WaitCreateContainerError
	}
	if holder {
		w.Container = "" // the pod's sandbox: the pod as a whole
	}
	return w, true
}

// CreateWaits collects, per owner key, the waiting pods of the sync in
// progress (one sync of a key at a time: the queue's guarantee). The zero
// value is ready; it is safe for concurrent use.
type CreateWaits struct {
	mu sync.Mutex
	m  map[string][]WaitingPod
}

// Note records w for key.
func (c *CreateWaits) Note(key string, w WaitingPod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string][]WaitingPod{}
	}
	c.m[key] = append(c.m[key], w)
}

// Take returns and forgets what Note collected for key.
func (c *CreateWaits) Take(key string) []WaitingPod {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.m[key]
	delete(c.m, key)
	return out
}

// SettleWaits is the status's list of waiting pods after a sync, from
// those of the sync (waits) and those the last status recorded (prev): a
// pod keeps the time it began waiting while its reason stays; a repeated
// image pull failure becomes ImagePullBackOff, as the kubelet backs off
// its pulls. Sorted by pod and container, one wait each.
func SettleWaits(waits, prev []WaitingPod, now time.Time) []WaitingPod {
	out := waits
	for i := range out {
		w := &out[i]
		w.Since = now
		j := slices.IndexFunc(prev, func(p WaitingPod) bool { return p.Name == w.Name && p.Container == w.Container })
		if j < 0 {
			continue
		}
		p := prev[j]
		if w.Reason == WaitErrImagePull && (p.Reason == WaitErrImagePull || p.Reason == WaitImagePullBackOff) {
			w.Reason = WaitImagePullBackOff
		}
		if p.Reason == w.Reason || p.Reason == WaitErrImagePull && w.Reason == WaitImagePullBackOff {
			w.Since = p.Since
		}
	}
	slices.SortFunc(out, func(x, y WaitingPod) int {
		if x.Name != y.Name {
			if x.Name < y.Name {
				return -1
			}
			return 1
		}
		if x.Container < y.Container {
			return -1
		}
		if x.Container > y.Container {
			return 1
		}
		return 0
	})
	return slices.CompactFunc(out, func(x, y WaitingPod) bool { return x.Name == y.Name && x.Container == y.Container })
}

// UnmadeReason is the kubelet's reason for a pod of spec ps that waits
// for a missing reference: CreateContainerConfigError for a missing
// ConfigMap or Secret (key) of its environment, Pending for a claim,
// ContainerCreating for a file volume's source.
func UnmadeReason(ns string, ps *manifests.PodSpec, cs ConfigStore) string {
	if EnvMissingRefs(ns, ps, cs) != "" {
		return WaitCreateContainerConfigError
	}
	for _, claim := range TemplateClaims(ps) {
		if ClaimUsable(cs, ns, claim) != nil {
			return WaitPending
		}
	}
	return WaitContainerCreating
}
