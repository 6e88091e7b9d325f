package reconciler

// Stand-ins for the dockerx API of issue 10 (svc.md, "dockerx API
// additions", owner: helper "dx"). Replaced when dx lands on int10: this
// file is then deleted and the names below become dockerx's.

import (
	"github.com/dockctl/dockctl/dockerx"
)

const (
	LabelNamespace  = "io.dockctl.namespace"
	LabelService    = "io.dockctl.service"
	LabelConfigHash = "io.dockctl.config-hash"

	RoleProxy   = "proxy"
	RoleDNS     = "dns"
	RoleNetwork = "network"
)

// PodNetwork is dockerx.PodNetwork (stand-in).
type PodNetwork struct {
	Name                       string
	IPv4                       string
	Aliases                    []string
	DNS, DNSSearch, DNSOptions []string
}

// HelperRequest is dockerx.HelperRequest (stand-in).
type HelperRequest struct {
	Instance, Namespace, Name, Role, Service, ConfigHash, Image string
	Cmd                                                         []string
	Network                                                     PodNetwork
	Ports                                                       []PortBinding
}

// PortBinding is dockerx.PortBinding (stand-in).
type PortBinding struct {
	HostIP                  string
	HostPort, ContainerPort int
	Protocol                string
}

// ctrNamespace is dockerx.Container.Namespace (stand-in): "" → default.
func ctrNamespace(c *dockerx.Container) string {
	if ns := c.Labels[LabelNamespace]; ns != "" {
		return ns
	}
	return "default"
}

// ctrService is dockerx.Container.Service (stand-in).
func ctrService(c *dockerx.Container) string { return c.Labels[LabelService] }

// ctrConfigHash is dockerx.Container.ConfigHash (stand-in).
func ctrConfigHash(c *dockerx.Container) string { return c.Labels[LabelConfigHash] }

// ctrIP is dockerx.Container.Networks[network] (stand-in): the stand-in
// list reports no networks, so it reads a test-only label.
func ctrIP(c *dockerx.Container, network string) string { return c.Labels["test.ip/"+network] }

// networkName is the instance network's name, dockctl_INSTANCE (svc.md,
// Network; stand-in for dx's or net's function).
func networkName(instance string) string { return "dockctl_" + instance }
