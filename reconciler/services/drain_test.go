package services

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

// drainRig is a tracker with one Service (default/web) selecting two pods
// of deployment web, whose queued keys arrive on a channel, as a Service
// sync would take them.
type drainRig struct {
	t      *testing.T
	tr     *Tracker
	svc    *manifests.Service
	queued chan string

	mu       sync.Mutex
	stopping map[string]bool
}

func newDrainRig(t *testing.T) *drainRig {
	r := &drainRig{t: t, queued: make(chan string, 100), stopping: map[string]bool{}}
	r.tr = NewTracker(func(k string) { r.queued <- k }, func(id string) bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.stopping[id]
	})
	r.svc = watched(r.tr, "", "web", app("web"), manifests.ServicePort{Port: 80})
	r.tr.Update("default/web", r.pods(false))
	r.drainQueue()
	return r
}

func (r *drainRig) pods(terminating1 bool) []PodEndpoint {
	p0 := pe("default", "web", "web-a-0", "10.0.0.2", true, app("web"))
	p1 := pe("default", "web", "web-a-1", "10.0.0.3", true, app("web"))
	p1.Terminating = terminating1
	return []PodEndpoint{p0, p1}
}

func (r *drainRig) drainQueue() {
	for {
		select {
		case <-r.queued:
		default:
			return
		}
	}
}

// syncService does what a Service sync does for the tracker: read the
// endpoints with their version and, its proxy having acknowledged them,
// ack that version. It returns the ready pods it "pushed".
func (r *drainRig) syncService() string {
	ready, _, v := r.tr.endpointsAt(r.svc)
	r.tr.ack("default/web", v)
	return render(ready)
}

func drainAsync(tr *Tracker, ctx context.Context, ns, pod string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- tr.Drain(ctx, ns, pod) }()
	return done
}

func TestDrainReturnsOnlyAfterTheAck(t *testing.T) {
	r := newDrainRig(t)
	// The proxy acknowledged everything so far, the pod included.
	r.syncService()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := drainAsync(r.tr, ctx, "default", "web-a-1")

	// Drain queues the Service, and waits.
	if k := <-r.queued; k != "default/web" {
		t.Fatalf("queued %q, want default/web", k)
	}
	select {
	case err := <-done:
		t.Fatalf("Drain returned (%v) before the proxy acknowledged", err)
	default:
	}
	// An ack of an older version (a push computed before the drain) does
	// not end it.
	r.tr.ack("default/web", 1)
	select {
	case err := <-done:
		t.Fatalf("Drain returned (%v) on an older ack", err)
	default:
	}
	// The sync pushes the endpoints without the pod and acks: Drain ends.
	if got := r.syncService(); got != "web-a-0@10.0.0.2:=80/TCP" {
		t.Errorf("pushed %s, want the drained pod left out", got)
	}
	if err := <-done; err != nil {
		t.Fatalf("Drain: %v", err)
	}
}

func TestDrainIsBounded(t *testing.T) {
	r := newDrainRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := drainAsync(r.tr, ctx, "default", "web-a-0")
	<-r.queued
	cancel() // no Service sync ever acknowledges: the stopper's bound ends it
	err := <-done
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "default/web") {
		t.Fatalf("Drain: %v, want context.Canceled naming the Service", err)
	}
	// The pod stays out of the endpoints all the same.
	if ready, _ := r.tr.Endpoints(r.svc); render(ready) != "web-a-1@10.0.0.3:=80/TCP" {
		t.Errorf("ready after a bounded drain: %s", render(ready))
	}
}

func TestDrainWithoutService(t *testing.T) {
	r := newDrainRig(t)
	r.tr.Update("default/db", []PodEndpoint{pe("default", "db", "db-a-0", "10.0.0.9", true, app("db"))})
	// A context that never ends: a Drain that waited would hang the test,
	// one that returned an error would fail it.
	for _, pod := range [][2]string{{"default", "db-a-0"}, {"default", "never-fed"}, {"shop", "web-a-0"}} {
		if err := r.tr.Drain(context.Background(), pod[0], pod[1]); err != nil {
			t.Errorf("Drain(%s/%s): %v", pod[0], pod[1], err)
		}
	}
	select {
	case k := <-r.queued:
		t.Errorf("queued %q for a pod no Service selects", k)
	default:
	}
}

func TestDrainEndsWhenTheServiceGoes(t *testing.T) {
	r := newDrainRig(t)
	done := drainAsync(r.tr, context.Background(), "default", "web-a-0")
	<-r.queued
	r.tr.forget("default/web") // deleted: nothing left to wait for
	if err := <-done; err != nil {
		t.Fatalf("Drain: %v", err)
	}
}

func TestDrainHoldsWhileTheStopIsInFlight(t *testing.T) {
	r := newDrainRig(t)
	r.mu.Lock()
	r.stopping["id-web-a-1"] = true // the stopper submitted it, then drains
	r.mu.Unlock()
	done := drainAsync(r.tr, context.Background(), "default", "web-a-1")
	<-r.queued
	r.syncService()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A sync that listed before the stop began reports the pod live: the
	// drain mark holds while the stop is in flight.
	r.tr.Update("default/web", r.pods(false))
	if ready, _ := r.tr.Endpoints(r.svc); render(ready) != "web-a-0@10.0.0.2:=80/TCP" {
		t.Errorf("a stale sync put the drained pod back: %s", render(ready))
	}
	// A liveness restart ended (the container runs again): served again.
	r.mu.Lock()
	r.stopping["id-web-a-1"] = false
	r.mu.Unlock()
	r.tr.Update("default/web", r.pods(false))
	if ready, _ := r.tr.Endpoints(r.svc); len(ready) != 2 {
		t.Errorf("after the restart: %s, want both pods", render(ready))
	}
	if k := <-r.queued; k != "default/web" {
		t.Errorf("queued %q", k)
	}
}

// TestDrainKeepsPodsOfPublishNotReadyServices: a Service with
// publishNotReadyAddresses keeps a terminating pod among its endpoints (as
// Kubernetes' endpoints and EndpointSlice controllers do), so a drain waits
// only for the other Services that select the pod: here none, so a drain
// whose context has already ended returns at once, and the proxy still
// serves the pod.
func TestDrainKeepsPodsOfPublishNotReadyServices(t *testing.T) {
	r := newSvcRig(t)
	r.feed(webPods(2, 2))
	web := webService("", 0)
	web.Service.Spec.PublishNotReadyAddresses = true
	r.svcs.put(web)
	r.reconcile("default/web")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.tracker.Drain(ctx, "default", "web-a-1"); err != nil {
		t.Fatalf("Drain waited for a Service that keeps the pod: %v", err)
	}
	r.reconcile("default/web")
	if pods, _ := r.proxyPods("i_web.default_svc"); pods != "web-a-0=10.222.0.2:8080 web-a-1=10.222.0.3:8080" {
		t.Errorf("proxy serves %s after the drain, want the terminating pod kept", pods)
	}

	// A second Service without the field selects the pods too: the drain
	// waits for it, and for it alone.
	other := webService("", 0)
	other.Service.Metadata.Name = "other"
	r.svcs.put(other)
	r.reconcile("default/other")
	err := r.tracker.Drain(ctx, "default", "web-a-0")
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "by service default/other: ") {
		t.Fatalf("Drain: %v, want it to wait for default/other only", err)
	}
}

// TestDrainRightAfterRestartWaitsForStoredServices: a controller that just
// started has synced no Service, but the proxies the previous one left
// still route to every pod. A drain then — the deployment's own sync fed
// the pod, the first sweep has not completed — must wait for every stored
// Service that selects the pod, as for a synced one (the pod leaves the
// endpoints before its stop, as on Kubernetes), and end only once the
// proxy serves without it.
func TestDrainRightAfterRestartWaitsForStoredServices(t *testing.T) {
	r := newWebRig(t) // the proxy serves web-a-0 and web-a-1
	r.restart()
	r.tracker.Update("default/web", webPods(2, 2)) // no sweep yet: not marked synced
	// Given no time, the drain must say which Service has not acknowledged.
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	err := r.tracker.Drain(gone, "default", "web-a-1")
	if err == nil || !strings.Contains(err.Error(), "default/web") {
		t.Fatalf("Drain right after a restart = %v, want it waiting for the stored Service default/web", err)
	}
	// With time, it ends once the first sync pushed a config without it.
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	done := drainAsync(r.tracker, ctx, "default", "web-a-1")
	r.tracker.MarkSynced() // the first sweep completes
	r.reconcile("default/web")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if pods, _ := r.proxyPods("i_web.default_svc"); pods != "web-a-0=10.222.0.2:8080" {
		t.Errorf("proxy serves %s once the drain ended", pods)
	}
}

// TestDrainAfterRestartWaitsForProxies: the tracker only knows the
// Services a sync has watched since this controller started. A stop
// planned by the deployments' first sweep after a controller restart (a
// scale-down, a rollout step) drains before any Service was synced: Drain
// must not find "no Service selecting the pod" and return at once while
// the proxy left running by the previous controller still sends the pod
// new connections.
func TestDrainAfterRestartWaitsForProxies(t *testing.T) {
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
