// Package replicaset decides what a standalone ReplicaSet's controller
// does, as Kubernetes' ReplicaSet controller (pkg/controller/replicaset)
// decides it: Sync takes the set and its observed pods and returns the
// pods to create and delete, the status and the events. It does nothing
// itself; an executor hands the pods to the pod runtime (docs/design.md
// §17).
//
// Invariants:
//   - The active pods (neither Failed, Succeeded nor terminating) are
//     brought to spec.replicas: missing ones are created, named
//     NAME-xxxxx (a suffix generated once and kept for the pod's life),
//     and surplus ones deleted in Kubernetes' order (ActivePodsWithRanks:
//     pending before running, not ready before ready, lower
//     pod-deletion-cost first, ready for less time (by powers of two)
//     first, more restarts first, newer first).
//   - A finished pod is neither counted nor deleted: it is replaced, and
//     kept for its logs.
//   - No rollout: a changed template reaches only the pods created after
//     it.
//   - Status is computed from the observed active pods.
package replicaset
