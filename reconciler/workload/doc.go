// Package workload holds what the pure workload controllers (packages
// statefulset, daemonset, replicaset) share: the pod as a controller
// observes it (ObservedPod), the Kubernetes readiness and availability
// judgements on it, the events a decision records, revisions of a pod
// template, and stable generated pod names.
//
// Invariants:
//   - Nothing here reads a clock, a store or Docker: every judgement is a
//     function of the observed pod and the now it is given, so a decision
//     taken twice on the same observation is the same decision.
//   - Ready is Kubernetes' "running and ready" (phase Running and the Ready
//     condition true); Available is ready for at least minReadySeconds by
//     the pod's ReadySince, and a terminating pod is neither healthy nor
//     counted as an update target.
//   - A generated pod name is a function of the owner's name and the
//     names already taken: the same observation gives the same name, so
//     a controller restarted between deciding and creating asks for the same
//     pod, and no generated name collides with a pod that exists.
package workload
