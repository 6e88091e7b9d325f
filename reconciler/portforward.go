package reconciler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// DefaultStalePortForwardAfter is Options.StalePortForwardAfter's default
// (--stale-port-forward-after).
const DefaultStalePortForwardAfter = time.Minute

// stalePortForwardHelpers are the port-forward helpers of cs that no
// session can be using: not running (created, exited or dead) and created
// more than after ago. A session's helper runs from the moment its CLI
// starts it — within a few calls of its create — until it is removed
// (AutoRemove); one that never started, because its CLI stopped in
// between (killed, crashed, its connection lost, or interrupted while the
// create call was in flight), would never go otherwise. after leaves a
// live CLI the time to start its own. A helper in removal is Docker's
// already.
func stalePortForwardHelpers(cs []dockerx.Container, now time.Time, after time.Duration) []dockerx.Container {
	var out []dockerx.Container
	for _, ct := range cs {
		// A files writer (dockerx.RunFilesWriter) lives as long as its
		// write, and goes the same way when its controller dies between
		// its create and its start.
		if (ct.Role != dockerx.RolePortForward && ct.Role != dockerx.RoleFilesWriter) || ct.Created.IsZero() || now.Sub(ct.Created) <= after {
			continue
		}
		switch ct.State {
		case dockerx.StateCreated, dockerx.StateExited, dockerx.StateDead:
			out = append(out, ct)
		}
	}
	return out
}

// removeStalePortForwardHelpers removes the helpers stalePortForwardHelpers
// found, with or without PruneOrphans: they are dockctl's own, dead, and
// no orphans. One already gone is no error. Each is named for what it is,
// on the pod it served.
func (c *Controller) removeStalePortForwardHelpers(ctx context.Context, stale []dockerx.Container) error {
	var errs []error
	for _, ct := range stale {
		what, ref := "port-forward helper", portForwardRef(c.opts.Instance, ct)
		if ct.Role == dockerx.RoleFilesWriter {
			what, ref = "files writer", filesWriterRef(c.opts.Instance, ct)
		}
		if err := c.docker.RemoveContainer(ctx, ct.ID); err != nil && !errors.Is(err, dockerx.ErrNotFound) {
			c.log.Warn("removing stale "+what, "container", ct.Name, "state", ct.State, "err", err)
			Eventf(c.opts.Recorder, ref, store.EventWarning, "FailedDelete", "Error removing stale %s %s: %v", what, ct.Name, err)
			errs = append(errs, fmt.Errorf("remove stale %s %s: %w", what, ct.Name, err))
			continue
		}
		c.log.Info("removed stale "+what, "container", ct.Name, "state", ct.State, "created", ct.Created)
		Eventf(c.opts.Recorder, ref, store.EventNormal, "StaleHelperRemoved", "Removed stale %s %s (%s)", what, ct.Name, ct.State)
	}
	return errors.Join(errs...)
}

// filesWriterRef is the pod a files writer wrote for, by its name; the
// writer itself when its name says none.
func filesWriterRef(instance string, ct dockerx.Container) store.InvolvedObject {
	name := dockerx.FilesWriterPod(instance, ct.Namespace, ct.Name)
	if name == "" {
		name = ct.Name
	}
	return store.InvolvedObject{Kind: "Pod", Namespace: podruntime.OrDefaultNamespace(ct.Namespace), Name: name}
}

// portForwardRef is the pod a port-forward helper forwarded to, by its
// name; the helper itself when its name says none.
func portForwardRef(instance string, ct dockerx.Container) store.InvolvedObject {
	name := dockerx.PortForwardHelperPod(instance, ct.Namespace, ct.Name)
	if name == "" {
		name = ct.Name
	}
	return store.InvolvedObject{Kind: "Pod", Namespace: podruntime.OrDefaultNamespace(ct.Namespace), Name: name}
}
