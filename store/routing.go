package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

// The routing kinds (docs/design.md §10, the gateway): Ingress, Gateway,
// HTTPRoute and ReferenceGrant per namespace, IngressClass and
// GatewayClass cluster-scoped. Each is a generic registration
// (objectKind), its records in <kind-plural>/<name>.json. A cluster-scoped
// object keeps metadata.namespace "" and lives under the state directory's
// root (default's directory), which a namespace's deletion never takes:
// only namespaces other than default are ever deleted. Names are DNS-1123
// subdomains, as Kubernetes names these kinds. metadata.generation is the
// record's, bumped by a change of spec, since the controller's status
// conditions carry the generation they observed.
//
// Their status is the gateway controller's, in the shape of the kind's
// status field (an Ingress's loadBalancer, a Gateway's conditions and
// listeners, an HTTPRoute's parents), kept in routing-status/ next to
// the records (ReadRoutingStatus, WriteRoutingStatus): the store keeps it
// without reading it, so that no controller type leaks into the store.

const (
	KindIngress        = manifests.KindIngress
	KindIngressClass   = manifests.KindIngressClass
	KindGatewayClass   = manifests.KindGatewayClass
	KindGateway        = manifests.KindGateway
	KindHTTPRoute      = manifests.KindHTTPRoute
	KindReferenceGrant = manifests.KindReferenceGrant
)

// routingStatusDir holds the routing objects' statuses, one
// <kind>.<name>.json each (kind lower-cased: a name's dots cannot make
// two files collide, as the kind has none).
const routingStatusDir = "routing-status"

// routingKind registers a routing kind: its objects are validated as the
// decoder validates them, nothing is immutable, and its spec is what
// counts for the generation.
func routingKind[T any](kind, dir string, bundle func(*Bundle) *[]*T, meta func(*T) *manifests.ObjectMeta,
	validate func(*T) error, spec func(*T) any) *objectKind[T] {
	return &objectKind[T]{
		kind: kind, dir: dir, prefix: lower(kind) + ":", subdomain: true,
		// What refers to others first: a route before its Services.
		rank:       0,
		bundle:     bundle,
		meta:       meta,
		clean:      func(*T) {},
		validate:   validate,
		update:     func(_, _ *T, _ bool) error { return nil },
		spec:       spec,
		generation: true,
	}
}

var (
	ingressKind = routingKind(KindIngress, "ingresses",
		func(b *Bundle) *[]*manifests.Ingress { return &b.Ingresses },
		func(o *manifests.Ingress) *manifests.ObjectMeta { return &o.Metadata },
		manifests.ValidateIngress, func(o *manifests.Ingress) any { return &o.Spec })
	ingressClassKind = routingKind(KindIngressClass, "ingressclasses",
		func(b *Bundle) *[]*manifests.IngressClass { return &b.IngressClasses },
		func(o *manifests.IngressClass) *manifests.ObjectMeta { return &o.Metadata },
		manifests.ValidateIngressClass, func(o *manifests.IngressClass) any { return &o.Spec })
	gatewayClassKind = routingKind(KindGatewayClass, "gatewayclasses",
		func(b *Bundle) *[]*manifests.GatewayClass { return &b.GatewayClasses },
		func(o *manifests.GatewayClass) *manifests.ObjectMeta { return &o.Metadata },
		manifests.ValidateGatewayClass, func(o *manifests.GatewayClass) any { return &o.Spec })
	gatewayKind = routingKind(KindGateway, "gateways",
		func(b *Bundle) *[]*manifests.Gateway { return &b.Gateways },
		func(o *manifests.Gateway) *manifests.ObjectMeta { return &o.Metadata },
		manifests.ValidateGateway, func(o *manifests.Gateway) any { return &o.Spec })
	httpRouteKind = routingKind(KindHTTPRoute, "httproutes",
		func(b *Bundle) *[]*manifests.HTTPRoute { return &b.HTTPRoutes },
		func(o *manifests.HTTPRoute) *manifests.ObjectMeta { return &o.Metadata },
		manifests.ValidateHTTPRoute, func(o *manifests.HTTPRoute) any { return &o.Spec })
	referenceGrantKind = routingKind(KindReferenceGrant, "referencegrants",
		func(b *Bundle) *[]*manifests.ReferenceGrant { return &b.ReferenceGrants },
		func(o *manifests.ReferenceGrant) *manifests.ObjectMeta { return &o.Metadata },
		manifests.ValidateReferenceGrant, func(o *manifests.ReferenceGrant) any { return &o.Spec })
)

// routingKinds are the routing registrations, in the order Apply stores
// them (after the Services and Secrets they refer to): the classes, the
// grants, then what they admit.
var routingKinds = []storedKind{ingressClassKind, gatewayClassKind, referenceGrantKind, gatewayKind, ingressKind, httpRouteKind}

// checkClusterScoped refuses a namespace on a cluster-scoped object (the
// decoder drops it; a record naming one was not written by the store).
func checkClusterScoped(kind, ns string) error {
	if manifests.ClusterScoped(kind) && ns != "" && ns != manifests.DefaultNamespace {
		return fmt.Errorf("%s is cluster-scoped: no namespace (got %q)", lower(kind), ns)
	}
	return nil
}

// unscoped is ref without a namespace when its kind is cluster-scoped: a
// command names such an object with whatever -n says, as kubectl ignores
// the namespace of a cluster-scoped kind.
func unscoped(ref ObjectRef) ObjectRef {
	if manifests.ClusterScoped(ref.Kind) && ref.Kind != KindNamespace {
		ref.Namespace = ""
	}
	return ref
}

func unscopedRefs(refs []ObjectRef) []ObjectRef {
	out := make([]ObjectRef, len(refs))
	for i, r := range refs {
		out[i] = unscoped(r)
	}
	return out
}

// routingStatusFile is the on-disk form of a routing object's status.
type routingStatusFile struct {
	Version int             `json:"version"`
	Status  json.RawMessage `json:"status"`
	Updated time.Time       `json:"updatedAt"`
}

func routingStatusPath(ref ObjectRef) string {
	ns := ref.Namespace
	if manifests.ClusterScoped(ref.Kind) {
		ns = ""
	}
	return filepath.Join(nsRoot(ns), routingStatusDir, lower(ref.Kind)+"."+ref.Name+".json")
}

func checkRoutingRef(ref ObjectRef) error {
	k := kindNamed(ref.Kind)
	if k == nil || !isRoutingKind(k) {
		return fmt.Errorf("%s: not a routing kind", ref.Kind)
	}
	if err := checkClusterScoped(ref.Kind, ref.Namespace); err != nil {
		return err
	}
	return checkObject(ref.Kind, ref.Namespace, ref.Name)
}

func isRoutingKind(k storedKind) bool {
	for _, r := range routingKinds {
		if r == k {
			return true
		}
	}
	return false
}

// ReadRoutingStatus returns the status the gateway controller wrote for
// the routing object ref names (the JSON of the kind's status field),
// nil when none was written.
func (s *Store) ReadRoutingStatus(ref ObjectRef) (json.RawMessage, error) {
	ref = unscoped(ref)
	if err := checkRoutingRef(ref); err != nil {
		return nil, err
	}
	var f routingStatusFile
	if found, err := s.readState(routingStatusPath(ref), &f, &f.Version); !found || err != nil {
		return nil, err
	}
	return f.Status, nil
}

// WriteRoutingStatus stores status (the JSON of the kind's status field)
// as the status of the routing object ref names, atomically; an unchanged
// status is not written again, so that an idle controller writes nothing.
func (s *Store) WriteRoutingStatus(ref ObjectRef, status json.RawMessage) error {
	if s.readOnly {
		return ErrReadOnly
	}
	if err := checkRoutingRef(ref); err != nil {
		return err
	}
	if !json.Valid(status) {
		return fmt.Errorf("status of %s %q: not JSON", lower(ref.Kind), display(ref.Namespace, ref.Name))
	}
	return s.transaction(func() error {
		old, err := s.ReadRoutingStatus(ref)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			return err // a corrupt status is simply replaced
		}
		if old != nil && jsonEqual(old, status) {
			return nil
		}
		ns := ref.Namespace
		if manifests.ClusterScoped(ref.Kind) {
			ns = ""
		}
		if err := s.ensureNamespaceDirs(ns); err != nil {
			return err
		}
		return s.writeJSON(routingStatusPath(ref), routingStatusFile{Version: formatVersion, Status: status, Updated: storeNow()})
	})
}

// jsonEqual compares two JSON documents by value.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
