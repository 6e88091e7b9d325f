package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

const routingYAML = `apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: dockctl}
spec: {controller: dockctl.io/ingress}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: dockctl}
spec: {controllerName: dockctl.io/gateway}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: apps}
spec:
  rules:
  - host: a.test
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: a, port: {number: 80}}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: apps}
spec:
  gatewayClassName: dockctl
  listeners:
  - {name: http, port: 80, protocol: HTTP}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: b, namespace: apps}
spec:
  parentRefs: [{name: edge}]
  hostnames: [b.test]
  rules:
  - backendRefs: [{name: b, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: allow, namespace: apps}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: other}]
  to: [{group: "", kind: Service}]
`

// routingBundle is the bundle of routingYAML, as apply places it.
func routingBundle(t *testing.T) Bundle {
	t.Helper()
	docs, err := manifests.Decode("r.yaml", []byte(routingYAML))
	if err != nil {
		t.Fatal(err)
	}
	var b Bundle
	for _, d := range docs {
		switch {
		case d.Namespace != nil:
			b.Namespaces = append(b.Namespaces, d.Namespace)
		case d.IngressClass != nil:
			b.IngressClasses = append(b.IngressClasses, d.IngressClass)
		case d.GatewayClass != nil:
			b.GatewayClasses = append(b.GatewayClasses, d.GatewayClass)
		case d.Ingress != nil:
			b.Ingresses = append(b.Ingresses, d.Ingress)
		case d.Gateway != nil:
			b.Gateways = append(b.Gateways, d.Gateway)
		case d.HTTPRoute != nil:
			b.HTTPRoutes = append(b.HTTPRoutes, d.HTTPRoute)
		case d.ReferenceGrant != nil:
			b.ReferenceGrants = append(b.ReferenceGrants, d.ReferenceGrant)
		}
	}
	return b
}

// The routing kinds are stored as any other kind: created once, unchanged
// on a second apply, listed with their generation; the cluster-scoped
// ones without a namespace, and a namespace's deletion takes the
// namespaced ones only.
func TestRoutingKindsAreStored(t *testing.T) {
	s := openTemp(t)
	res, err := s.Apply(routingBundle(t), ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 7 {
		t.Fatalf("results %+v, want 7", res)
	}
	res, err = s.Apply(routingBundle(t), ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Action != Unchanged {
			t.Errorf("second apply: %+v, want unchanged", r)
		}
	}
	for _, tc := range []struct{ kind, ns, name string }{
		{KindIngressClass, "", "dockctl"}, {KindGatewayClass, "", "dockctl"},
		{KindIngress, "apps", "web"}, {KindGateway, "apps", "edge"}, {KindHTTPRoute, "apps", "b"}, {KindReferenceGrant, "apps", "allow"},
	} {
		objs, errs := s.ListObjects(tc.kind)
		if len(errs) > 0 || len(objs) != 1 {
			t.Fatalf("ListObjects(%s) = %v, %v", tc.kind, objs, errs)
		}
		o := objs[0]
		if o.Meta.Namespace != tc.ns || o.Meta.Name != tc.name || o.Generation != 1 || o.Meta.Generation != 1 || o.Meta.CreationTimestamp == nil {
			t.Errorf("%s stored as %+v (generation %d)", tc.kind, o.Meta, o.Generation)
		}
	}
	if _, err := s.DeleteObjects([]ObjectRef{{Kind: KindNamespace, Name: "apps"}}); err != nil {
		t.Fatal(err)
	}
	for kind, wantLive := range map[string]bool{KindIngressClass: true, KindGatewayClass: true, KindIngress: false, KindHTTPRoute: false} {
		objs, _ := s.ListObjects(kind)
		if len(objs) != 1 || objs[0].Deleted == wantLive {
			t.Errorf("%s after the namespace's deletion: %+v, want live %v", kind, objs, wantLive)
		}
	}
}

// A change of spec bumps the generation the controller's conditions
// observe; a change of labels does not.
func TestRoutingGenerationCountsSpecChanges(t *testing.T) {
	s := openTemp(t)
	b := routingBundle(t)
	if _, err := s.Apply(b, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	b = routingBundle(t)
	b.HTTPRoutes[0].Metadata.Labels = map[string]string{"team": "b"}
	b.Ingresses[0].Spec.Rules[0].Host = "c.test"
	if _, err := s.Apply(b, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	for kind, want := range map[string]int64{KindHTTPRoute: 1, KindIngress: 2} {
		objs, _ := s.ListObjects(kind)
		if objs[0].Generation != want {
			t.Errorf("%s generation %d, want %d", kind, objs[0].Generation, want)
		}
	}
}

// The controller's status of a routing object is kept as written, in the
// shape of the kind's status; cluster-scoped objects take no namespace.
func TestRoutingStatusRoundTrip(t *testing.T) {
	s := openTemp(t)
	if _, err := s.Apply(routingBundle(t), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ref     ObjectRef
		status  string
		wantErr bool
	}{
		{ref: ObjectRef{Kind: KindIngress, Namespace: "apps", Name: "web"}, status: `{"loadBalancer":{"ingress":[{"ip":"127.0.0.1"}]}}`},
		{ref: ObjectRef{Kind: KindGatewayClass, Name: "dockctl"}, status: `{"conditions":[{"type":"Accepted","status":"True"}]}`},
		{ref: ObjectRef{Kind: KindGatewayClass, Namespace: "apps", Name: "dockctl"}, status: `{}`, wantErr: true},
		{ref: ObjectRef{Kind: KindService, Namespace: "apps", Name: "web"}, status: `{}`, wantErr: true},
	} {
		err := s.WriteRoutingStatus(tc.ref, json.RawMessage(tc.status))
		if tc.wantErr {
			if err == nil {
				t.Errorf("WriteRoutingStatus(%v) accepted", tc.ref)
			}
			continue
		}
		if err != nil {
			t.Fatalf("WriteRoutingStatus(%v): %v", tc.ref, err)
		}
		got, err := s.ReadRoutingStatus(tc.ref)
		if err != nil || !jsonEqual(got, json.RawMessage(tc.status)) {
			t.Errorf("ReadRoutingStatus(%v) = %s, %v, want %s", tc.ref, got, err, tc.status)
		}
	}
	none, err := s.ReadRoutingStatus(ObjectRef{Kind: KindHTTPRoute, Namespace: "apps", Name: "b"})
	if none != nil || err != nil {
		t.Errorf("status never written = %s, %v, want none", none, err)
	}
}

// A routing object's change is reported by Watch under its kind's key,
// so that the gateway controller is queued; a cluster-scoped one's as of
// default (the root's directory holds it).
func TestRoutingChangesAreWatched(t *testing.T) {
	s := openTemp(t)
	ch, err := s.Watch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(routingBundle(t), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"namespace:apps": true, "ingressclass:default/dockctl": true, "gatewayclass:default/dockctl": true,
		"ingress:apps/web": true, "gateway:apps/edge": true, "httproute:apps/b": true, "referencegrant:apps/allow": true}
	deadline := time.After(time.Minute)
	for len(want) > 0 {
		select {
		case k := <-ch:
			delete(want, k)
			kind, _, _ := ParseWatchKey(k)
			if k != "" && kind == "" {
				t.Errorf("key %q names no kind", k)
			}
		case <-deadline:
			t.Fatalf("never reported: %v", want)
		}
	}
}
