package sourcedir

import (
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// placeRouting puts an object of a routing kind into b: a namespaced one
// in its namespace (PlaceObject), a cluster-scoped one (IngressClass,
// GatewayClass) in none, whatever -n says, as kubectl ignores the
// namespace for a cluster-scoped kind. A document of another kind is
// left out (Place handles every kind dockctl stores).
func placeRouting(b *store.Bundle, d *manifests.Document, namespace string, explicit bool) error {
	switch {
	case d.IngressClass != nil:
		b.IngressClasses = append(b.IngressClasses, d.IngressClass)
		return nil
	case d.GatewayClass != nil:
		b.GatewayClasses = append(b.GatewayClasses, d.GatewayClass)
		return nil
	}
	kind, m := d.Kind(), d.Meta()
	switch kind {
	case manifests.KindIngress, manifests.KindGateway, manifests.KindHTTPRoute, manifests.KindReferenceGrant:
	default:
		return nil
	}
	if err := PlaceObject(d, m, namespace, explicit); err != nil {
		return err
	}
	switch {
	case d.Ingress != nil:
		b.Ingresses = append(b.Ingresses, d.Ingress)
	case d.Gateway != nil:
		b.Gateways = append(b.Gateways, d.Gateway)
	case d.HTTPRoute != nil:
		b.HTTPRoutes = append(b.HTTPRoutes, d.HTTPRoute)
	case d.ReferenceGrant != nil:
		b.ReferenceGrants = append(b.ReferenceGrants, d.ReferenceGrant)
	}
	return nil
}
