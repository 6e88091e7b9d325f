// Package gatewayroutes compiles the routing objects the gateway serves
// (Ingress, and HTTPRoutes attached to Gateways of dockctl's GatewayClass;
// docs/design.md §10, the gateway; the shared design's §14) into one
// snapshot for the gateway helper, a helperapi.GatewayConfig, and computes
// their status conditions. It is pure: no clock, no Docker, no I/O; the
// controller gives it the objects, the Services' ports, which TLS Secrets
// exist and the namespaces' labels, and resolves the snapshot's backends to
// ready endpoints and its certificate names to Secrets (Resolve).
//
// Invariants:
//   - The same Input gives the same Table, byte for byte once marshalled:
//     every list is sorted, ties are broken by creation time and then by
//     namespace/name, never by input order or map order.
//   - Hosts of a port are ordered exact names first, then wildcards from
//     the most specific (most labels), then the catch-all "" host; routes of
//     a host are ordered by the specifications' precedence (Exact before
//     prefix, longest prefix, method, most headers, most query parameters,
//     oldest object, namespace/name, rule and match order), so the data
//     plane takes the first match.
//   - An Ingress path claimed by two Ingresses (same host, path type and
//     path) is served by the oldest only; the other is reported in its
//     status, never silently dropped. Nothing is served for an Ingress of a
//     class dockctl does not serve, nor for a Gateway of another
//     controller's class.
//   - A route reaches a Service or a certificate in another namespace only
//     with a ReferenceGrant there that permits it (Permitted); a reference
//     that is not permitted, not a Service, or to no such Service or port is
//     kept as an Invalid backend, so its share of requests is answered 500,
//     as the Gateway API requires, rather than redistributed.
package gatewayroutes
