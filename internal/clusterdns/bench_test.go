package clusterdns

import (
	"fmt"
	"testing"

	"github.com/miekg/dns"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// benchConfig is a cluster of 1000 Services, so that lookups are measured
// against a map of realistic size.
func benchConfig() helperapi.DNSConfig {
	cfg := testConfig(1)
	for i := range 1000 {
		cfg.Records = append(cfg.Records, helperapi.DNSRecord{
			Name: fmt.Sprintf("svc%d.ns%d.svc.cluster.local", i, i%10),
			IPs:  []string{fmt.Sprintf("10.222.%d.%d", 8+i/250, 1+i%250)},
		})
	}
	return cfg
}

var benchNames = []struct{ name, qname string }{
	{"cluster-name", "web.default.svc.cluster.local."},
	{"headless-3", "db.default.svc.cluster.local."},
	{"nxdomain", "web.default.svc.cluster.local.default.svc.cluster.local."},
}

// BenchmarkLookupUDP: queries per second over UDP on 127.0.0.1, one
// connection per client goroutine (GOMAXPROCS of them).
func BenchmarkLookupUDP(b *testing.B) {
	s, err := newServer(benchConfig(), nil, "/nonexistent")
	if err != nil {
		b.Fatal(err)
	}
	addr := startServer(b, s)
	for _, bn := range benchNames {
		b.Run(bn.name, func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				c := &dns.Client{Net: "udp", Timeout: deadline}
				co, err := c.Dial(addr)
				if err != nil {
					b.Error(err)
					return
				}
				defer co.Close()
				m := new(dns.Msg)
				m.SetQuestion(bn.qname, dns.TypeA)
				for pb.Next() {
					r, _, err := c.ExchangeWithConn(m, co)
					if err != nil || (r.Rcode != dns.RcodeSuccess && r.Rcode != dns.RcodeNameError) {
						b.Errorf("%v %v", r, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
		})
	}
}

// BenchmarkServeDNS: the handler alone (snapshot lookup, reply, pack),
// without sockets.
func BenchmarkServeDNS(b *testing.B) {
	s, err := newServer(benchConfig(), nil, "/nonexistent")
	if err != nil {
		b.Fatal(err)
	}
	for _, bn := range benchNames {
		b.Run(bn.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				m := new(dns.Msg)
				m.SetQuestion(bn.qname, dns.TypeA)
				w := &recorder{}
				for pb.Next() {
					s.ServeDNS(w, m)
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
		})
	}
}
