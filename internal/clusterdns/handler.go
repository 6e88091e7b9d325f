package clusterdns

import (
	"context"
	"net"
	"strings"

	"github.com/miekg/dns"
)

// ednsSize is the UDP payload size advertised in our replies' OPT record,
// and the most a local UDP answer will take even if a client offers more.
const ednsSize = dns.DefaultMsgSize

// ServeDNS answers one query (dns.Handler). Lock-free: it reads the current
// snapshot once and answers from it alone.
func (s *Server) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	snap := s.snap.Load()
	if r.Opcode != dns.OpcodeQuery || len(r.Question) != 1 {
		m := new(dns.Msg)
		m.SetRcode(r, dns.RcodeNotImplemented)
		if len(r.Question) != 1 {
			m.Rcode = dns.RcodeFormatError
		}
		s.write(w, r, m)
		return
	}
	q := r.Question[0]
	name := strings.ToLower(q.Name) // returns q.Name itself when already lower case
	if snap.inDomain(name) {
		s.write(w, r, snap.answer(r, q, name))
		return
	}
	if q.Qtype == dns.TypePTR && q.Qclass == dns.ClassINET {
		if ptr := snap.ptr[name]; ptr != nil {
			m := reply(r)
			m.Answer = copyRRs(ptr)
			s.write(w, r, m)
			return
		}
	}
	s.forward(w, r, snap)
}

// inDomain tells whether name (lower case) is the domain or under it.
func (snap *snapshot) inDomain(name string) bool {
	if strings.IndexByte(name, '\\') >= 0 {
		// An escaped dot (`a\.cluster.local.`) is no label boundary: let
		// the library parse the labels. Rare enough to be off the fast path.
		return dns.IsSubDomain(snap.domain, name)
	}
	return name == snap.domain || strings.HasSuffix(name, snap.dotDomain)
}

// reply starts an authoritative answer to r.
func reply(r *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	m.RecursionAvailable = true
	m.Compress = true
	return m
}

// answer answers a query for name, which is under the domain: from the
// snapshot, never from upstream.
func (snap *snapshot) answer(r *dns.Msg, q dns.Question, name string) *dns.Msg {
	m := reply(r)
	if q.Qclass != dns.ClassINET && q.Qclass != dns.ClassANY {
		m.Rcode = dns.RcodeRefused
		return m
	}
	e := snap.names[name]
	if e == nil {
		m.Rcode = dns.RcodeNameError
		m.Ns = []dns.RR{snap.soa}
		return m
	}
	switch q.Qtype {
	case dns.TypeA:
		m.Answer = e.rotate(e.a)
	case dns.TypeAAAA:
		m.Answer = e.rotate(e.aaaa)
	case dns.TypeANY:
		m.Answer = append(e.rotate(e.a), e.aaaa...)
	case dns.TypeSRV:
		m.Answer = copyRRs(e.srv)
		m.Extra = copyRRs(e.extra)
	case dns.TypeSOA:
		if e.soa {
			m.Answer = []dns.RR{snap.soa}
		}
	}
	if len(m.Answer) == 0 {
		// NODATA: the name exists, not with this type.
		m.Ns = []dns.RR{snap.soa}
	}
	return m
}

// rotate returns a copy of rrs starting one further on each call, so that
// clients taking the first address spread over a headless Service's pods.
func (e *entry) rotate(rrs []dns.RR) []dns.RR {
	n := len(rrs)
	if n <= 1 {
		return copyRRs(rrs)
	}
	i := int(e.next.Add(1) % uint32(n))
	out := make([]dns.RR, 0, n)
	return append(append(out, rrs[i:]...), rrs[:i]...)
}

func copyRRs(rrs []dns.RR) []dns.RR {
	if len(rrs) == 0 {
		return nil
	}
	return append(make([]dns.RR, 0, len(rrs)), rrs...)
}

// forward sends r to the upstreams in turn, over the protocol r came in on,
// and relays the first answer; SERVFAIL when none answers in time.
func (s *Server) forward(w dns.ResponseWriter, r *dns.Msg, snap *snapshot) {
	client := s.udpClient
	if isTCP(w) {
		client = s.tcpClient
	}
	select {
	case s.forwards <- struct{}{}:
		defer func() { <-s.forwards }()
	default:
		s.log.Debug("clusterdns: too many queries waiting on upstreams", "name", r.Question[0].Name)
		s.servfail(w, r)
		return
	}
	base := context.Background()
	if p := s.serveCtx.Load(); p != nil {
		base = *p
	}
	ctx, cancel := context.WithTimeout(base, forwardBudget)
	defer cancel()
	for _, up := range snap.upstreams {
		resp, _, err := client.ExchangeContext(ctx, r, up)
		if err == nil {
			resp.Id = r.Id
			// We recurse for the client whatever the upstream says: Go's
			// resolver takes an empty answer without AA or RA for a lame
			// referral. The rest (AA, RCODE, sections) is the upstream's;
			// only the size is ours to enforce.
			resp.RecursionAvailable = true
			s.writeSized(w, r, resp)
			return
		}
		s.log.Debug("clusterdns: upstream failed", "upstream", up, "name", r.Question[0].Name, "err", err)
		if ctx.Err() != nil {
			break
		}
	}
	s.servfail(w, r)
}

func (s *Server) servfail(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetRcode(r, dns.RcodeServerFailure)
	m.RecursionAvailable = true
	s.write(w, r, m)
}

// write sends a reply of ours: with an OPT record when the query had one
// (BADVERS for an EDNS version we do not speak), sized for the transport.
func (s *Server) write(w dns.ResponseWriter, r *dns.Msg, m *dns.Msg) {
	if opt := r.IsEdns0(); opt != nil {
		if opt.Version() != 0 {
			m.Answer, m.Ns, m.Extra = nil, nil, nil
			m.Rcode = dns.RcodeBadVers
		}
		m.SetEdns0(ednsSize, false)
	}
	s.writeSized(w, r, m)
}

// writeSized truncates m to what the client can take (UDP: 512 bytes, or
// its EDNS0 size up to ednsSize; TC set when anything was left out) and
// sends it.
func (s *Server) writeSized(w dns.ResponseWriter, r *dns.Msg, m *dns.Msg) {
	size := dns.MaxMsgSize
	if !isTCP(w) {
		size = dns.MinMsgSize
		if opt := r.IsEdns0(); opt != nil {
			size = min(max(int(opt.UDPSize()), dns.MinMsgSize), ednsSize)
		}
	}
	m.Truncate(size)
	if err := w.WriteMsg(m); err != nil {
		s.log.Debug("clusterdns: write reply", "remote", w.RemoteAddr(), "err", err)
	}
}

func isTCP(w dns.ResponseWriter) bool {
	_, ok := w.RemoteAddr().(*net.TCPAddr)
	return ok
}
