package reconciler

import (
	"maps"
	"slices"

	"github.com/dockctl/dockctl/dockerx"
)

// withNetworks reports c connected to nets (name → IPv4). Stand-in until
// dx lands: then it sets c.Networks.
func withNetworks(c dockerx.Container, nets map[string]string) dockerx.Container {
	c.Labels = maps.Clone(c.Labels)
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	v := ""
	for _, name := range slices.Sorted(maps.Keys(nets)) {
		v += name + "=" + nets[name] + " "
	}
	c.Labels[stubNetworksLabel] = v
	return c
}
