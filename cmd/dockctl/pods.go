package main

import (
	"maps"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/workloads"
	"github.com/dockctl/dockctl/store"
)

// The pods of the read commands (`get pods`, `describe pod`, `logs`): the
// reconciler groups and judges them (reconciler.Pods), this file presents
// them as kubectl presents pods. Nothing here decides anything the
// controller acts on.

// podEntry is one pod as the read commands show it.
type podEntry struct {
	podruntime.PodView
	// rec is its deployment's record: a live one, a tombstone, or a
	// stand-in that has only a name (its deployment is unknown).
	rec *store.Record
	// template is its revision's pod template; nil when unknown (an orphan,
	// or a revision trimmed from the history).
	template *manifests.PodTemplateSpec
	orphan   bool // no deployment of the instance claims it
	deleted  bool // its deployment was deleted: the controller removes it
	// ownerless: a workload's pod left by a deletion with
	// --cascade=orphan and adopted by none (store.PodOrphan): shown
	// without owner, as Kubernetes shows a pod without ownerReferences;
	// Owner still names the kind and name its containers are labelled
	// with.
	ownerless bool
}

// AnnotationDefaultContainer names the container `logs` picks when none
// is given, as kubectl reads it from a pod.
const AnnotationDefaultContainer = "kubectl.kubernetes.io/default-container"

// allPods returns the pods of every deployment that has containers in the
// instance — live, deleted (Terminating) or unknown (orphans) — sorted by
// name, computed once.
func (s *snapshot) allPods() []podEntry {
	if s.pods != nil {
		return s.pods
	}
	keys := map[string]bool{}
	for _, c := range s.containers {
		if c.Labels[dockerx.LabelOwnerKind] != "" {
			continue // another owner's pod: workloadPods below
		}
		keys[containerKey(c)] = true
	}
	for _, r := range s.records {
		// A deployment without containers may have pods it could not
		// create, recorded in its status (reconciler.Pods shows them).
		if s.statuses[r.Key()] != nil {
			keys[r.Key()] = true
		}
	}
	out := []podEntry{}
	for key := range keys {
		rec, orphan, deleted := s.record(key), false, false
		switch {
		case rec != nil:
		case s.deleted[key] != nil:
			rec, deleted = s.deleted[key], true
		default:
			deleted = s.tombstoned(key)
			orphan = !deleted && !s.unreadable[key]
			ns, name, _ := strings.Cut(key, "/")
			rec = &store.Record{Name: name, Namespace: ns}
		}
		var obj *store.StoredObject // asked only of a record that orphaned
		if len(rec.Orphaned) > 0 {
			obj = rec.Stored()
		}
		for _, pv := range reconciler.Pods(rec, s.statuses[key], s.deletions[key], s.containersOf(key), s.now) {
			e := podEntry{PodView: pv, rec: rec, template: templateOf(rec, pv.Hash), orphan: orphan, deleted: deleted}
			if obj != nil {
				// Left by a deletion with --cascade=orphan and adopted by
				// none: the controller neither keeps nor removes it, as
				// it does a workload's (store.PodOwner).
				l := e.labels()
				e.ownerless = obj.PodOwner(rec.PodUID(l[dockerx.LabelOwnerUID], pv.Created), l) == store.PodOrphan
				e.deleted = deleted && !e.ownerless
			}
			if e.deleted {
				// The controller stops it (over its grace period) to remove it,
				// as Kubernetes shows a pod with a deletion timestamp.
				e.Status, e.Terminating = "Terminating", true
			}
			out = append(out, e)
		}
	}
	out = append(out, s.workloadPods()...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Created.Before(out[j].Created)
	})
	s.pods = out
	return out
}

// workloadPods are the pods of the owners the generic workload controller
// runs (Job, ReplicaSet, DaemonSet, StatefulSet, a standalone Pod;
// docs/design.md §17): containers labelled with their owner's kind and
// name and named after their pod (dockerx.PodContainerName), judged as
// the pod runtime judges them against the owner's pod template. Their
// owner, not a deployment, keeps them: none is an orphan.
func (s *snapshot) workloadPods() []podEntry {
	type ownerKey struct{ ns, kind, name string }
	byOwner := map[ownerKey][]dockerx.Container{}
	for _, c := range s.containers {
		if k := c.Labels[dockerx.LabelOwnerKind]; k != "" {
			o := ownerKey{c.Namespace, k, c.Labels[dockerx.LabelOwner]}
			byOwner[o] = append(byOwner[o], c)
		}
	}
	var out []podEntry
	for o, cs := range byOwner {
		obj := s.workloadObject(o.kind, o.ns, o.name)
		tmpl := workloadTemplate(obj)
		// The owner has one template: its pods are judged by it whatever
		// their hash (its pods of an earlier template are replaced by it).
		// An orphan is judged by the template it was made from, which
		// the controller keeps it by (docs/design.md §17.1).
		// Its pods of one template run alike (judged by any of them);
		// each is shown as its own (a StatefulSet's claims).
		var orphans map[string]workloads.OrphanTemplate
		if s.st != nil {
			orphans = workloads.OrphanTemplates(o.kind, obj, s.st, s.instance, o.ns, cs)
		}
		byHash := map[string]*manifests.PodTemplateSpec{}
		for _, ot := range orphans {
			if byHash[ot.Hash] == nil {
				byHash[ot.Hash] = ot.Template
			}
		}
		templates := func(h string) *manifests.PodTemplateSpec {
			if t := byHash[h]; t != nil {
				return t
			}
			return tmpl
		}
		// Judged by the memory the controller records with the
		// owner's status, as its runtime judges them: a probed
		// container is ready on its recorded verdict (workloads.
		// RecordedContainers), and shows its recorded restarts.
		var states map[string]*podruntime.ContainerState
		if s.st != nil {
			states = workloads.RecordedContainers(o.kind, obj, s.st, o.ns, cs, s.now)
		}
		obs := podruntime.Judge(cs, states, templates, nil)
		units, views := map[string]podruntime.ContainerView{}, map[string]podruntime.ContainerView{}
		for _, c := range obs.All {
			v := podruntime.ContainerView{Ready: obs.Ready[c.ID]}
			if v.Ready {
				v.ReadySince = c.Created // as the Deployment's view counts it
			}
			if cst := states[c.ID]; cst != nil {
				v.Restarts = cst.Restarts
				v.CrashLoopBackOff = podruntime.BackingOff(&c, cst.NotBefore, s.now)
				if v.Ready && !cst.ReadySince.IsZero() {
					v.ReadySince = cst.ReadySince
				}
			}
			if obs.Pods[c.ID] != nil || c.PodUID == "" {
				units[c.ID] = v
			}
			if obs.Pods[c.ID] == nil {
				views[c.ID] = v
			}
		}
		for id, p := range obs.Pods {
			for _, c := range p.Containers() {
				v := views[c.ID]
				v.Terminating = units[id].Terminating
				views[c.ID] = v
			}
		}
		rec := &store.Record{Name: o.name, Namespace: o.ns}
		owner := podruntime.OwnerRef{Kind: o.kind, Name: o.name}
		podName := func(c *dockerx.Container) string {
			if n, ok := dockerx.PodOfContainerName(s.instance, o.ns, c.Name); ok {
				return n
			}
			return c.Name
		}
		for _, pv := range podruntime.Views(obs, templates, units, views, o.ns, owner, podName) {
			e := podEntry{PodView: pv, rec: rec, template: templates(pv.Hash)}
			if ot, ok := orphans[pv.Name]; ok && ot.Hash == pv.Hash {
				e.template = ot.Template
			}
			if obj != nil {
				l := e.labels()
				e.ownerless = obj.PodOwner(l[dockerx.LabelOwnerUID], l) == store.PodOrphan
			}
			out = append(out, e)
		}
	}
	return out
}

// workloadObject is the record (live or tombstone) of the stored workload
// kind/ns/name; nil when unknown (no state directory, or never stored).
func (s *snapshot) workloadObject(kind, ns, name string) *store.StoredObject {
	if s.st == nil {
		return nil
	}
	obj, err := s.st.LookupObject(store.ObjectRef{Kind: kind, Namespace: ns, Name: name})
	if err != nil || obj.Object == nil {
		return nil
	}
	return obj
}

// workloadTemplate is the pod template of the stored workload obj (its
// tombstone's for a deleted one); nil when unknown.
func workloadTemplate(obj *store.StoredObject) *manifests.PodTemplateSpec {
	if obj == nil {
		return nil
	}
	w, ok := obj.Object.(manifests.Workload)
	if !ok {
		return nil
	}
	t, _ := w.PodTemplate()
	return t
}

// ownedBy says whether the pod is one of the owner kind/name (a
// Deployment's: manifests.Kind); an ownerless pod is nobody's.
func (e *podEntry) ownedBy(kind, name string) bool {
	return !e.ownerless && e.Owner.Kind == kind && e.Owner.Name == name
}

// deploymentName is the name of the pod's deployment, "" for a
// workload's pod and for one its deployment's deletion with
// --cascade=orphan left ownerless.
func (e *podEntry) deploymentName() string {
	if e.Owner.Kind != manifests.Kind || e.ownerless {
		return ""
	}
	return e.Owner.Name
}

// ownerName is the pod's owner as -o wide's OWNER shows it, KIND/NAME
// (describe's Controlled By): "" for a standalone Pod, which is its own
// object, for an orphan, whose deployment is gone, and for a pod its
// owner's deletion left ownerless.
func (e *podEntry) ownerName() string {
	if e.orphan || e.ownerless || e.Owner.Kind == "" || e.Owner.Kind == manifests.KindPod || e.Owner.Name == "" {
		return ""
	}
	return e.Owner.Kind + "/" + e.Owner.Name
}

// ownerAPIVersion is the apiVersion of a workload kind's ownerReference.
func ownerAPIVersion(kind string) string {
	if kind == manifests.KindJob || kind == manifests.KindCronJob {
		return manifests.BatchAPIVersion
	}
	return manifests.APIVersion
}

// podsNamed returns the pods of that name in namespace ns: usually one;
// two while a pod re-created under its name has its predecessor still
// terminating. (Two deployments of one name in two namespaces have pods of
// the same names.)
func (s *snapshot) podsNamed(ns, name string) []podEntry {
	var out []podEntry
	for _, e := range s.allPods() {
		if e.Namespace == ns && e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// pod returns the pod of that name in namespace ns, the live one when a
// terminating one has the same name.
func (s *snapshot) pod(g *globalOptions, ns, name string) (podEntry, error) {
	es := s.podsNamed(ns, name)
	if len(es) == 0 {
		return podEntry{}, notFoundIn(g, "pod", ns, name, store.ErrNotFound)
	}
	best := es[len(es)-1]
	for _, e := range es {
		if !e.Terminating {
			best = e // the newest live one: es is sorted by creation
		}
	}
	return best, nil
}

// templateOf returns the template a pod of revision hash runs: the
// deployment's desired one or a recorded revision's; nil when unknown.
func templateOf(rec *store.Record, hash string) *manifests.PodTemplateSpec {
	if rec == nil || hash == "" {
		return nil
	}
	if len(rec.Deployment.Spec.Template.Spec.Containers) > 0 && manifests.TemplateHash(&rec.Deployment.Spec.Template) == hash {
		return &rec.Deployment.Spec.Template
	}
	if r := rec.Revision(hash); r != nil {
		return &r.Template
	}
	return nil
}

// uid is the pod's UID: the one its containers carry (a pod with a
// holder), or for a pod of one container that container's ID. A pod
// deleted and created again under its name has another.
func (e *podEntry) uid() string {
	if e.Holder != nil && e.Holder.PodUID != "" {
		return e.Holder.PodUID
	}
	for _, pc := range e.Containers {
		if pc.Container != nil && pc.Container.PodUID != "" {
			return pc.Container.PodUID
		}
	}
	for _, pc := range e.Containers {
		if pc.Container != nil {
			return pc.Container.ID
		}
	}
	return ""
}

// templateContainer returns pc's container in the pod's template, or nil.
func (e *podEntry) templateContainer(pc podruntime.PodContainer) *manifests.Container {
	if e.template == nil || pc.Name == "" {
		return nil
	}
	return e.template.Spec.FindContainer(pc.Name)
}

// labels are the pod's labels, what `get pods -l` selects on: those of its
// holder (or, when it has none, its container), which carry the template's
// labels and dockctl's ownership labels, without the per-container ones.
func (e *podEntry) labels() map[string]string {
	var base *dockerx.Container
	if e.Holder != nil {
		base = e.Holder
	} else {
		for _, pc := range e.Containers {
			if pc.Container != nil {
				base = pc.Container
				break
			}
		}
	}
	if base == nil {
		// Not created (its controller records why): the labels it would
		// have, its template's with pod-template-hash, as a pending pod's.
		if e.template == nil {
			return nil
		}
		l := maps.Clone(e.template.Metadata.Labels)
		if l == nil {
			l = map[string]string{}
		}
		l["pod-template-hash"] = e.Hash // as Kubernetes labels a ReplicaSet's pods
		return l
	}
	l := maps.Clone(base.Labels)
	delete(l, dockerx.LabelRole)
	delete(l, dockerx.LabelContainer)
	return l
}

// annotations are the pod's annotations: its template's.
func (e *podEntry) annotations() map[string]string {
	if e.template == nil {
		return nil
	}
	return maps.Clone(e.template.Metadata.Annotations)
}

// podObject is the pod as `get pods -o json|yaml` shows it: a v1 Pod with
// what dockctl knows: its spec (podSpec), node and addresses, its
// conditions and its containers' states, with their start times when
// inspected (snapshot.inspect).
func (e *podEntry) podObject(s *snapshot) (*corev1.Pod, error) {
	spec, err := e.podSpec(s)
	if err != nil {
		return nil, err
	}
	p := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, Spec: spec}
	p.Name = e.Name
	p.Namespace = e.Namespace
	p.Labels = e.labels()
	p.Annotations = e.annotations()
	p.CreationTimestamp = metav1.NewTime(e.Created)
	if k := e.Owner.Kind; k != manifests.Kind && k != manifests.KindPod && !e.ownerless {
		// A workload's pod names its owner, as the API server's does (a
		// standalone Pod is its own, and a Deployment's pods keep their
		// form).
		ctrl := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: ownerAPIVersion(k), Kind: k, Name: e.Owner.Name, Controller: &ctrl}}
	}
	p.UID = types.UID(e.uid())
	p.DeletionTimestamp = e.deletionTimestamp(s)
	start := metav1.NewTime(e.Created)
	p.Status.StartTime = &start
	ps := e.PodStatus()
	p.Status.Phase = ps.Phase
	p.Status.Conditions = ps.Conditions
	if s.hostIP != "" {
		p.Status.HostIP, p.Status.HostIPs = s.hostIP, []corev1.HostIP{{IP: s.hostIP}}
	}
	if ip := e.podIP(s); ip != "" {
		p.Status.PodIP, p.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	}
	always := corev1.ContainerRestartPolicyAlways
	for i, pc := range e.Containers {
		cs := ps.Containers[i]
		st := corev1.ContainerStatus{Name: cs.Name, Ready: cs.Ready, RestartCount: int32(cs.Restarts), State: cs.State, LastTerminationState: cs.LastState}
		containerTimes(&st.State, &st.LastTerminationState, s.containerDetails(pc.Container))
		if c := pc.Container; c != nil {
			st.ContainerID = "docker://" + cs.ContainerID
			st.ImageID = c.ImageID
			st.Started = &cs.Started
		}
		// podSpec lists the containers in e.Containers' order.
		if pc.Init {
			c := &p.Spec.InitContainers[len(p.Status.InitContainerStatuses)]
			if pc.Sidecar && c.RestartPolicy == nil {
				c.RestartPolicy = &always
			}
			st.Image = c.Image
			p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, st)
			continue
		}
		st.Image = p.Spec.Containers[len(p.Status.ContainerStatuses)].Image
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, st)
	}
	return p, nil
}

// deletionTimestamp is a Terminating pod's metadata.deletionTimestamp
// (nil for any other), from which kubectl derives Terminating. As the API
// server's, it is when the pod is killed if it has not stopped by then:
// the stop deadline the controller recorded, else, for a pod of a deleted
// deployment, the deletion's time plus the pod's grace period; else (a
// stop not recorded yet) the time of this look.
func (e *podEntry) deletionTimestamp(s *snapshot) *metav1.Time {
	if !e.Terminating && e.Status != "Terminating" {
		return nil
	}
	at := s.now
	switch {
	case !e.StopDeadline.IsZero():
		at = e.StopDeadline
	case e.deleted && e.rec.DeletedAt != nil:
		grace := int64(manifests.DefaultTerminationGracePeriodSeconds)
		if e.template != nil && e.template.Spec.TerminationGracePeriodSeconds != nil {
			grace = *e.template.Spec.TerminationGracePeriodSeconds
		}
		at = e.rec.DeletedAt.Add(time.Duration(grace) * time.Second)
	}
	t := metav1.NewTime(at)
	return &t
}

// statusWord is the STATUS column: the reconciler's word, and whether no
// deployment claims the pod.
func (e *podEntry) statusWord() string {
	if e.orphan {
		return e.Status + " (orphan)"
	}
	return e.Status
}

// appContainerNames lists the pod's app containers (kubectl's CONTAINERS).
func (e *podEntry) appContainerNames() []string {
	var out []string
	for _, pc := range e.Containers {
		if !pc.Init {
			out = append(out, pc.DisplayName())
		}
	}
	return out
}

// podOf maps each container of the snapshot (holders included) to the
// name of the pod it belongs to.
func (s *snapshot) podOf() map[string]string {
	if s.podNames != nil {
		return s.podNames
	}
	s.podNames = map[string]string{}
	for _, e := range s.allPods() {
		if e.Holder != nil {
			s.podNames[e.Holder.ID] = e.Name
		}
		for _, pc := range e.Containers {
			if pc.Container != nil {
				s.podNames[pc.Container.ID] = e.Name
			}
		}
	}
	return s.podNames
}

// shortID is a container ID as docker ps shows it.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// joinOrNone joins names, or says <none>.
func joinOrNone(names []string) string {
	if len(names) == 0 {
		return "<none>"
	}
	return strings.Join(names, ",")
}
