// Package gateway is dockctl's gateway controller (docs/design.md §10, the
// gateway): it serves Ingress and the Gateway API's GatewayClass, Gateway
// and HTTPRoute (with ReferenceGrant), compiling every live routing object
// of the instance into one table (internal/gatewayroutes) and writing each
// object's status as the specifications define it. Package reconciler runs
// it on a loop of its own with one key (Key), queued by any change of a
// routing object, Service, Secret or Namespace and by every resync.
//
// Files: gateway.go reads the objects, compiles and writes; status.go
// maps the compiled status onto the API's status types; acme.go runs
// automatic HTTPS (docs/design.md §10, ACME) when Config.ACME is set.
//
// Invariants:
//   - A sync writes only statuses that changed (the store compares), and
//     records a problem's Warning event once per change, never per resync.
//   - A condition keeps its lastTransitionTime while its status stays
//     (metav1.Condition), and carries the generation it observed.
//   - Nothing is reported Programmed, and no address is given, before the
//     gateway's data plane acknowledged the config of that generation
//     (Config.Programmed, or the DataPlane's GatewayProgrammed): until
//     then nothing answers there. The data plane (the gateway helper, its
//     pushes and drains) is the Service controller's (SetDataPlane), which
//     every sync hands the compiled table.
//   - Another controller's GatewayClass, and its Gateways, get no status.
//   - An unreadable record fails the sync (retried): compiling without it
//     could drop a route that exists.
//   - Without Config.ACME the table is the compile's, untouched. With it,
//     only opted-in objects' hosts are ordered, a Secret dockctl did not
//     make is never written, the CA validates a challenge only once the
//     gateway acknowledged a config carrying it, and no order runs inside
//     a sync (each has its goroutine; a failure backs off that one only).
package gateway
