package gatewayroutes

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
)

// DefaultControllerName is the GatewayClass controllerName dockctl serves.
const DefaultControllerName = "dockctl.io/gateway"

// DefaultIngressClass is the IngressClass name dockctl serves by default.
const DefaultIngressClass = "dockctl"

// Options are the controller's settings.
type Options struct {
	ControllerName string   // "": DefaultControllerName
	IngressClasses []string // served ingressClassNames; nil: DefaultIngressClass
	// HTTPPort and HTTPSPort are where Ingresses are served (the gateway's
	// published ports, 80 and 443 by default).
	HTTPPort, HTTPSPort int
}

// ObjectRef names a namespaced object.
type ObjectRef struct{ Namespace, Name string }

func (r ObjectRef) String() string { return r.Namespace + "/" + r.Name }

// MarshalText makes an ObjectRef a JSON map key ("namespace/name").
func (r ObjectRef) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// Service is what the compiler needs of a Service: its ports.
type Service struct {
	Ports []ServicePort
}

type ServicePort struct {
	Name        string
	Port        int32
	AppProtocol string // kubernetes.io/h2c or grpc: the backend speaks h2c
}

// Input is everything the route table depends on.
type Input struct {
	Ingresses       []*manifests.Ingress
	IngressClasses  []*manifests.IngressClass
	GatewayClasses  []*manifests.GatewayClass
	Gateways        []*manifests.Gateway
	HTTPRoutes      []*manifests.HTTPRoute
	ReferenceGrants []*manifests.ReferenceGrant
	Services        map[ObjectRef]Service
	// TLSSecrets are the kubernetes.io/tls Secrets that exist.
	TLSSecrets map[ObjectRef]bool
	// NamespaceLabels are the labels of each namespace, for a listener's
	// allowedRoutes selector.
	NamespaceLabels map[string]map[string]string
	// Programmed are the Gateways the gateway helper has acknowledged a
	// config for (its Programmed condition).
	Programmed map[ObjectRef]bool
	// Unavailable are the ports the gateway helper could not publish,
	// with why (a privileged port without --allow-host-ports, a port
	// another publishes): their listeners are not Accepted
	// (PortUnavailable). The config does not depend on it.
	Unavailable map[int]string
}

// BackendRef is a snapshot backend's Service port, as
// helperapi.GatewayBackend.Service spells it ("namespace/name:port").
type BackendRef struct {
	Namespace, Name string
	Port            int32
}

func (b BackendRef) String() string {
	return b.Namespace + "/" + b.Name + ":" + strconv.Itoa(int(b.Port))
}

// ParseBackendRef reads a helperapi.GatewayBackend.Service.
func ParseBackendRef(s string) (BackendRef, error) {
	nsName, port, ok := strings.Cut(s, ":")
	ns, name, ok2 := strings.Cut(nsName, "/")
	p, err := strconv.ParseInt(port, 10, 32)
	if !ok || !ok2 || err != nil {
		return BackendRef{}, fmt.Errorf("backend %q: want namespace/name:port", s)
	}
	return BackendRef{ns, name, int32(p)}, nil
}

// Condition is one status condition, as metav1.Condition without times.
type Condition struct {
	Type, Status, Reason, Message string
}

// Condition types and reasons of the Gateway API used here.
const (
	CondAccepted     = "Accepted"
	CondResolvedRefs = "ResolvedRefs"
	CondProgrammed   = "Programmed"

	ReasonAccepted               = "Accepted"
	ReasonResolvedRefs           = "ResolvedRefs"
	ReasonProgrammed             = "Programmed"
	ReasonPending                = "Pending"
	ReasonInvalidParameters      = "InvalidParameters"
	ReasonNoMatchingParent       = "NoMatchingParent"
	ReasonNotAllowedByListeners  = "NotAllowedByListeners"
	ReasonNoMatchingListenerHost = "NoMatchingListenerHostname"
	ReasonBackendNotFound        = "BackendNotFound"
	ReasonRefNotPermitted        = "RefNotPermitted"
	ReasonInvalidKind            = "InvalidKind"
	ReasonInvalidCertificateRef  = "InvalidCertificateRef"
	ReasonPortUnavailable        = "PortUnavailable"
	ReasonUnsupportedProtocol    = "UnsupportedProtocol"
	ReasonInvalid                = "Invalid"
	ReasonConflicted             = "Conflicted"
	ReasonNotServedIngressClass  = "IngressClassNotServed"
)

// Status is every status the compile computed.
type Status struct {
	GatewayClasses map[string][]Condition
	Gateways       map[ObjectRef]GatewayStatus
	HTTPRoutes     map[ObjectRef][]RouteParentStatus
	Ingresses      map[ObjectRef]IngressStatus
}

type GatewayStatus struct {
	Conditions []Condition
	Listeners  []ListenerStatus
}

type ListenerStatus struct {
	Name           string
	AttachedRoutes int32
	Conditions     []Condition
}

// RouteParentStatus is an HTTPRoute's status for one parentRef.
type RouteParentStatus struct {
	ParentRef  ObjectRef
	Section    string
	Conditions []Condition
}

// IngressStatus says whether an Ingress is served and what of it is not.
type IngressStatus struct {
	Served bool
	// Problems are events to report: not served, a path lost to an older
	// Ingress, a backend that does not resolve.
	Problems []string
}

// Table is the compiled snapshot: the config without endpoints and
// certificate contents, and the status of every object.
type Table struct {
	Config helperapi.GatewayConfig
	Status Status
}
