package workloads

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/reconcile"
	"github.com/dockctl/dockctl/reconciler/workload"
	"github.com/dockctl/dockctl/store"
)

// Orphans (docs/design.md §17.1). A pod a deletion with --cascade=orphan
// left (store.PodOrphan) is still a pod: the kubelet keeps running it —
// restarts under its restartPolicy, probes, status — whatever owns it,
// and the endpoints controller routes a Service to it whenever the
// Service's selector matches it and it is ready; ownership plays no part.
// Here a pod's owner is in its containers' labels, so the orphans of one
// kind and name have an owner of their own in the frame: the orphan
// keeper of that kind and name, queued under OrphansKey. Its sync reads
// the record of the name (the tombstone, or the object applied again
// over it, which adopts those its selector matches: they are its own
// again and leave the keeper), keeps the orphans it observes with the
// spec each was made from (Kind.made: the template of the revision its
// containers carry) through the pod runtime, as a standalone Pod is kept,
// and feeds their readiness to the Services' endpoints tracker. Its
// decision (decideOrphans) keeps exactly the orphans it observes and
// creates none: an orphan removed (`delete pod`, its namespace deleted)
// is gone for good, and none is ever made again from another template or
// under another name. An orphan whose template is not found (a record
// of a release that kept no revisions, a status written over) is left
// as Docker runs it, as before, and the keeper logs once why.

// orphansPrefix prefixes the key of an orphan keeper: the frame's key of
// the kind and name whose orphans it keeps.
const orphansPrefix = "orphans:"

// OrphansKey is the key of the orphan keeper of the pods kind/name of
// namespace ns left: "orphans:<kind>:namespace/name".
func OrphansKey(kind, ns, name string) string { return orphansPrefix + Key(kind, ns, name) }

// parseOrphansKey is the kind, namespace and name of an orphan keeper's
// key; ok false for any other key.
func parseOrphansKey(key string) (kind, ns, name string, ok bool) {
	rest, ok := strings.CutPrefix(key, orphansPrefix)
	if !ok {
		return "", "", "", false
	}
	kind, ns, name = store.ParseWatchKey(rest)
	if kind == "" {
		// A Deployment's store key has no kind in it ("namespace/name"),
		// Key's has.
		if lower, bare, cut := strings.Cut(rest, ":"); cut {
			if k, n, m := store.ParseWatchKey(bare); k != "" && strings.ToLower(k) == lower {
				kind, ns, name = k, n, m
			}
		}
	}
	return kind, ns, name, kind != ""
}

// orphanMemory is what the orphan keepers remember between syncs.
type orphanMemory struct {
	mu sync.Mutex
	// kept are the keepers whose last sync observed orphans: the Docker
	// events of their kind and name queue them, and a keeper whose
	// record lists none any more releases what the runtime and the
	// tracker hold of it once.
	kept map[string]bool
	// unknown are, by keeper key, the orphan pods (pod and container
	// ID) whose template was not found at its last sync, logged once:
	// what a keeper's sync no longer sees is forgotten with it.
	unknown map[string]map[string]bool
	// failure is, by keeper key, the error its last sync logged: a
	// failure that persists (an orphan the privilege gate refuses, whose
	// cause is the controller's flags) is logged once, not every sync.
	failure map[string]string
}

// failed records msg as keeper key's last sync failure ("" none) and
// reports whether it differs from the one before: whether to log it.
func (m *orphanMemory) failed(key, msg string) (changed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failure[key] == msg {
		return false
	}
	if msg == "" {
		delete(m.failure, key)
		return true
	}
	if m.failure == nil {
		m.failure = map[string]string{}
	}
	m.failure[key] = msg
	return true
}

// setKept records whether keeper key has orphans to keep, and returns
// whether it had.
func (m *orphanMemory) setKept(key string, kept bool) (had bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	had = m.kept[key]
	switch {
	case kept && m.kept == nil:
		m.kept = map[string]bool{key: true}
	case kept:
		m.kept[key] = true
	default:
		delete(m.kept, key)
	}
	return had
}

// isKept reports whether keeper key had orphans at its last sync.
func (m *orphanMemory) isKept(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.kept[key]
}

// seenUnknown records ids as keeper key's orphans of unknown template
// now, forgetting the others, and returns those not seen before (to be
// told).
func (m *orphanMemory) seenUnknown(key string, ids []string) (fresh []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	was := m.unknown[key]
	if len(ids) == 0 {
		delete(m.unknown, key)
		return nil
	}
	now := make(map[string]bool, len(ids))
	for _, id := range ids {
		now[id] = true
		if !was[id] {
			fresh = append(fresh, id)
		}
	}
	if m.unknown == nil {
		m.unknown = map[string]map[string]bool{}
	}
	m.unknown[key] = now
	return fresh
}

// queueOrphans queues the orphan keeper of kind/ns/name when kind can
// leave orphans and always or the keeper has orphans.
func (c *Controller) queueOrphans(k Kind, ns, name string, always bool) {
	if k.made == nil {
		return
	}
	key := OrphansKey(k.Name, ns, name)
	if always || c.orphans.isKept(key) {
		c.loop.Add(reconcile.Request{Key: key})
	}
}

// orphanPlan is the orphan keeper's decision on the orphans it observes:
// each is kept with the spec it was made from (restarted as its
// restartPolicy says), or, that spec unknown, left alone; none is created
// nor deleted — a pod nobody owns is never replaced.
type orphanPlan struct {
	// keep are the pods kept, with their units, and unknown the units
	// of those left alone.
	keep    []podruntime.PodSpec
	units   []podUnit
	unknown []podUnit
}

// planOrphans decides on the orphans seen of kind k's object obj (its
// status read by status, its recorded revisions history): a pure
// function of what it is given.
func planOrphans(k Kind, obj any, status func(into any) error, history []workload.Revision, seen podGroup) orphanPlan {
	var p orphanPlan
	for _, u := range seen.units {
		spec, ok := orphanSpec(k, obj, status, history, u.name, seen.observed[u.ct])
		if !ok {
			p.unknown = append(p.unknown, u)
			continue
		}
		p.keep = append(p.keep, spec)
		p.units = append(p.units, u)
	}
	return p
}

// keepOrphans syncs the orphan keeper key of kind k's name in namespace
// ns (see above).
func (c *Controller) keepOrphans(ctx context.Context, key string, k Kind, ns, name string) (reconcile.Result, error) {
	ref := store.ObjectRef{Kind: k.Name, Namespace: ns, Name: name}
	obj, err := c.cfg.Store.LookupObject(ref)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return reconcile.Result{}, err
	}
	now := c.cfg.Now()
	in := podruntime.SyncInput{Instance: c.cfg.Instance, Key: key, Namespace: ns,
		Owner: podruntime.OwnerRef{Kind: k.Name, Name: name}, Now: now, Config: c.cfg.Store}
	if obj == nil || obj.Object == nil || len(obj.Orphaned) == 0 {
		// No orphan of the name (its namespace deleted: they went as
		// any pod of it, PodStale): what was kept of them is
		// released, their pods leave every Service.
		c.orphans.seenUnknown(key, nil)
		c.orphans.failed(key, "")
		if !c.orphans.setKept(key, false) {
			return reconcile.Result{}, nil
		}
		c.dropEndpointsKey(key)
		res, err := c.runtime.Sync(ctx, c.cfg.Docker, in)
		if err == nil && obj != nil && k.recordsStatus() {
			// Nor is anything recorded of them.
			err = c.cfg.Store.UpdateWorkloadStatus(ref, obj.Created, store.WorkloadUpdate{Writer: WriterOrphans})
		}
		return reconcile.Result{RequeueAfter: res.RequeueAfter}, err
	}
	c.runtime.Listing(key)
	all, err := c.cfg.Docker.ListContainers(ctx, c.cfg.Instance)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("listing containers: %w", err)
	}
	if c.cfg.PodNetwork != nil {
		pn, err := c.cfg.PodNetwork(ctx, ns)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("pod network: %w", err)
		}
		in.Network = pn
	}
	seen := c.observe(all, k.Name, name, ns, obj).orphanPods
	// Only a keeper that has orphans is queued by the events of its
	// kind and name's containers (an adopter's record lists the orphans
	// it adopted).
	c.orphans.setKept(key, len(seen.units) > 0)
	readStatus := func(into any) error {
		_, err := c.cfg.Store.ReadWorkloadStatus(ref, obj.Created, into)
		return err
	}
	history := recordedHistory(obj)
	base := "spec.template"
	if w, ok := obj.Object.(manifests.Workload); ok {
		_, base = w.PodTemplate()
	}
	// A pod its owner was removing when it was deleted (a scale-down's,
	// a rollout's) is being deleted still: orphaning the owner drops
	// the ownerReference of a pod whose deletionTimestamp stays set. The
	// owner's stopper finishes it; the keeper never starts it again, and
	// feeds it terminating.
	_, going := c.runtime.Stopper().InFlight(Key(k.Name, ns, name))
	var leaving []podUnit
	if len(going) > 0 {
		seen, leaving = withoutGoing(seen, going)
	}
	plan := planOrphans(k, obj.Object, readStatus, history, seen)
	unknown := make([]string, len(plan.unknown))
	byID := make(map[string]podUnit, len(plan.unknown))
	for i, u := range plan.unknown {
		unknown[i] = u.name + "@" + seen.observed[u.ct].ID
		byID[unknown[i]] = u
	}
	for _, id := range c.orphans.seenUnknown(key, unknown) {
		u := byID[id]
		c.cfg.Log.Warn("orphan pod left as Docker runs it: the template it was made from is not recorded (no restarts, probes or endpoints by dockctl)",
			"pod", u.name, "namespace", ns, "owner", ref.String(), "templateHash", seen.observed[u.ct].TemplateHash)
	}
	// Only the orphans kept are in Observed: a container there that no
	// wanted pod has would be stopped.
	units := plan.units
	for i, u := range units {
		spec := plan.keep[i]
		// Kept under the name it runs as (a Deployment's replica is
		// named by its controller, dockerx.ContainerName).
		spec.Namespace, spec.Owner, spec.ContainerName = ns, in.Owner, podBase(seen.observed[u.ct])
		// What is created of it (a holder pod's next member) is its
		// deleted incarnation's, as its holder is: unlabelled, it would
		// be the own pod of the next object of the name.
		spec.Owner.UID = seen.observed[u.ct].Labels[dockerx.LabelOwnerUID]
		in.Pods = append(in.Pods, spec)
		for _, j := range u.cts {
			in.Observed = append(in.Observed, seen.observed[j])
		}
	}
	// Judged like any pod spec handed to the runtime: one needing a
	// flag the controller was not started with is not restarted.
	c.gate(in.Pods, base)
	if k.recordsStatus() {
		c.recall(key, WriterOrphans, ref, obj.Created)
	}
	res, syncErr := c.runtime.Sync(ctx, c.cfg.Docker, in)
	_, removing := c.runtime.Stopper().InFlight(key)
	for id, at := range going {
		removing[id] = at
	}
	pods, cts := observedPods(append(units[:len(units):len(units)], leaving...), seen.observed, res, removing)
	c.feedEndpointsAs(key, in, cts, pods, nil)
	// As an owner's sync, the keeper records what the read commands
	// judge its orphans by (recorded.go), in the status of their kind
	// and name beside the owner's record.
	if k.recordsStatus() {
		u, err := RecordUpdate(WriterOrphans, c.runtime.Recorded(key, in.Observed))
		if err != nil {
			return reconcile.Result{}, err
		}
		if err := c.cfg.Store.UpdateWorkloadStatus(ref, obj.Created, u); err != nil {
			return reconcile.Result{}, err
		}
	}
	msg := ""
	if syncErr != nil {
		msg = syncErr.Error()
	}
	if c.orphans.failed(key, msg) && syncErr != nil {
		c.cfg.Log.Warn("orphan pods", "orphans", key, "err", syncErr)
	}
	return reconcile.Result{RequeueAfter: res.RequeueAfter}, nil
}

// orphanSpec is the spec orphan pod (whose holder, or one container, is
// ct) of kind k's object obj was made from (Kind.made), when its hash is
// the one ct carries: an orphan is never run from another template.
func orphanSpec(k Kind, obj any, status func(into any) error, history []workload.Revision, pod string, ct dockerx.Container) (podruntime.PodSpec, bool) {
	if ct.TemplateHash == "" {
		return podruntime.PodSpec{}, false
	}
	spec, ok := k.made(obj, status, history, pod, ct)
	if !ok || spec.Template == nil {
		return podruntime.PodSpec{}, false
	}
	if spec.TemplateHash == "" {
		spec.TemplateHash = manifests.TemplateHash(spec.Template)
	}
	if spec.TemplateHash != ct.TemplateHash {
		return podruntime.PodSpec{}, false
	}
	spec.Name = pod
	return spec, true
}

// StatusReader reads a workload's stored status (store.Store).
type StatusReader interface {
	ReadWorkloadStatus(ref store.ObjectRef, created time.Time, into any) (int64, error)
}

// OrphanTemplate is the template an orphan pod was made from and the
// template hash its containers carry.
type OrphanTemplate struct {
	Hash     string
	Template *manifests.PodTemplateSpec
}

// OrphanTemplates are the templates the orphans among cts (containers of
// the pods of kind's object obj, of its name in namespace ns) were made
// from, by pod name, as their keeper runs them: what the read commands
// judge and show an orphan by (its readiness, its restart policy, its
// volumes), not the object's later template. A pod's own: the orphans of
// one revision differ by their identity (a StatefulSet's pod-name label
// and claims). st reads obj's stored status; an orphan whose template is
// unknown has none here.
func OrphanTemplates(kind string, obj *store.StoredObject, st StatusReader, instance, ns string, cts []dockerx.Container) map[string]OrphanTemplate {
	var k Kind
	for _, r := range Kinds() {
		if r.Name == kind {
			k = r
		}
	}
	if k.made == nil || obj == nil || obj.Object == nil || len(obj.Orphaned) == 0 {
		return nil
	}
	ref := store.ObjectRef{Kind: kind, Namespace: ns, Name: obj.Meta.Name}
	status := func(into any) error {
		_, err := st.ReadWorkloadStatus(ref, obj.Created, into)
		return err
	}
	history := recordedHistory(obj)
	out := map[string]OrphanTemplate{}
	for _, ct := range cts {
		if obj.ContainerOwner(ct.Labels[dockerx.LabelOwnerUID], ct.Created, ct.Labels) != store.PodOrphan {
			continue
		}
		pod, ok := dockerx.PodOf(instance, ns, podBase(ct), ct.Labels)
		if _, done := out[pod]; !ok || done {
			continue
		}
		if spec, ok := orphanSpec(k, obj.Object, status, history, pod, ct); ok {
			out[pod] = OrphanTemplate{Hash: ct.TemplateHash, Template: spec.Template}
		}
	}
	return out
}

// withoutGoing is seen without the pods with a container in going (the
// owner's removals in flight), returned apart as leaving.
func withoutGoing(seen podGroup, going map[string]time.Time) (podGroup, []podUnit) {
	var leaving []podUnit
	kept := seen
	kept.units = nil
	for _, u := range seen.units {
		gone := false
		for _, id := range u.ids {
			_, in := going[id]
			gone = gone || in
		}
		if gone {
			leaving = append(leaving, u)
		} else {
			kept.units = append(kept.units, u)
		}
	}
	return kept, leaving
}
