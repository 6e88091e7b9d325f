package podruntime

import (
	"net/netip"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/netlayout"
)

// status.podIP in a container's environment: Docker gives a container its
// address when it starts, after its environment is fixed, so a pod whose
// environment reads status.podIP (or podIPs) gets an address dockctl
// assigns in the instance network before the create: a static one
// (IPAMConfig), which it then keeps across restarts, so the variable stays
// true. It is taken from the top of Docker's dynamic range (IPRange)
// downwards — Docker hands out dynamic addresses from the bottom — and
// skips every address a container of the instance holds or has
// configured. Other pods keep Docker's dynamic addresses, as before.

// ReadsPodIP reports whether a container of the pod reads its address.
func ReadsPodIP(ps *manifests.PodSpec) bool {
	for _, c := range ps.AllContainers() {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
				switch e.ValueFrom.FieldRef.FieldPath {
				case manifests.FieldStatusPodIP, manifests.FieldStatusPodIPs:
					return true
				}
			}
		}
	}
	return false
}

// PickPodIP returns the highest address of l's IPRange that is neither
// the network's, its gateway, nor used; false when none is left.
func PickPodIP(l netlayout.NetworkLayout, used map[netip.Addr]bool) (netip.Addr, bool) {
	first := netlayout.AddrUint(l.IPRange.Masked().Addr())
	last := first + uint32(1)<<(32-l.IPRange.Bits()) - 1
	for u := last; u > first; u-- {
		a := netlayout.UintAddr(u)
		if a != l.Gateway && !used[a] {
			return a, true
		}
	}
	return netip.Addr{}, false
}
