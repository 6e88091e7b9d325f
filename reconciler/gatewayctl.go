package reconciler

import (
	"context"

	"github.com/dockctl/dockctl/reconciler/gateway"
	"github.com/dockctl/dockctl/reconciler/reconcile"
	"github.com/dockctl/dockctl/store"
)

// The gateway controller (docs/design.md §10, the gateway) runs on a loop
// of its own with one key (gateway.Key): every routing object, and the
// Services, Secrets and Namespaces its table depends on, queue it, as does
// every resync.

// startGateway starts the gateway's loop when the controller has one.
func (c *Controller) startGateway(ctx context.Context) {
	if c.opts.Gateway == nil {
		return
	}
	c.gateway = reconcile.NewLoop(c.opts.Gateway, reconcile.Config{Name: "gateway", KeyAttr: "gateway", Metrics: c.opts.QueueMetrics, Log: c.log})
	if g, ok := c.opts.Gateway.(interface {
		SetDataPlane(gateway.DataPlane, func())
	}); ok && c.svc != nil {
		// The gateway helper is run by the Service controller, beside
		// the proxies, from the same tracker: an acknowledged table
		// queues the gateway again to report it Programmed.
		loop := c.gateway
		g.SetDataPlane(c.svc, func() { loop.Add(reconcile.Request{Key: gateway.Key}) })
	}
	c.gateway.Start(ctx)
	c.gateway.Add(reconcile.Request{Key: gateway.Key})
}

// gatewayChanged queues the gateway for a change of a kind it depends on
// ("": anything may have changed).
func (c *Controller) gatewayChanged(kind string) {
	if c.gateway == nil {
		return
	}
	switch kind {
	case "", store.KindIngress, store.KindIngressClass, store.KindGatewayClass, store.KindGateway, store.KindHTTPRoute,
		store.KindReferenceGrant, store.KindService, store.KindSecret, store.KindNamespace:
		c.gateway.Add(reconcile.Request{Key: gateway.Key})
	}
}
