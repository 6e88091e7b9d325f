package manifests

import (
	"net"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Validation of the routing kinds: the Ingress rules of the API server
// (k8s.io/kubernetes pkg/apis/networking/validation) and the Gateway API's
// CRD schema and CEL rules (sigs.k8s.io/gateway-api v1.4.1), for the
// fields dockctl serves. The messages follow theirs where they have one.

// Limits of the Gateway API's CRD schema.
const (
	maxListeners   = 64
	maxParentRefs  = 32
	maxHostnames   = 16
	maxRules       = 16
	maxMatches     = 64
	maxFilters     = 16
	maxBackendRefs = 16
	maxHeaderMods  = 16
	maxGrantItems  = 16
	// MaxBackendWeight is the largest backendRef weight.
	MaxBackendWeight = 1000000
)

// Path parts the API server refuses in an Exact or Prefix Ingress path,
// and the Gateway API's CEL rules in an Exact or PathPrefix match: a proxy
// would normalise them, so the path would not match what it says.
var (
	invalidPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	invalidPathSuffixes  = []string{"/..", "/."}
)

// httpMethods are the methods an HTTPRoute match may name.
var httpMethods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true,
	"CONNECT": true, "OPTIONS": true, "TRACE": true, "PATCH": true}

func validateIngress(in *Ingress, base string, lines map[string]int) ErrorList {
	v := &validator{lines: lines}
	v.meta(child(base, "metadata"), &in.Metadata, KindIngress)
	sp := child(base, "spec")
	s := &in.Spec
	if s.IngressClassName != nil {
		v.requiredName(child(sp, "ingressClassName"), *s.IngressClassName, validation.IsDNS1123Subdomain)
	}
	if s.DefaultBackend == nil && len(s.Rules) == 0 {
		v.add(sp, "either `defaultBackend` or `rules` must be specified")
	}
	if s.DefaultBackend != nil {
		v.ingressBackend(child(sp, "defaultBackend"), s.DefaultBackend)
	}
	for i, t := range s.TLS {
		tp := index(child(sp, "tls"), i)
		for j, h := range t.Hosts {
			v.ingressHost(index(child(tp, "hosts"), j), h)
		}
		if t.SecretName != "" {
			v.requiredName(child(tp, "secretName"), t.SecretName, validation.IsDNS1123Subdomain)
		}
	}
	for i, r := range s.Rules {
		rp := index(child(sp, "rules"), i)
		if r.Host != "" {
			v.ingressHost(child(rp, "host"), r.Host)
		}
		if r.HTTP == nil {
			continue
		}
		hp := child(child(rp, "http"), "paths")
		if len(r.HTTP.Paths) == 0 {
			v.add(hp, "required")
		}
		for j, p := range r.HTTP.Paths {
			pp := index(hp, j)
			v.ingressPath(pp, p.Path, p.PathType)
			v.ingressBackend(child(pp, "backend"), &p.Backend)
		}
	}
	return v.errs
}

// ingressHost checks a host as the API server does: a DNS subdomain, or
// one with a single leading "*." label; never an IP address.
func (v *validator) ingressHost(p, h string) {
	if net.ParseIP(h) != nil {
		v.add(p, "invalid value %q: must be a DNS name, not an IP address", h)
		return
	}
	check := validation.IsDNS1123Subdomain
	if strings.Contains(h, "*") {
		check = validation.IsWildcardDNS1123Subdomain
	}
	v.requiredName(p, h, check)
}

func (v *validator) ingressPath(p, path, pathType string) {
	pt := child(p, "pathType")
	switch pathType {
	case "":
		v.add(pt, "required")
	case PathTypeExact, PathTypePrefix:
		v.cleanPath(child(p, "path"), path)
	case PathTypeImplementationSpecific:
		if path != "" && !strings.HasPrefix(path, "/") {
			v.add(child(p, "path"), "invalid value %q: must be an absolute path", path)
		}
	default:
		v.add(pt, `unsupported value %q: must be "Exact", "ImplementationSpecific" or "Prefix"`, pathType)
	}
}

// cleanPath checks an absolute path without the sequences a proxy would
// normalise (the API server's rule for Exact and Prefix Ingress paths, the
// Gateway API's for Exact and PathPrefix matches).
func (v *validator) cleanPath(p, path string) bool {
	if !strings.HasPrefix(path, "/") {
		v.add(p, "invalid value %q: must be an absolute path", path)
		return false
	}
	for _, seq := range invalidPathSequences {
		if strings.Contains(path, seq) {
			v.add(p, "invalid value %q: must not contain '%s'", path, seq)
			return false
		}
	}
	for _, suf := range invalidPathSuffixes {
		if strings.HasSuffix(path, suf) {
			v.add(p, "invalid value %q: cannot end with '%s'", path, suf)
			return false
		}
	}
	return true
}

func (v *validator) ingressBackend(p string, b *IngressBackend) {
	if b.Service == nil {
		v.add(p, "one backend (service) must be specified")
		return
	}
	sp := child(p, "service")
	v.dns1035Label(child(sp, "name"), b.Service.Name)
	pp := child(sp, "port")
	switch port := b.Service.Port; {
	case port.Name != "" && port.Number != 0:
		v.add(pp, "cannot set both port name & port number")
	case port.Name != "":
		if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
			v.add(child(pp, "name"), "invalid value %q: %s", port.Name, strings.Join(msgs, "; "))
		}
	case port.Number != 0:
		v.portNumber(child(pp, "number"), port.Number)
	default:
		v.add(pp, "port name or number is required")
	}
}

func validateIngressClass(c *IngressClass, base string, lines map[string]int) ErrorList {
	v := &validator{lines: lines}
	v.clusterMeta(child(base, "metadata"), &c.Metadata, KindIngressClass)
	v.controllerName(child(child(base, "spec"), "controller"), c.Spec.Controller, 250)
	return v.errs
}

// clusterMeta checks the metadata of a cluster-scoped object: a DNS
// subdomain name (the namespace, if any, is dropped as the API server does).
func (v *validator) clusterMeta(p string, m *ObjectMeta, kind string) {
	v.requiredName(child(p, "name"), m.Name, validation.IsDNS1123Subdomain)
	v.labels(child(p, "labels"), m.Labels)
	v.annotations(child(p, "annotations"), m.Annotations, kind)
}

// controllerName checks a domain-prefixed path ("example.com/gateway").
func (v *validator) controllerName(p, s string, maxLen int) {
	if s == "" {
		v.add(p, "required")
		return
	}
	domain, path, ok := strings.Cut(s, "/")
	if !ok || path == "" || len(validation.IsDNS1123Subdomain(domain)) > 0 || strings.ContainsAny(path, " \t") {
		v.add(p, "invalid value %q: must be a domain-prefixed path (such as \"acme.io/foo\")", s)
		return
	}
	if len(s) > maxLen {
		v.add(p, "invalid value %q: must be no more than %d characters", s, maxLen)
	}
}

func validateGatewayClass(c *GatewayClass, base string, lines map[string]int) ErrorList {
	v := &validator{lines: lines}
	v.clusterMeta(child(base, "metadata"), &c.Metadata, KindGatewayClass)
	v.controllerName(child(child(base, "spec"), "controllerName"), c.Spec.ControllerName, 253)
	return v.errs
}

// gatewayHostname checks a Gateway API hostname: lower-case RFC 1123 names
// with an optional leading "*." label, never an IP address.
func (v *validator) gatewayHostname(p, h string) {
	if net.ParseIP(h) != nil {
		v.add(p, "invalid value %q: must be a hostname, not an IP address", h)
		return
	}
	check := validation.IsDNS1123Subdomain
	if strings.HasPrefix(h, "*.") {
		check = validation.IsWildcardDNS1123Subdomain
	}
	v.requiredName(p, h, check)
}

func validateGateway(g *Gateway, base string, lines map[string]int) ErrorList {
	v := &validator{lines: lines}
	v.meta(child(base, "metadata"), &g.Metadata, KindGateway)
	sp := child(base, "spec")
	v.requiredName(child(sp, "gatewayClassName"), g.Spec.GatewayClassName, validation.IsDNS1123Subdomain)
	lp := child(sp, "listeners")
	switch n := len(g.Spec.Listeners); {
	case n == 0:
		v.add(lp, "required: at least one listener")
	case n > maxListeners:
		v.add(lp, "too many: %d, must have at most %d items", n, maxListeners)
	}
	names := map[string]bool{}
	type combo struct {
		port           int32
		protocol, host string
	}
	combos := map[combo]bool{}
	for i, l := range g.Spec.Listeners {
		p := index(lp, i)
		if v.requiredName(child(p, "name"), l.Name, validation.IsDNS1123Subdomain) {
			if names[l.Name] {
				v.add(child(p, "name"), "Listener name must be unique within the Gateway")
			}
			names[l.Name] = true
		}
		if v.portNumber(child(p, "port"), l.Port) {
			c := combo{l.Port, l.Protocol, ""}
			if l.Hostname != nil {
				c.host = *l.Hostname
			}
			if combos[c] {
				v.add(p, "Combination of port, protocol and hostname must be unique for each listener")
			}
			combos[c] = true
		}
		if l.Hostname != nil {
			v.gatewayHostname(child(p, "hostname"), *l.Hostname)
		}
		switch l.Protocol {
		case "":
			v.add(child(p, "protocol"), "required")
		case ProtocolHTTP:
			if l.TLS != nil {
				v.add(child(p, "tls"), "tls must not be specified for protocols ['HTTP', 'TCP', 'UDP']")
			}
		case ProtocolHTTPS:
			if l.TLS == nil {
				v.add(child(p, "tls"), "tls mode must be set for protocol HTTPS")
			}
		default:
			v.add(child(p, "protocol"), `unsupported by dockctl: %q (the gateway serves "HTTP" and "HTTPS")`, l.Protocol)
		}
		if l.TLS != nil {
			tp := child(p, "tls")
			if l.TLS.Mode != nil && *l.TLS.Mode != TLSModeTerminate {
				v.add(child(tp, "mode"), `unsupported by dockctl: %q (the gateway terminates TLS: "Terminate")`, *l.TLS.Mode)
			}
			if len(l.TLS.CertificateRefs) == 0 {
				v.add(child(tp, "certificateRefs"), "certificateRefs or options must be specified when mode is Terminate")
			}
			for j, r := range l.TLS.CertificateRefs {
				rp := index(child(tp, "certificateRefs"), j)
				v.requiredName(child(rp, "name"), r.Name, validation.IsDNS1123Subdomain)
				if r.Namespace != nil {
					v.requiredName(child(rp, "namespace"), *r.Namespace, validation.IsDNS1123Label)
				}
			}
		}
		if ar := l.AllowedRoutes; ar != nil {
			ap := child(p, "allowedRoutes")
			if ns := ar.Namespaces; ns != nil && ns.From != nil {
				switch *ns.From {
				case FromAll, FromSame:
				case FromSelector:
					if ns.Selector == nil {
						v.add(child(child(ap, "namespaces"), "selector"), "required when from is Selector")
					}
				default:
					v.add(child(child(ap, "namespaces"), "from"), `unsupported value %q: must be "All", "Same" or "Selector"`, *ns.From)
				}
			}
			for j, k := range ar.Kinds {
				kp := index(child(ap, "kinds"), j)
				if k.Group != nil && *k.Group != GatewayGroup || k.Kind != KindHTTPRoute {
					v.add(kp, "unsupported by dockctl: the gateway serves routes of kind HTTPRoute (group %s)", GatewayGroup)
				}
			}
		}
	}
	return v.errs
}

func validateHTTPRoute(r *HTTPRoute, base string, lines map[string]int) ErrorList {
	v := &validator{lines: lines}
	v.meta(child(base, "metadata"), &r.Metadata, KindHTTPRoute)
	sp := child(base, "spec")
	s := &r.Spec
	v.maxItems(child(sp, "parentRefs"), len(s.ParentRefs), maxParentRefs)
	for i, p := range s.ParentRefs {
		pp := index(child(sp, "parentRefs"), i)
		v.requiredName(child(pp, "name"), p.Name, validation.IsDNS1123Subdomain)
		if p.Namespace != nil {
			v.requiredName(child(pp, "namespace"), *p.Namespace, validation.IsDNS1123Label)
		}
		if p.SectionName != nil {
			v.requiredName(child(pp, "sectionName"), *p.SectionName, validation.IsDNS1123Subdomain)
		}
		if p.Port != nil {
			v.portNumber(child(pp, "port"), *p.Port)
		}
	}
	v.maxItems(child(sp, "hostnames"), len(s.Hostnames), maxHostnames)
	for i, h := range s.Hostnames {
		v.gatewayHostname(index(child(sp, "hostnames"), i), h)
	}
	v.maxItems(child(sp, "rules"), len(s.Rules), maxRules)
	ruleNames := map[string]bool{}
	for i := range s.Rules {
		rule := &s.Rules[i]
		rp := index(child(sp, "rules"), i)
		if rule.Name != nil {
			if v.requiredName(child(rp, "name"), *rule.Name, validation.IsDNS1123Subdomain) && ruleNames[*rule.Name] {
				v.add(child(rp, "name"), "Rule name must be unique within the route")
			}
			ruleNames[*rule.Name] = true
		}
		v.maxItems(child(rp, "matches"), len(rule.Matches), maxMatches)
		for j := range rule.Matches {
			v.routeMatch(index(child(rp, "matches"), j), &rule.Matches[j])
		}
		v.routeFilters(rp, rule)
		v.maxItems(child(rp, "backendRefs"), len(rule.BackendRefs), maxBackendRefs)
		for j, b := range rule.BackendRefs {
			bp := index(child(rp, "backendRefs"), j)
			v.requiredName(child(bp, "name"), b.Name, validation.IsDNS1123Subdomain)
			if b.Namespace != nil {
				v.requiredName(child(bp, "namespace"), *b.Namespace, validation.IsDNS1123Label)
			}
			if b.Weight != nil && (*b.Weight < 0 || *b.Weight > MaxBackendWeight) {
				v.add(child(bp, "weight"), "invalid value %d: must be between 0 and %d", *b.Weight, MaxBackendWeight)
			}
			isService := (b.Group == nil || *b.Group == "") && (b.Kind == nil || *b.Kind == "Service")
			if b.Port != nil {
				v.portNumber(child(bp, "port"), *b.Port)
			} else if isService {
				v.add(bp, "Must have port for Service reference")
			}
		}
	}
	return v.errs
}

func (v *validator) maxItems(p string, n, limit int) {
	if n > limit {
		v.add(p, "too many: %d, must have at most %d items", n, limit)
	}
}

func (v *validator) routeMatch(p string, m *HTTPRouteMatch) {
	if m.Path != nil {
		pp := child(p, "path")
		value := "/"
		if m.Path.Value != nil {
			value = *m.Path.Value
		}
		typ := PathMatchPathPrefix
		if m.Path.Type != nil {
			typ = *m.Path.Type
		}
		switch typ {
		case PathMatchExact, PathMatchPathPrefix:
			if v.cleanPath(child(pp, "value"), value) && strings.Contains(value, "#") {
				v.add(child(pp, "value"), "invalid value %q: must not contain '#'", value)
			}
		case PathMatchRegularExpression:
			v.add(child(pp, "type"), "unsupported by dockctl: %q (an extended feature the gateway does not implement)", typ)
		default:
			v.add(child(pp, "type"), `unsupported value %q: must be "Exact", "PathPrefix" or "RegularExpression"`, typ)
		}
	}
	seen := map[string]bool{}
	for i, h := range m.Headers {
		hp := index(child(p, "headers"), i)
		v.matchType(child(hp, "type"), h.Type)
		if v.headerName(child(hp, "name"), h.Name) {
			if k := strings.ToLower(h.Name); seen[k] {
				v.add(child(p, "headers"), "header names in a match must be unique (case-insensitive): %q", h.Name)
			} else {
				seen[k] = true
			}
		}
	}
	seenQ := map[string]bool{}
	for i, q := range m.QueryParams {
		qp := index(child(p, "queryParams"), i)
		v.matchType(child(qp, "type"), q.Type)
		if q.Name == "" {
			v.add(child(qp, "name"), "required")
		} else if seenQ[q.Name] {
			v.add(child(p, "queryParams"), "query parameter names in a match must be unique: %q", q.Name)
		}
		seenQ[q.Name] = true
	}
	if m.Method != nil && !httpMethods[*m.Method] {
		v.add(child(p, "method"), "unsupported value %q: must be one of CONNECT, DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT, TRACE", *m.Method)
	}
}

func (v *validator) matchType(p string, t *string) {
	switch {
	case t == nil || *t == MatchExact:
	case *t == "RegularExpression":
		v.add(p, "unsupported by dockctl: %q (an extended feature the gateway does not implement)", *t)
	default:
		v.add(p, `unsupported value %q: must be "Exact" or "RegularExpression"`, *t)
	}
}

// headerName checks an HTTP header name (RFC 7230 token), as the CRD's
// pattern does.
func (v *validator) headerName(p, name string) bool {
	if name == "" {
		v.add(p, "required")
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)) {
			v.add(p, "invalid value %q: must be an HTTP header name", name)
			return false
		}
	}
	return true
}

// routeFilters checks a rule's filters: each type with exactly its own
// field, each of the four at most once, a redirect and a rewrite not
// together, and a prefix replacement only under exactly one PathPrefix
// match (the CRD's CEL rules).
func (v *validator) routeFilters(rp string, rule *HTTPRouteRule) {
	fp := child(rp, "filters")
	v.maxItems(fp, len(rule.Filters), maxFilters)
	count := map[string]int{}
	prefixReplace := false
	for i, f := range rule.Filters {
		p := index(fp, i)
		count[f.Type]++
		set := map[string]bool{
			FilterRequestHeaderModifier:  f.RequestHeaderModifier != nil,
			FilterResponseHeaderModifier: f.ResponseHeaderModifier != nil,
			FilterRequestRedirect:        f.RequestRedirect != nil,
			FilterURLRewrite:             f.URLRewrite != nil,
		}
		field := map[string]string{
			FilterRequestHeaderModifier: "requestHeaderModifier", FilterResponseHeaderModifier: "responseHeaderModifier",
			FilterRequestRedirect: "requestRedirect", FilterURLRewrite: "urlRewrite",
		}
		if _, ok := set[f.Type]; !ok {
			if f.Type == "" {
				v.add(child(p, "type"), "required")
			} else {
				v.add(child(p, "type"), `unsupported by dockctl: %q (the gateway serves "RequestHeaderModifier", "RequestRedirect", "ResponseHeaderModifier" and "URLRewrite")`, f.Type)
			}
			continue
		}
		for typ, isSet := range set {
			switch {
			case typ == f.Type && !isSet:
				v.add(child(p, field[typ]), "filter.%s must be specified for %s filter.type", field[typ], typ)
			case typ != f.Type && isSet:
				v.add(child(p, field[typ]), "filter.%s must be nil if the filter.type is not %s", field[typ], typ)
			}
		}
		switch {
		case f.RequestHeaderModifier != nil:
			v.headerFilter(child(p, "requestHeaderModifier"), f.RequestHeaderModifier)
		case f.ResponseHeaderModifier != nil:
			v.headerFilter(child(p, "responseHeaderModifier"), f.ResponseHeaderModifier)
		case f.RequestRedirect != nil:
			rr := f.RequestRedirect
			rrp := child(p, "requestRedirect")
			if rr.Scheme != nil && *rr.Scheme != "http" && *rr.Scheme != "https" {
				v.add(child(rrp, "scheme"), `unsupported value %q: must be "http" or "https"`, *rr.Scheme)
			}
			if rr.Hostname != nil {
				v.requiredName(child(rrp, "hostname"), *rr.Hostname, validation.IsDNS1123Subdomain)
			}
			if rr.Port != nil {
				v.portNumber(child(rrp, "port"), *rr.Port)
			}
			if rr.StatusCode != nil && *rr.StatusCode != 301 && *rr.StatusCode != 302 {
				v.add(child(rrp, "statusCode"), "unsupported value %d: must be 301 or 302", *rr.StatusCode)
			}
			prefixReplace = v.pathModifier(child(rrp, "path"), rr.Path) || prefixReplace
		case f.URLRewrite != nil:
			up := child(p, "urlRewrite")
			if f.URLRewrite.Hostname != nil {
				v.requiredName(child(up, "hostname"), *f.URLRewrite.Hostname, validation.IsDNS1123Subdomain)
			}
			prefixReplace = v.pathModifier(child(up, "path"), f.URLRewrite.Path) || prefixReplace
		}
	}
	for _, typ := range []string{FilterRequestHeaderModifier, FilterResponseHeaderModifier, FilterRequestRedirect, FilterURLRewrite} {
		if count[typ] > 1 {
			v.add(fp, "%s filter cannot be repeated", typ)
		}
	}
	if count[FilterRequestRedirect] > 0 && count[FilterURLRewrite] > 0 {
		v.add(fp, "May specify either httpRouteFilterRequestRedirect or httpRouteFilterRequestRewrite, but not both")
	}
	if count[FilterRequestRedirect] > 0 && len(rule.BackendRefs) > 0 {
		// A redirect answers the request itself: a backend would never
		// be reached, which the spec forbids rather than ignores.
		v.add(child(rp, "backendRefs"), "RequestRedirect filter must not be used together with backendRefs")
	}
	if prefixReplace {
		if len(rule.Matches) != 1 || rule.Matches[0].Path == nil || rule.Matches[0].Path.Type == nil || *rule.Matches[0].Path.Type != PathMatchPathPrefix {
			v.add(fp, "When using a filter with path.replacePrefixMatch, exactly one PathPrefix match must be specified")
		}
	}
}

func (v *validator) headerFilter(p string, f *HTTPHeaderFilter) {
	for _, list := range []struct {
		name    string
		headers []HTTPHeader
	}{{"set", f.Set}, {"add", f.Add}} {
		lp := child(p, list.name)
		v.maxItems(lp, len(list.headers), maxHeaderMods)
		seen := map[string]bool{}
		for i, h := range list.headers {
			if v.headerName(child(index(lp, i), "name"), h.Name) {
				k := strings.ToLower(h.Name)
				if seen[k] {
					v.add(lp, "header names must be unique (case-insensitive): %q", h.Name)
				}
				seen[k] = true
			}
		}
	}
	rp := child(p, "remove")
	v.maxItems(rp, len(f.Remove), maxHeaderMods)
	seen := map[string]bool{}
	for i, name := range f.Remove {
		if v.headerName(index(rp, i), name) {
			k := strings.ToLower(name)
			if seen[k] {
				v.add(rp, "header names must be unique (case-insensitive): %q", name)
			}
			seen[k] = true
		}
	}
}

// pathModifier checks a redirect's or rewrite's path; it reports whether
// it replaces the matched prefix.
func (v *validator) pathModifier(p string, m *HTTPPathModifier) bool {
	if m == nil {
		return false
	}
	switch m.Type {
	case FullPathHTTPPathModifier:
		if m.ReplaceFullPath == nil {
			v.add(child(p, "replaceFullPath"), "replaceFullPath must be specified when type is set to 'ReplaceFullPath'")
		} else if !strings.HasPrefix(*m.ReplaceFullPath, "/") {
			v.add(child(p, "replaceFullPath"), "invalid value %q: must be an absolute path", *m.ReplaceFullPath)
		}
		if m.ReplacePrefixMatch != nil {
			v.add(child(p, "replacePrefixMatch"), "type must be 'ReplacePrefixMatch' when replacePrefixMatch is set")
		}
	case PrefixMatchHTTPPathModifer:
		if m.ReplacePrefixMatch == nil {
			v.add(child(p, "replacePrefixMatch"), "replacePrefixMatch must be specified when type is set to 'ReplacePrefixMatch'")
		} else if !strings.HasPrefix(*m.ReplacePrefixMatch, "/") {
			v.add(child(p, "replacePrefixMatch"), "invalid value %q: must be an absolute path", *m.ReplacePrefixMatch)
		}
		if m.ReplaceFullPath != nil {
			v.add(child(p, "replaceFullPath"), "type must be 'ReplaceFullPath' when replaceFullPath is set")
		}
		return true
	case "":
		v.add(child(p, "type"), "required")
	default:
		v.add(child(p, "type"), `unsupported value %q: must be "ReplaceFullPath" or "ReplacePrefixMatch"`, m.Type)
	}
	return false
}

func validateReferenceGrant(g *ReferenceGrant, base string, lines map[string]int) ErrorList {
	v := &validator{lines: lines}
	v.meta(child(base, "metadata"), &g.Metadata, KindReferenceGrant)
	sp := child(base, "spec")
	for _, list := range []struct {
		name string
		n    int
	}{{"from", len(g.Spec.From)}, {"to", len(g.Spec.To)}} {
		if list.n == 0 {
			v.add(child(sp, list.name), "required: at least one item")
		}
		v.maxItems(child(sp, list.name), list.n, maxGrantItems)
	}
	for i, f := range g.Spec.From {
		fp := index(child(sp, "from"), i)
		if f.Kind == "" {
			v.add(child(fp, "kind"), "required")
		}
		v.requiredName(child(fp, "namespace"), f.Namespace, validation.IsDNS1123Label)
	}
	for i, t := range g.Spec.To {
		tp := index(child(sp, "to"), i)
		if t.Kind == "" {
			v.add(child(tp, "kind"), "required")
		}
		if t.Name != nil {
			v.requiredName(child(tp, "name"), *t.Name, validation.IsDNS1123Subdomain)
		}
	}
	return v.errs
}
