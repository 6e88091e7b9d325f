package manifests

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// routingFiles returns the realistic routing manifests of
// testdata/routing, by file name.
func routingFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "routing", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no routing manifests: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = b
	}
	return out
}

// apply reads the routing kinds (Decode, DecodeAll): the gateway
// controller serves them, so they are neither refused nor skipped.
func TestRoutingKindsAreDecodedByApply(t *testing.T) {
	for f, b := range routingFiles(t) {
		docs, err := Decode(f, b)
		if err != nil {
			t.Errorf("Decode(%s) = %v", f, err)
		}
		want, err := DecodeRouting(f, b)
		if err != nil {
			t.Fatalf("DecodeRouting(%s) = %v", f, err)
		}
		if got, w := kindsOf(docs), kindsOf(want); !slices.Equal(got, w) {
			t.Errorf("Decode(%s) kinds = %v, want %v", f, got, w)
		}
		_, skipped, err := DecodeAll(f, b, LoadOptions{SkipUnsupported: true})
		if err != nil || len(skipped) != 0 {
			t.Errorf("DecodeAll(%s, skip) = %v, skipped %v", f, err, skipped)
		}
	}
}

// The routing objects come after what they refer to (the Services, the
// Secrets of their certificates), as Helm's install order puts an
// Ingress after the Deployments.
func TestRoutingKindsAreOrderedLast(t *testing.T) {
	docs, err := Decode("x.yaml", []byte(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  defaultBackend: {service: {name: web, port: {number: 80}}}
---
apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kindsOf(docs), []string{KindNamespace, KindService, KindIngress}; !slices.Equal(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
}

func decodeRoutingOK(t *testing.T, file, in string) []*Document {
	t.Helper()
	docs, err := DecodeRouting(file, []byte(in))
	if err != nil {
		t.Fatalf("DecodeRouting: %v", err)
	}
	return docs
}

func TestDecodeRoutingRealManifests(t *testing.T) {
	files := routingFiles(t)
	t.Run("nginx-style Ingress with TLS and its class", func(t *testing.T) {
		docs := decodeRoutingOK(t, "nginx-ingress.yaml", string(files[filepath.Join("testdata", "routing", "nginx-ingress.yaml")]))
		var ing *Ingress
		var class *IngressClass
		for _, d := range docs {
			if d.Ingress != nil {
				ing = d.Ingress
			}
			if d.IngressClass != nil {
				class = d.IngressClass
			}
		}
		if ing == nil || class == nil {
			t.Fatalf("kinds = %v, want an Ingress and an IngressClass", kindsOf(docs))
		}
		if got := *ing.Spec.IngressClassName; got != "nginx" {
			t.Errorf("ingressClassName = %q", got)
		}
		if got := ing.Spec.TLS[0]; got.SecretName != "shop-tls" || len(got.Hosts) != 2 || got.Hosts[1] != "*.shop.example.com" {
			t.Errorf("tls = %+v", got)
		}
		paths := ing.Spec.Rules[0].HTTP.Paths
		if paths[0].Backend.Service.Port.Name != "http" || paths[1].Backend.Service.Port.Number != 8080 || paths[2].PathType != PathTypeImplementationSpecific {
			t.Errorf("paths = %+v", paths)
		}
		if class.Spec.Controller != "k8s.io/ingress-nginx" || class.Metadata.Annotations[IngressClassDefaultAnnotation] != "true" {
			t.Errorf("class = %+v", class)
		}
	})
	t.Run("a Helm chart's Ingress", func(t *testing.T) {
		docs := decodeRoutingOK(t, "helm-ingress.yaml", string(files[filepath.Join("testdata", "routing", "helm-ingress.yaml")]))
		if len(docs) != 1 || docs[0].Ingress == nil || docs[0].Ingress.Spec.IngressClassName != nil {
			t.Fatalf("docs = %v", kindsOf(docs))
		}
		if docs[0].Meta().Namespace != "monitoring" || docs[0].Kind() != KindIngress {
			t.Errorf("meta = %+v kind %s", docs[0].Meta(), docs[0].Kind())
		}
	})
	t.Run("a Gateway and an HTTPRoute canary split, defaulted", func(t *testing.T) {
		docs := decodeRoutingOK(t, "gateway-canary.yaml", string(files[filepath.Join("testdata", "routing", "gateway-canary.yaml")]))
		got := map[string]int{}
		var gw *Gateway
		var store *HTTPRoute
		for _, d := range docs {
			got[d.Kind()]++
			if d.Gateway != nil {
				gw = d.Gateway
			}
			if d.HTTPRoute != nil && d.HTTPRoute.Metadata.Name == "store" {
				store = d.HTTPRoute
			}
		}
		if got[KindGatewayClass] != 1 || got[KindGateway] != 1 || got[KindHTTPRoute] != 2 || got[KindReferenceGrant] != 1 {
			t.Fatalf("kinds = %v", got)
		}
		https := gw.Spec.Listeners[1]
		if *https.TLS.Mode != TLSModeTerminate || *https.TLS.CertificateRefs[0].Kind != "Secret" || *https.TLS.CertificateRefs[0].Group != "" {
			t.Errorf("https listener tls not defaulted: %+v", https.TLS)
		}
		if *gw.Spec.Listeners[0].AllowedRoutes.Namespaces.From != FromAll {
			t.Errorf("allowedRoutes = %+v", gw.Spec.Listeners[0].AllowedRoutes.Namespaces)
		}
		p := store.Spec.ParentRefs[0]
		if *p.Group != GatewayGroup || *p.Kind != KindGateway {
			t.Errorf("parentRef not defaulted: %+v", p)
		}
		b := store.Spec.Rules[0].BackendRefs
		if *b[0].Weight != 90 || *b[1].Weight != 10 || *b[0].Kind != "Service" {
			t.Errorf("backendRefs = %+v", b)
		}
		search := store.Spec.Rules[1]
		if *search.BackendRefs[0].Weight != 1 || *search.Matches[0].Headers[0].Type != MatchExact {
			t.Errorf("defaults of rule 1 = %+v", search)
		}
	})
}

func kindsOf(docs []*Document) []string {
	var out []string
	for _, d := range docs {
		out = append(out, d.Kind())
	}
	return out
}

// An HTTPRoute rule without matches matches every path, and a match
// without a path is a PathPrefix "/" match, as the CRD defaults them.
func TestHTTPRouteDefaultsAsTheCRD(t *testing.T) {
	docs := decodeRoutingOK(t, "r.yaml", `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r}
spec:
  parentRefs: [{name: gw}]
  rules:
  - backendRefs: [{name: a, port: 80}]
  - matches: [{method: GET}]
    backendRefs: [{name: b, port: 80}]
`)
	r := docs[0].HTTPRoute
	for i, rule := range r.Spec.Rules {
		m := rule.Matches[0]
		if *m.Path.Type != PathMatchPathPrefix || *m.Path.Value != "/" {
			t.Errorf("rule %d match = %+v", i, m.Path)
		}
	}
	if *r.Spec.Rules[1].Matches[0].Method != "GET" {
		t.Errorf("method lost")
	}
}

// Keys are checked against the upstream types: a key they lack is an
// unknown field, one they have that the gateway does not serve is refused
// as unsupported, never dropped.
func TestRoutingDecodesStrictlyAgainstUpstreamTypes(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"unknown Ingress field", `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: a}
spec:
  rulez: []
`, `unknown field "rulez"`},
		{"an Ingress resource backend", `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: a}
spec:
  defaultBackend:
    resource: {kind: StorageBucket, name: b}
`, "spec.defaultBackend.resource: unsupported by dockctl"},
		{"HTTPRoute timeouts", `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: a}
spec:
  rules:
  - timeouts: {request: 10s}
`, "spec.rules[0].timeouts: unsupported by dockctl"},
		{"a wrong apiVersion", `apiVersion: gateway.networking.k8s.io/v1beta1
kind: HTTPRoute
metadata: {name: a}
`, `apiVersion: must be "gateway.networking.k8s.io/v1"`},
		{"a string weight", `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: a}
spec:
  rules:
  - backendRefs: [{name: a, port: 80, weight: "10"}]
`, `weight: expected an integer, got string "10"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRouting("x.yaml", []byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
