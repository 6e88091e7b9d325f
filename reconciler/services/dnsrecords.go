package services

import (
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// The DNS records of the instance (docs/design.md §10), as pure functions:
// one name per live Service, NAME.NS.svc.cluster.local, answering its
// ClusterIP, or for a headless Service the addresses of its ready pods
// (so that a name follows readiness as the proxy does); named ports get
// SRV records. A headless Service also names each ready pod that names
// its hostname and this Service as its subdomain (an endpoint's
// Hostname): HOSTNAME.NAME.NS.svc.cluster.local, the pod's stable name in
// Kubernetes' DNS specification (§2.4.1), which a StatefulSet's pods get
// from its serviceName. The shorter forms (HOSTNAME.NAME,
// HOSTNAME.NAME.NS) are the resolver's, through the pods' search list.

// ClusterDomain is the domain the DNS server answers for itself.
const ClusterDomain = "cluster.local"

// serviceDNSName is a Service's fully qualified name, without the final dot.
func serviceDNSName(namespace, name string) string {
	return name + "." + namespace + ".svc." + ClusterDomain
}

// serviceDNSRecords are a Service's records: its own (serviceDNSRecord)
// and, if headless, one per hostname of its ready endpoints, answering the
// addresses of the pods of that hostname (pods may share one, as a
// Deployment's replicas with spec.hostname do), sorted by name.
func serviceDNSRecords(svc *manifests.Service, clusterIP string, ready []store.EndpointStatus) []helperapi.DNSRecord {
	own := serviceDNSRecord(svc, clusterIP, ready)
	if own == nil {
		return nil
	}
	out := []helperapi.DNSRecord{*own}
	if !svc.IsHeadless() {
		return out
	}
	byHost := map[string]*helperapi.DNSRecord{}
	for _, ep := range ready {
		if ep.Hostname == "" || ep.IP == "" {
			continue
		}
		r := byHost[ep.Hostname]
		if r == nil {
			r = &helperapi.DNSRecord{Name: ep.Hostname + "." + own.Name}
			byHost[ep.Hostname] = r
		}
		if !slices.Contains(r.IPs, ep.IP) {
			r.IPs = append(r.IPs, ep.IP)
		}
	}
	for _, h := range slices.Sorted(maps.Keys(byHost)) {
		r := byHost[h]
		slices.SortFunc(r.IPs, compareIPs)
		out = append(out, *r)
	}
	return out
}

// serviceDNSRecord is a Service's record: its ClusterIP ("" none yet: the
// name exists with no address), or its ready pods' addresses if headless.
// A headless Service with no ready address has no record (nil): its name
// and its SRV names do not exist, so a query gets NXDOMAIN, as the
// Kubernetes DNS specification (§2.4.1) and CoreDNS answer, not NODATA.
// svc is defaulted.
func serviceDNSRecord(svc *manifests.Service, clusterIP string, ready []store.EndpointStatus) *helperapi.DNSRecord {
	r := &helperapi.DNSRecord{Name: serviceDNSName(svc.Metadata.NamespaceOrDefault(), svc.Metadata.Name), IPs: []string{}}
	headless := svc.IsHeadless()
	if headless {
		for _, ep := range ready {
			if ep.IP != "" && !slices.Contains(r.IPs, ep.IP) {
				r.IPs = append(r.IPs, ep.IP)
			}
		}
		if len(r.IPs) == 0 {
			return nil
		}
		slices.SortFunc(r.IPs, compareIPs)
	} else if a, err := netip.ParseAddr(clusterIP); err == nil {
		r.IPs = append(r.IPs, a.String())
	}
	for _, p := range svc.Spec.Ports {
		if p.Name == "" {
			continue
		}
		port := int(p.Port)
		if headless {
			// A headless name leads to the pods themselves: the port
			// they listen on, when they agree on it.
			port = agreedTargetPort(p, ready, port)
		}
		r.Ports = append(r.Ports, helperapi.SRVPort{Name: p.Name, Protocol: p.Protocol, Port: port})
	}
	return r
}

// agreedTargetPort is the one port every ready pod resolves p to, else def.
func agreedTargetPort(p manifests.ServicePort, ready []store.EndpointStatus, def int) int {
	got := 0
	for _, ep := range ready {
		for _, ept := range ep.Ports {
			if ept.Name == p.Name && ept.Protocol == p.Protocol {
				if got != 0 && got != int(ept.Port) {
					return def
				}
				got = int(ept.Port)
			}
		}
	}
	if got == 0 {
		return def
	}
	return got
}

// compareIPs orders addresses numerically (strings that are not
// addresses last, as strings).
func compareIPs(a, b string) int {
	x, errx := netip.ParseAddr(a)
	y, erry := netip.ParseAddr(b)
	switch {
	case errx == nil && erry == nil:
		return x.Compare(y)
	case errx == nil:
		return -1
	case erry == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// dnsConfig is the DNS server's complete config (generation 0), records
// sorted by name.
func dnsConfig(records []helperapi.DNSRecord) helperapi.DNSConfig {
	rs := slices.Clone(records)
	if rs == nil {
		rs = []helperapi.DNSRecord{}
	}
	slices.SortFunc(rs, func(a, b helperapi.DNSRecord) int { return strings.Compare(a.Name, b.Name) })
	return helperapi.DNSConfig{Domain: ClusterDomain, Records: rs}
}

// dnsConfigHash covers what the DNS server is created with: its network
// and address, and the helper protocol (not its records: pushed).
func dnsConfigHash(network, ip string) string {
	return configHash(struct {
		Protocol    int
		Network, IP string
	}{helperProtocolVersion, network, ip})
}

// recordChange describes how the record names changed, for a push's cause.
func recordChange(before, after []helperapi.DNSRecord) string {
	was := map[string]string{}
	for _, r := range before {
		was[r.Name] = strings.Join(r.IPs, ",")
	}
	var parts []string
	is := map[string]bool{}
	for _, r := range after {
		is[r.Name] = true
		ips, ok := was[r.Name]
		switch {
		case !ok:
			parts = append(parts, "+"+r.Name)
		case ips != strings.Join(r.IPs, ","):
			parts = append(parts, "~"+r.Name)
		}
	}
	for _, r := range before {
		if !is[r.Name] {
			parts = append(parts, "-"+r.Name)
		}
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		return "records changed"
	}
	return "records " + strings.Join(parts, " ")
}
