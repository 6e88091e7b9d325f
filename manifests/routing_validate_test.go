package manifests

import (
	"strings"
	"testing"
)

func ingressWith(spec string) string {
	return "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web}\nspec:\n" + spec
}

func routeWith(spec string) string {
	return "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r}\nspec:\n  parentRefs: [{name: gw}]\n" + spec
}

func gatewayWith(listeners string) string {
	return "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw}\nspec:\n  gatewayClassName: dockctl\n  listeners:\n" + listeners
}

const okBackend = "backend: {service: {name: web, port: {number: 80}}}"

// The routing kinds are validated as the API server (Ingress) and the
// Gateway API's CRD schema and CEL rules (Gateway, HTTPRoute) validate
// them; want "" means valid.
func TestRoutingValidation(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		// Ingress.
		{"ingress: exact and wildcard hosts", ingressWith("  rules:\n  - host: a.example.com\n    http: {paths: [{path: /, pathType: Prefix, " + okBackend + "}]}\n  - host: '*.example.com'\n    http: {paths: [{path: /, pathType: Prefix, " + okBackend + "}]}\n"), ""},
		{"ingress: neither rules nor default backend", ingressWith("  tls: []\n"), "either `defaultBackend` or `rules` must be specified"},
		{"ingress: an IP host", ingressWith("  rules:\n  - host: 10.0.0.1\n    http: {paths: [{path: /, pathType: Prefix, " + okBackend + "}]}\n"), "must be a DNS name, not an IP address"},
		{"ingress: a wildcard not leading", ingressWith("  rules:\n  - host: 'a.*.example.com'\n    http: {paths: [{path: /, pathType: Prefix, " + okBackend + "}]}\n"), `rules[0].host: invalid value "a.*.example.com"`},
		{"ingress: pathType required", ingressWith("  rules:\n  - http: {paths: [{path: /, " + okBackend + "}]}\n"), "pathType: required"},
		{"ingress: unknown pathType", ingressWith("  rules:\n  - http: {paths: [{path: /, pathType: Regex, " + okBackend + "}]}\n"), `unsupported value "Regex"`},
		{"ingress: relative prefix path", ingressWith("  rules:\n  - http: {paths: [{path: api, pathType: Prefix, " + okBackend + "}]}\n"), "must be an absolute path"},
		{"ingress: double slash", ingressWith("  rules:\n  - http: {paths: [{path: /a//b, pathType: Exact, " + okBackend + "}]}\n"), "must not contain '//'"},
		{"ingress: dot-dot suffix", ingressWith("  rules:\n  - http: {paths: [{path: /a/.., pathType: Prefix, " + okBackend + "}]}\n"), "cannot end with '/..'"},
		{"ingress: implementation-specific relative path", ingressWith("  rules:\n  - http: {paths: [{path: a, pathType: ImplementationSpecific, " + okBackend + "}]}\n"), "must be an absolute path"},
		{"ingress: empty paths", ingressWith("  rules:\n  - http: {paths: []}\n"), "http.paths: required"},
		{"ingress: both port name and number", ingressWith("  defaultBackend: {service: {name: web, port: {name: http, number: 80}}}\n"), "cannot set both port name & port number"},
		{"ingress: no port", ingressWith("  defaultBackend: {service: {name: web}}\n"), "port name or number is required"},
		{"ingress: port out of range", ingressWith("  defaultBackend: {service: {name: web, port: {number: 70000}}}\n"), "port.number"},
		{"ingress: bad port name", ingressWith("  defaultBackend: {service: {name: web, port: {name: HTTP_1}}}\n"), "port.name: invalid value"},
		{"ingress: service name not a DNS-1035 label", ingressWith("  defaultBackend: {service: {name: 1web, port: {number: 80}}}\n"), "service.name"},
		{"ingress: no backend", ingressWith("  defaultBackend: {}\n"), "one backend (service) must be specified"},
		{"ingress: tls secret name", ingressWith("  defaultBackend: {service: {name: web, port: {number: 80}}}\n  tls: [{hosts: [a.example.com], secretName: Bad_Name}]\n"), "tls[0].secretName"},
		// IngressClass and GatewayClass.
		{"ingress class: controller required", "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: c}\nspec: {}\n", "spec.controller: required"},
		{"gateway class: controller not domain-prefixed", "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: c}\nspec: {controllerName: gateway}\n", "must be a domain-prefixed path"},
		{"gateway class: dockctl's controller", "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: c}\nspec: {controllerName: dockctl.io/gateway}\n", ""},
		// Gateway.
		{"gateway: HTTP and HTTPS", gatewayWith("  - {name: http, port: 80, protocol: HTTP}\n  - {name: https, port: 443, protocol: HTTPS, hostname: '*.example.com', tls: {certificateRefs: [{name: c}]}}\n"), ""},
		{"gateway: no listeners", "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw}\nspec: {gatewayClassName: dockctl, listeners: []}\n", "at least one listener"},
		{"gateway: duplicate listener names", gatewayWith("  - {name: a, port: 80, protocol: HTTP}\n  - {name: a, port: 81, protocol: HTTP}\n"), "Listener name must be unique"},
		{"gateway: same port, protocol and hostname", gatewayWith("  - {name: a, port: 80, protocol: HTTP}\n  - {name: b, port: 80, protocol: HTTP}\n"), "Combination of port, protocol and hostname must be unique"},
		{"gateway: HTTPS without tls", gatewayWith("  - {name: a, port: 443, protocol: HTTPS}\n"), "tls mode must be set for protocol HTTPS"},
		{"gateway: HTTP with tls", gatewayWith("  - {name: a, port: 80, protocol: HTTP, tls: {certificateRefs: [{name: c}]}}\n"), "tls must not be specified"},
		{"gateway: terminate without certificates", gatewayWith("  - {name: a, port: 443, protocol: HTTPS, tls: {mode: Terminate}}\n"), "certificateRefs or options must be specified"},
		{"gateway: passthrough", gatewayWith("  - {name: a, port: 443, protocol: HTTPS, tls: {mode: Passthrough, certificateRefs: [{name: c}]}}\n"), `unsupported by dockctl: "Passthrough"`},
		{"gateway: TCP listener", gatewayWith("  - {name: a, port: 5432, protocol: TCP}\n"), `unsupported by dockctl: "TCP"`},
		{"gateway: IP hostname", gatewayWith("  - {name: a, port: 80, protocol: HTTP, hostname: 10.1.1.1}\n"), "not an IP address"},
		{"gateway: selector required", gatewayWith("  - {name: a, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: Selector}}}\n"), "selector: required when from is Selector"},
		{"gateway: route kinds", gatewayWith("  - {name: a, port: 80, protocol: HTTP, allowedRoutes: {kinds: [{kind: GRPCRoute}]}}\n"), "serves routes of kind HTTPRoute"},
		// HTTPRoute.
		{"route: canary weights", routeWith("  rules:\n  - backendRefs: [{name: a, port: 80, weight: 0}, {name: b, port: 80, weight: 1000000}]\n"), ""},
		{"route: weight over 1000000", routeWith("  rules:\n  - backendRefs: [{name: a, port: 80, weight: 1000001}]\n"), "must be between 0 and 1000000"},
		{"route: negative weight", routeWith("  rules:\n  - backendRefs: [{name: a, port: 80, weight: -1}]\n"), "must be between 0 and 1000000"},
		{"route: Service without port", routeWith("  rules:\n  - backendRefs: [{name: a}]\n"), "Must have port for Service reference"},
		{"route: another kind without port", routeWith("  rules:\n  - backendRefs: [{name: a, kind: Bucket, group: example.com}]\n"), ""},
		{"route: wildcard hostname", routeWith("  hostnames: ['*.example.com']\n"), ""},
		{"route: bad hostname", routeWith("  hostnames: ['exa_mple.com']\n"), "hostnames[0]"},
		{"route: relative path", routeWith("  rules:\n  - matches: [{path: {type: PathPrefix, value: foo}}]\n"), "must be an absolute path"},
		{"route: path with #", routeWith("  rules:\n  - matches: [{path: {type: Exact, value: '/a#b'}}]\n"), "must not contain '#'"},
		{"route: regex path", routeWith("  rules:\n  - matches: [{path: {type: RegularExpression, value: '/a.*'}}]\n"), `unsupported by dockctl: "RegularExpression"`},
		{"route: method", routeWith("  rules:\n  - matches: [{method: FETCH}]\n"), `unsupported value "FETCH"`},
		{"route: duplicate header match", routeWith("  rules:\n  - matches: [{headers: [{name: X-A, value: a}, {name: x-a, value: b}]}]\n"), "header names in a match must be unique"},
		{"route: bad header name", routeWith("  rules:\n  - matches: [{headers: [{name: 'X A', value: a}]}]\n"), "must be an HTTP header name"},
		{"route: duplicate query param", routeWith("  rules:\n  - matches: [{queryParams: [{name: q, value: a}, {name: q, value: b}]}]\n"), "query parameter names in a match must be unique"},
		{"route: filter type without its field", routeWith("  rules:\n  - filters: [{type: RequestHeaderModifier}]\n"), "filter.requestHeaderModifier must be specified"},
		{"route: filter field of another type", routeWith("  rules:\n  - filters: [{type: RequestHeaderModifier, requestHeaderModifier: {}, urlRewrite: {}}]\n"), "filter.urlRewrite must be nil"},
		{"route: repeated filter", routeWith("  rules:\n  - filters: [{type: URLRewrite, urlRewrite: {hostname: a.example}}, {type: URLRewrite, urlRewrite: {hostname: b.example}}]\n"), "URLRewrite filter cannot be repeated"},
		{"route: redirect and rewrite", routeWith("  rules:\n  - filters: [{type: RequestRedirect, requestRedirect: {scheme: https}}, {type: URLRewrite, urlRewrite: {hostname: b.example}}]\n"), "either httpRouteFilterRequestRedirect or httpRouteFilterRequestRewrite"},
		{"route: redirect with backends", routeWith("  rules:\n  - filters: [{type: RequestRedirect, requestRedirect: {scheme: https}}]\n    backendRefs: [{name: a, port: 80}]\n"), "must not be used together with backendRefs"},
		{"route: redirect status", routeWith("  rules:\n  - filters: [{type: RequestRedirect, requestRedirect: {statusCode: 307}}]\n"), "must be 301 or 302"},
		{"route: redirect scheme", routeWith("  rules:\n  - filters: [{type: RequestRedirect, requestRedirect: {scheme: ftp}}]\n"), `unsupported value "ftp"`},
		{"route: prefix rewrite under one prefix match", routeWith("  rules:\n  - matches: [{path: {type: PathPrefix, value: /api}}]\n    filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /}}}]\n    backendRefs: [{name: a, port: 80}]\n"), ""},
		{"route: prefix rewrite under an exact match", routeWith("  rules:\n  - matches: [{path: {type: Exact, value: /api}}]\n    filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /}}}]\n"), "exactly one PathPrefix match must be specified"},
		{"route: prefix rewrite under two matches", routeWith("  rules:\n  - matches: [{path: {value: /a}}, {path: {value: /b}}]\n    filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /}}}]\n"), "exactly one PathPrefix match must be specified"},
		{"route: full path modifier without its value", routeWith("  rules:\n  - filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath}}}]\n"), "replaceFullPath must be specified"},
		{"route: modifier with the other value", routeWith("  rules:\n  - filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: /x, replacePrefixMatch: /y}}}]\n"), "type must be 'ReplacePrefixMatch' when replacePrefixMatch is set"},
		{"route: duplicate set header", routeWith("  rules:\n  - filters: [{type: ResponseHeaderModifier, responseHeaderModifier: {set: [{name: A, value: '1'}, {name: a, value: '2'}]}}]\n"), "header names must be unique"},
		{"route: unsupported filter", routeWith("  rules:\n  - filters: [{type: RequestMirror}]\n"), `unsupported by dockctl: "RequestMirror"`},
		{"route: duplicate rule names", routeWith("  rules:\n  - name: a\n  - name: a\n"), "Rule name must be unique"},
		// ReferenceGrant.
		{"grant: empty", "apiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\nmetadata: {name: g}\nspec: {from: [], to: []}\n", "spec.from: required"},
		{"grant: from namespace required", "apiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\nmetadata: {name: g}\nspec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute}], to: [{group: '', kind: Service}]}\n", "from[0].namespace: required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRouting("x.yaml", []byte(tc.in))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
