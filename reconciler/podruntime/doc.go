// Package podruntime is dockctl's kubelet: it makes the pods a workload
// controller decided should exist real on Docker and reads back their
// status (docs/design.md, "Pod runtime").
//
// The seam: a workload controller (the Deployment controller in package
// reconciler today; StatefulSet, Job, DaemonSet… later) decides which pods
// should exist — namespace, name, template, owner, restart policy, identity
// — and reads their status; the pod runtime makes each pod real and keeps
// it healthy. No workload controller creates a container itself, and no
// code of this package knows a workload kind: a pod's owner is data (kind,
// name, uid).
//
// Invariants:
//   - A Secret's value never reaches an error, a log line, an event or a
//     status: what the resolvers return as an error or a skip reason is
//     built from names, keys and types.
//   - Resolving a pod's environment or pull credentials reads the
//     ConfigStore and nothing else: it is a pure function of the template,
//     the store and the pod's identity, so the planner may call it to
//     judge a revision without creating anything.
//   - A reference a template makes to a ConfigMap or Secret that does not
//     exist is either optional (skipped, as the kubelet skips it) or keeps
//     the pod from being created (MissingRefsError), never half applied.
package podruntime
