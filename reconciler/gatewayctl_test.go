package reconciler

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/dockctl/dockctl/reconciler/gateway"
	"github.com/dockctl/dockctl/reconciler/reconcile"
	"github.com/dockctl/dockctl/store"
)

// The gateway's loop syncs its one key at start and again for each change
// of a kind its table depends on (a routing object, a Service, a
// Secret), never for a change of a Deployment.
func TestGatewaySyncsOnRoutingChanges(t *testing.T) {
	synced := make(chan string, 16)
	r := reconcile.ReconcilerFunc(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		synced <- req.Key
		return reconcile.Result{}, nil
	})
	c := &Controller{opts: Options{Gateway: r}, log: slog.Default()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.startGateway(ctx)
	defer c.gateway.ShutDown()
	next := func(what string) {
		t.Helper()
		select {
		case k := <-synced:
			if k != gateway.Key {
				t.Fatalf("%s: synced %q", what, k)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s: no sync", what)
		}
	}
	next("start")
	for _, key := range []string{
		store.ConfigMapKey("apps", "x"), // not a dependency: no sync
		"ingress:apps/web", "httproute:apps/b", "gatewayclass:default/dockctl", store.ServiceKey("apps", "a"), store.SecretKey("apps", "tls"),
	} {
		c.gatewayChanged(kindOfKey(key))
		if key == store.ConfigMapKey("apps", "x") {
			continue
		}
		next(key)
	}
	select {
	case k := <-synced:
		t.Errorf("an extra sync %q", k)
	default:
	}
}

func kindOfKey(key string) string {
	kind, _, _ := store.ParseWatchKey(key)
	return kind
}
