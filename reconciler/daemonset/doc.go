// Package daemonset decides what a DaemonSet's controller does on
// dockctl's one host, the only node, as Kubernetes' DaemonSet controller
// (pkg/controller/daemon: manage, rollingUpdate, updateDaemonSetStatus)
// decides it for one node: Sync takes the set, the host's name, its
// revisions and its observed pods, and returns the pods to create and
// delete, the status and the events. It does nothing itself; an executor
// hands the pods to the pod runtime (docs/design.md §17).
//
// Invariants:
//   - The host runs one pod of the set (desiredNumberScheduled is 1),
//     named NAME-xxxxx and labelled controller-revision-hash with the
//     template hash of the revision it runs. A second one exists only
//     while maxSurge lets a new pod start beside the old one.
//   - Without maxSurge no pod is created while one exists, terminating
//     ones included: a replaced pod is gone before its successor starts.
//     With maxSurge the host keeps a live pod: a successor starts as soon
//     as none is running.
//   - A Failed or Succeeded pod is deleted, and a later decision creates
//     its successor.
//   - RollingUpdate: an old pod is deleted when maxUnavailable allows
//     (an unavailable old pod always may go), or with maxSurge a new pod
//     is created beside it and the old one deleted once the new one is
//     available. OnDelete replaces nothing.
//   - A decision that creates or deletes a pod takes no rolling-update
//     step: that waits for the next observation, as Kubernetes waits for
//     its expectations.
//   - Status is computed from the observed pods (the oldest of them).
package daemonset
