package manifests

// The routing kinds (docs/design.md §10, the gateway; the shared design's
// §14): networking.k8s.io/v1 Ingress and IngressClass, and the Gateway
// API's gateway.networking.k8s.io/v1 GatewayClass, Gateway and HTTPRoute
// and v1beta1 ReferenceGrant. As the workload kinds', the types mirror the
// field names and JSON shape of the upstream types (k8s.io/api/networking/v1
// and sigs.k8s.io/gateway-api v1.4.1, whose shape the decoder checks every
// key against, routing_schema.go) and hold the subset the gateway serves:
// a field the upstream type has and these lack is refused as unsupported,
// never dropped.
//
// apply stores them and the gateway controller (reconciler/gateway)
// serves them.

const (
	NetworkingAPIVersion = "networking.k8s.io/v1"
	GatewayAPIVersion    = "gateway.networking.k8s.io/v1"
	// ReferenceGrant is served as v1beta1 (the Gateway API's standard
	// channel has it there only).
	GatewayBetaAPIVersion = "gateway.networking.k8s.io/v1beta1"
	// GatewayGroup is the API group of the Gateway API kinds, as a
	// reference's group names it.
	GatewayGroup = "gateway.networking.k8s.io"

	KindIngress        = "Ingress"
	KindIngressClass   = "IngressClass"
	KindGatewayClass   = "GatewayClass"
	KindGateway        = "Gateway"
	KindHTTPRoute      = "HTTPRoute"
	KindReferenceGrant = "ReferenceGrant"

	// Ingress pathType.
	PathTypeExact                  = "Exact"
	PathTypePrefix                 = "Prefix"
	PathTypeImplementationSpecific = "ImplementationSpecific"

	// IngressClassDefaultAnnotation marks the IngressClass an Ingress
	// without ingressClassName gets (as the API server's admission does).
	IngressClassDefaultAnnotation = "ingressclass.kubernetes.io/is-default-class"

	// HTTPRoute path match types.
	PathMatchExact             = "Exact"
	PathMatchPathPrefix        = "PathPrefix"
	PathMatchRegularExpression = "RegularExpression"
	// HTTPRoute header and query parameter match types.
	MatchExact = "Exact"

	// HTTPRoute filter types served.
	FilterRequestHeaderModifier  = "RequestHeaderModifier"
	FilterResponseHeaderModifier = "ResponseHeaderModifier"
	FilterRequestRedirect        = "RequestRedirect"
	FilterURLRewrite             = "URLRewrite"
	// Path modifier types of RequestRedirect and URLRewrite.
	FullPathHTTPPathModifier   = "ReplaceFullPath"
	PrefixMatchHTTPPathModifer = "ReplacePrefixMatch"

	// Gateway listener protocols served.
	ProtocolHTTP  = "HTTP"
	ProtocolHTTPS = "HTTPS"
	// Listener TLS mode served.
	TLSModeTerminate = "Terminate"
	// allowedRoutes.namespaces.from.
	FromAll      = "All"
	FromSame     = "Same"
	FromSelector = "Selector"
)

// Ingress is networking.k8s.io/v1 Ingress.
type Ingress struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Metadata   ObjectMeta  `json:"metadata"`
	Spec       IngressSpec `json:"spec"`
}

type IngressSpec struct {
	IngressClassName *string         `json:"ingressClassName,omitempty"`
	DefaultBackend   *IngressBackend `json:"defaultBackend,omitempty"`
	TLS              []IngressTLS    `json:"tls,omitempty"`
	Rules            []IngressRule   `json:"rules,omitempty"`
}

type IngressTLS struct {
	Hosts      []string `json:"hosts,omitempty"`
	SecretName string   `json:"secretName,omitempty"`
}

type IngressRule struct {
	Host string                `json:"host,omitempty"`
	HTTP *HTTPIngressRuleValue `json:"http,omitempty"`
}

type HTTPIngressRuleValue struct {
	Paths []HTTPIngressPath `json:"paths"`
}

type HTTPIngressPath struct {
	Path     string         `json:"path,omitempty"`
	PathType string         `json:"pathType"`
	Backend  IngressBackend `json:"backend"`
}

// IngressBackend is a Service backend; a resource backend (spec.resource)
// has no meaning without an API server and is refused as unsupported.
type IngressBackend struct {
	Service *IngressServiceBackend `json:"service,omitempty"`
}

type IngressServiceBackend struct {
	Name string             `json:"name"`
	Port ServiceBackendPort `json:"port,omitempty"`
}

// ServiceBackendPort names a Service port by name or number, exactly one.
type ServiceBackendPort struct {
	Name   string `json:"name,omitempty"`
	Number int32  `json:"number,omitempty"`
}

// IngressClass is networking.k8s.io/v1 IngressClass (cluster-scoped).
type IngressClass struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Metadata   ObjectMeta       `json:"metadata"`
	Spec       IngressClassSpec `json:"spec"`
}

type IngressClassSpec struct {
	Controller string `json:"controller,omitempty"`
}

// GatewayClass is gateway.networking.k8s.io/v1 GatewayClass
// (cluster-scoped).
type GatewayClass struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Metadata   ObjectMeta       `json:"metadata"`
	Spec       GatewayClassSpec `json:"spec"`
}

type GatewayClassSpec struct {
	ControllerName string  `json:"controllerName"`
	Description    *string `json:"description,omitempty"`
}

// Gateway is gateway.networking.k8s.io/v1 Gateway.
type Gateway struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Metadata   ObjectMeta  `json:"metadata"`
	Spec       GatewaySpec `json:"spec"`
}

type GatewaySpec struct {
	GatewayClassName string     `json:"gatewayClassName"`
	Listeners        []Listener `json:"listeners"`
}

type Listener struct {
	Name          string         `json:"name"`
	Hostname      *string        `json:"hostname,omitempty"`
	Port          int32          `json:"port"`
	Protocol      string         `json:"protocol"`
	TLS           *ListenerTLS   `json:"tls,omitempty"`
	AllowedRoutes *AllowedRoutes `json:"allowedRoutes,omitempty"`
}

type ListenerTLS struct {
	Mode            *string           `json:"mode,omitempty"`
	CertificateRefs []SecretObjectRef `json:"certificateRefs,omitempty"`
}

// SecretObjectRef is a listener's certificateRef: a Secret (group "",
// kind Secret, the defaults) in the Gateway's namespace or, with a
// ReferenceGrant, another.
type SecretObjectRef struct {
	Group     *string `json:"group,omitempty"`
	Kind      *string `json:"kind,omitempty"`
	Name      string  `json:"name"`
	Namespace *string `json:"namespace,omitempty"`
}

type AllowedRoutes struct {
	Namespaces *RouteNamespaces `json:"namespaces,omitempty"`
	Kinds      []RouteGroupKind `json:"kinds,omitempty"`
}

type RouteNamespaces struct {
	From     *string        `json:"from,omitempty"`
	Selector *LabelSelector `json:"selector,omitempty"`
}

type RouteGroupKind struct {
	Group *string `json:"group,omitempty"`
	Kind  string  `json:"kind"`
}

// HTTPRoute is gateway.networking.k8s.io/v1 HTTPRoute.
type HTTPRoute struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Metadata   ObjectMeta    `json:"metadata"`
	Spec       HTTPRouteSpec `json:"spec"`
}

type HTTPRouteSpec struct {
	ParentRefs []ParentReference `json:"parentRefs,omitempty"`
	Hostnames  []string          `json:"hostnames,omitempty"`
	Rules      []HTTPRouteRule   `json:"rules,omitempty"`
}

type ParentReference struct {
	Group       *string `json:"group,omitempty"`
	Kind        *string `json:"kind,omitempty"`
	Namespace   *string `json:"namespace,omitempty"`
	Name        string  `json:"name"`
	SectionName *string `json:"sectionName,omitempty"`
	Port        *int32  `json:"port,omitempty"`
}

type HTTPRouteRule struct {
	Name        *string           `json:"name,omitempty"`
	Matches     []HTTPRouteMatch  `json:"matches,omitempty"`
	Filters     []HTTPRouteFilter `json:"filters,omitempty"`
	BackendRefs []HTTPBackendRef  `json:"backendRefs,omitempty"`
}

type HTTPRouteMatch struct {
	Path        *HTTPPathMatch        `json:"path,omitempty"`
	Headers     []HTTPHeaderMatch     `json:"headers,omitempty"`
	QueryParams []HTTPQueryParamMatch `json:"queryParams,omitempty"`
	Method      *string               `json:"method,omitempty"`
}

type HTTPPathMatch struct {
	Type  *string `json:"type,omitempty"`
	Value *string `json:"value,omitempty"`
}

type HTTPHeaderMatch struct {
	Type  *string `json:"type,omitempty"`
	Name  string  `json:"name"`
	Value string  `json:"value"`
}

type HTTPQueryParamMatch struct {
	Type  *string `json:"type,omitempty"`
	Name  string  `json:"name"`
	Value string  `json:"value"`
}

type HTTPRouteFilter struct {
	Type                   string                     `json:"type"`
	RequestHeaderModifier  *HTTPHeaderFilter          `json:"requestHeaderModifier,omitempty"`
	ResponseHeaderModifier *HTTPHeaderFilter          `json:"responseHeaderModifier,omitempty"`
	RequestRedirect        *HTTPRequestRedirectFilter `json:"requestRedirect,omitempty"`
	URLRewrite             *HTTPURLRewriteFilter      `json:"urlRewrite,omitempty"`
}

// HTTPHeaderFilter's entries are HTTPHeader (types.go), the shape the
// Gateway API's HTTPHeader has too.
type HTTPHeaderFilter struct {
	Set    []HTTPHeader `json:"set,omitempty"`
	Add    []HTTPHeader `json:"add,omitempty"`
	Remove []string     `json:"remove,omitempty"`
}

type HTTPRequestRedirectFilter struct {
	Scheme     *string           `json:"scheme,omitempty"`
	Hostname   *string           `json:"hostname,omitempty"`
	Path       *HTTPPathModifier `json:"path,omitempty"`
	Port       *int32            `json:"port,omitempty"`
	StatusCode *int32            `json:"statusCode,omitempty"`
}

type HTTPURLRewriteFilter struct {
	Hostname *string           `json:"hostname,omitempty"`
	Path     *HTTPPathModifier `json:"path,omitempty"`
}

type HTTPPathModifier struct {
	Type               string  `json:"type"`
	ReplaceFullPath    *string `json:"replaceFullPath,omitempty"`
	ReplacePrefixMatch *string `json:"replacePrefixMatch,omitempty"`
}

// HTTPBackendRef is a Service backend of a rule with its weight.
type HTTPBackendRef struct {
	Group     *string `json:"group,omitempty"`
	Kind      *string `json:"kind,omitempty"`
	Name      string  `json:"name"`
	Namespace *string `json:"namespace,omitempty"`
	Port      *int32  `json:"port,omitempty"`
	Weight    *int32  `json:"weight,omitempty"`
}

// ReferenceGrant is gateway.networking.k8s.io/v1beta1 ReferenceGrant.
type ReferenceGrant struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Metadata   ObjectMeta         `json:"metadata"`
	Spec       ReferenceGrantSpec `json:"spec"`
}

type ReferenceGrantSpec struct {
	From []ReferenceGrantFrom `json:"from"`
	To   []ReferenceGrantTo   `json:"to"`
}

type ReferenceGrantFrom struct {
	Group     string `json:"group"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
}

type ReferenceGrantTo struct {
	Group string  `json:"group"`
	Kind  string  `json:"kind"`
	Name  *string `json:"name,omitempty"`
}
