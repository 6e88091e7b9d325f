package manifests

import (
	"k8s.io/apimachinery/pkg/util/intstr"
)

// SetServiceDefaults fills unset fields as the Kubernetes API server does
// for the fields dockctl supports: type ClusterIP, clusterIP from
// clusterIPs, each port's protocol TCP and targetPort = port. It is
// idempotent. Fields accepted only to be ignored keep what was written.
func SetServiceDefaults(s *Service) {
	sp := &s.Spec
	if sp.Type == "" {
		sp.Type = ServiceTypeClusterIP
	}
	if sp.ClusterIP == "" && len(sp.ClusterIPs) > 0 {
		sp.ClusterIP = sp.ClusterIPs[0]
	}
	for i := range sp.Ports {
		p := &sp.Ports[i]
		if p.Protocol == "" {
			p.Protocol = ProtocolTCP
		}
		if isUnsetPort(p.TargetPort) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
}

func isUnsetPort(x intstr.IntOrString) bool {
	return x.Type == intstr.Int && x.IntVal == 0 || x.Type == intstr.String && x.StrVal == ""
}

// IsHeadless reports whether the Service has no cluster IP (clusterIP:
// None): its name resolves to the addresses of its endpoints, and nothing
// proxies it.
func (s *Service) IsHeadless() bool {
	return s.Spec.ClusterIP == ClusterIPNone || s.Spec.ClusterIP == "" && len(s.Spec.ClusterIPs) > 0 && s.Spec.ClusterIPs[0] == ClusterIPNone
}

// SelectorMatches reports whether labels carry every key and value of
// selector. An empty selector matches nothing, as a Service's does (its
// endpoints are not managed), unlike an empty label selector of other
// kinds.
func SelectorMatches(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, want := range selector {
		if got, ok := labels[k]; !ok || got != want {
			return false
		}
	}
	return true
}

// ResolveTargetPort returns the pod port that Service port p forwards to,
// as Kubernetes' FindPort (used by the EndpointSlice controller): a number
// is that port, whatever the containers declare; a name is the
// containerPort of that name and of p's protocol, in the first container
// that declares it. containers are the pod's serving containers
// (PodSpec.ServingContainers). ok is false when a name matches no port: the
// pod is then no endpoint of that Service port.
func ResolveTargetPort(p ServicePort, containers []Container) (port int32, ok bool) {
	tp := p.TargetPort
	if isUnsetPort(tp) {
		return p.Port, p.Port != 0
	}
	if tp.Type == intstr.Int {
		return tp.IntVal, true
	}
	proto := protocolOrTCP(p.Protocol)
	for _, c := range containers {
		for _, cp := range c.Ports {
			if cp.Name == tp.StrVal && protocolOrTCP(cp.Protocol) == proto {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}

func protocolOrTCP(p string) string {
	if p == "" {
		return ProtocolTCP
	}
	return p
}

// ServingContainers returns the containers of the pod that serve while it
// runs, in the order FindPort searches them: the app containers, then the
// native sidecars (init containers with restartPolicy Always). Other init
// containers have exited by the time the pod is ready, so their ports
// serve nothing. The result shares no memory with ps's slices but its
// containers' own fields (Ports…) are ps's.
func (ps *PodSpec) ServingContainers() []Container {
	out := make([]Container, 0, len(ps.Containers)+len(ps.InitContainers))
	out = append(out, ps.Containers...)
	for _, c := range ps.InitContainers {
		if c.IsSidecar() {
			out = append(out, c)
		}
	}
	return out
}

// DeepCopy returns a copy that shares no memory with s (see
// Deployment.DeepCopy).
func (s *Service) DeepCopy() *Service {
	if s == nil {
		return nil
	}
	out := &Service{}
	jsonCopy(s, out, "service", s.Metadata.Name)
	return out
}

// DeepCopy returns a copy that shares no memory with n.
func (n *Namespace) DeepCopy() *Namespace {
	if n == nil {
		return nil
	}
	out := &Namespace{}
	jsonCopy(n, out, "namespace", n.Metadata.Name)
	return out
}

// MarshalService renders s as Marshal renders a Deployment.
func MarshalService(s *Service, format string) ([]byte, error) {
	return marshal(s, "service", s.Metadata.Name, format)
}

// MarshalNamespace renders n as Marshal renders a Deployment.
func MarshalNamespace(n *Namespace, format string) ([]byte, error) {
	return marshal(n, "namespace", n.Metadata.Name, format)
}
