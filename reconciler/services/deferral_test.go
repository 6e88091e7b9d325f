package services

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// startingRig is a rig whose pods are being started while starting says
// so, on a clock the test moves.
type startingRig struct {
	*svcRig
	mu       sync.Mutex
	starting bool
	now      time.Time
}

func newStartingRig(t *testing.T) *startingRig {
	sr := &startingRig{svcRig: newSvcRig(t), starting: true, now: t0}
	sr.svcRig.starting = func() bool {
		sr.mu.Lock()
		defer sr.mu.Unlock()
		return sr.starting
	}
	sr.build(sr.docker, func() time.Time {
		sr.mu.Lock()
		defer sr.mu.Unlock()
		return sr.now
	})
	return sr
}

func (sr *startingRig) set(starting bool, after time.Duration) {
	sr.mu.Lock()
	sr.starting = starting
	sr.now = sr.now.Add(after)
	sr.mu.Unlock()
}

// helpers counts the helpers created, by role.
func (sr *startingRig) helpers() map[string]int {
	out := map[string]int{}
	for _, c := range sr.docker.CreatedHelpers() {
		out[c.Role]++
	}
	return out
}

// While pods are being created and started, a Service's proxy and the
// DNS server that do not run yet wait (docs/design.md §10): the pods and
// the publisher, which serves their host ports straight to them, reach
// the engine first. The Service's address and status are not held up
// (the pods' Service variables wait for the address), and the wait ends
// when the last pod started (PodsStarted) or helperDeferMax after it
// began, whichever is first.
func TestHelperCreateWaitsForPodsBeingStarted(t *testing.T) {
	tests := []struct {
		name string
		// then: after the first syncs, what happens before the next.
		then        func(sr *startingRig)
		wantQueued  bool // PodsStarted queued the waiting keys
		wantCreated bool // the next syncs create the proxy and the DNS server
	}{
		{"the last pod started", func(sr *startingRig) { sr.set(false, 100*time.Millisecond); sr.ctrl.PodsStarted() }, true, true},
		{"pods still starting within the bound", func(sr *startingRig) { sr.set(true, helperDeferMax/2) }, false, false},
		{"pods still starting past the bound", func(sr *startingRig) { sr.set(true, helperDeferMax) }, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sr := newStartingRig(t)
			sr.feed(webPods(1, 0))
			sr.svcs.put(webService("LoadBalancer", 0))
			res := sr.reconcile("default/web")
			dns := sr.reconcile(DNSKey)
			if res.RequeueAfter <= 0 || res.RequeueAfter > helperDeferMax || dns.RequeueAfter <= 0 || dns.RequeueAfter > helperDeferMax {
				t.Errorf("requeued after %v (Service) and %v (DNS), want within %v", res.RequeueAfter, dns.RequeueAfter, helperDeferMax)
			}
			if got := sr.helpers(); got[dockerx.RoleProxy] != 0 || got[dockerx.RoleDNS] != 0 {
				t.Fatalf("created %v while pods are being started", got)
			}
			if st := sr.svcs.status("default/web"); st.ClusterIP == "" || len(st.Published) != 1 {
				t.Errorf("status %+v: the address and the published port are not held up", st)
			}
			sr.reconcile(PublisherKey)
			if got := sr.publisherPorts(); got != "80/TCP=0" {
				t.Errorf("the publisher serves %q: it never waits", got)
			}
			sr.queued() // what the syncs queued (the publisher's own keys)

			tt.then(sr)
			if q := sr.queued(); (q["default/web"] && q[DNSKey]) != tt.wantQueued {
				t.Errorf("queued %v, want the waiting keys queued: %v", q, tt.wantQueued)
			}
			sr.reconcile("default/web")
			sr.reconcile(DNSKey)
			got := sr.helpers()
			if created := got[dockerx.RoleProxy] == 1 && got[dockerx.RoleDNS] == 1; created != tt.wantCreated {
				t.Errorf("created %v, want the proxy and the DNS server: %v", got, tt.wantCreated)
			}
		})
	}
}

// A helper that runs never waits for pods being started: its pushes
// (a pod turning ready) and repairs are not deferred, and neither is
// anything when no pod is being started.
func TestHelperThatRunsNeverWaitsForPods(t *testing.T) {
	sr := newStartingRig(t)
	sr.set(false, 0)
	sr.feed(webPods(2, 1))
	sr.svcs.put(webService("", 0))
	sr.reconcile("default/web")
	if n := len(sr.proxyCreates()); n != 1 {
		t.Fatalf("%d proxies created with no pod being started, want 1", n)
	}
	sr.set(true, 0)
	sr.tracker.Update("default/web", webPods(2, 2))
	if res := sr.reconcile("default/web"); res.RequeueAfter != 0 {
		t.Errorf("requeued after %v: a running proxy waits for nothing", res.RequeueAfter)
	}
	if pods, _ := sr.proxyPods("i_web.default_svc"); pods != "web-a-0=10.222.0.2:8080 web-a-1=10.222.0.3:8080" {
		t.Errorf("proxy serves %s while pods are being started, want both ready pods pushed", pods)
	}
}

// A proxy removed by hand (docker rm -f) is a replacement, which the
// package comment says never waits: it ran, so its Service's ClusterIP
// was served and is down until it is created again, while pods that keep
// being started must not hold its repair up.
func TestHelperRemovedByHandIsReplacedWithoutWaitingForPods(t *testing.T) {
	sr := newStartingRig(t)
	sr.set(false, 0)
	sr.feed(webPods(1, 1))
	sr.svcs.put(webService("", 0))
	sr.reconcile("default/web")
	if n := len(sr.proxyCreates()); n != 1 {
		t.Fatalf("%d proxies created with no pod being started, want 1", n)
	}
	id, _ := sr.docker.Serving("i_web.default_svc", &struct{}{})
	if err := sr.docker.RemoveContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	sr.docker.FinishRemovals()
	sr.set(true, 0)
	res := sr.reconcile("default/web")
	if n := len(sr.proxyCreates()); n != 2 {
		t.Errorf("%d proxies created (requeued after %v): the replacement of a proxy that ran waits for the pods being started", n, res.RequeueAfter)
	}
}
