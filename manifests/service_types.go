package manifests

import "k8s.io/apimachinery/pkg/util/intstr"

// Service (docs/design.md §10) and Namespace (core/v1), mirrored as
// Deployment is: the field names and JSON shape of Kubernetes, the subset
// dockctl supports.
const (
	CoreAPIVersion = "v1"
	KindService    = "Service"
	KindNamespace  = "Namespace"

	// DefaultNamespace is the namespace of an object that names none.
	DefaultNamespace = "default"

	ServiceTypeClusterIP    = "ClusterIP"
	ServiceTypeNodePort     = "NodePort"
	ServiceTypeLoadBalancer = "LoadBalancer"

	// ClusterIPNone makes a Service headless.
	ClusterIPNone = "None"

	ProtocolTCP  = "TCP"
	ProtocolUDP  = "UDP"
	ProtocolSCTP = "SCTP"

	// NodePortMin and NodePortMax bound allocated and given nodePorts, as
	// Kubernetes' default --service-node-port-range.
	NodePortMin = 30000
	NodePortMax = 32767
)

// NamespaceOrDefault returns the object's namespace, DefaultNamespace when
// unset. Every consumer reads the namespace through it, so that "" and
// "default" are one namespace everywhere.
func (m ObjectMeta) NamespaceOrDefault() string {
	if m.Namespace == "" {
		return DefaultNamespace
	}
	return m.Namespace
}

// Service is a core/v1 Service, restricted to what dockctl supports.
type Service struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Metadata   ObjectMeta    `json:"metadata"`
	Spec       ServiceSpec   `json:"spec"`
	Status     *ServiceState `json:"status,omitempty"`
}

type ServiceSpec struct {
	Type string `json:"type,omitempty"` // defaulted to ClusterIP
	// Selector matches the pod template labels of every Deployment in the
	// Service's namespace. Empty: no endpoints are managed (as Kubernetes).
	Selector map[string]string `json:"selector,omitempty"`
	Ports    []ServicePort     `json:"ports,omitempty"`
	// ClusterIP is "" (allocated by the controller), ClusterIPNone
	// (headless), or an address in the instance's service range.
	// Defaulted from ClusterIPs[0] when only that is given, as the API
	// server normalises the pair.
	ClusterIP string `json:"clusterIP,omitempty"`
	// ClusterIPs holds at most one address (single-stack): it is what a
	// cluster prints beside clusterIP, accepted so that such output applies.
	ClusterIPs []string `json:"clusterIPs,omitempty"`
	// IPFamilies is empty or ["IPv4"]; IPFamilyPolicy is SingleStack or
	// PreferDualStack (which a single-stack host satisfies with one
	// family). Both are accepted and ignored: the instance network is IPv4.
	IPFamilies     []string `json:"ipFamilies,omitempty"`
	IPFamilyPolicy string   `json:"ipFamilyPolicy,omitempty"`
	// SessionAffinity is "" or "None" (accepted and ignored: the proxy
	// balances every connection).
	SessionAffinity string `json:"sessionAffinity,omitempty"`
	// ExternalTrafficPolicy is "" or "Cluster", and only on a NodePort or
	// LoadBalancer Service (accepted and ignored: what the proxy does).
	ExternalTrafficPolicy string `json:"externalTrafficPolicy,omitempty"`
	// InternalTrafficPolicy is "", "Cluster" or "Local": on one host every
	// endpoint is node-local, so both mean what dockctl does (ignored).
	InternalTrafficPolicy string `json:"internalTrafficPolicy,omitempty"`
	// PublishNotReadyAddresses makes the endpoints (and a headless
	// Service's DNS records) include pods that are not ready, as
	// Kubernetes' EndpointSlice controller does.
	PublishNotReadyAddresses bool `json:"publishNotReadyAddresses,omitempty"`
	// AllocateLoadBalancerNodePorts is only valid on a LoadBalancer
	// Service; nil means true, as in Kubernetes: nodePorts are allocated
	// as for NodePort. False: only the nodePorts given.
	AllocateLoadBalancerNodePorts *bool `json:"allocateLoadBalancerNodePorts,omitempty"`
}

type ServicePort struct {
	Name     string `json:"name,omitempty"`
	Protocol string `json:"protocol,omitempty"` // defaulted to TCP
	// AppProtocol is a hint for the application protocol (kept, unused,
	// as kube-proxy leaves it to others).
	AppProtocol string `json:"appProtocol,omitempty"`
	Port        int32  `json:"port"`
	// TargetPort is a number or the name of a container port; defaulted
	// to Port.
	TargetPort intstr.IntOrString `json:"targetPort,omitzero"`
	// NodePort is the host port of a NodePort or LoadBalancer Service; 0:
	// allocated by the controller from NodePortMin..NodePortMax and kept.
	NodePort int32 `json:"nodePort,omitempty"`
}

// ServiceState is the status block of a Service as printed (-o yaml); it
// is ignored on input.
type ServiceState struct {
	LoadBalancer *LoadBalancerStatus `json:"loadBalancer,omitempty"`
}

type LoadBalancerStatus struct {
	Ingress []LoadBalancerIngress `json:"ingress,omitempty"`
}

type LoadBalancerIngress struct {
	IP string `json:"ip,omitempty"`
}

// Namespace is a core/v1 Namespace: a name, labels and annotations. It is
// cluster-scoped: Metadata.Namespace is always "" (a namespace written in
// a manifest is dropped, as the API server drops it).
type Namespace struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   ObjectMeta      `json:"metadata"`
	Spec       *NamespaceSpec  `json:"spec,omitempty"`
	Status     *NamespaceState `json:"status,omitempty"`
}

// NamespaceSpec only exists so that spec.finalizers, which `kubectl get
// ns -o yaml` prints, is accepted (and ignored: a Namespace's deletion
// waits for nothing here). A decoded Namespace has a nil Spec.
type NamespaceSpec struct{}

// NamespaceState is the status block of a Namespace as printed (phase
// Active); it is ignored on input.
type NamespaceState struct {
	Phase string `json:"phase,omitempty"`
}
