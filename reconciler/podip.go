package reconciler

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/netlayout"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// status.podIP in a container's environment (podruntime's podip.go says
// why and which address): this file assigns that address to a pod the
// Deployment executor creates, and remembers it.

// assignPodIP gives the network owner of a pod that reads its address (a
// replica without holder, or a holder) a static address in the instance
// network, and returns the address a container of the pod reads as
// status.podIP ("" when it has none). release must be called once the
// container is created: until then other assignments wait, so that two
// never pick one address.
func (c *Controller) assignPodIP(ctx context.Context, in PlanInput, op Op, req *dockerx.CreateRequest, network *store.NetworkStatus) (ip string, release func(), err error) {
	release = func() {}
	ps := &op.From.Spec.Template.Spec
	if ps.HostNetwork || network == nil || !podruntime.ReadsPodIP(ps) {
		return "", release, nil
	}
	if op.Pod != nil && op.Role != dockerx.RoleHolder {
		return c.memberPodIP(in, op, network.Name), release, nil
	}
	if req.Network == nil {
		return "", release, nil
	}
	if req.Network.IPv4 != "" {
		return req.Network.IPv4, release, nil
	}
	l, err := netlayout.FromStatus(network)
	if err != nil {
		return "", release, fmt.Errorf("create %s: pod address: %w", op.Name, err)
	}
	c.podIPMu.Lock()
	release = c.podIPMu.Unlock
	cs, err := c.docker.ListContainers(ctx, c.opts.Instance)
	if err != nil {
		release()
		return "", func() {}, fmt.Errorf("create %s: pod address: %w", op.Name, err)
	}
	used := map[netip.Addr]bool{}
	for _, ct := range cs {
		for _, m := range []map[string]string{ct.Networks, ct.StaticIPv4} {
			if a, err := netip.ParseAddr(m[network.Name]); err == nil {
				used[a] = true
			}
		}
	}
	a, ok := podruntime.PickPodIP(l, used)
	if !ok {
		release()
		return "", func() {}, fmt.Errorf("create %s: pod address: no free address left in %s", op.Name, l.IPRange)
	}
	req.Network.IPv4 = a.String()
	if op.Pod != nil {
		c.rememberPodIP(op.Pod.UID, req.Network.IPv4)
	}
	return req.Network.IPv4, release, nil
}

// memberPodIP is the address of the pod a member joins: its holder's,
// as assigned in this process or as Docker reports it.
func (c *Controller) memberPodIP(in PlanInput, op Op, network string) string {
	c.refs.mu.Lock()
	ip := c.refs.podIPs[op.Pod.UID]
	c.refs.mu.Unlock()
	if ip != "" {
		return ip
	}
	for _, p := range in.Pods {
		if p.UID == op.Pod.UID && p.Holder != nil {
			if ip := p.Holder.StaticIPv4[network]; ip != "" {
				return ip
			}
			return p.Holder.Networks[network]
		}
	}
	return ""
}

func (c *Controller) rememberPodIP(uid, ip string) {
	c.refs.mu.Lock()
	defer c.refs.mu.Unlock()
	if c.refs.podIPs == nil {
		c.refs.podIPs = map[string]string{}
	}
	// Bounded: only the pods of the last thousand holders are kept; an
	// older one's members read the holder's address from Docker.
	if len(c.refs.podIPs) > 1000 {
		clear(c.refs.podIPs)
	}
	c.refs.podIPs[uid] = ip
}
