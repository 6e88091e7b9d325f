package reconciler

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
)

// maxArgStrlen is Linux's MAX_ARG_STRLEN (32 pages): execve(2) fails with
// E2BIG for any single argv string longer than this, so a helper whose
// config is longer can neither be started (create) nor be pushed to (exec).
const maxArgStrlen = 32 * 4096

// manyPods are n ready pods of deployment web (app=web, port http 8080),
// with pod names as a deployment gives them.
func manyPods(n int) []PodEndpoint {
	out := make([]PodEndpoint, 0, n)
	for i := range n {
		out = append(out, pe("default", "web", fmt.Sprintf("web-5d8f9c7b6d-%d", i), fmt.Sprintf("10.222.%d.%d", i/250, i%250+2), true, app("web"),
			manifests.ContainerPort{Name: "http", ContainerPort: 8080}))
	}
	return out
}

// TestReview10ProxyConfigExceedsArgvLimit: the proxy's whole config (every
// endpoint) travels as ONE argv string, both in the create's Cmd and in
// `docker exec … helper push --config JSON`. A Service selecting ~2,500
// pods (or 50 ports × 50 pods) makes it larger than MAX_ARG_STRLEN: the
// real daemon fails the exec/start with "argument list too long", the
// Service never gets a proxy, and every later push fails forever.
func TestReview10ProxyConfigExceedsArgvLimit(t *testing.T) {
	r := newSvcRig(t)
	r.feed(manyPods(3000))
	r.svcs.put(webService("", 0))
	r.reconcile("default/web")
	creates := r.docker.createdHelpers()
	if len(creates) != 1 {
		t.Fatalf("creates %d, want 1", len(creates))
	}
	for i, a := range creates[0].Cmd {
		if len(a) > maxArgStrlen {
			t.Errorf("proxy Cmd[%d] is %d bytes, over Linux's MAX_ARG_STRLEN %d: execve fails with E2BIG", i, len(a), maxArgStrlen)
		}
	}
}

// TestReview10DNSConfigExceedsArgvLimit: the DNS server's config is every
// record of every Service of the instance (headless ones with every ready
// pod address), also one argv string: one big headless Service breaks
// cluster DNS for every namespace.
func TestReview10DNSConfigExceedsArgvLimit(t *testing.T) {
	r := newSvcRig(t)
	r.feed(manyPods(9000))
	h := webService("", 0)
	h.Service.Spec.ClusterIP = manifests.ClusterIPNone
	r.svcs.put(h)
	r.reconcile("default/web")
	r.reconcile(dnsKey)
	for _, c := range r.docker.createdHelpers() {
		for i, a := range c.Cmd {
			if len(a) > maxArgStrlen {
				t.Errorf("%s Cmd[%d] is %d bytes, over Linux's MAX_ARG_STRLEN %d: execve fails with E2BIG", c.Name, i, len(a), maxArgStrlen)
			}
		}
	}
}

// drainQueue empties the services loop's queue and returns its keys.
func drainQueue(r *svcRig) map[string]bool {
	q := r.ctrl.svc.loop.queue
	out := map[string]bool{}
	for q.Len() > 0 {
		req, _ := q.Get()
		out[req.Key] = true
		q.Done(req)
	}
	return out
}

// TestReview10FreedNodePortNotRetaken: two Services ask for nodePort
// 30080; the older publishes it, the younger gets PortConflict. When the
// older is deleted, nothing queues the younger: allocate only reports
// Services it displaces, and forget releases the port silently. The
// younger stays unpublished (PortConflict) until the next resync.
func TestReview10FreedNodePortNotRetaken(t *testing.T) {
	r := newSvcRig(t)
	r.feed(webPods(2, 2))
	a := webService("NodePort", 30080)
	a.Service.Metadata.Name = "a"
	b := webService("NodePort", 30080)
	b.Service.Metadata.Name = "b"
	b.Created = a.Created.Add(time.Minute)
	r.svcs.put(a)
	r.svcs.put(b)
	r.reconcile("default/a")
	r.reconcile("default/b")
	if findCondition(r.svcs.status("default/b").Conditions, ServicePortConflict) == nil {
		t.Fatalf("b: want PortConflict, status %+v", r.svcs.status("default/b"))
	}
	drainQueue(r)
	a.Deleted = true
	r.svcs.put(a)
	r.reconcile("default/a")
	if q := drainQueue(r); !q["default/b"] {
		t.Errorf("service a deleted, freeing nodePort 30080; queued %v: service b, which wants it, is not synced again", q)
	}
}

// TestReview10DrainAfterRestartSkipsProxies: the tracker only knows the
// Services a sync has watched since this controller started. A stop
// planned by the deployments' first sweep after a controller restart (a
// scale-down, a rollout step) drains before any Service was synced: Drain
// finds no Service selecting the pod and returns at once, and the pod is
// stopped while the proxy left running by the previous controller still
// sends it new connections.
func TestReview10DrainAfterRestartSkipsProxies(t *testing.T) {
	r := newWebRig(t) // the proxy serves web-a-0 and web-a-1
	r.restart()
	r.feed(webPods(2, 2))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := r.tracker.Drain(ctx, "default", "web-a-1")
	pods, _ := r.proxyPods("i_web.default_svc")
	if err == nil && strings.Contains(pods, "web-a-1") {
		t.Errorf("Drain(web-a-1) returned nil while the proxy still serves %q: nothing was pushed without the pod", pods)
	}
}

// startFails is a Docker whose helper starts fail for a reason that is
// no host port's (a port held on the host is a PortConflict, and the
// proxy is made without it: TestServiceHostPortHeldByAHostProcess).
type startFails struct{ *helperEngine }

func (s startFails) StartContainer(context.Context, string) error {
	return fmt.Errorf("OCI runtime create failed: runc create failed: unable to start container process: exec: \"/dockctl\": permission denied")
}

// TestReview10StartFailureReportedAsPushFailure: a proxy whose start
// fails is left created; the next sync plans start + push, the start
// fails, and nextServiceStatus reports ProxyFailure reason PushFailed
// because the plan merely contains a push, though no push was tried: the
// status points the user at the data plane instead of the host port.
func TestReview10StartFailureReportedAsPushFailure(t *testing.T) {
	r := newSvcRig(t)
	r.ctrl = New(dockerfake.New(), r.deps, Options{Instance: "i", ServiceDocker: startFails{r.docker}, ServiceStore: r.svcs,
		ServiceAddress: "127.0.0.1", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	r.tracker = r.ctrl.tracker
	t.Cleanup(r.ctrl.svc.loop.queue.ShutDown)
	r.feed(webPods(2, 2))
	r.svcs.put(webService("NodePort", 30080))
	for range 2 {
		if _, err := r.ctrl.svc.Reconcile(context.Background(), Request{Key: "default/web"}); err == nil {
			t.Fatal("sync succeeded with a start that fails")
		}
	}
	if r.docker.Calls()["exec:output"] != 0 {
		t.Fatalf("a push was tried")
	}
	c := findCondition(r.svcs.status("default/web").Conditions, ServiceProxyFailure)
	if c == nil || c.Reason != ReasonProxyCreateFailed {
		t.Errorf("condition %+v: the start failed and no push was tried, want reason %s", c, ReasonProxyCreateFailed)
	}
}
