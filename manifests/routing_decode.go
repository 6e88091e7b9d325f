package manifests

import (
	"reflect"

	"gopkg.in/yaml.v3"
)

var (
	ingressType        = reflect.TypeOf(Ingress{})
	ingressClassType   = reflect.TypeOf(IngressClass{})
	gatewayClassType   = reflect.TypeOf(GatewayClass{})
	gatewayType        = reflect.TypeOf(Gateway{})
	httpRouteType      = reflect.TypeOf(HTTPRoute{})
	referenceGrantType = reflect.TypeOf(ReferenceGrant{})
)

func init() {
	// apply reads the routing kinds, served by the gateway controller
	// (docs/design.md §10), after every kind they refer to (Services,
	// Secrets), as Helm installs an Ingress after the Deployments.
	for k, d := range routingKinds() {
		kinds[k] = d
		kindOrder[k] = 6
	}
	// A printed object's status is its controller's (the load balancer
	// address, the route's conditions): skipped, so that `get -o yaml`
	// applies again, as for the other kinds.
	for _, t := range []reflect.Type{ingressType, ingressClassType, gatewayClassType, gatewayType, httpRouteType, referenceGrantType} {
		ignoredKeys[t] = map[string]bool{"status": true}
	}
}

// routingKinds returns the decoders of the routing kinds, which init
// adds to the kinds apply reads.
func routingKinds() map[string]kindDecoder {
	return map[string]kindDecoder{
		KindIngress: routingKind(KindIngress, NetworkingAPIVersion, validateIngress, SetIngressDefaults,
			func(d *Document, o *Ingress) { d.Ingress = o }),
		KindIngressClass: routingKind(KindIngressClass, NetworkingAPIVersion, validateIngressClass,
			func(c *IngressClass) { c.Metadata.Namespace = "" }, func(d *Document, o *IngressClass) { d.IngressClass = o }),
		KindGatewayClass: routingKind(KindGatewayClass, GatewayAPIVersion, validateGatewayClass,
			func(c *GatewayClass) { c.Metadata.Namespace = "" }, func(d *Document, o *GatewayClass) { d.GatewayClass = o }),
		KindGateway: routingKind(KindGateway, GatewayAPIVersion, validateGateway, SetGatewayDefaults,
			func(d *Document, o *Gateway) { d.Gateway = o }),
		KindHTTPRoute: routingKind(KindHTTPRoute, GatewayAPIVersion, validateHTTPRoute, SetHTTPRouteDefaults,
			func(d *Document, o *HTTPRoute) { d.HTTPRoute = o }),
		KindReferenceGrant: routingKind(KindReferenceGrant, GatewayBetaAPIVersion, validateReferenceGrant,
			func(*ReferenceGrant) {}, func(d *Document, o *ReferenceGrant) { d.ReferenceGrant = o }),
	}
}

// routingKind is the decoder of a routing kind: strict against the
// upstream shape, validated as written, then defaulted (decodeWorkload).
// A cluster-scoped kind's namespace is dropped by its setDefaults, as the
// API server drops it.
func routingKind[T any](kind, apiVersion string, validate func(*T, string, map[string]int) ErrorList, setDefaults func(*T), put func(*Document, *T)) kindDecoder {
	k8s := routingUpstream(kind)
	return kindDecoder{apiVersion: apiVersion, typ: reflect.TypeFor[T](), k8s: k8s,
		decode: func(file string, n *yaml.Node, base string) (*Document, ErrorList) {
			return decodeWorkload(file, n, base, k8s, validate, setDefaults, put)
		}}
}

// DecodeRouting is Decode with the routing kinds (Ingress, IngressClass,
// GatewayClass, Gateway, HTTPRoute, ReferenceGrant) decoded too, strictly
// against the upstream types, validated as the API server and the Gateway
// API's CRD validation rules do for the fields dockctl serves, and
// defaulted as they default; each in the Document field of its kind.
// Decode and LoadAll read them too; DecodeRouting stays for the callers
// (the gateway's tests) that name what they decode.
func DecodeRouting(file string, data []byte) ([]*Document, error) {
	return decodeOrdered(file, data, &decodeState{extra: routingKinds()})
}

// routing returns the kind and metadata of the document's object of a
// routing kind, or "" and nil.
func (d *Document) routing() (string, *ObjectMeta) {
	switch {
	case d.Ingress != nil:
		return KindIngress, &d.Ingress.Metadata
	case d.IngressClass != nil:
		return KindIngressClass, &d.IngressClass.Metadata
	case d.GatewayClass != nil:
		return KindGatewayClass, &d.GatewayClass.Metadata
	case d.Gateway != nil:
		return KindGateway, &d.Gateway.Metadata
	case d.HTTPRoute != nil:
		return KindHTTPRoute, &d.HTTPRoute.Metadata
	case d.ReferenceGrant != nil:
		return KindReferenceGrant, &d.ReferenceGrant.Metadata
	}
	return "", nil
}

// SetIngressDefaults sets what the API server sets on an Ingress: nothing
// in networking/v1 but the namespace of a namespaced object, which apply
// fills; kept as a hook so that the decoder has the same shape for every
// kind.
func SetIngressDefaults(*Ingress) {}

// SetGatewayDefaults sets the Gateway API CRD defaults of the fields
// served: a listener's tls.mode Terminate and allowedRoutes.namespaces.from
// Same.
func SetGatewayDefaults(g *Gateway) {
	for i := range g.Spec.Listeners {
		l := &g.Spec.Listeners[i]
		if l.TLS != nil && l.TLS.Mode == nil {
			l.TLS.Mode = ptrTo(TLSModeTerminate)
		}
		if l.AllowedRoutes == nil {
			l.AllowedRoutes = &AllowedRoutes{}
		}
		if l.AllowedRoutes.Namespaces == nil {
			l.AllowedRoutes.Namespaces = &RouteNamespaces{}
		}
		if l.AllowedRoutes.Namespaces.From == nil {
			l.AllowedRoutes.Namespaces.From = ptrTo(FromSame)
		}
		for j := range l.TLS.certificateRefs() {
			r := &l.TLS.CertificateRefs[j]
			if r.Group == nil {
				r.Group = ptrTo("")
			}
			if r.Kind == nil {
				r.Kind = ptrTo("Secret")
			}
		}
	}
}

func (t *ListenerTLS) certificateRefs() []SecretObjectRef {
	if t == nil {
		return nil
	}
	return t.CertificateRefs
}

// SetHTTPRouteDefaults sets the Gateway API CRD defaults: a parentRef's
// group and kind (a Gateway), a rule without matches matches every path
// (PathPrefix "/"), a path match's type PathPrefix and value "/", header
// and query matches Exact, a backendRef's group "" and kind Service, and
// its weight 1.
func SetHTTPRouteDefaults(r *HTTPRoute) {
	for i := range r.Spec.ParentRefs {
		p := &r.Spec.ParentRefs[i]
		if p.Group == nil {
			p.Group = ptrTo(GatewayGroup)
		}
		if p.Kind == nil {
			p.Kind = ptrTo(KindGateway)
		}
	}
	for i := range r.Spec.Rules {
		rule := &r.Spec.Rules[i]
		if len(rule.Matches) == 0 {
			rule.Matches = []HTTPRouteMatch{{}}
		}
		for j := range rule.Matches {
			m := &rule.Matches[j]
			if m.Path == nil {
				m.Path = &HTTPPathMatch{}
			}
			if m.Path.Type == nil {
				m.Path.Type = ptrTo(PathMatchPathPrefix)
			}
			if m.Path.Value == nil {
				m.Path.Value = ptrTo("/")
			}
			for k := range m.Headers {
				if m.Headers[k].Type == nil {
					m.Headers[k].Type = ptrTo(MatchExact)
				}
			}
			for k := range m.QueryParams {
				if m.QueryParams[k].Type == nil {
					m.QueryParams[k].Type = ptrTo(MatchExact)
				}
			}
		}
		for j := range rule.BackendRefs {
			b := &rule.BackendRefs[j]
			if b.Group == nil {
				b.Group = ptrTo("")
			}
			if b.Kind == nil {
				b.Kind = ptrTo("Service")
			}
			if b.Weight == nil {
				b.Weight = ptrTo(int32(1))
			}
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// ValidateIngress, ValidateIngressClass, ValidateGatewayClass,
// ValidateGateway, ValidateHTTPRoute and ValidateReferenceGrant validate a
// stored object of the routing kinds as the decoder does (no file, no
// lines): the store checks a record with them before trusting it.
func ValidateIngress(o *Ingress) error { return validateIngress(o, "", nil).Err() }

func ValidateIngressClass(o *IngressClass) error { return validateIngressClass(o, "", nil).Err() }

func ValidateGatewayClass(o *GatewayClass) error { return validateGatewayClass(o, "", nil).Err() }

func ValidateGateway(o *Gateway) error { return validateGateway(o, "", nil).Err() }

func ValidateHTTPRoute(o *HTTPRoute) error { return validateHTTPRoute(o, "", nil).Err() }

func ValidateReferenceGrant(o *ReferenceGrant) error { return validateReferenceGrant(o, "", nil).Err() }

// ClusterScoped tells the kinds whose objects belong to no namespace
// (IngressClass, GatewayClass; a Namespace itself).
func ClusterScoped(kind string) bool {
	return kind == KindIngressClass || kind == KindGatewayClass || kind == KindNamespace
}
