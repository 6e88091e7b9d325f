package gatewayroutes

import (
	"slices"
	"strings"

	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
)

// servedIngress says whether dockctl serves an Ingress of this class: no
// class, a class named in Options.IngressClasses, or the class marked as
// the default one (ingressclass.kubernetes.io/is-default-class).
func (c *compiler) servedIngress(in *manifests.Ingress) (bool, string) {
	if in.Spec.IngressClassName == nil {
		return true, ""
	}
	name := *in.Spec.IngressClassName
	if slices.Contains(c.opts.IngressClasses, name) {
		return true, ""
	}
	for _, cl := range c.in.IngressClasses {
		if cl.Metadata.Name == name && cl.Metadata.Annotations[manifests.IngressClassDefaultAnnotation] == "true" {
			return true, ""
		}
	}
	return false, errorf("%s: ingress class %q is not served by dockctl (served: %s)", ReasonNotServedIngressClass, name, strings.Join(c.opts.IngressClasses, ", "))
}

// ingressClaim is one host+path an Ingress serves, for conflicts.
type ingressClaim struct {
	host, pathType, path string
}

// ingresses adds the served Ingresses, oldest first, to the HTTP port and,
// when they have TLS, the HTTPS port; a claim already made by an older
// Ingress is reported on the younger one.
func (c *compiler) ingresses() {
	ings := slices.Clone(c.in.Ingresses)
	slices.SortStableFunc(ings, func(a, b *manifests.Ingress) int { return olderFirst(&a.Metadata, &b.Metadata) })
	claimed := map[ingressClaim]ObjectRef{}
	for _, in := range ings {
		ref := ObjectRef{ns(in.Metadata.Namespace), in.Metadata.Name}
		st := IngressStatus{}
		ok, why := c.servedIngress(in)
		if !ok {
			st.Problems = append(st.Problems, why)
			c.table.Status.Ingresses[ref] = st
			continue
		}
		st.Served = true
		ports := []*portTable{c.port(c.opts.HTTPPort, helperapi.GatewayHTTP)}
		if len(in.Spec.TLS) > 0 {
			https := c.port(c.opts.HTTPSPort, helperapi.GatewayHTTPS)
			ports = append(ports, https)
			for _, t := range in.Spec.TLS {
				if t.SecretName == "" {
					continue // an ACME certificate, the controller's
				}
				s := ObjectRef{ref.Namespace, t.SecretName}
				if !c.in.TLSSecrets[s] {
					st.Problems = append(st.Problems, errorf("tls: Secret %q is not a kubernetes.io/tls Secret of namespace %s", t.SecretName, ref.Namespace))
					continue
				}
				if https != nil {
					https.certs[s.String()] = true
				}
			}
		}
		add := func(host, pathType, path string, b *manifests.IngressBackend, source string) {
			claim := ingressClaim{host, pathType, path}
			if owner, taken := claimed[claim]; taken && owner != ref {
				st.Problems = append(st.Problems, errorf("%s: %s%s (%s) is served by the older Ingress %s", ReasonConflicted, host, path, pathType, owner))
				return
			}
			claimed[claim] = ref
			e := &entry{owner: ref.String(), created: created(&in.Metadata), fallback: pathType == "defaultBackend"}
			e.route.Source = source
			typ := helperapi.PathPrefix
			if pathType == manifests.PathTypeExact {
				typ = helperapi.PathExact
			}
			if path == "" {
				path = "/"
			}
			pathEntry(e, typ, path)
			be, problem := c.ingressBackend(ref.Namespace, b)
			if problem != "" {
				st.Problems = append(st.Problems, problem)
			}
			e.route.Backends = []helperapi.GatewayBackend{be}
			key := hostKey{name: host, singleLabel: strings.HasPrefix(host, "*.")}
			for _, p := range ports {
				if p != nil {
					p.hosts[key] = append(p.hosts[key], e)
				}
			}
		}
		for i, r := range in.Spec.Rules {
			if r.HTTP == nil {
				continue
			}
			for j, p := range r.HTTP.Paths {
				add(r.Host, p.PathType, p.Path, &p.Backend, errorf("Ingress %s rule %d path %d", ref, i, j))
			}
		}
		if in.Spec.DefaultBackend != nil {
			// The default backend takes what no rule matched: the
			// catch-all host's lowest-precedence route.
			add("", "defaultBackend", "/", in.Spec.DefaultBackend, errorf("Ingress %s defaultBackend", ref))
		}
		c.table.Status.Ingresses[ref] = st
	}
}

// ingressBackend resolves a Service backend's port (by number or name)
// against the Service; an unresolved one has no endpoints (503).
func (c *compiler) ingressBackend(namespace string, b *manifests.IngressBackend) (helperapi.GatewayBackend, string) {
	s := b.Service
	svc, ok := c.in.Services[ObjectRef{namespace, s.Name}]
	if !ok {
		return helperapi.GatewayBackend{Service: BackendRef{namespace, s.Name, s.Port.Number}.String(), Weight: 1, Endpoints: []helperapi.Endpoint{}},
			errorf("%s: Service %s/%s not found", ReasonBackendNotFound, namespace, s.Name)
	}
	for _, p := range svc.Ports {
		if s.Port.Number != 0 && p.Port == s.Port.Number || s.Port.Name != "" && p.Name == s.Port.Name {
			return helperapi.GatewayBackend{Service: BackendRef{namespace, s.Name, p.Port}.String(), Weight: 1, H2C: h2c(p.AppProtocol), Endpoints: []helperapi.Endpoint{}}, ""
		}
	}
	port := s.Port.Name
	if port == "" {
		port = errorf("%d", s.Port.Number)
	}
	return helperapi.GatewayBackend{Service: BackendRef{namespace, s.Name, s.Port.Number}.String(), Weight: 1, Endpoints: []helperapi.Endpoint{}},
		errorf("%s: Service %s/%s has no port %s", ReasonBackendNotFound, namespace, s.Name, port)
}

// h2c reports whether a Service port's appProtocol says HTTP/2 without TLS
// (kubernetes.io/h2c, as Kubernetes defines it, or gRPC's usual names).
func h2c(appProtocol string) bool {
	switch strings.ToLower(appProtocol) {
	case "kubernetes.io/h2c", "h2c", "grpc":
		return true
	}
	return false
}
