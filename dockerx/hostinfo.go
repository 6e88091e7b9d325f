package dockerx

import (
	"context"

	"github.com/docker/docker/api/types/network"
)

// HostInfo is what a pod reads of its host (Kubernetes' node): the Docker
// host's name (spec.nodeName) and capacity (the value of an unset limit in
// a resourceFieldRef).
type HostInfo struct {
	Name   string
	CPUs   int
	Memory int64 // bytes
}

// HostInfo asks the daemon for its host's name and capacity.
func (c *Client) HostInfo(ctx context.Context) (HostInfo, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	info, err := c.api.Info(ctx)
	if err != nil {
		return HostInfo{}, mapErr("host information", err)
	}
	return HostInfo{Name: info.Name, CPUs: info.NCPU, Memory: info.MemTotal}, nil
}

// staticAddresses maps each network with a static IPv4 address
// (IPAMConfig) onto it; nil when there is none.
func staticAddresses(eps map[string]*network.EndpointSettings) map[string]string {
	var out map[string]string
	for name, ep := range eps {
		if ep != nil && ep.IPAMConfig != nil && ep.IPAMConfig.IPv4Address != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = ep.IPAMConfig.IPv4Address
		}
	}
	return out
}
