// Package statefulset decides what a StatefulSet's controller does, as
// Kubernetes' StatefulSet controller (pkg/controller/statefulset) decides
// it: Sync takes the set, its revisions, its previous status and the
// observed pods and claims, and returns the pods and claims to create and
// delete, the status computed from the observation, the events to record
// and when to look again. It does nothing itself: an executor hands the
// pods to the pod runtime (docs/design.md §17) and the claims to the store.
//
// Files, one story each: identity.go names a pod and builds it (ordinal,
// hostname, subdomain, labels, claim volumes, revision by partition);
// sync.go the replica loop (create, recreate a finished pod, wait under
// OrderedReady) and scale-down; update.go the rolling update; claims.go
// the claims from volumeClaimTemplates and their retention policy;
// status.go the status.
//
// Invariants:
//   - Pods are NAME-i for i in [ordinals.start, ordinals.start+replicas):
//     hostname NAME-i, subdomain serviceName, labels
//     statefulset.kubernetes.io/pod-name, apps.kubernetes.io/pod-index and
//     controller-revision-hash. A pod whose name has no ordinal of the set
//     is ignored, never deleted.
//   - OrderedReady: a pod is created only when every lower ordinal is
//     Running, Ready and available for minReadySeconds; at most one pod is
//     created or deleted per decision; a scale-down removes the highest
//     ordinal first and nothing while a lower ordinal is unhealthy (but
//     the first unhealthy pod itself). Parallel: all at once, no waiting.
//   - A Failed or Succeeded pod is deleted and created again by a later
//     decision (after it is gone), so its identity and claims come back.
//   - A pod missing below the partition is created at the current
//     revision, at or above it at the update revision. RollingUpdate
//     replaces from the highest ordinal down to the partition, one at a
//     time waiting for health, or up to maxUnavailable unavailable pods;
//     OnDelete never replaces a pod, it only creates missing ones.
//   - The current revision becomes the update revision once every pod is
//     updated and ready (RollingUpdate only).
//   - A claim TEMPLATE-NAME-i is created before pod i, never adopted from
//     another owner, and deleted only as persistentVolumeClaimRetentionPolicy
//     says: whenScaled Delete once pod i is gone past the end of the
//     range, whenDeleted Delete when the set is deleted. Retain (the
//     default) keeps it through pod replacement, scale-down and deletion.
//   - Status is computed from the observed pods only: a pod created or
//     deleted by this decision counts once it is observed.
package statefulset
