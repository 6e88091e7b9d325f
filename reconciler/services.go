package reconciler

import (
	"context"
	"strings"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/services"
	"github.com/dockctl/dockctl/store"
)

// The Service controller (package services) runs beside the deployments'
// when Options.ServiceDocker and Options.ServiceStore are set. This file
// wires it: what it needs of the deployments' side, and what the
// deployments' side asks of it (the Service variables of a container,
// the host ports a Service claimed first).

// newServices returns the Service controller of c, on its own Docker
// client and store of Services.
func newServices(c *Controller, docker services.ServiceDocker, st services.ServiceStore, address string) *services.Controller {
	return services.New(services.Config{
		Instance:        c.opts.Instance,
		Address:         address,
		Docker:          docker,
		Store:           st,
		Deployments:     c.store,
		Allow:           c.opts.Allow,
		Tracker:         c.tracker,
		IsSelf:          c.isSelf,
		QueueDeployment: c.queue.Add,
		// As for holders (ensureHolderImage): the sweep must look at
		// helper images again, and must not collect one under a create.
		HelperImageInUse: func() { c.helperImages.Store(true) },
		PodsStarting:     c.starting.Any,
		EnsureNetwork: func(ctx context.Context) error {
			_, err := c.podNetworkStatus(ctx)
			return err
		},
		Orphan:   c.orphan,
		Secrets:  secretsOf(st),
		Recorder: c.opts.Recorder,
		Now:      c.opts.Now,
		Log:      c.log,
	})
}

// isSelf reports whether a container is the controller's own.
func (c *Controller) isSelf(id string) bool {
	return c.opts.SelfID != "" && strings.HasPrefix(id, c.opts.SelfID)
}

// serviceEnv returns the Service variables of a container of pod spec ps
// in namespace ns (nil when the pod turns them off, or this controller
// runs no Services; services.Controller.Env).
func (c *Controller) serviceEnv(ctx context.Context, ns string, ps *manifests.PodSpec) map[string]string {
	if c.svc == nil || (ps.EnableServiceLinks != nil && !*ps.EnableServiceLinks) {
		return nil
	}
	return c.svc.Env(ctx, ns)
}

// containerServiceEnv is serviceEnv for the container op creates (none
// for a holder, which runs no workload).
func (c *Controller) containerServiceEnv(ctx context.Context, in PlanInput, op Op) map[string]string {
	if op.Role == dockerx.RoleHolder || op.From == nil {
		return nil
	}
	return c.serviceEnv(ctx, in.namespace(), &op.From.Template.Spec)
}

// hostPortWaits adds to waiting (template hash → why) the revisions of a
// deployment that declare a host port a Service claimed first
// (services.Controller.HostPortWaits); none when no Services run.
func (c *Controller) hostPortWaits(rec *store.Record, waiting map[string]string) map[string]string {
	if c.svc == nil {
		return waiting
	}
	return c.svc.HostPortWaits(rec, waiting)
}

// secretsOf is the Secret reader of a store of Services that has one
// (*store.Store): the gateway's certificates.
func secretsOf(st services.ServiceStore) func(ns, name string) (*manifests.Secret, error) {
	if r, ok := st.(interface {
		LookupSecret(ns, name string) (*manifests.Secret, error)
	}); ok {
		return r.LookupSecret
	}
	return nil
}
