// Package services is dockctl's Service controller (docs/design.md §10):
// it gives each Service of an instance an address and host ports, a proxy
// (a helper container) forwarding to the ready pods it selects, and a
// status; and it runs the instance's DNS server, another helper. Package
// reconciler (the Deployment controller) wires it through Config — narrow
// views of the deployments' side, never the deployments' controller — and
// feeds its Tracker with every pod it judged, as the controllers of other
// workloads feed it the pods the pod runtime runs for them
// (OwnedPodEndpoints); this package never imports reconciler.
//
// It follows the reconcile contract (package reconcile) on its own Loop,
// keyed "namespace/name" for a Service, DNSKey for the DNS server,
// GatewayKey (and GatewayKey+"namespace/name" for a backend's pods) for
// the gateway and
// SweepKey for the sweep (at start, after an event-stream gap and every
// resync period; Owners maps helpers' events to keys). A Service is synced
// from scratch: its record and status are read, its endpoints taken from
// the Tracker, an address and host ports allocated, its proxy observed, a
// plan made and carried out; then the status is written when it changed.
//
// Files, one story each: services.go observes, plans, executes and writes
// a Service's status; endpoints.go is the Tracker, after kube-proxy's
// endpoints change tracker, which queues the Services a pod's change
// concerns; drain.go is its Drain, which the stopper calls before a
// graceful stop; ipalloc.go allocates addresses and host ports (pure), with
// hostports.go (host ports between Services and deployments: the older
// claim keeps one) and hostport_held.go (a host port a process outside
// Docker holds); serviceplan.go plans a helper container — a Service's
// proxy, or the DNS server — as pure data; dnsrecords.go and dnsctl.go are
// the DNS server's; gatewayctl.go runs the gateway's helper from the
// gateway controller's tables; serviceenv.go gives pods' containers their Service
// environment variables (Env); events.go records a status's changes.
//
// Invariants:
//   - A Service's helpers (role proxy, dns) are never a deployment's
//     orphans; a proxy is only ever created, started, pushed to or removed
//     for its own Service's key; a proxy of a Service this state directory
//     never knew is an orphan, left running unless PruneOrphans
//     (Config.Orphan).
//   - Nothing is pushed before the Tracker has been fed by a sweep of the
//     deployments: an empty tracker means "not known yet".
//   - A proxy is replaced only when what Docker fixes at its creation
//     changes (config hash: address, published ports, helper protocol),
//     never for an endpoint or Service port change, which is pushed and
//     acknowledged. Helper names, labels and config hashes are stable
//     across releases, so an upgrade re-creates no helper.
//   - A converged Service plans no op, so an idle controller writes nothing
//     to Docker (the proxy's state is remembered per container, and
//     re-pushed once after a controller restart).
//   - A running pod is drained (out of every Service, acknowledged, within
//     the bound its stopper gives) before its stop signal; a drain that
//     fails or does not answer never prevents the stop.
//   - A cluster IP given is the Service's until it is deleted, never given
//     to another; two live Services never publish the same host port, and
//     between a Service and a deployment the older claim keeps a host port.
//   - An unreadable Service record is never taken to mean "deleted".
package services
