// Package probe is how the pod runtime's httpGet, tcpSocket, grpc and exec
// probes reach pods (docs/design.md §10, Probes): Runner runs one attempt
// (a podruntime.ProbeRunner), directly from the controller or relayed
// through the instance's DNS helper, as Route decides and remembers.
//
// Invariants: a probe attempt that could not be made (no relay, a route
// not decided yet and a dial that got nowhere) wraps
// podruntime.ErrNoVerdict and never counts towards a restart; an HTTP
// probe follows no redirect, uses no proxy and verifies no certificate,
// as the kubelet's; the package asks Docker only through ExecDocker and
// RelayDocker and joins the controller to no network.
package probe
