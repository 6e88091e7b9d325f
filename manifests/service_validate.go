package manifests

import (
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// kubeletPort is the port a cluster refuses on a LoadBalancer Service
// (ports.KubeletPort): kept so that what dockctl accepts, a cluster does.
const kubeletPort = 10250

// ValidateService checks a Service built in code or read from the state
// directory with the rules Decode applies to files. Errors carry field
// paths but no file or line. The result is nil or an ErrorList.
func ValidateService(s *Service) error {
	return validateService(s, "", nil).Err()
}

// ValidateNamespace is ValidateService for a Namespace.
func ValidateNamespace(n *Namespace) error {
	return validateNamespace(n, "", nil).Err()
}

func validateNamespace(n *Namespace, base string, lines map[string]int) ErrorList {
	v := &validator{lines: lines}
	v.meta(child(base, "metadata"), &n.Metadata, KindNamespace)
	return v.errs
}

// validateService follows Kubernetes' ValidateService and
// validateServicePort (pkg/apis/core/validation) for the fields dockctl
// supports, on the Service as written (before SetServiceDefaults, which
// it accepts as well). A field whose value would make the Service behave
// otherwise on one host than on a cluster is refused naming it; a value
// that means what dockctl does anyway is accepted and ignored.
func validateService(s *Service, base string, lines map[string]int) ErrorList {
	v := &validator{lines: lines}
	v.meta(child(base, "metadata"), &s.Metadata, KindService)
	p := child(base, "spec")
	sp := &s.Spec
	typ := sp.Type
	switch typ {
	case "":
		typ = ServiceTypeClusterIP
	case ServiceTypeClusterIP, ServiceTypeNodePort, ServiceTypeLoadBalancer:
	case "ExternalName":
		v.add(child(p, "type"), `unsupported value "ExternalName": dockctl's DNS server answers for Services it proxies, not aliases of external names`)
	default:
		v.add(child(p, "type"), `unsupported value %q: must be "ClusterIP", "NodePort" or "LoadBalancer"`, typ)
	}
	external := typ == ServiceTypeNodePort || typ == ServiceTypeLoadBalancer
	headless := v.clusterIP(p, sp, typ)
	v.servicePorts(p, sp, typ, headless)
	v.labels(child(p, "selector"), sp.Selector)

	for i, f := range sp.IPFamilies {
		fp := index(child(p, "ipFamilies"), i)
		switch {
		case i > 0:
			v.add(fp, "dual-stack is not supported: the instance network is IPv4 only")
		case f == "IPv4":
		case f == "IPv6":
			v.add(fp, `unsupported value "IPv6": the instance network is IPv4 only`)
		default:
			v.add(fp, `unsupported value %q: must be "IPv4"`, f)
		}
	}
	switch fp := child(p, "ipFamilyPolicy"); sp.IPFamilyPolicy {
	case "", "SingleStack", "PreferDualStack":
		// PreferDualStack on a single-stack network gets one family, as
		// on a single-stack cluster.
	case "RequireDualStack":
		v.add(fp, `unsupported value "RequireDualStack": the instance network is IPv4 only`)
	default:
		v.add(fp, `unsupported value %q: must be "SingleStack" or "PreferDualStack"`, sp.IPFamilyPolicy)
	}
	switch ap := child(p, "sessionAffinity"); sp.SessionAffinity {
	case "", "None":
	case "ClientIP":
		v.add(ap, `unsupported value "ClientIP": dockctl's Service proxy spreads connections round robin, whatever the client`)
	default:
		v.add(ap, `unsupported value %q: must be "None"`, sp.SessionAffinity)
	}
	switch ep := child(p, "externalTrafficPolicy"); sp.ExternalTrafficPolicy {
	case "":
	case "Cluster":
		// Kubernetes' validateServiceExternalTrafficPolicy.
		if !external {
			v.add(ep, `may only be set when type is "NodePort" or "LoadBalancer"`)
		}
	case "Local":
		v.add(ep, `unsupported value "Local": dockctl's Service proxy does not keep the client's source address`)
	default:
		v.add(ep, `unsupported value %q: must be "Cluster"`, sp.ExternalTrafficPolicy)
	}
	switch sp.InternalTrafficPolicy {
	case "", "Cluster", "Local":
		// On one host every endpoint is on the client's node, so Local
		// selects them all, as Cluster does.
	default:
		v.add(child(p, "internalTrafficPolicy"), `unsupported value %q: must be "Cluster" or "Local"`, sp.InternalTrafficPolicy)
	}
	if sp.AllocateLoadBalancerNodePorts != nil && typ != ServiceTypeLoadBalancer {
		v.add(child(p, "allocateLoadBalancerNodePorts"), `may only be used when type is "LoadBalancer"`)
	}
	return v.errs
}

// clusterIP checks spec.clusterIP and spec.clusterIPs (single-stack: at
// most one, equal to clusterIP when both are given) and reports whether
// the Service is headless.
func (v *validator) clusterIP(p string, sp *ServiceSpec, typ string) bool {
	ip, ipPath := sp.ClusterIP, child(p, "clusterIP")
	ips := child(p, "clusterIPs")
	if ip == "" && len(sp.ClusterIPs) > 0 {
		ip, ipPath = sp.ClusterIPs[0], index(ips, 0)
	} else if len(sp.ClusterIPs) > 0 && sp.ClusterIPs[0] != ip {
		v.add(index(ips, 0), "must match spec.clusterIP (%q)", ip)
	}
	if len(sp.ClusterIPs) > 1 {
		v.add(index(ips, 1), "dual-stack is not supported: the instance network is IPv4 only, so a Service has one cluster IP")
	}
	switch {
	case ip == "":
	case ip == ClusterIPNone:
		if typ == ServiceTypeNodePort || typ == ServiceTypeLoadBalancer {
			v.add(ipPath, `may not be "None" when type is %q`, typ)
		}
		return true
	default:
		a, err := netip.ParseAddr(ip)
		switch {
		case err != nil:
			v.add(ipPath, `invalid value %q: must be "None" or an IPv4 address`, ip)
		case !a.Is4():
			v.add(ipPath, "invalid value %q: the instance network is IPv4 only", ip)
		}
	}
	return false
}

// servicePorts checks spec.ports: required unless headless; names DNS-1123
// labels, unique, required when there are several; port and protocol
// unique; nodePort only on NodePort and LoadBalancer, in the node port
// range and unique per protocol.
func (v *validator) servicePorts(p string, sp *ServiceSpec, typ string, headless bool) {
	pp := child(p, "ports")
	if len(sp.Ports) == 0 && !headless {
		v.add(pp, "required (only a headless Service, clusterIP: None, may have none)")
	}
	names := map[string]string{}
	ports := map[portKey]string{}
	nodePorts := map[portKey]string{}
	for i := range sp.Ports {
		port := &sp.Ports[i]
		ip := index(pp, i)
		np := child(ip, "name")
		switch {
		case port.Name == "" && len(sp.Ports) > 1:
			v.add(np, "required when the Service has more than one port")
		case port.Name != "" && v.dnsLabel(np, port.Name):
			if first, dup := names[port.Name]; dup {
				v.add(np, "duplicate port name %q (also %s)", port.Name, first)
			} else {
				names[port.Name] = ip
			}
		}
		portOK := v.requiredPort(child(ip, "port"), port.Port)
		proto, protoOK := port.Protocol, false
		if proto == ProtocolSCTP {
			// Valid on a cluster: say why it is not here.
			v.add(child(ip, "protocol"), `unsupported value "SCTP": dockctl's Service proxy serves TCP and UDP only`)
		} else {
			proto, protoOK = v.protocol(child(ip, "protocol"), proto)
		}
		portOK = portOK && protoOK
		if ap := port.AppProtocol; ap != "" {
			if msgs := validation.IsQualifiedName(ap); len(msgs) > 0 {
				v.add(child(ip, "appProtocol"), "invalid value %q: %s", ap, strings.Join(msgs, "; "))
			}
		}
		v.targetPort(child(ip, "targetPort"), port.TargetPort)
		if portOK {
			k := portKey{port.Port, proto}
			if first, dup := ports[k]; dup {
				v.add(child(ip, "port"), "duplicate port %d/%s (also %s)", port.Port, proto, first)
			} else {
				ports[k] = ip
			}
			if typ == ServiceTypeLoadBalancer && port.Port == kubeletPort {
				v.add(child(ip, "port"), "may not be %d on a LoadBalancer Service (a cluster keeps it for the kubelet)", kubeletPort)
			}
		}
		if port.NodePort == 0 {
			continue
		}
		npp := child(ip, "nodePort")
		switch {
		case typ == ServiceTypeClusterIP:
			v.add(npp, `may not be used when type is "ClusterIP"`)
		case port.NodePort < NodePortMin || port.NodePort > NodePortMax:
			v.add(npp, "must be between %d and %d, inclusive (the node port range)", NodePortMin, NodePortMax)
		default:
			// As Kubernetes: unique per protocol, so that one nodePort
			// may serve a port over TCP and UDP.
			k := portKey{port.NodePort, proto}
			if first, dup := nodePorts[k]; dup {
				v.add(npp, "duplicate nodePort %d/%s (also %s)", port.NodePort, proto, first)
			} else {
				nodePorts[k] = ip
			}
		}
	}
}

// targetPort accepts a port number or an IANA_SVC_NAME (the name of a
// container port), as Kubernetes' ValidatePortNumOrName; 0 and "" mean
// unset (defaulted to port).
func (v *validator) targetPort(p string, tp intstr.IntOrString) {
	if tp.Type == intstr.Int {
		if tp.IntVal != 0 {
			v.portNumber(p, tp.IntVal)
		}
		return
	}
	if tp.StrVal == "" {
		return
	}
	if msgs := validation.IsValidPortName(tp.StrVal); len(msgs) > 0 {
		v.add(p, "invalid value %q: %s", tp.StrVal, strings.Join(msgs, "; "))
	}
}

// ValidateServiceUpdate checks that storing next over live (both valid,
// live not deleted) is allowed: as core/v1's ValidateServiceUpdate, a
// cluster IP given is immutable — clients cache the name's answer, and a
// cluster refuses the change ("may not change once set"), so a history
// dockctl accepted would fail there. Leaving it out keeps the address
// held, as the API server keeps the allocated one.
func ValidateServiceUpdate(next, live *Service) error {
	if live.Spec.ClusterIP == "" || next.Spec.ClusterIP == "" || next.Spec.ClusterIP == live.Spec.ClusterIP {
		return nil
	}
	v := &validator{}
	v.add("spec.clusterIPs[0]", "Invalid value: %q: may not change once set", next.Spec.ClusterIP)
	return v.errs.Err()
}
