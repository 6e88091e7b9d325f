// Package dataplane is what runs inside dockctl's helper containers
// (docs/design.md §10): the Service proxy, the control server through which
// the controller pushes configs to a serving helper (the proxy, and the DNS
// server of package clusterdns), the `helper push` client that the
// controller execs (`--config -`: the config on stdin, since a config of
// thousands of endpoints exceeds Linux's 128 KiB per argument), and the
// probe relay. Main is the entry point of the
// hidden `dockctl helper` command. The wire format is package helperapi.
//
// Invariants of the proxy:
//   - The endpoint set is an immutable snapshot behind an atomic.Pointer: a
//     connection reads it without a lock, and a config swap is one store, so
//     no connection ever sees half of two configs.
//   - Apply returns only after every endpoint choice made from the previous
//     snapshot has finished dialling (each choice pins the snapshot it was
//     made from until its dial returns), so once a push is acknowledged a
//     removed endpoint receives no new connection. Open connections are
//     never cut by an Apply, whatever it removes — a removed port's listener
//     is closed, its connections are left to finish. UDP has no connection:
//     a UDP session whose endpoint was removed is dropped (kube-proxy flushes
//     conntrack the same way), the client's next datagram opens a new one.
//   - A new connection tries the endpoints round robin, each at most once,
//     until one accepts it; with none left (or none at all) the client's
//     connection is reset at once rather than left hanging.
//   - Bytes are copied both ways through pooled 32 KiB buffers, each taken
//     only while a read has data and until it is written: an idle
//     connection holds none, so memory follows the connections moving
//     bytes, not the connections open. One side's EOF is passed on as a
//     half-close (CloseWrite), so protocols that half-close work; an error
//     on either side aborts both (a reset is passed on as a reset).
//   - Listeners exist exactly for the ports of the applied config; a failed
//     bind fails the whole Apply and leaves the previous config serving.
//
// Invariants of the gateway (helper gateway, docs/design.md §10):
//   - Its config (ports, virtual hosts, routes, weighted backends with
//     their ready endpoints, certificates) is an immutable snapshot behind
//     an atomic.Pointer, read once per request and once per TLS handshake:
//     an Apply swaps it in one store, so a new route, a removed endpoint or
//     a renewed certificate applies to the next request or handshake, and
//     open connections, WebSockets and TLS sessions are never cut by it.
//   - As the proxy's, Apply returns only once requests that chose an
//     endpoint from the previous snapshot have their connection to it (or
//     gave up, bounded by the dial timeout), so an acknowledged removal
//     receives no new request.
//   - Routes are matched in the config's order (the route table's,
//     internal/gatewayroutes), the first match wins: no route is 404, no
//     endpoint 503, no backend or an unresolved one 500 (the Gateway API's
//     rule). Requests and responses stream (no buffering; on net/http's
//     path a response is copied through a pooled 32 KiB buffer held while
//     it streams, on the fast path through the connections' own 4 KiB
//     buffers, as net/http's server and Transport hold per connection); Upgrade
//     (WebSockets) and HTTP/2 (h2 by ALPN, h2c to flagged backends, gRPC
//     with trailers) pass through; X-Forwarded-For/-Proto/-Host are set;
//     Accept-Encoding is the client's; one JSON access log line per
//     request goes to stdout, written asynchronously in order (accessLog:
//     the request never waits for the log driver), every pending line by
//     Shutdown.
//   - Plain-HTTP ports accept on an HTTP/1.1 fast path (gateway_fast.go):
//     a request whose head is plainly safe (HTTP/1.1, origin form, a
//     Content-Length body or none, no Upgrade, Expect or Transfer-Encoding,
//     one Host and at most one Content-Length) on a route without filters
//     to an HTTP/1.1 backend is relayed over a pooled keep-alive connection
//     to the endpoint, with the same matcher, snapshot pinning, forwarded
//     headers and access log line as net/http's path. Anything else is
//     handed, with the bytes read, to the port's http.Server, and the
//     connection stays there. A pooled connection to an endpoint no longer
//     served is closed, not reused; one the endpoint closed between two
//     requests gets a body-less idempotent request sent again on a new
//     connection, never a failure.
//   - Private keys are never in an error, a log line or argv: the config
//     comes on stdin (--config -) or by push.
//
// Invariants of the control server (generic over Target, so the proxy and
// the DNS server share it):
//   - Pushes are applied one at a time, and only if their generation is not
//     older than the served one (helperapi); equal generations are applied
//     and acknowledged again.
//   - The applied config reaches helperapi.StateFile (temp file, fsync,
//     rename, fsync of the directory) before the acknowledgement is sent, and
//     a helper starts from the newer of its --config and that file, so a
//     restart never serves less than what was acknowledged.
package dataplane
