package podruntime

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/netlayout"
	"github.com/dockctl/dockctl/store"
)

// PodIPDocker is what an address assignment needs of Docker: the
// instance's containers, to see the addresses in use.
type PodIPDocker interface {
	ListContainers(ctx context.Context, instance string) ([]dockerx.Container, error)
}

// PodIPs assigns the static addresses of pods that read status.podIP
// (podip.go says why and which) and remembers each holder's, by pod UID,
// for its members. A controller holds one: its assignments run one at a
// time, so that two never pick one address.
type PodIPs struct {
	assign sync.Mutex
	mu     sync.Mutex
	byUID  map[string]string
}

// Assign gives the network owner of a pod that reads its address (a
// replica without holder, or a holder) a static address in the instance
// network, and returns the address a container of the pod reads as
// status.podIP ("" when it has none). release must be called once the
// container is created: until then other assignments wait. holder
// returns the observed holder of a pod uid (nil: none), whose address a
// member reads when this process did not assign it.
func (p *PodIPs) Assign(ctx context.Context, d PodIPDocker, instance string, op Op, req *dockerx.CreateRequest, network *store.NetworkStatus, holder func(uid string) *dockerx.Container) (ip string, release func(), err error) {
	release = func() {}
	ps := &op.From.Template.Spec
	if ps.HostNetwork || network == nil || !ReadsPodIP(ps) {
		return "", release, nil
	}
	if op.Pod != nil && op.Role != dockerx.RoleHolder {
		return p.memberIP(op.Pod.UID, network.Name, holder), release, nil
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
	p.assign.Lock()
	release = p.assign.Unlock
	cs, err := d.ListContainers(ctx, instance)
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
	a, ok := PickPodIP(l, used)
	if !ok {
		release()
		return "", func() {}, fmt.Errorf("create %s: pod address: no free address left in %s", op.Name, l.IPRange)
	}
	req.Network.IPv4 = a.String()
	if op.Pod != nil {
		p.remember(op.Pod.UID, req.Network.IPv4)
	}
	return req.Network.IPv4, release, nil
}

// memberIP is the address of the pod a member joins: its holder's, as
// assigned in this process or as Docker reports it.
func (p *PodIPs) memberIP(uid, network string, holder func(uid string) *dockerx.Container) string {
	p.mu.Lock()
	ip := p.byUID[uid]
	p.mu.Unlock()
	if ip != "" {
		return ip
	}
	if h := holder(uid); h != nil {
		if ip := h.StaticIPv4[network]; ip != "" {
			return ip
		}
		return h.Networks[network]
	}
	return ""
}

func (p *PodIPs) remember(uid, ip string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byUID == nil {
		p.byUID = map[string]string{}
	}
	// Bounded: only the pods of the last thousand holders are kept; an
	// older one's members read the holder's address from Docker.
	if len(p.byUID) > 1000 {
		clear(p.byUID)
	}
	p.byUID[uid] = ip
}
