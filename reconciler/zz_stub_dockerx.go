package reconciler

// Stand-ins for dockerx's network API of issue 10 (svc.md, "dockerx API
// additions"), replaced when "dx" lands: the types move to dockerx under
// these names and the accessors become field reads.

import (
	"strings"

	"github.com/dockctl/dockctl/dockerx"
)

const (
	stubLabelNamespace = "io.dockctl.namespace"
	stubRoleDNS        = "dns"
	stubRoleNetwork    = "network"
	stubRoleProxy      = "proxy"
)

type NetworkRequest struct{ Instance, Name, Subnet, IPRange, Gateway string }

type Network struct {
	ID, Name                 string
	Labels                   map[string]string
	Subnet, IPRange, Gateway string
}

type EndpointSettings struct {
	IPv4    string
	Aliases []string
}

type PodNetwork struct {
	Name                       string
	IPv4                       string
	Aliases                    []string
	DNS, DNSSearch, DNSOptions []string
}

// containerNetworks stands in for dockerx.Container.Networks; until dx
// lands only tests set it, through stubNetworksLabel.
func containerNetworks(c *dockerx.Container) map[string]string {
	v, ok := c.Labels[stubNetworksLabel]
	if !ok {
		return nil
	}
	out := map[string]string{}
	for _, kv := range strings.Fields(v) {
		name, ip, _ := strings.Cut(kv, "=")
		out[name] = ip
	}
	return out
}

const stubNetworksLabel = "test.networks"

// detailsNetworks stands in for dockerx.ContainerDetails.Networks.
func detailsNetworks(d *dockerx.ContainerDetails) map[string]string { return nil }

// setPodNetwork stands in for CreateRequest.Network.
func setPodNetwork(req *dockerx.CreateRequest, n *PodNetwork) {}

// containerNamespace stands in for dockerx.Container.Namespace ("" and
// an absent label: default).
func containerNamespace(c *dockerx.Container) string {
	if ns := c.Labels[stubLabelNamespace]; ns != "" {
		return ns
	}
	return "default"
}
