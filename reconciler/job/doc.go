// Package job is the Job controller's decision (docs/design.md §17, the
// workload kinds of ../shared/DESIGN.md §13): a pure function from a
// batch/v1 Job, its last status and its observed pods (workload.ObservedPod,
// the type every workload controller observes pods as) to what should
// happen next — pods to create (as podruntime.PodSpec), pods to delete,
// the Job's new status, the events to record, when to decide again and
// whether the Job's time to live is over. It follows Kubernetes' Job
// controller (pkg/controller/job: syncJob, manageJob, the pod failure
// backoff, indexed completions, podFailurePolicy, backoffLimitPerIndex)
// so that a Job finishes here as it would on a cluster. An executor
// carries the decision out through the pod runtime; nothing here calls
// Docker, reads a clock or keeps memory between calls.
//
// Files, one story each: sync.go is the decision (Sync) and how it ends
// a Job; manage.go how many pods run (parallelism, completions,
// suspend); indexes.go Indexed Jobs' compressed index sets; failure.go
// which failures count (podFailurePolicy, OnFailure restarts, per-index
// limits); backoff.go when a new pod may follow failures; pods.go the
// PodSpec of a new pod (names, index, hostname, labels).
//
// Invariants:
//   - Sync is deterministic: equal inputs give equal decisions, pod names
//     included (a new pod's name is derived from the Job's name, its
//     index and the first attempt number not taken by an observed pod).
//     So a pod asked for but not observed yet is asked for again under
//     the same name, never as a second pod: the names do the work of
//     Kubernetes' creation expectations.
//   - These names are the Job's own, not workload.GenerateNames': an
//     Indexed Job's pod is named JOB-INDEX-xxxxx (Kubernetes'
//     generateName for an index), and the suffix is drawn per index and
//     attempt, so that the replacement of a failed index-3 pod is found
//     among index 3's names whatever other indexes do. They share the
//     suffix alphabet and the generateName bound (workload.Suffix,
//     workload.MaxGenerateNameLen).
//   - A finished pod (Succeeded or Failed) is never deleted nor restarted
//     by the Job: it is kept for logs until the Job is deleted (after
//     ttlSecondsAfterFinished, DeleteJob, or by the user).
//   - A pod that failed is counted once towards backoffLimit, unless a
//     podFailurePolicy rule ignores it; under restartPolicy OnFailure the
//     restarts of running pods count as failures, as Kubernetes counts
//     them. Counts never go down: a finished pod removed by hand keeps
//     its share in the status it left.
//   - A Job ends in two steps, as Kubernetes ends it: the interim
//     condition (FailureTarget or SuccessCriteriaMet) is set and every
//     active pod deleted; the final one (Failed or Complete) and its event
//     only once no pod of the Job is still terminating. A finished Job is
//     never changed again but for its time to live.
//   - One sync either deletes or creates pods, never both (deletions
//     first), and at most MaxPodCreateDeletePerSync of them.
//   - No new pod is created before the pod failure backoff (10 s doubling
//     per failure since the last success, capped at MaxPodFailureBackoff)
//     has passed since the last failure.
package job
