package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// snapshot is what the read commands show: the stored desired state, what
// the controller recorded, and what Docker reports, read once, for every
// namespace (the commands pick theirs). Deployments are keyed by
// store.Key, "namespace/name"; a container belongs to the key of its
// namespace and deployment labels (containerKey).
type snapshot struct {
	instance   string
	records    []*store.Record
	statuses   map[string]*store.Status
	containers []dockerx.Container
	recordErrs []error
	tombstones map[string]bool
	// deleted holds the tombstones' records (their last template), for
	// showing the pods being removed.
	deleted map[string]*store.Record
	// unreadable are deployments whose record exists but cannot be read:
	// known, so their containers are no orphans (the controller leaves
	// them alone until the record is readable again).
	unreadable map[string]bool
	// deletions are the pending requests of `delete pod`, by deployment:
	// their pods are Terminating from the request on, as the controller
	// sees them (reconciler.View), whether or not it began their stop.
	deletions map[string][]store.PodDeletion
	// namespaces are the namespace records, default included.
	namespaces []*store.NamespaceRecord
	// services are the live Services, with their controller status.
	services []serviceEntry
	// helpers are the instance's helper containers (Services' proxies, the
	// DNS server, port-forward sessions' relays): listed with the
	// containers, never taken for a deployment's (whose containers are in
	// containers).
	helpers []dockerx.Container
	st      *store.Store
	now     time.Time
	// controllerRunning tells whether a controller holds the state
	// directory's lock: without one, what it recorded may be stale.
	controllerRunning bool

	// hostIP is the host's address on the instance network (its gateway,
	// from the network record): a pod's status.hostIP, as the downward
	// API gives it.
	hostIP string
	// details runs f with a Docker client, for what a container list does
	// not say (the host's name, when a container started): only the
	// formats that show it ask (podstatus.go). nil: nothing is asked, and
	// those stay unknown.
	details func(f func(context.Context, dockerDetails) error) error
	host    *dockerx.HostInfo                   // asked once (nodeName)
	started map[string]dockerx.ContainerDetails // by ID, each inspected once

	views    map[string]deploymentView // computed once per deployment
	pods     []podEntry                // computed once (allPods)
	podNames map[string]string         // pod name by container ID (podOf)
}

// deploymentView is a deployment's status and per-container facts as the
// controller computes them.
type deploymentView struct {
	status     manifests.DeploymentStatus
	containers map[string]podruntime.ContainerView
}

// view computes (once) what reconciler.View says about a live deployment.
func (s *snapshot) view(r *store.Record) deploymentView {
	key := r.Key()
	if v, ok := s.views[key]; ok {
		return v
	}
	st, cs := reconciler.View(r, s.statuses[key], s.deletions[key], s.ownedContainersOf(key), s.now)
	v := deploymentView{status: st, containers: cs}
	if s.views == nil {
		s.views = map[string]deploymentView{}
	}
	s.views[key] = v
	return v
}

func takeSnapshot(ctx context.Context, g *globalOptions) (*snapshot, error) {
	s, cli, err := g.liveSnapshot(ctx, false)
	if err != nil {
		return nil, err
	}
	cli.Close()
	// cli is closed on return: what asks later has a client of its own.
	s.details = func(f func(context.Context, dockerDetails) error) error {
		cli, err := g.docker(ctx)
		if err != nil {
			return err
		}
		defer cli.Close()
		return f(ctx, cli)
	}
	return s, nil
}

// openLive opens the state directory (to write it when write) and
// connects to Docker: what a command about live containers needs. The
// caller closes the client.
func (g *globalOptions) openLive(ctx context.Context, write bool) (*store.Store, *dockerx.Client, error) {
	open := g.readStore
	if write {
		open = g.openStore
	}
	st, err := open()
	if err != nil {
		return nil, nil, err
	}
	cli, err := g.docker(ctx)
	if err != nil {
		return nil, nil, err
	}
	return st, cli, nil
}

// liveSnapshot is openLive and a snapshot taken with them, for a command
// that goes on using the client (which it closes).
func (g *globalOptions) liveSnapshot(ctx context.Context, write bool) (*snapshot, *dockerx.Client, error) {
	st, cli, err := g.openLive(ctx, write)
	if err != nil {
		return nil, nil, err
	}
	s, err := takeSnapshotWith(ctx, g, st, cli)
	if err != nil {
		cli.Close()
		return nil, nil, err
	}
	return s, cli, nil
}

// takeSnapshotWith is takeSnapshot on a client the caller keeps using.
func takeSnapshotWith(ctx context.Context, g *globalOptions, st *store.Store, cli *dockerx.Client) (*snapshot, error) {
	cs, err := cli.ListContainers(ctx, g.instance)
	if err != nil {
		return nil, err
	}
	all, errs := st.ListAll()
	running, _ := st.ControllerRunning()
	s := &snapshot{st: st, controllerRunning: running, instance: g.instance, statuses: map[string]*store.Status{},
		deletions: map[string][]store.PodDeletion{}, tombstones: map[string]bool{},
		deleted: map[string]*store.Record{}, recordErrs: errs, now: time.Now(),
		details: func(f func(context.Context, dockerDetails) error) error { return f(ctx, cli) }}
	if n, err := st.ReadNetwork(); err != nil {
		s.recordErrs = append(s.recordErrs, err)
	} else if n != nil {
		s.hostIP = n.Gateway
	}
	for _, c := range cs {
		if c.Role == dockerx.RoleController {
			continue // `dockctl install`'s controller: no pod, never an orphan (docs/design.md §4)
		}
		if isHelper(c) {
			s.helpers = append(s.helpers, c)
		} else {
			s.containers = append(s.containers, c)
		}
	}
	if s.namespaces, err = st.ListNamespaces(); err != nil {
		s.recordErrs = append(s.recordErrs, err)
	}
	s.readServices(st)
	for _, r := range all {
		if r.Deleted {
			s.tombstones[r.Key()] = true
			s.deleted[r.Key()] = r
			continue
		}
		s.records = append(s.records, r)
		if status, err := st.ReadStatus(r.Namespace, r.Name); err == nil && status != nil {
			s.statuses[r.Key()] = status
		}
		if dels, err := st.PodDeletions(r.Namespace, r.Name); err != nil {
			// The controller ignores what it cannot read: so does the view.
			s.recordErrs = append(s.recordErrs, fmt.Errorf("deployment %q: pod deletions ignored: %w", r.Name, err))
		} else if len(dels) > 0 {
			s.deletions[r.Key()] = dels
		}
	}
	for _, c := range s.containers {
		key := containerKey(c)
		if c.Deployment == "" || s.known(key) || s.tombstoned(key) || s.unreadable[key] {
			continue
		}
		if _, err := st.Lookup(containerNamespace(c), c.Deployment); err != nil && !errors.Is(err, store.ErrNotFound) {
			if s.unreadable == nil {
				s.unreadable = map[string]bool{}
			}
			s.unreadable[key] = true
		}
	}
	return s, nil
}

// containerNamespace is the namespace a container belongs to.
func containerNamespace(c dockerx.Container) string {
	if c.Namespace == "" {
		return manifests.DefaultNamespace
	}
	return c.Namespace
}

// containerKey is the key of the deployment a container belongs to.
func containerKey(c dockerx.Container) string { return store.Key(c.Namespace, c.Deployment) }

// containersOf returns the containers of the deployment key.
func (s *snapshot) containersOf(key string) []dockerx.Container {
	var out []dockerx.Container
	for _, c := range s.containers {
		if containerKey(c) == key {
			out = append(out, c)
		}
	}
	return out
}

// ownedContainersOf are the containers of containersOf(key) that its
// deployment (live, or deleted and not yet gone) owns: not the pods a
// deletion with --cascade=orphan left and none adopted
// (reconciler.OwnedContainers), which are nobody's.
func (s *snapshot) ownedContainersOf(key string) []dockerx.Container {
	cs := s.containersOf(key)
	if r := cmp.Or(s.record(key), s.deleted[key]); r != nil {
		return reconciler.OwnedContainers(r, cs)
	}
	return cs
}

// deploymentObject is the Deployment as `get -o json|yaml` shows it: the
// stored spec plus server-set metadata and a status whose counts come from
// Docker and whose generation and conditions come from the controller.
func (s *snapshot) deploymentObject(r *store.Record) *manifests.Deployment {
	d := r.Deployment.DeepCopy()
	d.Metadata.Namespace = r.NamespaceOrDefault() // as the API server always shows it
	d.Metadata.Generation = r.Generation
	created := r.CreatedAt
	d.Metadata.CreationTimestamp = &created
	d.Metadata.ManagedFields = r.Entries()
	st := s.view(r).status
	if cs := s.statuses[r.Key()]; cs != nil {
		st.ObservedGeneration = cs.ObservedGeneration
		st.Conditions = cs.Conditions
	}
	d.Status = &st
	return d
}

// containerObject is a container as `get containers -o json|yaml` shows it.
type containerObject struct {
	Name         string            `json:"name"`
	ID           string            `json:"id"`
	Namespace    string            `json:"namespace"`
	Deployment   string            `json:"deployment"`
	TemplateHash string            `json:"templateHash"`
	Image        string            `json:"image"`
	State        string            `json:"state"`
	Phase        string            `json:"phase"`
	Health       string            `json:"health,omitempty"`
	Ready        bool              `json:"ready"`
	Status       string            `json:"status"`
	Restarts     int               `json:"restarts"`
	Created      time.Time         `json:"created"`
	Ports        []string          `json:"ports,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Orphan       bool              `json:"orphan,omitempty"`
	// Pod is the pod the container belongs to; Role says whether it is the
	// pod's holder or one of its containers (a replica), Container which
	// container of the template it runs (a member of a pod with a holder).
	Pod       string `json:"pod,omitempty"`
	Role      string `json:"role,omitempty"`
	Container string `json:"container,omitempty"`
}

// missing words why the live deployment name of namespace ns is not in the
// snapshot: its record cannot be read (the store's error, naming the
// file), or there is none.
func (s *snapshot) missing(g *globalOptions, ns, name string) error {
	if s.st != nil {
		if _, err := s.st.Lookup(ns, name); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("deployment %q: %w", name, err)
		}
	}
	return notFoundIn(g, store.KindDeployment, ns, name, store.ErrNotFound)
}

// absent is missing's error when deployment name of namespace ns is
// neither live nor being deleted, else nil.
func (s *snapshot) absent(g *globalOptions, ns, name string) error {
	if key := store.Key(ns, name); s.known(key) || s.tombstoned(key) {
		return nil
	}
	return s.missing(g, ns, name)
}

func (s *snapshot) known(key string) bool { return s.record(key) != nil }

// record returns the live record of the deployment key, or nil.
func (s *snapshot) record(key string) *store.Record {
	for _, r := range s.records {
		if r.Key() == key {
			return r
		}
	}
	return nil
}

func (s *snapshot) tombstoned(key string) bool { return s.tombstones[key] }

func shortHash(d *manifests.Deployment) string { return manifests.TemplateHash(&d.Spec.Template) }

func (s *snapshot) containerObject(c dockerx.Container) containerObject {
	key := containerKey(c)
	o := containerObject{
		Name: c.Name, ID: c.ID, Namespace: containerNamespace(c), Deployment: c.Deployment, TemplateHash: c.TemplateHash, Image: c.Image,
		State: c.State, Phase: containerStatus(c), Health: c.Health, Ready: podruntime.IsReady(c), Status: c.Status, Created: c.Created,
		Labels: c.Labels, Ports: portStrings(c.Ports),
		Pod: s.podOf()[c.ID], Role: c.Role, Container: c.ContainerName,
	}
	if c.PodUID != "" && c.Role != dockerx.RoleHolder && c.State == dockerx.StateExited && c.ExitCode == 0 {
		// Most often an init container that did its part: as kubectl
		// words a container that exited 0.
		o.Phase = "Completed"
	}
	if r := s.record(key); r != nil {
		v := s.view(r).containers[c.ID]
		o.Ready = v.Ready
		o.Restarts = v.Restarts
		if v.CrashLoopBackOff {
			o.Phase = "CrashLoopBackOff"
		}
		if v.Terminating {
			o.Phase = "Terminating" // being stopped gracefully to be removed
		}
	} else if s.tombstoned(key) {
		// Its deployment was deleted: the controller is stopping it (over
		// its grace period) to remove it, as Kubernetes shows a pod with a
		// deletion timestamp.
		o.Phase, o.Ready = "Terminating", false
	}
	o.Orphan = !s.known(key) && !s.tombstoned(key) && !s.unreadable[key] && !isHelper(c)
	return o
}

func portStrings(ps []dockerx.Port) []string {
	var out []string
	for _, p := range ps {
		if p.HostPort == 0 {
			out = append(out, fmt.Sprintf("%d/%s", p.ContainerPort, p.Protocol))
			continue
		}
		ip := p.HostIP
		if ip == "" {
			ip = "0.0.0.0"
		}
		out = append(out, fmt.Sprintf("%s:%d->%d/%s", ip, p.HostPort, p.ContainerPort, p.Protocol))
	}
	sort.Strings(out)
	return out
}

// containerStatus is the STATUS column: Kubernetes-like words for Docker's
// states.
func containerStatus(c dockerx.Container) string {
	switch c.State {
	case dockerx.StateRunning:
		if c.Health == dockerx.HealthUnhealthy {
			return "Unhealthy"
		}
		return "Running"
	case dockerx.StateExited:
		return "Exited"
	case dockerx.StateCreated:
		return "Created"
	case dockerx.StatePaused:
		return "Paused"
	case dockerx.StateRestarting:
		return "Restarting"
	case dockerx.StateRemoving:
		return "Terminating"
	case dockerx.StateDead:
		return "Dead"
	}
	return c.State
}

// age formats a duration as kubectl does: 45s, 12m, 5h, 3d.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// printObjects prints one object for one name, otherwise a v1 List, as
// kubectl does.
func printObjects(w io.Writer, format string, items []any, single bool) error {
	var obj any = map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
	if single && len(items) == 1 {
		obj = items[0]
	}
	switch format {
	case "json":
		b, err := json.MarshalIndent(obj, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return fmt.Errorf("unknown output format %q (table, wide, json, yaml)", format)
}
