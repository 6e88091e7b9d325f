package clusterdns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"

	"github.com/dockctl/dockctl/internal/helperapi"
)

const soaText = "SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5"

func TestClusterNames(t *testing.T) {
	up := startUpstream(t)
	_, addr := newTestServer(t, testConfig(1, up.addr))

	tests := []struct {
		name   string
		qname  string
		qtype  uint16
		rcode  int
		answer []string
		extra  []string
		soa    bool // SOA in the authority section (negative answers)
	}{
		{"ClusterIP", "web.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess,
			[]string{"A 10.222.8.10"}, nil, false},
		{"case-insensitive", "WEB.Default.SVC.Cluster.LOCAL.", dns.TypeA, dns.RcodeSuccess,
			[]string{"A 10.222.8.10"}, nil, false},
		{"same name, other namespace", "web.other.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess,
			[]string{"A 10.222.8.11"}, nil, false},
		{"headless: every ready pod", "db.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess,
			[]string{"A 10.222.0.5", "A 10.222.0.6", "A 10.222.0.7"}, nil, false},
		{"no ready pods: NODATA", "empty.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess,
			nil, nil, true},
		{"AAAA of a known name: NODATA", "web.default.svc.cluster.local.", dns.TypeAAAA, dns.RcodeSuccess,
			nil, nil, true},
		{"TXT of a known name: NODATA", "web.default.svc.cluster.local.", dns.TypeTXT, dns.RcodeSuccess,
			nil, nil, true},
		{"ANY", "web.default.svc.cluster.local.", dns.TypeANY, dns.RcodeSuccess,
			[]string{"A 10.222.8.10"}, nil, false},
		{"SRV of a named port", "_http._tcp.web.default.svc.cluster.local.", dns.TypeSRV, dns.RcodeSuccess,
			[]string{"SRV 0 100 80 web.default.svc.cluster.local."}, []string{"A 10.222.8.10"}, false},
		{"SRV, case-insensitive", "_HTTP._Tcp.Web.Default.svc.cluster.local.", dns.TypeSRV, dns.RcodeSuccess,
			[]string{"SRV 0 100 80 web.default.svc.cluster.local."}, []string{"A 10.222.8.10"}, false},
		{"SRV of the Service name: every port", "web.default.svc.cluster.local.", dns.TypeSRV, dns.RcodeSuccess,
			[]string{"SRV 0 50 80 web.default.svc.cluster.local.", "SRV 0 50 9090 web.default.svc.cluster.local."},
			[]string{"A 10.222.8.10"}, false},
		{"SRV of a headless Service", "_pg._tcp.db.default.svc.cluster.local.", dns.TypeSRV, dns.RcodeSuccess,
			[]string{"SRV 0 100 5432 db.default.svc.cluster.local."},
			[]string{"A 10.222.0.5", "A 10.222.0.6", "A 10.222.0.7"}, false},
		{"A of an SRV name: NODATA", "_http._tcp.web.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess,
			nil, nil, true},
		{"unknown port", "_nope._tcp.web.default.svc.cluster.local.", dns.TypeSRV, dns.RcodeNameError,
			nil, nil, true},
		{"unknown protocol", "_http._udp.web.default.svc.cluster.local.", dns.TypeSRV, dns.RcodeNameError,
			nil, nil, true},
		{"unknown Service", "nope.default.svc.cluster.local.", dns.TypeA, dns.RcodeNameError,
			nil, nil, true},
		{"unknown Service, AAAA", "nope.default.svc.cluster.local.", dns.TypeAAAA, dns.RcodeNameError,
			nil, nil, true},
		{"unknown namespace", "web.nons.svc.cluster.local.", dns.TypeA, dns.RcodeNameError,
			nil, nil, true},
		{"below a Service", "x.web.default.svc.cluster.local.", dns.TypeA, dns.RcodeNameError,
			nil, nil, true},
		{"search expansion of a full name", "web.default.svc.cluster.local.default.svc.cluster.local.",
			dns.TypeA, dns.RcodeNameError, nil, nil, true},
		{"search expansion of an outside name", "example.com.svc.cluster.local.", dns.TypeA,
			dns.RcodeNameError, nil, nil, true},
		{"pod-style name", "10-222-0-5.default.pod.cluster.local.", dns.TypeA, dns.RcodeNameError,
			nil, nil, true},
		{"namespace (empty non-terminal): NODATA", "default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess,
			nil, nil, true},
		{"svc (empty non-terminal): NODATA", "svc.cluster.local.", dns.TypeA, dns.RcodeSuccess,
			nil, nil, true},
		{"protocol label (empty non-terminal): NODATA", "_tcp.web.default.svc.cluster.local.", dns.TypeSRV,
			dns.RcodeSuccess, nil, nil, true},
		{"apex SOA", "cluster.local.", dns.TypeSOA, dns.RcodeSuccess, []string{soaText}, nil, false},
		{"apex A: NODATA", "cluster.local.", dns.TypeA, dns.RcodeSuccess, nil, nil, true},
		{"PTR of a ClusterIP", "10.8.222.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess,
			[]string{"PTR web.default.svc.cluster.local."}, nil, false},
		{"PTR of a headless pod", "6.0.222.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess,
			[]string{"PTR db.default.svc.cluster.local."}, nil, false},
	}
	for _, network := range []string{"udp", "tcp"} {
		for _, tt := range tests {
			t.Run(network+"/"+tt.name, func(t *testing.T) {
				r := query(t, network, addr, tt.qname, tt.qtype, 0)
				if r.Rcode != tt.rcode {
					t.Errorf("rcode %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tt.rcode])
				}
				if !r.Authoritative || !r.RecursionAvailable || !r.RecursionDesired || r.Truncated {
					t.Errorf("flags aa=%v ra=%v rd=%v tc=%v, want aa ra rd, not tc",
						r.Authoritative, r.RecursionAvailable, r.RecursionDesired, r.Truncated)
				}
				if got := answers(r.Answer); !slices.Equal(got, tt.answer) {
					t.Errorf("answer %q, want %q", got, tt.answer)
				}
				if got := answers(r.Extra); !slices.Equal(got, tt.extra) {
					t.Errorf("additional %q, want %q", got, tt.extra)
				}
				var wantNs []string
				if tt.soa {
					wantNs = []string{soaText}
				}
				if got := answers(r.Ns); !slices.Equal(got, wantNs) {
					t.Errorf("authority %q, want %q", got, wantNs)
				}
				for _, rr := range slices.Concat(r.Answer, r.Ns, r.Extra) {
					if h := rr.Header(); h.Rrtype != dns.TypeOPT && h.Ttl != 5 {
						t.Errorf("TTL %d, want 5: %v", h.Ttl, rr)
					}
				}
				if len(r.Question) != 1 || r.Question[0].Name != tt.qname {
					t.Errorf("question %v, want %s echoed as sent", r.Question, tt.qname)
				}
			})
		}
	}
	// Not one of these may have reached the upstream.
	if q := up.queries(); len(q) != 0 {
		t.Errorf("upstream saw %q, want nothing", q)
	}
}

// resolveSearch resolves name as a stub resolver (glibc, musl) does with
// `search` and `options ndots:N`: a name with fewer than ndots dots is tried
// with each search domain first, then as is; the first answer with
// addresses wins. It returns the name that answered and its addresses.
func resolveSearch(t *testing.T, addr, name string, search []string, ndots int) (string, []string) {
	t.Helper()
	var tries []string
	if strings.Count(name, ".") >= ndots {
		tries = append(tries, name+".")
	}
	for _, s := range search {
		tries = append(tries, name+"."+s+".")
	}
	if strings.Count(name, ".") < ndots {
		tries = append(tries, name+".")
	}
	for _, q := range tries {
		r := query(t, "udp", addr, q, dns.TypeA, 0)
		if r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 {
			return q, answers(r.Answer)
		}
		if r.Rcode != dns.RcodeNameError {
			t.Errorf("%s: rcode %s, want NXDOMAIN or an answer", q, dns.RcodeToString[r.Rcode])
		}
	}
	return "", nil
}

// TestSearchPathForms checks every form a pod uses (docs/design.md §10) through
// the expansion its resolver does with the search list dockctl gives pods.
func TestSearchPathForms(t *testing.T) {
	up := startUpstream(t)
	_, addr := newTestServer(t, testConfig(1, up.addr))
	searchIn := func(ns string) []string {
		return []string{ns + ".svc.cluster.local", "svc.cluster.local", "cluster.local"}
	}
	tests := []struct {
		ns, name string
		fqdn     string
		ips      []string
	}{
		{"default", "web", "web.default.svc.cluster.local.", []string{"A 10.222.8.10"}},
		{"default", "web.default", "web.default.svc.cluster.local.", []string{"A 10.222.8.10"}},
		{"default", "web.default.svc", "web.default.svc.cluster.local.", []string{"A 10.222.8.10"}},
		{"default", "web.default.svc.cluster.local", "web.default.svc.cluster.local.", []string{"A 10.222.8.10"}},
		{"default", "web.other", "web.other.svc.cluster.local.", []string{"A 10.222.8.11"}},
		{"other", "web", "web.other.svc.cluster.local.", []string{"A 10.222.8.11"}},
		{"other", "web.default", "web.default.svc.cluster.local.", []string{"A 10.222.8.10"}},
		{"other", "web.default.svc.cluster.local", "web.default.svc.cluster.local.", []string{"A 10.222.8.10"}},
		{"default", "db", "db.default.svc.cluster.local.",
			[]string{"A 10.222.0.5", "A 10.222.0.6", "A 10.222.0.7"}},
		{"other", "db", "", nil}, // no db in namespace other: every try NXDOMAIN, the last goes upstream
	}
	for _, tt := range tests {
		t.Run(tt.ns+"/"+tt.name, func(t *testing.T) {
			fqdn, ips := resolveSearch(t, addr, tt.name, searchIn(tt.ns), 5)
			if tt.fqdn == "" {
				// The fake upstream answers anything: only the absolute
				// name "db." may have gone there.
				if fqdn != "db." {
					t.Errorf("answered by %q, want only the absolute name from upstream", fqdn)
				}
				return
			}
			if fqdn != tt.fqdn || !slices.Equal(ips, tt.ips) {
				t.Errorf("got %s %q, want %s %q", fqdn, ips, tt.fqdn, tt.ips)
			}
		})
	}
	t.Run("outside name", func(t *testing.T) {
		fqdn, ips := resolveSearch(t, addr, "example.com", searchIn("default"), 5)
		if fqdn != "example.com." || !slices.Equal(ips, []string{"A 192.0.2.1"}) {
			t.Errorf("got %s %q, want example.com. from upstream", fqdn, ips)
		}
	})
	// The three search-list tries of each outside name were answered here.
	if got, want := up.queries(), []string{"udp db.", "udp example.com."}; !slices.Equal(got, want) {
		t.Errorf("upstream saw %q, want %q", got, want)
	}
}

// TestGoResolver resolves through Go's own resolver (the one a Go client in
// a pod uses), which sends A and AAAA together and needs NODATA for AAAA.
func TestGoResolver(t *testing.T) {
	_, addr := newTestServer(t, testConfig(1, deadPort(t)))
	r := &net.Resolver{PreferGo: true, StrictErrors: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()

	hosts := []struct {
		name string
		want []string // nil: not found
	}{
		{"web.default.svc.cluster.local.", []string{"10.222.8.10"}},
		{"Web.Other.Svc.Cluster.Local.", []string{"10.222.8.11"}},
		{"db.default.svc.cluster.local.", []string{"10.222.0.5", "10.222.0.6", "10.222.0.7"}},
		{"nope.default.svc.cluster.local.", nil},
		{"empty.default.svc.cluster.local.", nil},
	}
	for _, tt := range hosts {
		t.Run("host "+tt.name, func(t *testing.T) {
			got, err := r.LookupHost(ctx, tt.name)
			slices.Sort(got)
			if tt.want == nil {
				var de *net.DNSError
				if !errors.As(err, &de) || !de.IsNotFound {
					t.Errorf("LookupHost = %q, %v; want not found", got, err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("LookupHost = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	t.Run("SRV", func(t *testing.T) {
		cname, srvs, err := r.LookupSRV(ctx, "http", "tcp", "web.default.svc.cluster.local.")
		if err != nil || cname != "_http._tcp.web.default.svc.cluster.local." || len(srvs) != 1 ||
			srvs[0].Target != "web.default.svc.cluster.local." || srvs[0].Port != 80 {
			t.Errorf("LookupSRV = %q, %+v, %v", cname, srvs, err)
		}
	})
	t.Run("PTR", func(t *testing.T) {
		names, err := r.LookupAddr(ctx, "10.222.8.10")
		if err != nil || !slices.Equal(names, []string{"web.default.svc.cluster.local."}) {
			t.Errorf("LookupAddr = %q, %v", names, err)
		}
	})
}

func TestForward(t *testing.T) {
	up := startUpstream(t)
	_, addr := newTestServer(t, testConfig(1, up.addr))
	tests := []struct {
		network, qname string
		qtype          uint16
	}{
		{"udp", "example.com.", dns.TypeA},
		{"tcp", "example.com.", dns.TypeA},
		{"udp", "Example.ORG.", dns.TypeAAAA},
		// Ends like the domain without being under it.
		{"udp", "xcluster.local.", dns.TypeA},
		{"tcp", "local.", dns.TypeA},
		// One label "a.cluster" under "local.", not a name under the domain.
		{"udp", `a\.cluster.local.`, dns.TypeA},
		// A reverse name of no record.
		{"udp", "9.9.222.10.in-addr.arpa.", dns.TypePTR},
		{"udp", "10.8.222.10.in-addr.arpa.", dns.TypeA},
	}
	for _, tt := range tests {
		t.Run(tt.network+"/"+tt.qname, func(t *testing.T) {
			before := len(up.queries())
			r := query(t, tt.network, addr, tt.qname, tt.qtype, 0)
			if r.Rcode != dns.RcodeSuccess || r.Authoritative || !r.RecursionAvailable {
				t.Errorf("rcode %s aa=%v ra=%v, want NOERROR from upstream, not authoritative, ra",
					dns.RcodeToString[r.Rcode], r.Authoritative, r.RecursionAvailable)
			}
			if got := answers(r.Answer); !slices.Equal(got, []string{"A 192.0.2.1"}) {
				t.Errorf("answer %q, want the upstream's", got)
			}
			// Sent once, over the protocol the query came in.
			if got, want := up.queries()[before:], []string{tt.network + " " + tt.qname}; !slices.Equal(got, want) {
				t.Errorf("upstream saw %q, want %q", got, want)
			}
		})
	}
}

// TestTruncation: answers too big for the client's UDP buffer are cut with
// TC set, and come whole over TCP — local (a large headless Service) and
// forwarded alike.
func TestTruncation(t *testing.T) {
	up := startUpstream(t)
	up.setBigA(60)
	cfg := testConfig(1, up.addr)
	var ips []string
	for i := range 100 {
		ips = append(ips, net.IPv4(10, 222, 1, byte(i+1)).String())
	}
	cfg.Records = append(cfg.Records, helperapi.DNSRecord{Name: "big.default.svc.cluster.local", IPs: ips})
	_, addr := newTestServer(t, cfg)

	tests := []struct {
		name, network, qname string
		edns                 uint16
		want                 int // answers
		tc                   bool
	}{
		{"local, UDP 512", "udp", "big.default.svc.cluster.local.", 0, -1, true},
		{"local, UDP EDNS0 4096", "udp", "big.default.svc.cluster.local.", 4096, 100, false},
		{"local, UDP EDNS0 below 512 counts as 512", "udp", "big.default.svc.cluster.local.", 100, -1, true},
		{"local, TCP", "tcp", "big.default.svc.cluster.local.", 0, 100, false},
		{"forwarded, UDP 512", "udp", "example.com.", 0, -1, true},
		{"forwarded, UDP EDNS0 4096", "udp", "example.com.", 4096, 60, false},
		{"forwarded, TCP", "tcp", "example.com.", 0, 60, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := query(t, tt.network, addr, tt.qname, dns.TypeA, tt.edns)
			if r.Truncated != tt.tc {
				t.Errorf("tc=%v, want %v", r.Truncated, tt.tc)
			}
			if tt.want >= 0 && len(r.Answer) != tt.want {
				t.Errorf("%d answers, want %d", len(r.Answer), tt.want)
			}
			if tt.want < 0 && (len(r.Answer) == 0 || len(r.Answer) >= 60) {
				t.Errorf("%d answers, want some but not all", len(r.Answer))
			}
			size := 512
			if tt.edns > 512 {
				size = int(tt.edns)
			}
			r.Compress = true // as sent
			if tt.network == "udp" && r.Len() > size {
				t.Errorf("reply of %d bytes over a %d-byte buffer", r.Len(), size)
			}
			if (tt.edns > 0) != (r.IsEdns0() != nil) {
				t.Errorf("OPT in reply: %v, in query: %v", r.IsEdns0() != nil, tt.edns > 0)
			}
		})
	}
}

// TestUpstreamFailure: SERVFAIL when no upstream answers (waited on with
// the generous test deadline, not timed), the next upstream when one fails,
// each upstream tried once.
func TestUpstreamFailure(t *testing.T) {
	good := startUpstream(t)
	hole, dead := blackhole(t), deadPort(t)
	tests := []struct {
		name      string
		upstreams []string
		rcode     int
		goodSaw   int
	}{
		{"timeout", []string{hole}, dns.RcodeServerFailure, 0},
		{"refused", []string{dead}, dns.RcodeServerFailure, 0},
		{"all fail", []string{dead, hole}, dns.RcodeServerFailure, 0},
		{"none configured", nil, dns.RcodeServerFailure, 0},
		{"refused, then the next", []string{dead, good.addr}, dns.RcodeSuccess, 1},
		{"timeout, then the next", []string{hole, good.addr}, dns.RcodeSuccess, 1},
	}
	for _, network := range []string{"udp", "tcp"} {
		for i, tt := range tests {
			t.Run(network+"/"+tt.name, func(t *testing.T) {
				t.Parallel() // each waits out a timeout: let them overlap
				cfg := testConfig(1, tt.upstreams...)
				s, err := newServer(cfg, nil, filepath.Join(t.TempDir(), "missing-resolv.conf"))
				if err != nil {
					t.Fatal(err)
				}
				addr := startServer(t, s)
				qname := fmt.Sprintf("outside-%d.example.", i)
				r := query(t, network, addr, qname, dns.TypeA, 0)
				if r.Rcode != tt.rcode || !r.RecursionAvailable {
					t.Errorf("rcode %s ra=%v, want %s ra", dns.RcodeToString[r.Rcode], r.RecursionAvailable,
						dns.RcodeToString[tt.rcode])
				}
				// Cluster names keep resolving whatever the upstreams do.
				if r := query(t, network, addr, "web.default.svc.cluster.local.", dns.TypeA, 0); len(r.Answer) != 1 {
					t.Errorf("cluster name: %v", r)
				}
				saw := 0 // the rows run in parallel: count this row's query only
				for _, q := range good.queries() {
					if q == network+" "+qname {
						saw++
					}
				}
				if saw != tt.goodSaw {
					t.Errorf("the answering upstream saw the query %d times, want %d", saw, tt.goodSaw)
				}
			})
		}
	}
}

// TestApplyAtomic swaps configs while clients query over UDP and through
// the handler directly (run with -race): every answer comes from one whole
// config, and a client never sees an older one after a newer.
func TestApplyAtomic(t *testing.T) {
	cfgFor := func(g int64) helperapi.DNSConfig {
		cfg := testConfig(g)
		cfg.Records[2].IPs = []string{
			net.IPv4(10, byte(g), 0, 1).String(), net.IPv4(10, byte(g), 0, 2).String(), net.IPv4(10, byte(g), 0, 3).String(),
		}
		if g%2 == 0 { // a Service that comes and goes
			cfg.Records = append(cfg.Records, helperapi.DNSRecord{Name: "even.default.svc.cluster.local",
				IPs: []string{net.IPv4(10, byte(g), 0, 9).String()}})
		}
		return cfg
	}
	s, addr := newTestServer(t, cfgFor(1))
	const last = 150

	var stop atomic.Bool
	var wg sync.WaitGroup
	var answered atomic.Int64
	check := func(t *testing.T, r *dns.Msg, prev *int) bool {
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 3 {
			t.Errorf("reply %v", r)
			return false
		}
		g := int(r.Answer[0].(*dns.A).A.To4()[1])
		for _, rr := range r.Answer {
			if int(rr.(*dns.A).A.To4()[1]) != g {
				t.Errorf("answer mixes generations: %v", r.Answer)
				return false
			}
		}
		if g < *prev {
			t.Errorf("generation %d after %d", g, *prev)
			return false
		}
		*prev = g
		answered.Add(1)
		return true
	}
	for range 3 { // over the network
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &dns.Client{Net: "udp", Timeout: deadline}
			co, err := c.Dial(addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer co.Close()
			prev := 0
			for !stop.Load() {
				m := new(dns.Msg)
				m.SetQuestion("db.default.svc.cluster.local.", dns.TypeA)
				r, _, err := c.ExchangeWithConn(m, co)
				if err != nil {
					t.Error(err)
					return
				}
				if !check(t, r, &prev) {
					return
				}
			}
		}()
	}
	for _, qname := range []string{"db.default.svc.cluster.local.", "even.default.svc.cluster.local."} {
		wg.Add(1)
		go func() { // in process, as fast as the handler goes
			defer wg.Done()
			prev := 0
			for !stop.Load() {
				m := new(dns.Msg)
				m.SetQuestion(qname, dns.TypeA)
				w := &recorder{}
				s.ServeDNS(w, m)
				if qname == "db.default.svc.cluster.local." {
					if !check(t, w.msg, &prev) {
						return
					}
					continue
				}
				// even: present exactly in even generations, per its SOA serial.
				serial := 0
				if len(w.msg.Answer) == 1 {
					serial = int(w.msg.Answer[0].(*dns.A).A.To4()[1])
				} else if len(w.msg.Ns) == 1 {
					serial = int(w.msg.Ns[0].(*dns.SOA).Serial)
					if serial%2 == 0 || w.msg.Rcode != dns.RcodeNameError {
						t.Errorf("generation %d: %v", serial, w.msg)
						return
					}
				}
				if serial < prev {
					t.Errorf("generation %d after %d", serial, prev)
					return
				}
				prev = serial
			}
		}()
	}

	defer func() { stop.Store(true); wg.Wait() }()

	for g := int64(2); g <= last; g++ {
		// Let some queries through between two swaps.
		n := answered.Load()
		waitFor(t, "queries between swaps", func() bool { return answered.Load() > n || t.Failed() })
		if err := s.Apply(cfgFor(g)); err != nil {
			t.Fatalf("Apply %d: %v", g, err)
		}
		if got := s.Generation(); got != g {
			t.Fatalf("Generation() = %d after Apply(%d)", got, g)
		}
		if g == last/2 {
			bad := cfgFor(g + 1)
			bad.Records[0].IPs = []string{"not-an-ip"}
			if err := s.Apply(bad); err == nil || s.Generation() != g {
				t.Errorf("invalid Apply: err %v, generation %d; want an error and %d kept", err, s.Generation(), g)
			}
			if err := s.Apply(cfgFor(g - 1)); !errors.Is(err, ErrStale) || s.Generation() != g {
				t.Errorf("stale Apply: err %v, generation %d; want ErrStale and %d kept", err, s.Generation(), g)
			}
		}
	}
	r := query(t, "tcp", addr, "db.default.svc.cluster.local.", dns.TypeA, 0)
	prev := last
	check(t, r, &prev)
}

func TestApplyGenerations(t *testing.T) {
	s, err := newServer(testConfig(5), nil, "/nonexistent")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		gen     int64
		stale   bool
		wantGen int64
	}{
		{5, false, 5}, // a repeated push is applied again
		{4, true, 5},
		{0, true, 5},
		{7, false, 7},
		{6, true, 7},
	}
	for _, tt := range tests {
		err := s.Apply(testConfig(tt.gen))
		if errors.Is(err, ErrStale) != tt.stale || (err != nil && !tt.stale) {
			t.Errorf("Apply(%d) = %v, want stale %v", tt.gen, err, tt.stale)
		}
		if s.Generation() != tt.wantGen {
			t.Errorf("after Apply(%d): Generation() = %d, want %d", tt.gen, s.Generation(), tt.wantGen)
		}
	}
}

func TestValidation(t *testing.T) {
	mod := func(f func(*helperapi.DNSConfig)) helperapi.DNSConfig {
		cfg := testConfig(2)
		f(&cfg)
		return cfg
	}
	rec := func(r helperapi.DNSRecord) helperapi.DNSConfig {
		return mod(func(c *helperapi.DNSConfig) { c.Records = append(c.Records, r) })
	}
	port := func(p helperapi.SRVPort) helperapi.DNSConfig {
		return rec(helperapi.DNSRecord{Name: "p.default.svc.cluster.local", Ports: []helperapi.SRVPort{p}})
	}
	bad := []struct {
		name string
		cfg  helperapi.DNSConfig
		want string
	}{
		{"empty domain", mod(func(c *helperapi.DNSConfig) { c.Domain = "" }), "empty domain"},
		{"root domain", mod(func(c *helperapi.DNSConfig) { c.Domain = "." }), "empty domain"},
		{"bad domain", mod(func(c *helperapi.DNSConfig) { c.Domain = "a..b" }), "not a domain name"},
		{"record outside the domain", rec(helperapi.DNSRecord{Name: "web.default.svc.example.com"}), "not under the domain"},
		{"record sharing a suffix", rec(helperapi.DNSRecord{Name: "xcluster.local"}), "not under the domain"},
		{"record at the apex", rec(helperapi.DNSRecord{Name: "cluster.local"}), "not under the domain"},
		{"empty record name", rec(helperapi.DNSRecord{Name: ""}), "empty name"},
		{"bad record name", rec(helperapi.DNSRecord{Name: "a..cluster.local"}), "not a domain name"},
		{"duplicate record", rec(helperapi.DNSRecord{Name: "Web.Default.svc.cluster.local."}), "given twice"},
		{"bad IP", rec(helperapi.DNSRecord{Name: "x.default.svc.cluster.local", IPs: []string{"10.0.0.300"}}), "bad IP"},
		{"empty IP", rec(helperapi.DNSRecord{Name: "x.default.svc.cluster.local", IPs: []string{""}}), "bad IP"},
		{"IP with zone", rec(helperapi.DNSRecord{Name: "x.default.svc.cluster.local", IPs: []string{"fe80::1%eth0"}}), "bad IP"},
		{"unspecified IP", rec(helperapi.DNSRecord{Name: "x.default.svc.cluster.local", IPs: []string{"0.0.0.0"}}), "bad IP"},
		{"unnamed port", port(helperapi.SRVPort{Protocol: "TCP", Port: 80}), "not a DNS label"},
		{"bad port name", port(helperapi.SRVPort{Name: "h_ttp", Protocol: "TCP", Port: 80}), "not a DNS label"},
		{"bad protocol", port(helperapi.SRVPort{Name: "http", Protocol: "ICMP", Port: 80}), "protocol"},
		{"port 0", port(helperapi.SRVPort{Name: "http", Protocol: "TCP", Port: 0}), "out of range"},
		{"port too high", port(helperapi.SRVPort{Name: "http", Protocol: "TCP", Port: 65536}), "out of range"},
		{"duplicate port", rec(helperapi.DNSRecord{Name: "p.default.svc.cluster.local", Ports: []helperapi.SRVPort{
			{Name: "http", Protocol: "TCP", Port: 80}, {Name: "HTTP", Protocol: "tcp", Port: 81}}}), "given twice"},
		{"upstream host name", mod(func(c *helperapi.DNSConfig) { c.Upstreams = []string{"dns.example:53"} }), "not an IP"},
		{"upstream bad port", mod(func(c *helperapi.DNSConfig) { c.Upstreams = []string{"10.0.0.1:99999"} }), "bad port"},
	}
	s, err := newServer(testConfig(1), nil, "/nonexistent")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := newServer(tt.cfg, nil, "/nonexistent"); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want an error containing %q", err, tt.want)
			}
			if err := s.Apply(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Apply: %v, want an error containing %q", err, tt.want)
			}
			if s.Generation() != 1 {
				t.Errorf("Generation() = %d after a refused Apply, want 1", s.Generation())
			}
		})
	}

	good := []struct {
		name      string
		cfg       helperapi.DNSConfig
		upstreams []string
		aaaa      int
	}{
		{"as given", testConfig(3, "10.0.0.1:5353"), []string{"10.0.0.1:5353"}, 0},
		{"mixed case, final dots, bare IPs", helperapi.DNSConfig{Generation: 3, Domain: "Cluster.LOCAL.",
			Upstreams: []string{"10.0.0.1", "::1", "[fe80::1]:53", "::ffff:10.0.0.2"},
			Records: []helperapi.DNSRecord{{Name: "Web.Default.SVC.cluster.local.", IPs: []string{"10.0.0.9", "10.0.0.9", "fd00::9"},
				Ports: []helperapi.SRVPort{{Name: "HTTP", Protocol: "tcp", Port: 80}}}}},
			[]string{"10.0.0.1:53", "[::1]:53", "[fe80::1]:53", "10.0.0.2:53"}, 1},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			s, err := newServer(tt.cfg, nil, "/nonexistent")
			if err != nil {
				t.Fatal(err)
			}
			snap := s.snap.Load()
			if !slices.Equal(snap.upstreams, tt.upstreams) {
				t.Errorf("upstreams %q, want %q", snap.upstreams, tt.upstreams)
			}
			for _, q := range []struct {
				name  string
				qtype uint16
				n     int
			}{
				{"web.default.svc.cluster.local.", dns.TypeA, 1},
				{"web.default.svc.cluster.local.", dns.TypeAAAA, tt.aaaa},
				{"_http._tcp.web.default.svc.cluster.local.", dns.TypeSRV, 1},
			} {
				m := new(dns.Msg)
				m.SetQuestion(q.name, q.qtype)
				w := &recorder{}
				s.ServeDNS(w, m)
				if w.msg.Rcode != dns.RcodeSuccess || len(w.msg.Answer) != q.n {
					t.Errorf("%s %s: %v", q.name, dns.TypeToString[q.qtype], w.msg)
				}
			}
		})
	}
}

func TestResolvConfUpstreams(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
		want          []string
	}{
		{"docker embedded DNS", "nameserver 127.0.0.11\noptions ndots:0\n", []string{"127.0.0.11:53"}},
		{"several", "search example.com\nnameserver 10.0.0.1\nnameserver ::1\n", []string{"10.0.0.1:53", "[::1]:53"}},
		{"none", "search example.com\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := newServer(testConfig(1), nil, path)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.snap.Load().upstreams; !slices.Equal(got, tt.want) {
				t.Errorf("upstreams %q, want %q", got, tt.want)
			}
		})
	}
	// Explicit upstreams win over the file.
	path := filepath.Join(dir, "several")
	s, err := newServer(testConfig(1, "10.9.9.9:53"), nil, path)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.snap.Load().upstreams; !slices.Equal(got, []string{"10.9.9.9:53"}) {
		t.Errorf("upstreams %q, want the configured one", got)
	}
}

func TestRotation(t *testing.T) {
	_, addr := newTestServer(t, testConfig(1, deadPort(t)))
	firsts := map[string]int{}
	for range 6 {
		r := query(t, "udp", addr, "db.default.svc.cluster.local.", dns.TypeA, 0)
		if len(r.Answer) != 3 {
			t.Fatalf("answer %v", r.Answer)
		}
		firsts[r.Answer[0].(*dns.A).A.String()]++
	}
	want := map[string]int{"10.222.0.5": 2, "10.222.0.6": 2, "10.222.0.7": 2}
	if len(firsts) != len(want) {
		t.Errorf("first addresses over 6 queries %v, want each of 3 twice", firsts)
	}
	for ip, n := range want {
		if firsts[ip] != n {
			t.Errorf("first addresses over 6 queries %v, want each of 3 twice", firsts)
			break
		}
	}
}

func TestProtocolDetails(t *testing.T) {
	s, addr := newTestServer(t, testConfig(1, deadPort(t)))
	t.Run("EDNS0 echoed", func(t *testing.T) {
		r := query(t, "udp", addr, "web.default.svc.cluster.local.", dns.TypeA, 1232)
		if opt := r.IsEdns0(); opt == nil || opt.Version() != 0 || r.Rcode != dns.RcodeSuccess {
			t.Errorf("reply %v, want NOERROR with an OPT record", r)
		}
	})
	t.Run("EDNS version 1: BADVERS", func(t *testing.T) {
		m := new(dns.Msg)
		m.SetQuestion("web.default.svc.cluster.local.", dns.TypeA)
		m.SetEdns0(1232, false)
		m.IsEdns0().SetVersion(1)
		w := &recorder{}
		s.ServeDNS(w, m)
		if w.msg.Rcode != dns.RcodeBadVers || len(w.msg.Answer) != 0 {
			t.Errorf("reply %v, want BADVERS", w.msg)
		}
	})
	t.Run("RD clear is echoed", func(t *testing.T) {
		m := new(dns.Msg)
		m.SetQuestion("web.default.svc.cluster.local.", dns.TypeA)
		m.RecursionDesired = false
		w := &recorder{}
		s.ServeDNS(w, m)
		if w.msg.RecursionDesired || !w.msg.RecursionAvailable || len(w.msg.Answer) != 1 {
			t.Errorf("reply %v, want rd clear, ra set, one answer", w.msg)
		}
	})
	t.Run("NOTIFY: not implemented", func(t *testing.T) {
		m := new(dns.Msg)
		m.SetNotify("cluster.local.")
		w := &recorder{}
		s.ServeDNS(w, m)
		if w.msg.Rcode != dns.RcodeNotImplemented {
			t.Errorf("reply %v, want NOTIMP", w.msg)
		}
	})
	t.Run("class CH under the domain: refused", func(t *testing.T) {
		m := new(dns.Msg)
		m.SetQuestion("web.default.svc.cluster.local.", dns.TypeA)
		m.Question[0].Qclass = dns.ClassCHAOS
		w := &recorder{}
		s.ServeDNS(w, m)
		if w.msg.Rcode != dns.RcodeRefused {
			t.Errorf("reply %v, want REFUSED", w.msg)
		}
	})
}

func TestServeLifecycle(t *testing.T) {
	s, addr := newTestServer(t, testConfig(1))
	if err := s.Serve(context.Background(), "127.0.0.1:0"); err == nil {
		t.Error("second Serve: nil error")
	}
	other, err := newServer(testConfig(1), nil, "/nonexistent")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Serve(context.Background(), addr); err == nil {
		t.Errorf("Serve on a port in use: nil error")
	}
	if err := other.Serve(context.Background(), addr); err == nil {
		t.Errorf("Serve after a failed Serve: nil error")
	}
}

// recorder is a dns.ResponseWriter that keeps the reply (in-process tests
// and benchmarks).
type recorder struct{ msg *dns.Msg }

func (w *recorder) LocalAddr() net.Addr { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53} }
func (w *recorder) RemoteAddr() net.Addr {
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (w *recorder) WriteMsg(m *dns.Msg) error {
	// Pack as the server would, so that a race on shared records shows.
	if _, err := m.Pack(); err != nil {
		return err
	}
	w.msg = m
	return nil
}
func (w *recorder) Write([]byte) (int, error) { return 0, errors.New("recorder: Write") }
func (w *recorder) Close() error              { return nil }
func (w *recorder) TsigStatus() error         { return nil }
func (w *recorder) TsigTimersOnly(bool)       {}
func (w *recorder) Hijack()                   {}

// TestPodNamesBelowAHeadlessService: the records of a headless Service's
// pods (HOSTNAME.SERVICE.NS.svc.cluster.local, which the Service
// controller gives each ready pod whose hostname and subdomain name the
// Service) are answered beside the Service's own name, in any record
// order, with the shorter forms a pod's search list expands and a PTR
// per name of the address.
func TestPodNamesBelowAHeadlessService(t *testing.T) {
	up := startUpstream(t)
	cfg := helperapi.DNSConfig{Generation: 1, Domain: "cluster.local", Upstreams: []string{up.addr}, Records: []helperapi.DNSRecord{
		// The pods' names first: their parent, the Service's name, is
		// made an empty non-terminal, then given its own addresses.
		{Name: "db-0.db.default.svc.cluster.local", IPs: []string{"10.222.0.5"}},
		{Name: "db-1.db.default.svc.cluster.local", IPs: []string{"10.222.0.6"}},
		{Name: "db.default.svc.cluster.local", IPs: []string{"10.222.0.5", "10.222.0.6"},
			Ports: []helperapi.SRVPort{{Name: "pg", Protocol: "TCP", Port: 5432}}},
	}}
	_, addr := newTestServer(t, cfg)
	for _, tt := range []struct {
		name   string
		qname  string
		qtype  uint16
		rcode  int
		answer []string
	}{
		{"a pod's name", "db-0.db.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"A 10.222.0.5"}},
		{"another pod's name", "DB-1.db.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"A 10.222.0.6"}},
		{"the Service's name", "db.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"A 10.222.0.5", "A 10.222.0.6"}},
		{"a pod name that is none", "db-2.db.default.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil},
		{"below a pod's name", "x.db-0.db.default.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil},
		{"a pod's name has no SRV", "db-0.db.default.svc.cluster.local.", dns.TypeSRV, dns.RcodeSuccess, nil},
		{"PTR: the Service's and the pod's names", "5.0.222.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess,
			[]string{"PTR db-0.db.default.svc.cluster.local.", "PTR db.default.svc.cluster.local."}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := query(t, "udp", addr, tt.qname, tt.qtype, 0)
			got := answers(r.Answer)
			slices.Sort(got) // the server rotates its answers
			if r.Rcode != tt.rcode || !slices.Equal(got, tt.answer) {
				t.Errorf("%s: rcode %s answer %q, want %s %q", tt.qname, dns.RcodeToString[r.Rcode], got, dns.RcodeToString[tt.rcode], tt.answer)
			}
		})
	}
	for _, tt := range []struct{ ns, name, fqdn string }{
		{"default", "db-0.db", "db-0.db.default.svc.cluster.local."},
		{"default", "db-0.db.default", "db-0.db.default.svc.cluster.local."},
		{"default", "db-0.db.default.svc", "db-0.db.default.svc.cluster.local."},
		{"other", "db-0.db.default", "db-0.db.default.svc.cluster.local."},
	} {
		t.Run("search "+tt.ns+"/"+tt.name, func(t *testing.T) {
			search := []string{tt.ns + ".svc.cluster.local", "svc.cluster.local", "cluster.local"}
			fqdn, ips := resolveSearch(t, addr, tt.name, search, 5)
			if fqdn != tt.fqdn || !slices.Equal(ips, []string{"A 10.222.0.5"}) {
				t.Errorf("got %s %q, want %s [A 10.222.0.5]", fqdn, ips, tt.fqdn)
			}
		})
	}
	if got := up.queries(); len(got) != 0 {
		t.Errorf("upstream saw %q, want nothing: every name is the cluster's", got)
	}
}
