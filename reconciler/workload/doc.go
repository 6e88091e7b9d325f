// Package workload holds what the pure workload controllers (packages
// job, cronjob, statefulset, daemonset, replicaset) share: the pod as a
// controller observes it (ObservedPod, one type for every controller, so
// that an executor builds it once from the pod runtime), the Kubernetes
// judgements on it (active, finished, ready, available, when it
// finished), the events a decision records (Event, one type for every
// controller), revisions of a pod template, and stable generated pod
// names.
//
// Invariants:
//   - Nothing here reads a clock, a store or Docker: every judgement is a
//     function of the observed pod and the now it is given, so a decision
//     taken twice on the same observation is the same decision.
//   - Ready is the Ready condition true (podutil.IsPodReady, what the Job,
//     ReplicaSet and DaemonSet controllers count); RunningAndReady adds
//     phase Running (the StatefulSet's isRunningAndReady); Available is
//     ready for at least minReadySeconds by the pod's ReadySince, and a
//     terminating pod is neither healthy nor counted as an update target.
//   - Active is Kubernetes' IsPodActive: neither finished (Succeeded or
//     Failed) nor terminating, whatever the controller.
//   - A generated pod name is a function of the owner's name and the
//     names already taken: the same observation gives the same name, so
//     a controller restarted between deciding and creating asks for the same
//     pod, and no generated name collides with a pod that exists.
//     GenerateNames serves the controllers whose pods are interchangeable
//     (ReplicaSet, DaemonSet); the Job controller names its pods by index
//     and attempt with the same Suffix spelling (see package job), and a
//     StatefulSet's pods are named by ordinal.
package workload
