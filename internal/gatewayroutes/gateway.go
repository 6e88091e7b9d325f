package gatewayroutes

import (
	"slices"
	"strings"

	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
)

// listener is an accepted listener of a served Gateway.
type listener struct {
	gw       ObjectRef
	spec     *manifests.Listener
	port     *portTable // nil: its port is taken by the other protocol
	attached int32
}

// gateways accepts the GatewayClasses of dockctl's controller, the
// Gateways of those classes with their listeners, and attaches the
// HTTPRoutes to them.
func (c *compiler) gateways() {
	ours := map[string]bool{}
	for _, gc := range c.in.GatewayClasses {
		if gc.Spec.ControllerName != c.opts.ControllerName {
			continue // another controller's: not ours to report on
		}
		ours[gc.Metadata.Name] = true
		c.table.Status.GatewayClasses[gc.Metadata.Name] = []Condition{{CondAccepted, "True", ReasonAccepted, ""}}
	}
	gws := slices.Clone(c.in.Gateways)
	slices.SortStableFunc(gws, func(a, b *manifests.Gateway) int { return olderFirst(&a.Metadata, &b.Metadata) })
	listeners := map[ObjectRef][]*listener{}
	for _, gw := range gws {
		if !ours[gw.Spec.GatewayClassName] {
			continue
		}
		ref := ObjectRef{ns(gw.Metadata.Namespace), gw.Metadata.Name}
		for i := range gw.Spec.Listeners {
			l := &gw.Spec.Listeners[i]
			lst := &listener{gw: ref, spec: l, port: c.port(int(l.Port), l.Protocol)}
			listeners[ref] = append(listeners[ref], lst)
			if lst.port != nil && l.TLS != nil {
				for _, cert := range l.TLS.CertificateRefs {
					if name, ok := c.certificate(ref, cert); ok {
						lst.port.certs[name] = true
					}
				}
			}
		}
	}
	routes := slices.Clone(c.in.HTTPRoutes)
	slices.SortStableFunc(routes, func(a, b *manifests.HTTPRoute) int { return olderFirst(&a.Metadata, &b.Metadata) })
	for _, r := range routes {
		c.route(r, listeners)
	}
	for _, gw := range gws {
		if !ours[gw.Spec.GatewayClassName] {
			continue
		}
		ref := ObjectRef{ns(gw.Metadata.Namespace), gw.Metadata.Name}
		st := GatewayStatus{Conditions: []Condition{{CondAccepted, "True", ReasonAccepted, ""}}}
		allProgrammed := true
		for _, lst := range listeners[ref] {
			ls := ListenerStatus{Name: lst.spec.Name, AttachedRoutes: lst.attached}
			ls.Conditions = c.listenerConditions(ref, lst)
			if cond(ls.Conditions, CondAccepted).Status != "True" {
				allProgrammed = false
			}
			st.Listeners = append(st.Listeners, ls)
		}
		switch {
		case c.in.Programmed[ref] && allProgrammed:
			st.Conditions = append(st.Conditions, Condition{CondProgrammed, "True", ReasonProgrammed, ""})
		case c.in.Programmed[ref]:
			st.Conditions = append(st.Conditions, Condition{CondProgrammed, "True", ReasonProgrammed, "some listeners are not accepted"})
		default:
			st.Conditions = append(st.Conditions, Condition{CondProgrammed, "False", ReasonPending, "waiting for the gateway helper to acknowledge its configuration"})
		}
		c.table.Status.Gateways[ref] = st
	}
}

// listenerConditions are a listener's Accepted, ResolvedRefs and
// Programmed (served by an acknowledged config).
func (c *compiler) listenerConditions(gw ObjectRef, lst *listener) []Condition {
	accepted := Condition{CondAccepted, "True", ReasonAccepted, ""}
	if lst.port == nil {
		accepted = Condition{CondAccepted, "False", ReasonPortUnavailable, errorf("port %d serves another protocol", lst.spec.Port)}
	} else if why := c.in.Unavailable[int(lst.spec.Port)]; why != "" {
		accepted = Condition{CondAccepted, "False", ReasonPortUnavailable, why}
	}
	resolved := Condition{CondResolvedRefs, "True", ReasonResolvedRefs, ""}
	if lst.spec.TLS != nil {
		for _, cert := range lst.spec.TLS.CertificateRefs {
			if _, ok := c.certificate(gw, cert); !ok {
				resolved = c.certificateProblem(gw, cert)
				break
			}
		}
	}
	programmed := Condition{CondProgrammed, "True", ReasonProgrammed, ""}
	switch {
	case accepted.Status != "True":
		programmed = Condition{CondProgrammed, "False", ReasonInvalid, "the listener is not accepted"}
	case !c.in.Programmed[gw]:
		programmed = Condition{CondProgrammed, "False", ReasonPending, "waiting for the gateway helper to acknowledge its configuration"}
	}
	return []Condition{accepted, resolved, programmed}
}

// certificate resolves a listener's certificateRef to the snapshot's
// certificate name ("namespace/name").
func (c *compiler) certificate(gw ObjectRef, ref manifests.SecretObjectRef) (string, bool) {
	if deref(ref.Group) != "" || deref(ref.Kind) != "Secret" {
		return "", false
	}
	target := ObjectRef{gw.Namespace, ref.Name}
	if ref.Namespace != nil {
		target.Namespace = *ref.Namespace
	}
	if !Permitted(c.in.ReferenceGrants, Reference{manifests.GatewayGroup, manifests.KindGateway, gw.Namespace, gw.Name},
		Reference{"", "Secret", target.Namespace, target.Name}) {
		return "", false
	}
	return target.String(), c.in.TLSSecrets[target]
}

func (c *compiler) certificateProblem(gw ObjectRef, ref manifests.SecretObjectRef) Condition {
	target := ObjectRef{gw.Namespace, ref.Name}
	if ref.Namespace != nil {
		target.Namespace = *ref.Namespace
	}
	switch {
	case deref(ref.Group) != "" || deref(ref.Kind) != "Secret":
		return Condition{CondResolvedRefs, "False", ReasonInvalidCertificateRef, errorf("certificateRef %s/%s is not a Secret", deref(ref.Group), deref(ref.Kind))}
	case !Permitted(c.in.ReferenceGrants, Reference{manifests.GatewayGroup, manifests.KindGateway, gw.Namespace, gw.Name}, Reference{"", "Secret", target.Namespace, target.Name}):
		return Condition{CondResolvedRefs, "False", ReasonRefNotPermitted, errorf("no ReferenceGrant in %s lets Gateway %s use Secret %s", target.Namespace, gw, target)}
	}
	return Condition{CondResolvedRefs, "False", ReasonInvalidCertificateRef, errorf("Secret %s is not a kubernetes.io/tls Secret", target)}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// route attaches one HTTPRoute to the listeners its parentRefs select and
// allow, on the intersection of the route's and each listener's hostnames.
func (c *compiler) route(r *manifests.HTTPRoute, listeners map[ObjectRef][]*listener) {
	ref := ObjectRef{ns(r.Metadata.Namespace), r.Metadata.Name}
	resolved, backends := c.routeBackends(ref, r)
	var statuses []RouteParentStatus
	for _, p := range r.Spec.ParentRefs {
		if deref(p.Group) != manifests.GatewayGroup || deref(p.Kind) != manifests.KindGateway {
			continue // another kind of parent (a ListenerSet, say): not ours
		}
		gw := ObjectRef{ref.Namespace, p.Name}
		if p.Namespace != nil {
			gw.Namespace = *p.Namespace
		}
		lsts, ok := listeners[gw]
		if !ok {
			continue // not a Gateway of dockctl's class: another controller reports
		}
		st := RouteParentStatus{ParentRef: gw, Section: deref(p.SectionName)}
		accepted := c.attach(ref, r, p, lsts, backends)
		st.Conditions = []Condition{accepted, resolved}
		statuses = append(statuses, st)
	}
	if len(statuses) > 0 {
		c.table.Status.HTTPRoutes[ref] = statuses
	}
}

// attach adds the route's rules to the matching listeners; it returns the
// parent's Accepted condition.
func (c *compiler) attach(ref ObjectRef, r *manifests.HTTPRoute, p manifests.ParentReference, lsts []*listener, backends [][]helperapi.GatewayBackend) Condition {
	matched, allowed, attached := false, false, false
	for _, l := range lsts {
		if p.SectionName != nil && *p.SectionName != l.spec.Name || p.Port != nil && *p.Port != l.spec.Port {
			continue
		}
		matched = true
		if l.port == nil || !c.allows(l, ref.Namespace) {
			continue
		}
		allowed = true
		hosts := intersect(deref(l.spec.Hostname), r.Spec.Hostnames)
		if len(hosts) == 0 {
			continue
		}
		attached = true
		l.attached++
		for _, h := range hosts {
			key := hostKey{name: h}
			l.port.hosts[key] = append(l.port.hosts[key], c.routeEntries(ref, r, backends)...)
		}
	}
	switch {
	case !matched:
		return Condition{CondAccepted, "False", ReasonNoMatchingParent, "no listener matches the parentRef's sectionName and port"}
	case !allowed:
		return Condition{CondAccepted, "False", ReasonNotAllowedByListeners, "no listener allows routes from namespace " + ref.Namespace}
	case !attached:
		return Condition{CondAccepted, "False", ReasonNoMatchingListenerHost, "no hostname of the route intersects the listeners'"}
	}
	return Condition{CondAccepted, "True", ReasonAccepted, ""}
}

// allows applies a listener's allowedRoutes to a route's namespace.
func (c *compiler) allows(l *listener, routeNS string) bool {
	ar := l.spec.AllowedRoutes
	if ar != nil && len(ar.Kinds) > 0 && !slices.ContainsFunc(ar.Kinds, func(k manifests.RouteGroupKind) bool {
		return k.Kind == manifests.KindHTTPRoute && (k.Group == nil || *k.Group == manifests.GatewayGroup)
	}) {
		return false
	}
	from := manifests.FromSame
	if ar != nil && ar.Namespaces != nil && ar.Namespaces.From != nil {
		from = *ar.Namespaces.From
	}
	switch from {
	case manifests.FromAll:
		return true
	case manifests.FromSelector:
		labels := c.in.NamespaceLabels[routeNS]
		for k, v := range ar.Namespaces.Selector.MatchLabels {
			if labels[k] != v {
				return false
			}
		}
		return true
	}
	return routeNS == l.gw.Namespace
}

// intersect gives the hostnames a route serves on a listener (the Gateway
// API's hostname intersection): with neither set, any host (""); with one
// set, its names; with both, each route name the listener's matches, a
// wildcard of either side narrowed to the more specific name.
func intersect(listenerHost string, routeHosts []string) []string {
	if len(routeHosts) == 0 {
		return []string{listenerHost}
	}
	if listenerHost == "" {
		return slices.Clone(routeHosts)
	}
	var out []string
	for _, h := range routeHosts {
		switch {
		case h == listenerHost:
			out = append(out, h)
		case wildcardMatches(listenerHost, h):
			out = append(out, h)
		case wildcardMatches(h, listenerHost):
			out = append(out, listenerHost)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// wildcardMatches reports whether the wildcard pattern ("*.example.com")
// covers name (an exact name, or a narrower wildcard), matching any number
// of labels as the Gateway API does.
func wildcardMatches(pattern, name string) bool {
	suffix, ok := strings.CutPrefix(pattern, "*")
	if !ok {
		return false
	}
	return strings.HasSuffix(name, suffix) && len(strings.TrimPrefix(name, "*")) > len(suffix)
}

// cond returns the condition of type typ in cs (zero if none).
func cond(cs []Condition, typ string) Condition {
	for _, c := range cs {
		if c.Type == typ {
			return c
		}
	}
	return Condition{}
}
