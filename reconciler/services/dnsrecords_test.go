package services

import (
	"net"
	"testing"

	"github.com/miekg/dns"

	"github.com/dockctl/dockctl/internal/clusterdns"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
)

// dnsRecorder is a dns.ResponseWriter that keeps the reply.
type dnsRecorder struct{ msg *dns.Msg }

func (w *dnsRecorder) LocalAddr() net.Addr { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53} }
func (w *dnsRecorder) RemoteAddr() net.Addr {
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (w *dnsRecorder) WriteMsg(m *dns.Msg) error {
	w.msg = m
	return nil
}
func (w *dnsRecorder) Write([]byte) (int, error) { panic("the DNS server writes messages") }
func (w *dnsRecorder) Close() error              { return nil }
func (w *dnsRecorder) TsigStatus() error         { return nil }
func (w *dnsRecorder) TsigTimersOnly(bool)       {}
func (w *dnsRecorder) Hijack()                   {}

// askServedDNS answers a query from the config the rig's DNS server was
// last pushed, with the instance's real DNS server code.
func (r *svcRig) askServedDNS(name string, qtype uint16) *dns.Msg {
	r.t.Helper()
	var cfg helperapi.DNSConfig
	if _, ok := r.docker.Serving("i_dns", &cfg); !ok {
		r.t.Fatal("no DNS server serving a config")
	}
	cfg.Upstreams = []string{"127.0.0.1:9"} // never asked: every name here is under cluster.local
	srv, err := clusterdns.New(cfg, nil)
	if err != nil {
		r.t.Fatalf("the pushed DNS config is refused: %v", err)
	}
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), qtype)
	w := &dnsRecorder{}
	srv.ServeDNS(w, q)
	if w.msg == nil {
		r.t.Fatalf("no answer to %s %s", name, dns.TypeToString[qtype])
	}
	return w.msg
}

// TestServiceDNSNameFollowsReadyEndpoints: a headless Service with no ready
// endpoint has no name at all. The Kubernetes DNS specification, §2.4.1
// ("A Records" of a headless Service): "If there are no ready endpoints for
// the Service, the answer should be NXDOMAIN" (kubernetes/dns#245 made the
// specification say what kube-dns and CoreDNS's kubernetes plugin answer,
// coredns/coredns#1814); so do the Service's SRV names. A ClusterIP Service
// answers its ClusterIP whatever its endpoints, and a headless name that
// exists answers NODATA for a type it has none of.
func TestServiceDNSNameFollowsReadyEndpoints(t *testing.T) {
	const name = "web.default.svc.cluster.local"
	const srv = "_http._tcp." + name
	for _, tc := range []struct {
		name       string
		headless   bool
		pods       []PodEndpoint
		qname      string
		qtype      uint16
		wantRcode  int
		wantAnswer int
	}{
		{name: "headless, pods none ready: A is NXDOMAIN", headless: true, pods: webPods(2, 0), qname: name, qtype: dns.TypeA, wantRcode: dns.RcodeNameError},
		{name: "headless, pods none ready: AAAA is NXDOMAIN", headless: true, pods: webPods(2, 0), qname: name, qtype: dns.TypeAAAA, wantRcode: dns.RcodeNameError},
		{name: "headless, pods none ready: SRV is NXDOMAIN", headless: true, pods: webPods(2, 0), qname: srv, qtype: dns.TypeSRV, wantRcode: dns.RcodeNameError},
		{name: "headless, no pod: A is NXDOMAIN", headless: true, pods: nil, qname: name, qtype: dns.TypeA, wantRcode: dns.RcodeNameError},
		{name: "headless, one pod ready: A answers it", headless: true, pods: webPods(2, 1), qname: name, qtype: dns.TypeA, wantRcode: dns.RcodeSuccess, wantAnswer: 1},
		{name: "headless, one pod ready: SRV answers", headless: true, pods: webPods(2, 1), qname: srv, qtype: dns.TypeSRV, wantRcode: dns.RcodeSuccess, wantAnswer: 1},
		{name: "headless, one pod ready: AAAA is NODATA", headless: true, pods: webPods(2, 1), qname: name, qtype: dns.TypeAAAA, wantRcode: dns.RcodeSuccess},
		{name: "ClusterIP, pods none ready: A answers the ClusterIP", pods: webPods(2, 0), qname: name, qtype: dns.TypeA, wantRcode: dns.RcodeSuccess, wantAnswer: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSvcRig(t)
			r.feed(tc.pods)
			rec := webService("", 0)
			if tc.headless {
				rec.Service.Spec.ClusterIP = manifests.ClusterIPNone
			}
			r.svcs.put(rec)
			r.reconcile("default/web")
			r.reconcile(DNSKey)
			m := r.askServedDNS(tc.qname, tc.qtype)
			if m.Rcode != tc.wantRcode || len(m.Answer) != tc.wantAnswer {
				t.Errorf("%s %s: rcode %s with %d answers, want %s with %d:\n%s", tc.qname, dns.TypeToString[tc.qtype],
					dns.RcodeToString[m.Rcode], len(m.Answer), dns.RcodeToString[tc.wantRcode], tc.wantAnswer, m)
			}
		})
	}
}

// TestHeadlessDNSNameGoesWithItsLastReadyPod: the name leaves the DNS
// server when the last ready pod turns unready (NXDOMAIN, as above), and
// comes back with the next ready one: the readiness change queues the DNS
// server.
func TestHeadlessDNSNameGoesWithItsLastReadyPod(t *testing.T) {
	const name = "web.default.svc.cluster.local"
	r := newSvcRig(t)
	r.feed(webPods(2, 1))
	rec := webService("", 0)
	rec.Service.Spec.ClusterIP = manifests.ClusterIPNone
	r.svcs.put(rec)
	r.reconcile("default/web")
	r.reconcile(DNSKey)
	for i, step := range []struct {
		ready     int
		wantRcode int
	}{{0, dns.RcodeNameError}, {2, dns.RcodeSuccess}, {0, dns.RcodeNameError}} {
		r.tracker.Update("default/web", webPods(2, step.ready))
		r.reconcile("default/web")
		if !drainQueue(r)[DNSKey] {
			t.Fatalf("step %d: %d ready: the DNS server was not queued", i, step.ready)
		}
		r.reconcile(DNSKey)
		if m := r.askServedDNS(name, dns.TypeA); m.Rcode != step.wantRcode {
			t.Errorf("step %d: %d ready: rcode %s, want %s", i, step.ready, dns.RcodeToString[m.Rcode], dns.RcodeToString[step.wantRcode])
		}
	}
}
