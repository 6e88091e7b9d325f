package reconciler

// Stand-ins for the manifests API of issue 10 (owner: helper "mf"):
// SelectorMatches, ResolveTargetPort, IsHeadless. Replaced when mf lands
// on int10: this file is then deleted and the calls go to manifests.

import (
	"github.com/dockctl/dockctl/manifests"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// selectorMatches is manifests.SelectorMatches (stand-in): an empty
// selector selects nothing, as a Service's does.
func selectorMatches(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// resolveTargetPort is manifests.ResolveTargetPort (stand-in): the port a
// Service port reaches on a pod of these containers; false when a named
// targetPort names no port of the pod with the Service port's protocol.
func resolveTargetPort(sp manifests.ServicePort, containers []manifests.Container) (int32, bool) {
	tp := sp.TargetPort
	switch {
	case tp.Type == intstr.String && tp.StrVal != "":
		proto := sp.Protocol
		if proto == "" {
			proto = manifests.ProtocolTCP
		}
		for _, c := range containers {
			for _, p := range c.Ports {
				pp := p.Protocol
				if pp == "" {
					pp = manifests.ProtocolTCP
				}
				if p.Name == tp.StrVal && pp == proto {
					return p.ContainerPort, true
				}
			}
		}
		return 0, false
	case tp.Type == intstr.Int && tp.IntVal != 0:
		return tp.IntVal, true
	}
	return sp.Port, true
}

// isHeadless is manifests.IsHeadless (stand-in).
func isHeadless(s *manifests.Service) bool { return s.Spec.ClusterIP == manifests.ClusterIPNone }
