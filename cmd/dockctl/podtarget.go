package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// The pod `exec` and `port-forward` act on, chosen as kubectl chooses it
// (attachablePodForObject): a pod named, or one of the pods a deployment
// or a Service selects.

// podTarget is exec's and port-forward's first argument: POD, or
// KIND/NAME for a pod, a deployment or a Service.
type podTarget struct{ kind, name string }

func (t podTarget) String() string { return t.kind + "/" + t.name }

// parsePodTarget reads POD, pod/NAME, deploy/NAME (any of kubectl's
// spellings of the kinds), svc/NAME.
func parsePodTarget(arg string) (podTarget, error) {
	k, name, slashed := strings.Cut(arg, "/")
	if !slashed {
		if arg == "" {
			return podTarget{}, fmt.Errorf("a pod name is required")
		}
		return podTarget{kind: kindPod, name: arg}, nil
	}
	switch kind, _ := kindAlias(k); {
	case name == "" || strings.Contains(name, "/"):
	case slices.Contains(podTargetKinds, kind):
		return podTarget{kind: kind, name: name}, nil
	}
	return podTarget{}, fmt.Errorf("expected POD, pod/NAME, deployment/NAME or service/NAME, got %q", arg)
}

// podsOf lists the pods t selects in namespace ns, as found in snap: the
// pod (live before terminating), the deployment's, or those whose labels
// the Service's selector matches. A deployment or Service that does not
// exist is an error; one that selects no pod (yet) is none.
func (snap *snapshot) podsOf(g *globalOptions, ns string, t podTarget) ([]podEntry, error) {
	return kindByName(t.kind).podsOf(snap, g, ns, t.name)
}

// podSelector lists the pods the object name of one kind selects in
// namespace ns (podsOf).
type podSelector func(snap *snapshot, g *globalOptions, ns, name string) ([]podEntry, error)

func podsOfPod(snap *snapshot, g *globalOptions, ns, name string) ([]podEntry, error) {
	e, err := snap.pod(g, ns, name)
	if err != nil {
		return nil, err
	}
	return []podEntry{e}, nil
}

func podsOfDeployment(snap *snapshot, g *globalOptions, ns, name string) ([]podEntry, error) {
	if snap.record(store.Key(ns, name)) == nil {
		return nil, snap.missing(g, ns, name)
	}
	var out []podEntry
	for _, e := range snap.allPods() {
		if e.Namespace == ns && e.ownedBy(manifests.Kind, name) && !e.deleted {
			out = append(out, e)
		}
	}
	return out, nil
}

// podsOfWorkload selects the pods of a workload of the store's kind (a
// Job's, a ReplicaSet's…), as kubectl's attachablePodForObject does by
// the owner's selector; a workload that does not exist is an error.
func podsOfWorkload(kind string) podSelector {
	return func(snap *snapshot, g *globalOptions, ns, name string) ([]podEntry, error) {
		var out []podEntry
		for _, e := range snap.allPods() {
			if e.Namespace == ns && e.ownedBy(kind, name) {
				out = append(out, e)
			}
		}
		if len(out) == 0 && snap.st != nil {
			if _, err := snap.st.LookupObject(store.ObjectRef{Kind: kind, Namespace: ns, Name: name}); err != nil {
				return nil, notFoundIn(g, strings.ToLower(kind), ns, name, err)
			}
		}
		return out, nil
	}
}

func podsOfService(snap *snapshot, g *globalOptions, ns, name string) ([]podEntry, error) {
	svc, ok := snap.service(ns, name)
	if !ok {
		return nil, snap.missingService(g, "Service", ns, name)
	}
	sel := svc.rec.Service.Spec.Selector
	if len(sel) == 0 {
		return nil, fmt.Errorf("cannot attach to service %q: it is defined without a selector", name)
	}
	var out []podEntry
	for _, e := range snap.allPods() {
		if e.Namespace == ns && !e.orphan && !e.deleted && manifests.SelectorMatches(sel, e.labels()) {
			out = append(out, e)
		}
	}
	return out, nil
}

// attachable is the pod of pods exec and port-forward use: the first of
// them sorted as kubectl sorts them (sort.Reverse(podutils.ActivePods)):
// running before pending, ready before not ready, not terminating before
// terminating, fewer container restarts before more, then the older
// first (kubectl's "ready for longer", which dockctl does not record, goes
// the same way). Name breaks ties, so that the choice is stable.
func attachable(pods []podEntry) (podEntry, bool) {
	if len(pods) == 0 {
		return podEntry{}, false
	}
	sorted := append([]podEntry(nil), pods...)
	sort.SliceStable(sorted, func(i, j int) bool { return betterPod(&sorted[i], &sorted[j]) })
	return sorted[0], true
}

// betterPod reports whether a comes before b in attachable's order.
func betterPod(a, b *podEntry) bool {
	if ra, rb := a.Phase() == corev1.PodRunning, b.Phase() == corev1.PodRunning; ra != rb {
		return ra
	}
	if ra, rb := a.ready(), b.ready(); ra != rb {
		return ra
	}
	if a.Terminating != b.Terminating {
		return !a.Terminating
	}
	aApp, aSide := a.maxRestarts()
	bApp, bSide := b.maxRestarts()
	if aApp != bApp {
		return aApp < bApp
	}
	if aSide != bSide {
		return aSide < bSide
	}
	if !a.Created.Equal(b.Created) {
		return !a.Created.IsZero() && (b.Created.IsZero() || a.Created.Before(b.Created))
	}
	return a.Name < b.Name
}

// ready is the pod's Ready condition.
func (e *podEntry) ready() bool {
	for _, c := range e.Conditions() {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// maxRestarts are the most restarts of one app container, and of one
// native sidecar, as kubectl compares pods.
func (e *podEntry) maxRestarts() (app, sidecar int) {
	for _, pc := range e.Containers {
		switch {
		case !pc.Init:
			app = max(app, pc.View.Restarts)
		case pc.Sidecar:
			sidecar = max(sidecar, pc.View.Restarts)
		}
	}
	return app, sidecar
}

// podWaitInterval is how often attachablePod looks again for a pod to
// appear.
const podWaitInterval = time.Second

// attachablePod takes snapshots until t selects a pod, for at most
// timeout (kubectl's --pod-running-timeout: a deployment just applied has
// no pod yet), and returns the attachable one with its snapshot.
func (g *globalOptions) attachablePod(ctx context.Context, st *store.Store, cli *dockerx.Client, t podTarget, timeout time.Duration) (podEntry, *snapshot, error) {
	deadline := time.Now().Add(timeout)
	for {
		snap, err := takeSnapshotWith(ctx, g, st, cli)
		if err != nil {
			return podEntry{}, nil, err
		}
		pods, err := snap.podsOf(g, g.namespace, t)
		if err != nil {
			return podEntry{}, nil, err
		}
		if e, ok := attachable(pods); ok {
			return e, snap, nil
		}
		if time.Now().Add(podWaitInterval).After(deadline) {
			return podEntry{}, nil, fmt.Errorf("%s selects no pod in %s (waited %s, --pod-running-timeout)", t, g.where(g.namespace), timeout)
		}
		select {
		case <-ctx.Done():
			return podEntry{}, nil, ctx.Err()
		case <-time.After(podWaitInterval):
		}
	}
}

// runningContainer returns the container of pod e that exec acts on —
// the one named, else the pod's default (pickContainer, with its notice)
// — when it runs.
func runningContainer(e podEntry, name string) (podruntime.PodContainer, string, error) {
	pc, notice, err := pickContainer(e, name)
	if err != nil {
		return pc, "", err
	}
	switch c := pc.Container; {
	case c == nil:
		state, _ := e.ContainerState(pc)
		reason := "not created"
		if state.Waiting != nil {
			reason = "waiting to start: " + state.Waiting.Reason
		} else if state.Terminated != nil {
			reason = "completed"
		}
		return pc, notice, fmt.Errorf("container %q in pod %q is %s", pc.DisplayName(), e.Name, reason)
	case c.State != dockerx.StateRunning:
		return pc, notice, fmt.Errorf("container %q in pod %q is not running (%s)", pc.DisplayName(), e.Name, c.State)
	}
	return pc, notice, nil
}

// networkOwner is the container that owns pod e's network namespace: its
// holder, or its container when it is a pod by itself.
func (e *podEntry) networkOwner() *dockerx.Container {
	if e.Holder != nil {
		return e.Holder
	}
	if e.HasHolder() {
		return nil // its holder is gone: the pod failed
	}
	var owner *dockerx.Container
	for _, pc := range e.Containers {
		if c := pc.Container; c != nil && owner == nil {
			owner = c
		}
	}
	return owner
}

// joinNetworkMode is the network mode a helper takes to share the
// namespace of owner: the namespace owner itself joined (the host's, or
// another container's), else owner's.
func joinNetworkMode(owner *dockerx.Container) string {
	if m := owner.NetworkMode; m == "host" || strings.HasPrefix(m, "container:") {
		return m
	}
	return "container:" + owner.ID
}
