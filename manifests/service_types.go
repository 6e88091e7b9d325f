package manifests

import "k8s.io/apimachinery/pkg/util/intstr"

// Kinds of DESIGN §10 (core/v1), mirrored as Deployment is: the field names
// and JSON shape of Kubernetes, the subset dockctl supports.
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

	ProtocolTCP = "TCP"
	ProtocolUDP = "UDP"

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
	ClusterIP string `json:"clusterIP,omitempty"`
}

type ServicePort struct {
	Name     string `json:"name,omitempty"`
	Protocol string `json:"protocol,omitempty"` // defaulted to TCP
	Port     int32  `json:"port"`
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

// Namespace is a core/v1 Namespace: a name, labels and annotations.
type Namespace struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
}
