package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// `dockctl delete pod`: the CLI never stops a container itself (the
// controller would race it and start the stopped replica again). It
// records a request per pod in the state directory (store.PodDeletion),
// naming the containers it observed so that a newer pod of the same name
// is never hit; the controller stops the pod through its graceful stop,
// as a scale-down removes one, and creates its replacement (reconciler,
// poddelete.go).

// deletePodsOptions are delete's flags as they concern pods.
type deletePodsOptions struct {
	// grace is kubectl's resolved --grace-period: -1 the pod's own, 0
	// removed at once (--force), N seconds.
	grace int
	// wait: wait until the pods' containers are gone; waitSet: --wait was
	// given (kubectl waits by default; dockctl then only if a controller
	// runs, see run).
	wait, waitSet  bool
	timeout        time.Duration
	ignoreNotFound bool
}

// immediateDeletionWarning is kubectl's, for --grace-period=0 --force.
const immediateDeletionWarning = "Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely."

// resolveGrace is kubectl delete's reading of --grace-period, --now and
// --force (its Complete and Validate): --now is a grace of 1; 0 without
// --force is 1 too ("to prevent accidental data loss"); --force alone is
// 0, and with a grace above 0 an error. A grace of 0 prints kubectl's
// warning.
func resolveGrace(grace int, now, force bool, errOut io.Writer) (int, error) {
	if now {
		if grace != -1 {
			return 0, errors.New("--now and --grace-period cannot be specified together")
		}
		grace = 1
	}
	if grace == 0 && !force {
		grace = 1
	}
	if force && grace < 0 {
		grace = 0
	}
	switch {
	case grace == 0:
		fmt.Fprintln(errOut, immediateDeletionWarning)
	case grace > 0 && force:
		return 0, errors.New("--force and --grace-period greater than 0 cannot be specified together")
	}
	return grace, nil
}

// deleteNamed deletes the pods named in namespace -n.
func (o *deletePodsOptions) deleteNamed(ctx context.Context, g *globalOptions, names []string, out, errOut io.Writer) error {
	return o.run(ctx, g, out, errOut, func(snap *snapshot) ([]podEntry, []error) {
		var pods []podEntry
		var errs []error
		for _, name := range names {
			e, err := snap.pod(g, g.namespace, name)
			switch {
			case err != nil && o.ignoreNotFound:
			case err != nil:
				errs = append(errs, err)
			case e.orphan:
				errs = append(errs, orphanPodError(g, e))
			default:
				pods = append(pods, e)
			}
		}
		return pods, errs
	})
}

// deleteSelected deletes the pods of namespace ns ("" every namespace)
// whose labels sel matches (every pod for --all). Orphans are left out,
// with a warning: no controller of this state directory removes them.
func (o *deletePodsOptions) deleteSelected(ctx context.Context, g *globalOptions, ns string, sel labels.Selector, out, errOut io.Writer) error {
	return o.run(ctx, g, out, errOut, func(snap *snapshot) ([]podEntry, []error) {
		var pods []podEntry
		for _, e := range snap.allPods() {
			if ns != "" && e.Namespace != ns || !sel.Matches(labels.Set(e.labels())) {
				continue
			}
			if e.orphan {
				fmt.Fprintf(errOut, "Warning: %v: left running\n", orphanPodError(g, e))
				continue
			}
			pods = append(pods, e)
		}
		if len(pods) == 0 {
			fmt.Fprintln(out, "No resources found")
		}
		return pods, nil
	})
}

// orphanPodError refuses a pod no deployment of the instance owns: the
// controller leaves orphans as they are (docs/design.md §2), so a request
// would never be carried out.
func orphanPodError(g *globalOptions, e podEntry) error {
	return fmt.Errorf("pod %q is an orphan: no deployment of %s owns it, so no controller of this state directory stops it "+
		"(a controller started with --prune-orphans removes it)", e.Name, g.where(e.Namespace))
}

// run records a deletion for each pod pick chooses from a snapshot,
// printing kubectl's line for each, then waits for them to be gone.
func (o *deletePodsOptions) run(ctx context.Context, g *globalOptions, out, errOut io.Writer, pick func(*snapshot) ([]podEntry, []error)) error {
	snap, cli, err := g.liveSnapshot(ctx, true)
	if err != nil {
		return err
	}
	defer cli.Close()
	st := snap.st
	pods, errs := pick(snap)
	var grace *int64
	if o.grace >= 0 {
		secs := int64(o.grace)
		grace = &secs
	}
	done := "deleted"
	if o.grace == 0 {
		done = "force deleted" // kubectl's word when nothing waits for the stop
	}
	var deleted []store.PodDeletion
	for _, e := range pods {
		req := podDeletionOf(e, grace, time.Now())
		if e.Owner.Kind != manifests.Kind || e.ownerless {
			// A workload's pod, or one an orphaning deletion left: no
			// deployment's controller observes it (store.PodOwner).
			if err := deleteWorkloadPod(ctx, st, cli, e, o.grace); err != nil {
				errs = append(errs, fmt.Errorf("deleting pod %q: %w", e.Name, err))
				continue
			}
			fmt.Fprintf(out, "pod %q %s\n", e.Name, done)
			deleted = append(deleted, req)
			continue
		}
		if err := st.RequestPodDeletions(e.Namespace, e.Owner.Name, []store.PodDeletion{req}); err != nil {
			errs = append(errs, fmt.Errorf("deleting pod %q: %w", e.Name, err))
			continue
		}
		fmt.Fprintf(out, "pod %q %s\n", e.Name, done)
		deleted = append(deleted, req)
	}
	if len(deleted) > 0 && o.grace != 0 && o.wait {
		running, _ := st.ControllerRunning()
		switch {
		case running || o.waitSet:
			if err := waitPodsGone(ctx, g, cli, deleted, deleteWaitTimeout(o.timeout), running); err != nil {
				errs = append(errs, err)
			}
		default:
			// kubectl waits for the kubelet; with no controller to stop
			// them, dockctl says so rather than wait out the timeout.
			fmt.Fprintf(errOut, "Warning: no controller is running for instance %q: the pods are stopped when one starts (--wait waits for it)\n", g.instance)
		}
	}
	return errors.Join(errs...)
}

// podRemover is what deleteWorkloadPod asks of Docker.
type podRemover interface {
	StopContainer(ctx context.Context, id string, timeout time.Duration) error
	RemoveContainer(ctx context.Context, id string) error
}

// deleteWorkloadPod deletes a pod of the generic workload controller's
// owners (docs/design.md §17). A standalone Pod is its own pod: deleting
// it deletes the Pod object, as kubectl's delete of a bare pod does (its
// controller then stops and removes the container). Any other owner's
// pod is stopped over its grace period (grace -1: the template's) and
// removed, members before the holder; the owner replaces it if it wants
// it (a ReplicaSet's or StatefulSet's is re-created, a Job's counted as
// gone). That controller keeps no record of delete requests, so there is
// no request to leave for it, and its next sync sees the pod gone. A pod
// a deletion with --cascade=orphan left and nobody adopted (a
// Deployment's too) is removed so, and nothing replaces it.
func deleteWorkloadPod(ctx context.Context, st *store.Store, d podRemover, e podEntry, grace int) error {
	if e.Owner.Kind == manifests.KindPod {
		_, err := st.DeleteObjects([]store.ObjectRef{{Kind: manifests.KindPod, Namespace: e.Namespace, Name: e.Owner.Name}})
		return err
	}
	if grace < 0 {
		grace = manifests.DefaultTerminationGracePeriodSeconds
		if e.template != nil && e.template.Spec.TerminationGracePeriodSeconds != nil {
			grace = int(*e.template.Spec.TerminationGracePeriodSeconds)
		}
	}
	var ids []string
	for _, pc := range e.Containers {
		if pc.Container != nil {
			ids = append(ids, pc.Container.ID)
		}
	}
	if e.Holder != nil {
		ids = append(ids, e.Holder.ID)
	}
	for _, id := range ids {
		if err := d.StopContainer(ctx, id, time.Duration(grace)*time.Second); err != nil && !errors.Is(err, dockerx.ErrNotFound) {
			return fmt.Errorf("stopping container %s: %w", shortID(id), err)
		}
		if err := d.RemoveContainer(ctx, id); err != nil && !errors.Is(err, dockerx.ErrNotFound) {
			return fmt.Errorf("removing container %s: %w", shortID(id), err)
		}
	}
	return nil
}

// podDeletionOf is the request for pod e as observed: its containers
// (holder included) and, with a holder, its uid.
func podDeletionOf(e podEntry, grace *int64, now time.Time) store.PodDeletion {
	d := store.PodDeletion{Pod: e.Name, GracePeriodSeconds: grace, RequestedAt: now.UTC()}
	add := func(c *dockerx.Container) {
		if c == nil {
			return
		}
		d.Containers = append(d.Containers, c.ID)
		if d.UID == "" {
			d.UID = c.PodUID
		}
	}
	add(e.Holder)
	for _, pc := range e.Containers {
		add(pc.Container)
	}
	return d
}

// podWaitPoll is how often delete --wait looks at Docker.
const podWaitPoll = 200 * time.Millisecond

// waitPodsGone waits until no container of the deleted pods is left, as
// kubectl delete waits for its pods to be gone; it fails with kubectl's
// words for each pod still there when timeout passes.
func waitPodsGone(ctx context.Context, g *globalOptions, cli *dockerx.Client, pods []store.PodDeletion, timeout time.Duration, controllerRunning bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	left := make([]string, 0, len(pods))
	for _, p := range pods {
		left = append(left, p.Pod) // until Docker says otherwise
	}
	for {
		cs, err := cli.ListContainers(ctx, g.instance)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if err == nil {
			live := map[string]bool{}
			for _, c := range cs {
				live[c.ID] = true
			}
			left = left[:0]
			for _, p := range pods {
				for _, id := range p.Containers {
					if live[id] {
						left = append(left, p.Pod)
						break
					}
				}
			}
			if len(left) == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			errs := make([]error, 0, len(left))
			hint := ""
			if !controllerRunning {
				hint = fmt.Sprintf(": is `dockctl controller` running for instance %q?", g.instance)
			}
			for _, name := range left {
				errs = append(errs, fmt.Errorf("timed out waiting for the condition on pods/%s%s", name, hint))
			}
			return errors.Join(errs...)
		case <-time.After(podWaitPoll):
		}
	}
}

// podNames splits objects given to delete into the names of pods and the
// objects of the state directory.
func podNames(objs []objectArg) (pods []string, rest []objectArg) {
	for _, o := range objs {
		if deletedByController(o.kind) {
			pods = append(pods, o.name)
		} else {
			rest = append(rest, o)
		}
	}
	return pods, rest
}
