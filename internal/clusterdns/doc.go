// Package clusterdns is the instance's DNS server (docs/design.md §10): it
// answers the names of Services under the cluster domain ("cluster.local")
// the way CoreDNS's kubernetes plugin does, and forwards every other query
// upstream. Pods reach it through Docker's embedded DNS (their --dns), which
// answers container names itself and forwards the rest here.
//
// Invariants:
//   - Queries are answered from an immutable snapshot built by Apply off the
//     query path and published with one atomic pointer store: a query sees
//     one whole config, never a mix, and takes no lock. The only mutable
//     state a snapshot holds is the per-name rotation counter (atomic).
//   - A name under the domain is never forwarded: unknown names (and every
//     name below them) get NXDOMAIN at once, so the search-list expansion of
//     ndots:5 never waits on an upstream that an offline host cannot reach.
//     Names that exist only as parents of records (empty non-terminals such
//     as "default.svc.cluster.local") get NODATA, not NXDOMAIN, because a
//     resolver may take NXDOMAIN to mean that nothing below exists (RFC 8020).
//   - Local answers carry AA and RA, TTL 5 s, and an SOA in the authority
//     section when negative (its minimum is 5 s too, so negative answers are
//     cached no longer than positive ones).
//   - Forwarded queries go over the protocol they came in on, to each
//     upstream at most once, each attempt bounded (2 s) and the whole within
//     a budget shorter than a stub resolver's 5 s default, so a client gets
//     SERVFAIL rather than silence when the upstreams are unreachable.
//   - Answers over UDP never exceed the client's buffer (512 bytes, or its
//     EDNS0 size): they are truncated with TC set, and the client retries
//     over TCP.
//   - Generations never go back: Apply refuses a config older than the one
//     served (ErrStale), as helperapi requires of every helper.
package clusterdns
