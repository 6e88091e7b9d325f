package gatewayroutes

import (
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
)

// routeBackends resolves every rule's backendRefs (the same for each
// parent) and gives the route's ResolvedRefs condition: the first problem
// found, in rule and backend order.
func (c *compiler) routeBackends(ref ObjectRef, r *manifests.HTTPRoute) (Condition, [][]helperapi.GatewayBackend) {
	cond := Condition{CondResolvedRefs, "True", ReasonResolvedRefs, ""}
	out := make([][]helperapi.GatewayBackend, len(r.Spec.Rules))
	for i, rule := range r.Spec.Rules {
		out[i] = []helperapi.GatewayBackend{}
		for _, b := range rule.BackendRefs {
			be, problem := c.backendRef(ref, b)
			if problem != nil && cond.Status == "True" {
				cond = *problem
			}
			out[i] = append(out[i], be)
		}
	}
	return cond, out
}

// backendRef resolves one backendRef; an unresolved one is Invalid (its
// share of requests answered 500).
func (c *compiler) backendRef(route ObjectRef, b manifests.HTTPBackendRef) (helperapi.GatewayBackend, *Condition) {
	target := BackendRef{route.Namespace, b.Name, deref32(b.Port)}
	if b.Namespace != nil {
		target.Namespace = *b.Namespace
	}
	be := helperapi.GatewayBackend{Service: target.String(), Weight: deref32(b.Weight), Endpoints: []helperapi.Endpoint{}}
	fail := func(reason, msg string) (helperapi.GatewayBackend, *Condition) {
		be.Invalid = true
		return be, &Condition{CondResolvedRefs, "False", reason, msg}
	}
	if deref(b.Group) != "" || deref(b.Kind) != "Service" {
		return fail(ReasonInvalidKind, errorf("backendRef %s: kind %s/%s is not supported (Service only)", b.Name, deref(b.Group), deref(b.Kind)))
	}
	if !Permitted(c.in.ReferenceGrants, Reference{manifests.GatewayGroup, manifests.KindHTTPRoute, route.Namespace, route.Name},
		Reference{"", "Service", target.Namespace, target.Name}) {
		return fail(ReasonRefNotPermitted, errorf("no ReferenceGrant in %s lets HTTPRoute %s reach Service %s/%s", target.Namespace, route, target.Namespace, target.Name))
	}
	svc, ok := c.in.Services[ObjectRef{target.Namespace, target.Name}]
	if !ok {
		return fail(ReasonBackendNotFound, errorf("Service %s/%s not found", target.Namespace, target.Name))
	}
	for _, p := range svc.Ports {
		if p.Port == target.Port {
			be.H2C = h2c(p.AppProtocol)
			return be, nil
		}
	}
	return fail(ReasonBackendNotFound, errorf("Service %s/%s has no port %d", target.Namespace, target.Name, target.Port))
}

func deref32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// routeEntries turns each match of each rule into an entry.
func (c *compiler) routeEntries(ref ObjectRef, r *manifests.HTTPRoute, backends [][]helperapi.GatewayBackend) []*entry {
	var out []*entry
	for i, rule := range r.Spec.Rules {
		filters := convertFilters(rule.Filters)
		for j, m := range rule.Matches {
			e := &entry{owner: ref.String(), created: created(&r.Metadata), ruleIndex: i, matchIx: j}
			e.route.Source = errorf("HTTPRoute %s rule %d", ref, i)
			typ := helperapi.PathPrefix
			if deref(m.Path.Type) == manifests.PathMatchExact {
				typ = helperapi.PathExact
			}
			pathEntry(e, typ, deref(m.Path.Value))
			if m.Method != nil {
				e.route.Method = *m.Method
				e.method = true
			}
			for _, h := range m.Headers {
				e.route.Headers = append(e.route.Headers, helperapi.GatewayValueMatch{Name: h.Name, Value: h.Value})
			}
			for _, q := range m.QueryParams {
				e.route.QueryParams = append(e.route.QueryParams, helperapi.GatewayValueMatch{Name: q.Name, Value: q.Value})
			}
			e.headers, e.query = len(m.Headers), len(m.QueryParams)
			e.route.Filters = filters
			e.route.Backends = backends[i]
			out = append(out, e)
		}
	}
	return out
}

func convertFilters(fs []manifests.HTTPRouteFilter) helperapi.GatewayFilters {
	var out helperapi.GatewayFilters
	for _, f := range fs {
		switch {
		case f.RequestHeaderModifier != nil:
			out.RequestHeaders = headerModifier(f.RequestHeaderModifier)
		case f.ResponseHeaderModifier != nil:
			out.ResponseHeaders = headerModifier(f.ResponseHeaderModifier)
		case f.RequestRedirect != nil:
			rr := f.RequestRedirect
			out.Redirect = &helperapi.GatewayRedirect{Scheme: deref(rr.Scheme), Hostname: deref(rr.Hostname),
				Port: int(deref32(rr.Port)), Path: pathModifier(rr.Path), StatusCode: int(deref32(rr.StatusCode))}
		case f.URLRewrite != nil:
			out.Rewrite = &helperapi.GatewayRewrite{Hostname: deref(f.URLRewrite.Hostname), Path: pathModifier(f.URLRewrite.Path)}
		}
	}
	return out
}

func headerModifier(f *manifests.HTTPHeaderFilter) *helperapi.GatewayHeaderModifier {
	m := &helperapi.GatewayHeaderModifier{Remove: f.Remove}
	for _, h := range f.Set {
		m.Set = append(m.Set, helperapi.GatewayValueMatch{Name: h.Name, Value: h.Value})
	}
	for _, h := range f.Add {
		m.Add = append(m.Add, helperapi.GatewayValueMatch{Name: h.Name, Value: h.Value})
	}
	return m
}

func pathModifier(p *manifests.HTTPPathModifier) *helperapi.GatewayPathModifier {
	if p == nil {
		return nil
	}
	return &helperapi.GatewayPathModifier{ReplaceFullPath: p.ReplaceFullPath, ReplacePrefixMatch: p.ReplacePrefixMatch}
}
