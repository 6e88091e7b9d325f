package sourcedir

import (
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

// Routing objects are placed as kubectl places them: a namespaced one in
// -n's namespace when it names none, a cluster-scoped one in none even
// with -n, and none is dropped.
func TestPlaceRoutingObjects(t *testing.T) {
	docs, err := manifests.Decode("r.yaml", []byte(`apiVersion: networking.k8s.io/v1
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
metadata: {name: web}
spec: {defaultBackend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge}
spec:
  gatewayClassName: dockctl
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r}
spec: {parentRefs: [{name: edge}]}
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: g}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: other}]
  to: [{group: "", kind: Service}]
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Place(docs, "apps", true)
	if err != nil {
		t.Fatal(err)
	}
	b := p.Bundle
	if len(b.IngressClasses) != 1 || len(b.GatewayClasses) != 1 || len(b.Ingresses) != 1 || len(b.Gateways) != 1 || len(b.HTTPRoutes) != 1 || len(b.ReferenceGrants) != 1 {
		t.Fatalf("placed %+v", b)
	}
	for kind, ns := range map[string]string{
		"IngressClass": b.IngressClasses[0].Metadata.Namespace, "GatewayClass": b.GatewayClasses[0].Metadata.Namespace,
	} {
		if ns != "" {
			t.Errorf("%s placed in %q, want no namespace", kind, ns)
		}
	}
	for kind, ns := range map[string]string{
		"Ingress": b.Ingresses[0].Metadata.Namespace, "Gateway": b.Gateways[0].Metadata.Namespace,
		"HTTPRoute": b.HTTPRoutes[0].Metadata.Namespace, "ReferenceGrant": b.ReferenceGrants[0].Metadata.Namespace,
	} {
		if ns != "apps" {
			t.Errorf("%s placed in %q, want apps", kind, ns)
		}
	}
}
