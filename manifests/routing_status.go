package manifests

import "time"

// The status of the routing kinds, as the API returns it: the gateway
// controller writes it (store.WriteRoutingStatus, the JSON of these
// types) and get and describe show it. Field names and shapes are the
// upstream types' (networking/v1 IngressStatus, the Gateway API's
// GatewayClassStatus, GatewayStatus and HTTPRouteStatus), reduced to what
// dockctl sets.

// Condition is metav1.Condition.
type Condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	ObservedGeneration int64     `json:"observedGeneration,omitempty"`
	LastTransitionTime time.Time `json:"lastTransitionTime"`
	Reason             string    `json:"reason"`
	Message            string    `json:"message"`
}

// IngressStatus is networking/v1 IngressStatus.
type IngressStatus struct {
	LoadBalancer IngressLoadBalancerStatus `json:"loadBalancer"`
}

type IngressLoadBalancerStatus struct {
	Ingress []IngressLoadBalancerIngress `json:"ingress,omitempty"`
}

type IngressLoadBalancerIngress struct {
	IP       string `json:"ip,omitempty"`
	Hostname string `json:"hostname,omitempty"`
}

// GatewayClassStatus is the Gateway API's GatewayClassStatus.
type GatewayClassStatus struct {
	Conditions []Condition `json:"conditions,omitempty"`
}

// GatewayStatus is the Gateway API's GatewayStatus.
type GatewayStatus struct {
	Addresses  []GatewayStatusAddress `json:"addresses,omitempty"`
	Conditions []Condition            `json:"conditions,omitempty"`
	Listeners  []ListenerStatus       `json:"listeners,omitempty"`
}

type GatewayStatusAddress struct {
	Type  string `json:"type,omitempty"`
	Value string `json:"value"`
}

type ListenerStatus struct {
	Name           string           `json:"name"`
	SupportedKinds []RouteGroupKind `json:"supportedKinds"`
	AttachedRoutes int32            `json:"attachedRoutes"`
	Conditions     []Condition      `json:"conditions"`
}

// HTTPRouteStatus is the Gateway API's HTTPRouteStatus (RouteStatus).
type HTTPRouteStatus struct {
	Parents []RouteParentStatus `json:"parents"`
}

type RouteParentStatus struct {
	ParentRef      StatusParentRef `json:"parentRef"`
	ControllerName string          `json:"controllerName"`
	Conditions     []Condition     `json:"conditions"`
}

// StatusParentRef is a status's ParentReference.
type StatusParentRef struct {
	Group       string `json:"group,omitempty"`
	Kind        string `json:"kind,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name"`
	SectionName string `json:"sectionName,omitempty"`
}

// FindCondition is the condition of type t in cs, or nil.
func FindCondition(cs []Condition, t string) *Condition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}
