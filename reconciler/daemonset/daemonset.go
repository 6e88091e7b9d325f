package daemonset

import (
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/workload"
)

// Status is apps/v1 DaemonSetStatus.
type Status struct {
	ObservedGeneration     int64
	DesiredNumberScheduled int32
	CurrentNumberScheduled int32
	NumberMisscheduled     int32
	NumberReady            int32
	NumberAvailable        int32
	NumberUnavailable      int32
	UpdatedNumberScheduled int32
}

// Decision is what one sync decided: create CreatePods, delete DeletePods,
// record Events, Status and NewRevision (in the set's history), and sync
// again at RequeueAt when not zero.
type Decision struct {
	Status      Status
	CreatePods  []podruntime.PodSpec
	DeletePods  []string
	Events      []workload.Event
	NewRevision *workload.Revision
	RequeueAt   time.Time
}

// RevisionOf is the set's revision as its spec stands.
func RevisionOf(ds *manifests.DaemonSet) workload.Revision {
	return workload.NewRevision(ds.Metadata.Name, &ds.Spec.Template, ds.TemplateHash())
}

type syncer struct {
	ds   *manifests.DaemonSet
	node string
	rev  workload.Revision
	now  time.Time
	// taken are the names of the observed pods: a new pod's name is none
	// of them, a terminating pod's included.
	taken map[string]bool
	d     Decision
}

// Sync decides one step of ds's controller on host node. history holds
// the recorded revisions; pods are the set's pods.
func Sync(ds *manifests.DaemonSet, node string, history []workload.Revision, pods []workload.ObservedPod, now time.Time) Decision {
	s := &syncer{ds: ds, node: node, rev: RevisionOf(ds), now: now, taken: map[string]bool{}}
	if _, ok := workload.Find(history, s.rev.Name); !ok {
		s.d.NewRevision = &s.rev
	}
	all := make([]*workload.ObservedPod, len(pods))
	for i := range pods {
		all[i] = &pods[i]
		s.taken[pods[i].Name] = true
	}
	slices.SortStableFunc(all, byCreation)
	s.d.Status, s.d.RequeueAt = s.status(all)
	if s.manage(all) || ds.Spec.UpdateStrategy.Type == manifests.StrategyOnDelete {
		return s.d
	}
	s.rollingUpdate(all)
	return s.d
}

// byCreation is podByCreationTimestampAndPhase on one node: oldest first,
// then by name.
func byCreation(a, b *workload.ObservedPod) int {
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

func (s *syncer) updated(p *workload.ObservedPod) bool { return p.Revision() == s.rev.Hash }

// manage is podsShouldBeOnNode for the host: create the pod when there is
// none, delete finished pods and pods beyond the one (or, with surge, the
// two) allowed. It returns whether it changed anything.
func (s *syncer) manage(pods []*workload.ObservedPod) bool {
	if len(pods) == 0 {
		s.create()
		return true
	}
	var running []*workload.ObservedPod
	for _, p := range pods {
		switch {
		case p.Terminating():
		case p.Status.Phase == corev1.PodFailed:
			s.d.Events = append(s.d.Events, workload.Warning("FailedDaemonPod",
				"Found failed daemon pod %s/%s on node %s, will try to kill it", ns(s.ds), p.Name, s.node))
			s.delete(p)
		case p.Status.Phase == corev1.PodSucceeded:
			s.delete(p)
		default:
			running = append(running, p)
		}
	}
	switch {
	case !s.surge():
		// One pod only: the oldest stays.
		for _, p := range running[min(1, len(running)):] {
			s.delete(p)
		}
	case len(running) == 0:
		// Surging, the host keeps a live pod: its successor does not
		// wait for a terminating or failed one to be gone.
		s.create()
	case len(running) > 1:
		s.keepTwo(running)
	}
	return len(s.d.DeletePods)+len(s.d.CreatePods) > 0
}

// keepTwo allows, under maxSurge, the oldest updated pod beside the
// oldest old one, and only while the old one is ready and the new one not
// yet available; every other pod goes.
func (s *syncer) keepTwo(running []*workload.ObservedPod) {
	var newest, oldest *workload.ObservedPod
	for _, p := range running {
		switch {
		case s.updated(p) && newest == nil:
			newest = p
		case !s.updated(p) && oldest == nil:
			oldest = p
		default:
			s.delete(p)
		}
	}
	if newest != nil && oldest != nil && (!oldest.Ready() || newest.Available(s.ds.Spec.MinReadySeconds, s.now)) {
		s.delete(oldest)
	}
}

// rollingUpdate is the DaemonSet controller's rollingUpdate on one node.
func (s *syncer) rollingUpdate(pods []*workload.ObservedPod) {
	newPod, oldPod, ok := s.podsOnNode(pods)
	maxSurge, maxUnavailable := s.bounds()
	if maxSurge == 0 {
		if !ok || oldPod == nil || newPod != nil {
			return // nothing to replace, or manage's business
		}
		// An unavailable old pod may always go; an available one only
		// within maxUnavailable, of which the host's one pod is the only
		// user.
		if !oldPod.Available(s.ds.Spec.MinReadySeconds, s.now) || maxUnavailable > 0 {
			s.delete(oldPod)
		}
		return
	}
	if !ok || oldPod == nil {
		return
	}
	switch {
	case newPod == nil:
		s.create()
	case newPod.Available(s.ds.Spec.MinReadySeconds, s.now):
		s.delete(oldPod)
	}
}

// podsOnNode is findUpdatedPodsOnNode: the live updated pod and the live
// old pod; ok is false when there are two of either (manage's to sort).
func (s *syncer) podsOnNode(pods []*workload.ObservedPod) (newPod, oldPod *workload.ObservedPod, ok bool) {
	for _, p := range pods {
		if p.Terminating() {
			continue
		}
		if s.updated(p) {
			if newPod != nil {
				return nil, nil, false
			}
			newPod = p
		} else {
			if oldPod != nil {
				return nil, nil, false
			}
			oldPod = p
		}
	}
	return newPod, oldPod, true
}

// bounds are maxSurge and maxUnavailable for one node, rounded up as
// SurgeCount and UnavailableCount do; both 0 means one unavailable.
func (s *syncer) bounds() (surge, unavailable int) {
	ru := s.ds.Spec.UpdateStrategy.RollingUpdate
	if ru == nil {
		return 0, 1
	}
	surge, unavailable = scaled(ru.MaxSurge), scaled(ru.MaxUnavailable)
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return surge, unavailable
}

func scaled(v *intstr.IntOrString) int {
	if v == nil {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, 1, true)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func (s *syncer) surge() bool {
	n, _ := s.bounds()
	return s.ds.Spec.UpdateStrategy.Type != manifests.StrategyOnDelete && n > 0
}

// PodAt is pod name of ds at revision rev: the revision's template
// labelled with its hash (controller-revision-hash, as Kubernetes labels a
// daemon pod), of that hash. A pod is made so and kept so while it lives.
func PodAt(ds *manifests.DaemonSet, rev workload.Revision, name string) podruntime.PodSpec {
	t := *rev.Template
	t.Metadata.Labels = maps.Clone(t.Metadata.Labels)
	if t.Metadata.Labels == nil {
		t.Metadata.Labels = map[string]string{}
	}
	t.Metadata.Labels[workload.RevisionLabel] = rev.Hash
	return podruntime.PodSpec{Namespace: ds.Metadata.Namespace, Name: name,
		Owner:    podruntime.OwnerRef{Kind: manifests.KindDaemonSet, Name: ds.Metadata.Name},
		Template: &t, TemplateHash: rev.Hash}
}

func (s *syncer) create() {
	name := workload.GenerateNames(s.ds.Metadata.Name, 1, s.taken)[0]
	s.d.CreatePods = append(s.d.CreatePods, PodAt(s.ds, s.rev, name))
	s.d.Events = append(s.d.Events, workload.Normal("SuccessfulCreate", "Created pod: %s", name))
}

func (s *syncer) delete(p *workload.ObservedPod) {
	s.d.DeletePods = append(s.d.DeletePods, p.Name)
	s.d.Events = append(s.d.Events, workload.Normal("SuccessfulDelete", "Deleted pod: %s", p.Name))
}

// status is updateDaemonSetStatus for the one node, judged on the oldest
// pod.
func (s *syncer) status(pods []*workload.ObservedPod) (Status, time.Time) {
	st := Status{ObservedGeneration: s.ds.Metadata.Generation, DesiredNumberScheduled: 1}
	var requeue workload.Requeue
	if len(pods) > 0 {
		st.CurrentNumberScheduled = 1
		p := pods[0]
		if p.Ready() {
			st.NumberReady = 1
			if p.Available(s.ds.Spec.MinReadySeconds, s.now) {
				st.NumberAvailable = 1
			}
		}
		if s.updated(p) {
			st.UpdatedNumberScheduled = 1
		}
	}
	for _, p := range pods {
		requeue.NotAvailableYet(p, s.ds.Spec.MinReadySeconds, s.now)
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	return st, requeue.At
}

func ns(ds *manifests.DaemonSet) string {
	if ds.Metadata.Namespace == "" {
		return "default"
	}
	return ds.Metadata.Namespace
}
