package clusterdns

import (
	"context"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// deadline bounds every wait in these tests: generous, the machine is shared.
const deadline = 30 * time.Second

// testConfig is a small cluster: a ClusterIP Service with named ports in
// two namespaces, a headless Service, a Service without ready pods.
func testConfig(gen int64, upstreams ...string) helperapi.DNSConfig {
	return helperapi.DNSConfig{
		Generation: gen,
		Domain:     "cluster.local",
		Upstreams:  upstreams,
		Records: []helperapi.DNSRecord{
			{Name: "web.default.svc.cluster.local", IPs: []string{"10.222.8.10"}, Ports: []helperapi.SRVPort{
				{Name: "http", Protocol: "TCP", Port: 80},
				{Name: "metrics", Protocol: "TCP", Port: 9090},
			}},
			{Name: "web.other.svc.cluster.local", IPs: []string{"10.222.8.11"}},
			{Name: "db.default.svc.cluster.local", IPs: []string{"10.222.0.5", "10.222.0.6", "10.222.0.7"},
				Ports: []helperapi.SRVPort{{Name: "pg", Protocol: "TCP", Port: 5432}}},
			{Name: "empty.default.svc.cluster.local"},
		},
	}
}

// startServer serves s on 127.0.0.1:0 until the test ends and returns the
// address (the same port for UDP and TCP).
func startServer(t testing.TB, s *Server) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, "127.0.0.1:0") }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(deadline):
			t.Errorf("Serve did not return after cancel")
		}
	})
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatalf("Serve: %v", err)
	case <-time.After(deadline):
		t.Fatalf("server not ready")
	}
	if s.UDPAddr().String() != s.TCPAddr().String() {
		t.Fatalf("UDP %v and TCP %v differ", s.UDPAddr(), s.TCPAddr())
	}
	return s.UDPAddr().String()
}

func newTestServer(t testing.TB, cfg helperapi.DNSConfig) (*Server, string) {
	t.Helper()
	s, err := newServer(cfg, nil, "/nonexistent/resolv.conf")
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s, startServer(t, s)
}

// query sends one question over network ("udp" or "tcp") and returns the
// reply. edns > 0 adds an OPT record with that size.
func query(t testing.TB, network, addr, name string, qtype uint16, edns uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	if edns > 0 {
		m.SetEdns0(edns, false)
	}
	c := &dns.Client{Net: network, Timeout: deadline}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s %s: %v", network, name, dns.TypeToString[qtype], err)
	}
	if r.Id != m.Id {
		t.Fatalf("reply id %d, query id %d", r.Id, m.Id)
	}
	return r
}

// answers renders a section as sorted "TYPE rdata" strings.
func answers(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		if rr.Header().Rrtype == dns.TypeOPT {
			continue
		}
		s := rr.String()
		s = strings.TrimPrefix(s, rr.Header().String()) // owner, TTL, class, type
		out = append(out, dns.TypeToString[rr.Header().Rrtype]+" "+s)
	}
	sort.Strings(out)
	return out
}

// fakeUpstream is an upstream nameserver on 127.0.0.1 that records every
// query and answers A 192.0.2.1 (or n records with bigA).
type fakeUpstream struct {
	addr string
	mu   sync.Mutex
	seen []string // "proto name"
	bigA int      // answer this many A records
}

func startUpstream(t testing.TB) *fakeUpstream {
	t.Helper()
	u := &fakeUpstream{}
	pc, ln, err := listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.addr = pc.LocalAddr().String()
	var wg sync.WaitGroup
	var servers []*dns.Server
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: u}, {Listener: ln, Handler: u}} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		wg.Add(1)
		go func() { defer wg.Done(); _ = srv.ActivateAndServe() }()
		select {
		case <-started:
		case <-time.After(deadline):
			t.Fatal("fake upstream did not start")
		}
		servers = append(servers, srv)
	}
	t.Cleanup(func() {
		for _, srv := range servers {
			_ = srv.Shutdown()
		}
		wg.Wait()
	})
	return u
}

func (u *fakeUpstream) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	proto := "udp"
	if isTCP(w) {
		proto = "tcp"
	}
	u.mu.Lock()
	u.seen = append(u.seen, proto+" "+r.Question[0].Name)
	n := u.bigA
	u.mu.Unlock()
	m := new(dns.Msg)
	m.SetReply(r) // RA clear: the server must set it
	for i := range max(n, 1) {
		m.Answer = append(m.Answer, &dns.A{
			Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60},
			A:   net.IPv4(192, 0, 2, byte(1+i)),
		})
	}
	if opt := r.IsEdns0(); opt != nil {
		m.SetEdns0(opt.UDPSize(), false)
	}
	_ = w.WriteMsg(m) // deliberately not truncated: the server must do it
}

func (u *fakeUpstream) setBigA(n int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.bigA = n
}

func (u *fakeUpstream) queries() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.seen)
}

// blackhole is an upstream that accepts queries and never answers: a UDP
// socket nobody reads, a TCP listener whose connections stay silent.
func blackhole(t testing.TB) string {
	t.Helper()
	pc, ln, err := listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		pc.Close()
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return pc.LocalAddr().String()
}

// deadPort is an address where nothing listens (UDP: ICMP refused; TCP: RST).
func deadPort(t testing.TB) string {
	t.Helper()
	pc, ln, err := listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	ln.Close()
	return addr
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
