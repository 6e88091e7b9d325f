// Package netlayout is the address plan of an instance network
// (docs/design.md §10), shared by the instance network's owner, the pods
// that take addresses in it and the Services that take theirs: the lower
// half of the subnet is Docker's (pods' dynamic addresses, IPRange), the
// upper half dockctl's — the DNS server takes its first address, Service
// cluster IPs the rest.
//
// Invariants: the layout is a pure function of the subnet (and of the DNS
// address its owner recorded); the static range never overlaps Docker's
// and never leaves the subnet.
package netlayout

import (
	"fmt"
	"net/netip"

	"github.com/dockctl/dockctl/store"
)

// NetworkLayout is the address plan of an instance network.
type NetworkLayout struct {
	Subnet  netip.Prefix
	IPRange netip.Prefix // the lower half: Docker's dynamic addresses
	Gateway netip.Addr   // the subnet's first address
	DNSIP   netip.Addr   // the DNS server: the first address of the upper half
	// ServiceFirst..ServiceLast (inclusive) are the ClusterIPs: the upper
	// half after the DNS address, without the broadcast address.
	ServiceFirst, ServiceLast netip.Addr
}

// Subnets of an instance network: IPv4, from /8 (a 2^23-address static
// range is absurd but harmless) to /28 (six ClusterIPs).
const (
	minSubnetBits = 8
	maxSubnetBits = 28
)

// Of plans a subnet given as CIDR ("10.222.0.0/20"): the gateway is
// its first address, Docker's range its lower half, the DNS server the
// first address of its upper half.
func Of(subnet string) (NetworkLayout, error) {
	p, err := netip.ParsePrefix(subnet)
	if err != nil {
		return NetworkLayout{}, fmt.Errorf("subnet %q: %w", subnet, err)
	}
	if !p.Addr().Is4() || p.Bits() < minSubnetBits || p.Bits() > maxSubnetBits {
		return NetworkLayout{}, fmt.Errorf("subnet %q: must be an IPv4 CIDR from /%d to /%d", subnet, minSubnetBits, maxSubnetBits)
	}
	if p.Masked() != p {
		return NetworkLayout{}, fmt.Errorf("subnet %q: has host bits set (did you mean %s?)", subnet, p.Masked())
	}
	half := uint32(1) << (32 - p.Bits() - 1)
	base := AddrUint(p.Addr())
	upper := UintAddr(base + half)
	return NetworkLayout{
		Subnet:       p,
		IPRange:      netip.PrefixFrom(p.Addr(), p.Bits()+1),
		Gateway:      UintAddr(base + 1),
		DNSIP:        upper,
		ServiceFirst: UintAddr(base + half + 1),
		ServiceLast:  UintAddr(base + 2*half - 2),
	}, nil
}

// FromStatus is the layout of the network as recorded, with the DNS
// address the network's owner recorded (the services' range starts after
// it, and never below the upper half).
func FromStatus(ns *store.NetworkStatus) (NetworkLayout, error) {
	if ns == nil || ns.Subnet == "" {
		return NetworkLayout{}, fmt.Errorf("instance network not known yet")
	}
	l, err := Of(ns.Subnet)
	if err != nil {
		return NetworkLayout{}, fmt.Errorf("instance network %s: %w", ns.Name, err)
	}
	if ns.DNSIP != "" {
		dns, err := netip.ParseAddr(ns.DNSIP)
		if err != nil || !l.Subnet.Contains(dns) {
			return NetworkLayout{}, fmt.Errorf("instance network %s: DNS address %q is not in %s", ns.Name, ns.DNSIP, ns.Subnet)
		}
		l.DNSIP = dns
		if next := dns.Next(); next.Compare(l.ServiceFirst) > 0 {
			l.ServiceFirst = next
		}
	}
	return l, nil
}

// AddrUint is an IPv4 address as a number, for address arithmetic.
func AddrUint(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// UintAddr is AddrUint's inverse.
func UintAddr(u uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)})
}

// InServiceRange reports whether a is a ClusterIP of the layout.
func (l NetworkLayout) InServiceRange(a netip.Addr) bool {
	return a.Is4() && a.Compare(l.ServiceFirst) >= 0 && a.Compare(l.ServiceLast) <= 0
}
