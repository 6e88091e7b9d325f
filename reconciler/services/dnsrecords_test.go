package services

import (
	"net"
	"slices"
	"strings"
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

// TestPodDNSNamesOfAHeadlessService: a pod with hostname H and subdomain
// S in namespace N, selected by a headless Service S, is
// H.S.N.svc.cluster.local while it is ready (or published not ready), as
// Kubernetes' DNS specification (§2.4.1, "hostname" of an endpoint) and
// CoreDNS answer; a pod of another subdomain, one without a hostname and
// the endpoints of a ClusterIP Service have no such name.
func TestPodDNSNamesOfAHeadlessService(t *testing.T) {
	const zone = ".default.svc.cluster.local"
	pod := func(name, ip string, ready bool, host, sub string) PodEndpoint {
		p := pe("default", "", name, ip, ready, app("web"), manifests.ContainerPort{Name: "http", ContainerPort: 8080})
		p.Hostname, p.Subdomain = host, sub
		return p
	}
	pods := []PodEndpoint{
		pod("web-0", "10.222.0.2", true, "web-0", "web"),
		pod("web-1", "10.222.0.3", false, "web-1", "web"),
		pod("x", "10.222.0.4", true, "x", "other"),
		pod("y", "10.222.0.5", true, "", "web"),
		pod("twin-a", "10.222.0.6", true, "twin", "web"),
		pod("twin-b", "10.222.0.7", true, "twin", "web"),
	}
	for _, tc := range []struct {
		name     string
		headless bool
		publish  bool
		qname    string
		want     string // the A answers, or "NXDOMAIN"
	}{
		{name: "a ready pod is its hostname in its subdomain", headless: true, qname: "web-0.web" + zone, want: "10.222.0.2"},
		{name: "a pod not ready has no name", headless: true, qname: "web-1.web" + zone, want: "NXDOMAIN"},
		{name: "publishNotReadyAddresses: a pod not ready has its name", headless: true, publish: true, qname: "web-1.web" + zone, want: "10.222.0.3"},
		{name: "a pod of another subdomain has no name here", headless: true, qname: "x.web" + zone, want: "NXDOMAIN"},
		{name: "a pod without a hostname has no name", headless: true, qname: "y.web" + zone, want: "NXDOMAIN"},
		{name: "pods sharing a hostname share its name", headless: true, qname: "twin.web" + zone, want: "10.222.0.6 10.222.0.7"},
		{name: "the Service's own name still answers every ready pod", headless: true, qname: "web" + zone,
			want: "10.222.0.2 10.222.0.4 10.222.0.5 10.222.0.6 10.222.0.7"},
		{name: "a ClusterIP Service names no pod", qname: "web-0.web" + zone, want: "NXDOMAIN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSvcRig(t)
			r.feed(pods)
			rec := webService("", 0)
			if tc.headless {
				rec.Service.Spec.ClusterIP = manifests.ClusterIPNone
			}
			rec.Service.Spec.PublishNotReadyAddresses = tc.publish
			r.svcs.put(rec)
			r.reconcile("default/web")
			r.reconcile(DNSKey)
			m := r.askServedDNS(tc.qname, dns.TypeA)
			got := dns.RcodeToString[m.Rcode]
			if m.Rcode == dns.RcodeSuccess {
				var ips []string
				for _, a := range m.Answer {
					ips = append(ips, a.(*dns.A).A.String())
				}
				slices.Sort(ips) // the server rotates its answers
				got = strings.Join(ips, " ")
			}
			if got != tc.want {
				t.Errorf("%s A: %s, want %s", tc.qname, got, tc.want)
			}
		})
	}
}

// TestPodDNSNameFollowsReadiness: a pod's name comes and goes with its
// readiness, the change queueing the DNS server.
func TestPodDNSNameFollowsReadiness(t *testing.T) {
	const name = "web-0.web.default.svc.cluster.local"
	pods := func(ready bool) []PodEndpoint {
		p := pe("default", "", "web-0", "10.222.0.2", ready, app("web"), manifests.ContainerPort{Name: "http", ContainerPort: 8080})
		q := pe("default", "", "web-1", "10.222.0.3", true, app("web"), manifests.ContainerPort{Name: "http", ContainerPort: 8080})
		p.Hostname, p.Subdomain = "web-0", "web"
		return []PodEndpoint{p, q}
	}
	r := newSvcRig(t)
	r.feed(pods(true))
	rec := webService("", 0)
	rec.Service.Spec.ClusterIP = manifests.ClusterIPNone
	r.svcs.put(rec)
	r.reconcile("default/web")
	r.reconcile(DNSKey)
	for i, ready := range []bool{false, true} {
		r.tracker.Update("default/web", pods(ready))
		r.reconcile("default/web")
		if !drainQueue(r)[DNSKey] {
			t.Fatalf("step %d: the DNS server was not queued", i)
		}
		r.reconcile(DNSKey)
		want := dns.RcodeNameError
		if ready {
			want = dns.RcodeSuccess
		}
		if m := r.askServedDNS(name, dns.TypeA); m.Rcode != want {
			t.Errorf("step %d: ready %v: rcode %s, want %s", i, ready, dns.RcodeToString[m.Rcode], dns.RcodeToString[want])
		}
	}
}
