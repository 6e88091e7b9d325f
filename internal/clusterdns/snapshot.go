package clusterdns

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/miekg/dns"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// TTL of every local answer, as CoreDNS's kubernetes plugin gives it:
// short, because headless answers follow readiness.
const ttl = 5

// snapshot is one applied config, ready to answer from. Immutable once
// published, except entry.next.
type snapshot struct {
	generation int64
	domain     string // lower case, fully qualified: "cluster.local."
	dotDomain  string // "." + domain
	soa        *dns.SOA
	// names holds every name that exists under domain: the apex, each
	// record, each SRV owner, and every parent between them and the apex
	// (empty non-terminals, whose entry has no data).
	names map[string]*entry
	// ptr holds the reverse names (in-addr.arpa, ip6.arpa) of the records'
	// addresses. Only these are answered; other reverse names go upstream.
	ptr       map[string][]dns.RR
	upstreams []string // host:port, tried in order
}

// entry is the data of one name. The slices are never handed out: the
// query path copies them, since a reply's sections are appended to and
// resliced while it is written.
type entry struct {
	a, aaaa []dns.RR
	srv     []dns.RR // the answer to an SRV query at this name
	extra   []dns.RR // addresses of the SRV targets (additional section)
	soa     bool     // the apex
	next    atomic.Uint32
}

// build validates cfg and turns it into a snapshot. Upstreams default to
// the nameservers of resolvConf.
func build(cfg helperapi.DNSConfig, resolvConf string, log *slog.Logger) (*snapshot, error) {
	domain, err := normalizeDomain(cfg.Domain)
	if err != nil {
		return nil, err
	}
	s := &snapshot{
		generation: cfg.Generation,
		domain:     domain,
		dotDomain:  "." + domain,
		names:      map[string]*entry{domain: {soa: true}},
		ptr:        map[string][]dns.RR{},
	}
	s.soa = &dns.SOA{
		Hdr: dns.RR_Header{Name: domain, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: ttl},
		// The names CoreDNS's kubernetes plugin uses; nothing resolves them.
		Ns:      "ns.dns." + domain,
		Mbox:    "hostmaster." + domain,
		Serial:  uint32(cfg.Generation),
		Refresh: 7200,
		Retry:   1800,
		Expire:  86400,
		Minttl:  ttl,
	}

	seen := map[string]bool{}
	ptrNames := map[string][]string{} // reverse name → record names
	for i, rec := range cfg.Records {
		name, err := s.recordName(rec.Name)
		if err != nil {
			return nil, fmt.Errorf("clusterdns: record %d: %w", i, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("clusterdns: record %q given twice", rec.Name)
		}
		seen[name] = true
		e := s.ensure(name)
		addrs, err := parseIPs(rec.IPs)
		if err != nil {
			return nil, fmt.Errorf("clusterdns: record %q: %w", rec.Name, err)
		}
		for _, ip := range addrs {
			hdr := dns.RR_Header{Name: name, Class: dns.ClassINET, Ttl: ttl}
			if ip.Is4() {
				hdr.Rrtype = dns.TypeA
				e.a = append(e.a, &dns.A{Hdr: hdr, A: net.IP(ip.AsSlice())})
			} else {
				hdr.Rrtype = dns.TypeAAAA
				e.aaaa = append(e.aaaa, &dns.AAAA{Hdr: hdr, AAAA: net.IP(ip.AsSlice())})
			}
			rev, err := dns.ReverseAddr(ip.String())
			if err != nil {
				return nil, fmt.Errorf("clusterdns: record %q: reverse name of %s: %w", rec.Name, ip, err)
			}
			ptrNames[rev] = append(ptrNames[rev], name)
		}
		if err := s.addSRV(name, e, rec.Ports); err != nil {
			return nil, fmt.Errorf("clusterdns: record %q: %w", rec.Name, err)
		}
	}
	for rev, names := range ptrNames {
		// Several records may share an address (a pod behind two headless
		// Services): one PTR each, in a stable order.
		for _, n := range ptrTargets(names) {
			s.ptr[rev] = append(s.ptr[rev], &dns.PTR{
				Hdr: dns.RR_Header{Name: rev, Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: ttl},
				Ptr: n,
			})
		}
	}
	// Give every SRV answer the target's addresses as glue.
	for _, e := range s.names {
		if len(e.srv) == 0 {
			continue
		}
		t := s.names[e.srv[0].(*dns.SRV).Target]
		e.extra = slices.Concat(t.a, t.aaaa)
	}

	if len(cfg.Upstreams) > 0 {
		for _, u := range cfg.Upstreams {
			hp, err := normalizeUpstream(u)
			if err != nil {
				return nil, err
			}
			s.upstreams = append(s.upstreams, hp)
		}
	} else {
		ups, err := upstreamsFromResolvConf(resolvConf)
		if err != nil || len(ups) == 0 {
			// Not fatal: cluster names must keep resolving; only forwarded
			// queries fail (SERVFAIL).
			log.Warn("clusterdns: no upstream nameserver; names outside the cluster domain will fail",
				"resolvConf", resolvConf, "err", err)
		}
		s.upstreams = ups
	}
	return s, nil
}

// ptrTargets are the names a reverse name answers of the record names
// that have its address: each once, without a name that another one is
// below (a headless Service's, when the pod has its own name
// HOSTNAME.SERVICE.NS.svc.cluster.local: CoreDNS answers an endpoint's
// address with the endpoint's name, never the Service's), the deepest
// first (a pod's own names before the Services' it is behind, so that a
// client taking the first PTR gets the pod's), then by name.
func ptrTargets(names []string) []string {
	slices.Sort(names)
	names = slices.Compact(names)
	out := names[:0:0]
	for _, n := range names {
		if !slices.ContainsFunc(names, func(o string) bool { return strings.HasSuffix(o, "."+n) }) {
			out = append(out, n)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return dns.CountLabel(b) - dns.CountLabel(a) })
	return out
}

func normalizeDomain(d string) (string, error) {
	d = strings.ToLower(strings.TrimSuffix(d, "."))
	if d == "" {
		return "", fmt.Errorf("clusterdns: empty domain")
	}
	if _, ok := dns.IsDomainName(d); !ok {
		return "", fmt.Errorf("clusterdns: domain %q is not a domain name", d)
	}
	return dns.Fqdn(d), nil
}

// recordName checks that n is a valid name strictly below the domain and
// returns it lower-cased and fully qualified.
func (s *snapshot) recordName(n string) (string, error) {
	if n == "" {
		return "", fmt.Errorf("empty name")
	}
	name := dns.Fqdn(strings.ToLower(n))
	if _, ok := dns.IsDomainName(name); !ok {
		return "", fmt.Errorf("%q is not a domain name", n)
	}
	if !strings.HasSuffix(name, s.dotDomain) {
		return "", fmt.Errorf("%q is not under the domain %q", n, strings.TrimSuffix(s.domain, "."))
	}
	return name, nil
}

// ensure returns the entry of name, creating it and its parents up to the
// apex (as empty non-terminals) when missing.
func (s *snapshot) ensure(name string) *entry {
	e := s.names[name]
	if e == nil {
		e = &entry{}
		s.names[name] = e
	}
	for p := name; p != s.domain; {
		i := strings.IndexByte(p, '.')
		p = p[i+1:]
		if _, ok := s.names[p]; ok {
			break
		}
		s.names[p] = &entry{}
	}
	return e
}

// addSRV gives name `_port._proto.name` SRV records, and name itself the SRV
// records of all its ports (as CoreDNS answers an SRV query for a Service
// name). Weights as CoreDNS: priority 0, 100 split over the answer's records.
func (s *snapshot) addSRV(name string, e *entry, ports []helperapi.SRVPort) error {
	srv := func(owner string, port, n int) dns.RR {
		return &dns.SRV{
			Hdr:      dns.RR_Header{Name: owner, Rrtype: dns.TypeSRV, Class: dns.ClassINET, Ttl: ttl},
			Priority: 0,
			Weight:   uint16(100 / n),
			Port:     uint16(port),
			Target:   name,
		}
	}
	for _, p := range ports {
		if err := validPort(p); err != nil {
			return err
		}
		owner := "_" + strings.ToLower(p.Name) + "._" + strings.ToLower(p.Protocol) + "." + name
		if _, ok := s.names[owner]; ok {
			return fmt.Errorf("port %s/%s given twice", p.Name, p.Protocol)
		}
		s.ensure(owner).srv = []dns.RR{srv(owner, p.Port, 1)}
		e.srv = append(e.srv, srv(name, p.Port, len(ports)))
	}
	return nil
}

func validPort(p helperapi.SRVPort) error {
	// Kubernetes names ports as IANA service names: a DNS label of at most
	// 15 characters. Only named ports get SRV records.
	if p.Name == "" || len(p.Name) > 63 || strings.Trim(strings.ToLower(p.Name), "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return fmt.Errorf("port name %q is not a DNS label", p.Name)
	}
	switch strings.ToUpper(p.Protocol) {
	case helperapi.TCP, helperapi.UDP, "SCTP":
	default:
		return fmt.Errorf("port %q: protocol %q is not TCP, UDP or SCTP", p.Name, p.Protocol)
	}
	if p.Port < 1 || p.Port > 65535 {
		return fmt.Errorf("port %q: number %d out of range", p.Name, p.Port)
	}
	return nil
}

func parseIPs(ips []string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, s := range ips {
		ip, err := netip.ParseAddr(s)
		if err != nil || ip.Zone() != "" || ip.IsUnspecified() {
			return nil, fmt.Errorf("bad IP address %q", s)
		}
		ip = ip.Unmap()
		if !slices.Contains(out, ip) {
			out = append(out, ip)
		}
	}
	return out, nil
}

// normalizeUpstream accepts "IP:port" and a bare IP (port 53). A host name
// is refused: resolving it would need the very resolver being configured.
func normalizeUpstream(u string) (string, error) {
	host, port, err := net.SplitHostPort(u)
	if err != nil {
		host, port = u, "53"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" {
		return "", fmt.Errorf("clusterdns: upstream %q: not an IP address with an optional port", u)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("clusterdns: upstream %q: bad port", u)
	}
	return net.JoinHostPort(ip.Unmap().String(), port), nil
}

// upstreamsFromResolvConf reads the nameservers of a resolv.conf file.
func upstreamsFromResolvConf(path string) ([]string, error) {
	cc, err := dns.ClientConfigFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("clusterdns: read %s: %w", path, err)
	}
	var out []string
	for _, s := range cc.Servers {
		hp, err := normalizeUpstream(net.JoinHostPort(s, cc.Port))
		if err != nil {
			return nil, fmt.Errorf("clusterdns: %s: %w", path, err)
		}
		out = append(out, hp)
	}
	return out, nil
}
