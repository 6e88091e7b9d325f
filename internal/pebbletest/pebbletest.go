// Package pebbletest holds what the ACME tests against pebble (the ACME
// test server) share: the gateway controller's unit tests run pebble in
// process, the e2e test as a process; both point its validation authority
// at the same DNS stub. Only _test.go files import it.
package pebbletest

import (
	"net"
	"testing"

	"github.com/miekg/dns"
)

// DNSStub answers every A question with 127.0.0.1 and every other with no
// record, over TCP (as pebble asks), until the test ends; it returns its
// address for pebble's -dnsserver (or va.New's resolver). Pebble's
// validation stays on: it fetches each HTTP-01 challenge from 127.0.0.1.
func DNSStub(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("DNS stub: %v", err)
	}
	srv := &dns.Server{Listener: l, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		for _, q := range r.Question {
			if q.Qtype == dns.TypeA {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(127, 0, 0, 1)})
			}
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return l.Addr().String()
}
