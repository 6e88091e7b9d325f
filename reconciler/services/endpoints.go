package services

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// The endpoints tracker, after kube-proxy's endpoints change tracker: the
// deployment sync, which observes and judges pods anyway, hands it every
// pod of a deployment after each assessment (Update), and so does the
// controller of any other owner whose pods the pod runtime runs
// (OwnedPodEndpoints, keyed OwnerKey); the tracker keeps the latest view
// per owner and queues the Services whose selector
// covers a pod that changed, before or after the change. A Service sync
// reads its endpoints from here, never from Docker: the readiness a Service
// follows is exactly the one the deployment's status counts.
//
// Versions: every change bumps the tracker's version. A Service sync reads
// its endpoints together with the version they reflect and, once its data
// plane serves them, acknowledges that version (ack). A drain (drain.go)
// marks a pod terminating at version v and waits until every Service that
// selected it has acknowledged v or later.

// PodEndpoint is one pod as its deployment's sync observed and judged it.
type PodEndpoint struct {
	Namespace, Deployment, Pod, IP string
	// Labels are the pod's labels: its revision's template labels.
	Labels map[string]string
	// Ready is the readiness the deployment's status counts (running,
	// healthy, readiness probe passed); Terminating: a stop has begun.
	Ready, Terminating bool
	// Containers are the pod's serving containers (named ports).
	Containers []manifests.Container
	// UnitID is the pod's unit ID in its deployment's plan (the
	// container's ID, or a holder pod's key): what the stopper knows.
	UnitID string
	// Hostname and Subdomain are the pod's spec.hostname and
	// spec.subdomain (its containers' dockerx.LabelHostname and
	// LabelSubdomain): a headless Service named Subdomain gives it a DNS
	// name (dnsrecords.go).
	Hostname, Subdomain string
}

// podRef names a pod: pods are named uniquely within a namespace.
type podRef struct{ namespace, pod string }

// trackedService is a Service whose endpoints the tracker follows.
type trackedService struct {
	namespace string
	selector  map[string]string
	// publishNotReady: spec.publishNotReadyAddresses. Such a Service keeps
	// a terminating pod (as Kubernetes' endpoints controllers do), so no
	// drain waits for it.
	publishNotReady bool
}

// trackedServiceOf is what the tracker follows of a Service.
func trackedServiceOf(svc *manifests.Service) trackedService {
	return trackedService{namespace: svc.Metadata.NamespaceOrDefault(), selector: maps.Clone(svc.Spec.Selector),
		publishNotReady: svc.Spec.PublishNotReadyAddresses}
}

func (s trackedService) selects(p *PodEndpoint) bool {
	return p.Namespace == s.namespace && manifests.SelectorMatches(s.selector, p.Labels)
}

// Tracker follows the pods of every deployment for the Services.
type Tracker struct {
	enqueue func(serviceKey string)
	// stopping reports whether a unit's stop is in flight (the stopper's
	// view): a drained pod stays terminating while it is.
	stopping func(unitID string) bool

	mu           sync.Mutex
	version      int64
	byDeployment map[string]map[string]*PodEndpoint // deployment key → pod name → pod
	draining     map[podRef]bool
	services     map[string]trackedService // by Service key
	acked        map[string]int64          // by Service key: the version its data plane serves
	// changed is closed (and replaced) whenever an ack or a forget may
	// have ended a drain's wait.
	changed  chan struct{}
	synced   bool
	onSynced func()

	// stored lists the Services of the store (nil: none). A controller
	// that just started has synced no Service yet, while the proxies the
	// previous one left still route to every pod: the first drain, or the
	// first complete feed, adds each stored Service not yet watched, so a
	// drain waits for it as for a synced one.
	stored     func() map[string]trackedService
	storedOnce sync.Once
}

// loadStored watches every stored Service no sync has watched yet (once).
func (t *Tracker) loadStored() {
	t.storedOnce.Do(func() {
		if t.stored == nil {
			return
		}
		all := t.stored()
		t.mu.Lock()
		defer t.mu.Unlock()
		for key, s := range all {
			if _, ok := t.services[key]; !ok {
				t.services[key] = s
			}
		}
	})
}

// NewTracker returns an empty tracker. enqueue queues a Service key for a
// sync (it must not block); stopping may be nil.
func NewTracker(enqueue func(serviceKey string), stopping func(unitID string) bool) *Tracker {
	return &Tracker{
		enqueue: enqueue, stopping: stopping, changed: make(chan struct{}),
		byDeployment: map[string]map[string]*PodEndpoint{}, draining: map[podRef]bool{},
		services: map[string]trackedService{}, acked: map[string]int64{},
	}
}

// Update replaces the pods of one deployment (key "ns/name") with those
// its sync just observed, and queues the Services that select a pod that
// changed (as it was, or as it is). A pod being drained stays terminating
// while its stop is in flight, whatever a sync that listed before the stop
// began reports.
func (t *Tracker) Update(deploymentKey string, pods []PodEndpoint) {
	t.mu.Lock()
	old := t.byDeployment[deploymentKey]
	next := make(map[string]*PodEndpoint, len(pods))
	for i := range pods {
		p := pods[i]
		ref := podRef{p.Namespace, p.Pod}
		if t.draining[ref] {
			if p.Terminating || (t.stopping != nil && t.stopping(p.UnitID)) {
				p.Terminating = true
			} else {
				delete(t.draining, ref) // the stop ended (a restart): serve it again
			}
		}
		next[p.Pod] = &p
	}
	keys := t.applyLocked(deploymentKey, old, next)
	t.mu.Unlock()
	t.queue(keys)
}

// Delete forgets a deployment's pods (it is gone, with its containers).
func (t *Tracker) Delete(deploymentKey string) {
	t.mu.Lock()
	keys := t.applyLocked(deploymentKey, t.byDeployment[deploymentKey], nil)
	t.mu.Unlock()
	t.queue(keys)
}

// applyLocked installs next as the deployment's pods and returns the keys
// of the Services a change concerns.
func (t *Tracker) applyLocked(deploymentKey string, old, next map[string]*PodEndpoint) []string {
	affected := map[string]bool{}
	hadPods := len(t.byDeployment) > 0
	touch := func(p *PodEndpoint) {
		for key, s := range t.services {
			if s.selects(p) {
				affected[key] = true
			}
		}
	}
	changed := false
	for name, o := range old {
		n := next[name]
		if n != nil && samePod(o, n) {
			continue
		}
		changed = true
		touch(o)
		if n != nil {
			touch(n)
		}
		if n == nil {
			if !t.podElsewhereLocked(deploymentKey, podRef{o.Namespace, o.Pod}) {
				delete(t.draining, podRef{o.Namespace, o.Pod})
			}
		}
	}
	for name, n := range next {
		if old[name] == nil {
			changed = true
			touch(n)
		}
	}
	if len(next) == 0 {
		delete(t.byDeployment, deploymentKey)
	} else {
		t.byDeployment[deploymentKey] = next
	}
	if !changed {
		return nil
	}
	t.version++
	if hadPods != (len(t.byDeployment) > 0) {
		// The DNS server runs while any pod may resolve through it
		// (dnsctl.go): the first pod and the last one's leaving decide.
		affected[DNSKey] = true
	}
	return slices.Sorted(maps.Keys(affected))
}

// HasPods reports whether any owner has a pod tracked: a running,
// starting or stopping one, which resolves names through the DNS server.
func (t *Tracker) HasPods() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byDeployment) > 0
}

func (t *Tracker) podElsewhereLocked(deploymentKey string, ref podRef) bool {
	for dk, pods := range t.byDeployment {
		if p := pods[ref.pod]; dk != deploymentKey && p != nil && p.Namespace == ref.namespace {
			return true
		}
	}
	return false
}

func (t *Tracker) queue(keys []string) {
	if t.enqueue == nil {
		return
	}
	for _, k := range keys {
		t.enqueue(k)
	}
}

// samePod reports whether nothing a Service sees of the pod changed.
func samePod(a, b *PodEndpoint) bool {
	return a.IP == b.IP && a.Ready == b.Ready && a.Terminating == b.Terminating && a.UnitID == b.UnitID &&
		a.Hostname == b.Hostname && a.Subdomain == b.Subdomain &&
		maps.Equal(a.Labels, b.Labels) && portsKey(a.Containers) == portsKey(b.Containers)
}

// portsKey sums up the container ports a targetPort may name.
func portsKey(cs []manifests.Container) string {
	var b strings.Builder
	for _, c := range cs {
		for _, p := range c.Ports {
			fmt.Fprintf(&b, "%s=%d/%s,", p.Name, p.ContainerPort, p.Protocol)
		}
		b.WriteByte(';')
	}
	return b.String()
}

// Endpoints returns a Service's endpoints: every pod of its namespace its
// selector matches that is not terminating, ready or not, each with the
// Service's ports resolved on it (a named targetPort the pod does not have
// leaves that port out; a pod with none of them is left out, as
// Kubernetes' endpoints controller does). Sorted by pod name.
//
// With publishNotReadyAddresses every such pod that has an address is
// ready, terminating ones included, as Kubernetes publishes them (its
// endpoints controller keeps terminating pods then, and the EndpointSlice
// controller marks them ready): the proxy, a headless name and the status
// all take them.
func (t *Tracker) Endpoints(svc *manifests.Service) (ready, notReady []store.EndpointStatus) {
	ready, notReady, _ = t.endpointsAt(defaultService(svc))
	return ready, notReady
}

// endpointsAt is Endpoints with the version it reflects.
func (t *Tracker) endpointsAt(svc *manifests.Service) (ready, notReady []store.EndpointStatus, version int64) {
	sel := trackedServiceOf(svc)
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, pods := range t.byDeployment {
		for _, p := range pods {
			if (p.Terminating && (!sel.publishNotReady || p.IP == "")) || !sel.selects(p) {
				continue
			}
			ep := store.EndpointStatus{Pod: p.Pod, IP: p.IP, Ready: (p.Ready || sel.publishNotReady) && p.IP != ""}
			if p.Hostname != "" && p.Subdomain == svc.Metadata.Name && len(validation.IsDNS1123Label(p.Hostname)) == 0 {
				// Kubernetes' ShouldSetHostname: the pod names its
				// hostname, and this Service by its subdomain (the
				// namespace is the selector's). The hostname must be a
				// DNS-1123 label, as Kubernetes' API validates an
				// Endpoints address's: an owner's name for its pod
				// (NAME-ORDINAL of a 63-character name) may be longer,
				// and a name that is no label would make the DNS server
				// refuse every record, or name a deeper or duplicate one.
				ep.Hostname = p.Hostname
			}
			for _, sp := range svc.Spec.Ports {
				if port, ok := manifests.ResolveTargetPort(sp, p.Containers); ok {
					ep.Ports = append(ep.Ports, store.EndpointPort{Name: sp.Name, Port: port, Protocol: sp.Protocol})
				}
			}
			if len(svc.Spec.Ports) > 0 && len(ep.Ports) == 0 {
				continue
			}
			if ep.Ready {
				ready = append(ready, ep)
			} else {
				notReady = append(notReady, ep)
			}
		}
	}
	byPod := func(a, b store.EndpointStatus) int { return strings.Compare(a.Pod+"\x00"+a.IP, b.Pod+"\x00"+b.IP) }
	slices.SortFunc(ready, byPod)
	slices.SortFunc(notReady, byPod)
	return ready, notReady, t.version
}

// currentVersion is the version of the pods the tracker knows.
func (t *Tracker) currentVersion() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.version
}

// watch makes the tracker queue key when a pod its selector covers
// changes. A Service sync calls it before it reads its endpoints, so that
// no change falls between the two.
func (t *Tracker) watch(key string, svc *manifests.Service) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.services[key] = trackedServiceOf(svc)
}

// forget stops following a Service (deleted, or gone from the store): no
// drain waits for it any more.
func (t *Tracker) forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.services[key]; !ok {
		return
	}
	delete(t.services, key)
	delete(t.acked, key)
	t.broadcastLocked()
}

// ack records that a Service's data plane serves its endpoints as of
// version.
func (t *Tracker) ack(key string, version int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if version <= t.acked[key] {
		return
	}
	t.acked[key] = version
	t.broadcastLocked()
}

func (t *Tracker) broadcastLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// Synced reports whether every live deployment has been fed once (the
// first sweep after start): before that, an empty tracker means "not
// known yet", not "no endpoints", and nothing may be pushed from it.
func (t *Tracker) Synced() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.synced
}

// MarkSynced records the first complete feed and runs onSynced once.
func (t *Tracker) MarkSynced() {
	t.loadStored()
	t.mu.Lock()
	first := !t.synced
	t.synced = true
	fn := t.onSynced
	t.mu.Unlock()
	if first && fn != nil {
		fn()
	}
}

// Seed feeds a deployment's pods only if the tracker has none of it yet:
// the sweep fills the tracker at start from its snapshot, and never
// overwrites what a sync, which lists later, gave.
func (t *Tracker) Seed(deploymentKey string, pods []PodEndpoint) {
	t.mu.Lock()
	_, known := t.byDeployment[deploymentKey]
	t.mu.Unlock()
	if !known && len(pods) > 0 {
		t.Update(deploymentKey, pods)
	}
}

// OwnerKey is the tracker's key of the pods of an owner that is no
// Deployment (a Deployment's is "namespace/name"): "Kind:namespace/name",
// which no Deployment key can be.
func OwnerKey(kind, namespace, name string) string {
	return kind + ":" + manifests.ObjectMeta{Namespace: namespace}.NamespaceOrDefault() + "/" + name
}

// OwnedPod is a pod the pod runtime runs for an owner that is no
// Deployment (docs/design.md §17), as its controller sees it.
type OwnedPod struct {
	Namespace, Name string
	// Template is the pod's template (its named ports); Container its
	// container as listed (nil: not created yet).
	Template  *manifests.PodTemplateSpec
	Container *dockerx.Container
	// Ready is the pod's Ready condition (podruntime.PodStatus);
	// Terminating: its stop has begun.
	Ready, Terminating bool
}

// OwnedPodEndpoints turns an owner's pods into the tracker's (Update with
// OwnerKey). Their labels, hostname and subdomain are their container's
// (labels without dockctl's own: the template's as the pod got them, a
// StatefulSet's statefulset.kubernetes.io/pod-name included); their
// address is the one on the instance network, or hostIP (the host's
// address there) for a pod on the host's network. A pod not created yet
// is no endpoint.
func OwnedPodEndpoints(instance, hostIP string, pods []OwnedPod) []PodEndpoint {
	network := dockerx.NetworkName(instance)
	var out []PodEndpoint
	for _, p := range pods {
		c := p.Container
		if c == nil {
			continue
		}
		ep := PodEndpoint{Namespace: manifests.ObjectMeta{Namespace: p.Namespace}.NamespaceOrDefault(), Pod: p.Name, IP: c.Networks[network], UnitID: c.ID,
			Ready: p.Ready, Terminating: p.Terminating || c.State == dockerx.StateRemoving,
			Labels: PodLabels(c.Labels), Hostname: c.Labels[dockerx.LabelHostname], Subdomain: c.Labels[dockerx.LabelSubdomain]}
		if OnHostNetwork(c) {
			ep.IP = hostIP
		}
		if p.Template != nil {
			ep.Containers = p.Template.Spec.ServingContainers()
		}
		out = append(out, ep)
	}
	slices.SortFunc(out, func(a, b PodEndpoint) int { return strings.Compare(a.Pod, b.Pod) })
	return out
}

// OnHostNetwork reports whether a pod's network owner shares the host's
// network namespace.
func OnHostNetwork(owner *dockerx.Container) bool {
	_, host := owner.Networks["host"]
	return host || owner.NetworkMode == "host"
}

// PodLabels are a container's labels without dockctl's own: the template
// labels it was made with.
func PodLabels(labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		if !strings.HasPrefix(k, "io.dockctl.") {
			out[k] = v
		}
	}
	return out
}
