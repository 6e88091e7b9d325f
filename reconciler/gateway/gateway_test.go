package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/internal/gatewayroutes"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/reconcile"
	"github.com/dockctl/dockctl/sourcedir"
	"github.com/dockctl/dockctl/store"
)

const fixtureYAML = `apiVersion: v1
kind: Service
metadata: {name: a}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: b}
spec: {ports: [{port: 80}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: a}
spec:
  ingressClassName: dockctl
  rules:
  - host: a.test
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: a, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: other}
spec:
  ingressClassName: nginx
  defaultBackend: {service: {name: a, port: {number: 80}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: dockctl}
spec: {controllerName: dockctl.io/gateway}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: theirs}
spec: {controllerName: example.com/gateway}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge}
spec:
  gatewayClassName: dockctl
  listeners:
  - {name: http, port: 80, protocol: HTTP}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: b}
spec:
  parentRefs: [{name: edge}]
  hostnames: [b.test]
  rules:
  - matches: [{path: {type: PathPrefix, value: /b}}]
    backendRefs: [{name: b, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: lost}
spec:
  parentRefs: [{name: edge}]
  rules:
  - backendRefs: [{name: nowhere, port: 80}]
`

type recorded struct {
	obj            store.InvolvedObject
	typ, reason, m string
}

type recorder struct {
	mu  sync.Mutex
	evs []recorded
}

func (r *recorder) Event(obj store.InvolvedObject, typ, reason, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, recorded{obj, typ, reason, msg})
}

// fixture is a store holding fixtureYAML.
func fixture(t *testing.T) *store.Store {
	t.Helper()
	st := openStore(t)
	applyYAML(t, st, fixtureYAML)
	return st
}

// applyYAML applies the manifests y to st, as `dockctl apply` places them.
func applyYAML(t *testing.T, st *store.Store, y string) {
	t.Helper()
	docs, err := manifests.Decode("f.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	p, err := sourcedir.Place(docs, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(p.Bundle, store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
}

// openStore is an empty store of the default namespace.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "state"), "default")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func readStatus[T any](t *testing.T, st *store.Store, ref store.ObjectRef) (T, bool) {
	t.Helper()
	var v T
	raw, err := st.ReadRoutingStatus(ref)
	if err != nil {
		t.Fatal(err)
	}
	if raw == nil {
		return v, false
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v, true
}

func condStatus(cs []manifests.Condition, typ string) string {
	if c := manifests.FindCondition(cs, typ); c != nil {
		return c.Status
	}
	return ""
}

// A sync writes each object's status as the Gateway API and Ingress
// specify: our GatewayClass Accepted (another controller's untouched),
// the Gateway Accepted and Programmed only once the gateway acknowledged
// its config (then with its address), each HTTPRoute's parent Accepted
// and ResolvedRefs (False for a missing Service), an Ingress's address
// once programmed; an Ingress of another class gets a "not served" event,
// once, however many resyncs follow.
func TestStatusesAndEvents(t *testing.T) {
	for _, tc := range []struct {
		name       string
		programmed bool
	}{
		{name: "before the gateway acknowledges"},
		{name: "once the gateway acknowledged", programmed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := fixture(t)
			rec := &recorder{}
			now := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
			c := New(Config{Store: st, Recorder: rec, Address: "127.0.0.1",
				Routes:     gatewayroutes.Options{HTTPPort: 80, HTTPSPort: 443},
				Programmed: func(int64) bool { return tc.programmed },
				Now:        func() time.Time { return now }})
			for range 3 { // resyncs change nothing
				if _, err := c.Reconcile(context.Background(), reconcile.Request{Key: Key}); err != nil {
					t.Fatal(err)
				}
				now = now.Add(time.Minute)
			}
			gc, _ := readStatus[manifests.GatewayClassStatus](t, st, store.ObjectRef{Kind: store.KindGatewayClass, Name: "dockctl"})
			if condStatus(gc.Conditions, "Accepted") != "True" || gc.Conditions[0].ObservedGeneration != 1 {
				t.Errorf("gatewayclass status %+v", gc)
			}
			if _, ok := readStatus[manifests.GatewayClassStatus](t, st, store.ObjectRef{Kind: store.KindGatewayClass, Name: "theirs"}); ok {
				t.Errorf("another controller's GatewayClass got a status")
			}
			gw, _ := readStatus[manifests.GatewayStatus](t, st, store.ObjectRef{Kind: store.KindGateway, Namespace: "default", Name: "edge"})
			wantProgrammed, wantAddrs := "False", 0
			if tc.programmed {
				wantProgrammed, wantAddrs = "True", 1
			}
			if condStatus(gw.Conditions, "Accepted") != "True" || condStatus(gw.Conditions, "Programmed") != wantProgrammed || len(gw.Addresses) != wantAddrs {
				t.Errorf("gateway status %+v", gw)
			}
			if len(gw.Listeners) != 1 || gw.Listeners[0].AttachedRoutes != 2 {
				t.Errorf("listeners %+v, want http with 2 routes", gw.Listeners)
			}
			for _, c := range gw.Conditions {
				if !c.LastTransitionTime.Equal(time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)) {
					t.Errorf("condition %s moved its transition time to %v on a resync", c.Type, c.LastTransitionTime)
				}
			}
			for name, resolved := range map[string]string{"b": "True", "lost": "False"} {
				r, _ := readStatus[manifests.HTTPRouteStatus](t, st, store.ObjectRef{Kind: store.KindHTTPRoute, Namespace: "default", Name: name})
				if len(r.Parents) != 1 || r.Parents[0].ControllerName != "dockctl.io/gateway" || r.Parents[0].ParentRef.Name != "edge" ||
					condStatus(r.Parents[0].Conditions, "Accepted") != "True" || condStatus(r.Parents[0].Conditions, "ResolvedRefs") != resolved {
					t.Errorf("httproute %s status %+v, want ResolvedRefs %s", name, r, resolved)
				}
			}
			ing, _ := readStatus[manifests.IngressStatus](t, st, store.ObjectRef{Kind: store.KindIngress, Namespace: "default", Name: "a"})
			if got := len(ing.LoadBalancer.Ingress); got != wantAddrs || (wantAddrs == 1 && ing.LoadBalancer.Ingress[0].IP != "127.0.0.1") {
				t.Errorf("ingress status %+v", ing)
			}
			other, _ := readStatus[manifests.IngressStatus](t, st, store.ObjectRef{Kind: store.KindIngress, Namespace: "default", Name: "other"})
			if len(other.LoadBalancer.Ingress) != 0 {
				t.Errorf("an Ingress of another class shows an address: %+v", other)
			}
			var notServed []recorded
			for _, e := range rec.evs {
				if e.obj.Name == "other" && e.obj.Kind == store.KindIngress {
					notServed = append(notServed, e)
				}
			}
			if len(notServed) != 1 || notServed[0].typ != "Warning" || notServed[0].reason != gatewayroutes.ReasonNotServedIngressClass {
				t.Errorf("events of the other class's Ingress: %+v, want one IngressClassNotServed", notServed)
			}
		})
	}
}

// Of two Ingresses claiming the same host and path, the older serves it
// and the younger is told, by an event, that it lost.
func TestIngressConflictIsReportedOnTheYounger(t *testing.T) {
	st := fixture(t)
	docs, err := manifests.Decode("g.yaml", []byte(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: young}
spec:
  ingressClassName: dockctl
  rules:
  - host: a.test
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: b, port: {number: 80}}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := sourcedir.Place(docs, "", false)
	if _, err := st.Apply(p.Bundle, store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	c := New(Config{Store: st, Recorder: rec, Address: "127.0.0.1", Routes: gatewayroutes.Options{HTTPPort: 80, HTTPSPort: 443}})
	if _, err := c.Reconcile(context.Background(), reconcile.Request{Key: Key}); err != nil {
		t.Fatal(err)
	}
	var lost []recorded
	for _, e := range rec.evs {
		if e.reason == gatewayroutes.ReasonConflicted {
			lost = append(lost, e)
		}
	}
	if len(lost) != 1 || lost[0].obj.Name != "young" {
		t.Errorf("conflict events %+v, want one on young", lost)
	}
}

// countingStore counts the listings of each kind of routing object.
type countingStore struct {
	*store.Store
	mu     sync.Mutex
	listed map[string]int
}

func (s *countingStore) ListObjects(kind string) ([]*store.StoredObject, []error) {
	s.mu.Lock()
	s.listed[kind]++
	s.mu.Unlock()
	return s.Store.ListObjects(kind)
}

// A sync lists each kind of routing object once: the statuses it keeps
// the transition times of come from the objects it compiled, whether or
// not the data plane acknowledged (a second compile then).
func TestSyncListsEachKindOnce(t *testing.T) {
	for _, tc := range []struct {
		name       string
		programmed bool
	}{
		{name: "not programmed"},
		{name: "programmed", programmed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &countingStore{Store: fixture(t), listed: map[string]int{}}
			c := New(Config{Store: st, Address: "127.0.0.1", Routes: gatewayroutes.Options{HTTPPort: 80, HTTPSPort: 443},
				Programmed: func(int64) bool { return tc.programmed }})
			if _, err := c.Reconcile(context.Background(), reconcile.Request{Key: Key}); err != nil {
				t.Fatal(err)
			}
			for _, kind := range []string{store.KindGatewayClass, store.KindGateway, store.KindHTTPRoute, store.KindIngress} {
				if n := st.listed[kind]; n != 1 {
					t.Errorf("%s listed %d times in one sync, want 1", kind, n)
				}
			}
		})
	}
}

// fakePlane is a DataPlane that acknowledges when told.
type fakePlane struct {
	tables      []int64 // the generations handed, in order
	acked       int64
	unavailable map[int]string // GatewayUnavailable's answer
}

func (p *fakePlane) GatewayUnavailable() map[int]string { return p.unavailable }

func (p *fakePlane) ServeGateway(t *gatewayroutes.Table, gen int64, notify func()) {
	p.tables = append(p.tables, gen)
}
func (p *fakePlane) GatewayProgrammed(gen int64) bool { return gen > 0 && p.acked >= gen }

// Every sync hands the compiled table to the data plane (so that an
// endpoint or a certificate is resolved there), under a generation that
// changes only with the table; the Gateway is Programmed, with the
// service address, once the data plane acknowledged that generation.
func TestDataPlaneHandedEveryTable(t *testing.T) {
	st := fixture(t)
	c := New(Config{Store: st, Address: "127.0.0.1", Routes: gatewayroutes.Options{HTTPPort: 80, HTTPSPort: 443}})
	dp := &fakePlane{}
	c.SetDataPlane(dp, func() {})
	sync := func() manifests.GatewayStatus {
		t.Helper()
		if _, err := c.Reconcile(context.Background(), reconcile.Request{Key: Key}); err != nil {
			t.Fatal(err)
		}
		gw, _ := readStatus[manifests.GatewayStatus](t, st, store.ObjectRef{Kind: store.KindGateway, Namespace: "default", Name: "edge"})
		return gw
	}
	if gw := sync(); condStatus(gw.Conditions, "Programmed") != "False" || len(gw.Addresses) != 0 {
		t.Errorf("before the ack: %+v", gw)
	}
	dp.acked = 1
	if gw := sync(); condStatus(gw.Conditions, "Programmed") != "True" || len(gw.Addresses) != 1 || gw.Addresses[0].Value != "127.0.0.1" {
		t.Errorf("after the ack: %+v", gw)
	}
	if fmt.Sprint(dp.tables) != "[1 1]" {
		t.Errorf("tables handed %v, want generation 1 twice (the table did not change)", dp.tables)
	}
}

// TestUnpublishedListenerIsNotAccepted: a listener whose port the data
// plane could not publish (below 1024 without --allow-host-ports, or
// another publishes it) is reported Accepted=False, PortUnavailable,
// with why, and not Programmed: not "waiting for the gateway helper"
// while none will run for it.
func TestUnpublishedListenerIsNotAccepted(t *testing.T) {
	st := fixture(t)
	c := New(Config{Store: st, Address: "127.0.0.1", Routes: gatewayroutes.Options{HTTPPort: 80, HTTPSPort: 443}})
	dp := &fakePlane{unavailable: map[int]string{80: "port 80 needs --allow-host-ports"}}
	c.SetDataPlane(dp, func() {})
	if _, err := c.Reconcile(context.Background(), reconcile.Request{Key: Key}); err != nil {
		t.Fatal(err)
	}
	gw, _ := readStatus[manifests.GatewayStatus](t, st, store.ObjectRef{Kind: store.KindGateway, Namespace: "default", Name: "edge"})
	if len(gw.Listeners) != 1 {
		t.Fatalf("listeners %+v", gw.Listeners)
	}
	acc := manifests.FindCondition(gw.Listeners[0].Conditions, "Accepted")
	if acc == nil || acc.Status != "False" || acc.Reason != "PortUnavailable" || acc.Message != "port 80 needs --allow-host-ports" {
		t.Errorf("listener Accepted %+v, want False PortUnavailable naming the flag", acc)
	}
	if got := condStatus(gw.Listeners[0].Conditions, "Programmed"); got != "False" {
		t.Errorf("listener Programmed %s", got)
	}
}
