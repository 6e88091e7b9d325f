// Package workloads is the one controller frame of the workload kinds
// beyond Deployment (docs/design.md §17.1), in controller-runtime's shape:
// a Controller is built For a set of kind registrations (Kind), each owning
// pods (its containers labelled io.dockctl.owner-kind/owner). Its keys are
// the store's watch keys of those kinds ("job:namespace/name"), fed by the
// store watch, by the Docker events of the owned containers and by a
// periodic resync. A sync reads the owner from the store, lists its
// containers, has the pod runtime (podruntime.Runtime.Sync) keep the pods
// it has and report their PodStatus, hands the observed pods to the kind's
// pure decision (package job, replicaset…), carries the decision out
// through the runtime (creates, deletions), writes the status the decision
// computed with the events it records and, in the same write, the
// runtime's record of its pods' containers (recorded.go: restarts and
// readiness verdicts, which `get pods` judges them by), hands the
// Services' endpoints
// tracker the owner's pods (endpoints.go), and requeues when the decision
// asks. The pods a deletion with --cascade=orphan left are kept by the
// orphan keeper of their kind and name (orphans.go, key OrphansKey), an
// owner of the frame whose decision keeps exactly the orphans it
// observes, each by the template it was made from (Kind.made), and
// creates none. The Deployment is registered for its orphans only
// (DeploymentKind, Kind.orphansOnly): its own pods are the Deployment
// controller's (package reconciler), its replicas found by their
// io.dockctl.deployment label and names (dockerx.OwnerOf, dockerx.PodOf)
// and kept under those names (podruntime.PodSpec.ContainerName). A kind
// owning more than pods (a CronJob's Jobs, a StatefulSet's
// claims) stores and deletes those objects in its decision and teardown.
//
// Invariants:
//   - An owner that is deleted (a tombstone or no record) has no wanted
//     pod: its containers are stopped and removed (the garbage collector's
//     background cascade).
//   - The frame names no kind: what tells a Job from a Pod is its Kind
//     registration (kinds.go).
//   - An orphan (store.PodOrphan) is kept by the template its containers
//     were made from, or, that template unknown, left as Docker runs it:
//     never run from another template, never made again, never renamed;
//     what is created of it carries its own incarnation's uid, and a pod
//     its owner's stop was removing at the deletion is left to that stop.
//   - A Deployment's key is never synced here: a container is either the
//     Deployment controller's or its orphan keeper's, as
//     store.StoredObject.ContainerOwner says to both.
//   - A create the runtime refuses (a pod needing a holder, which only the
//     Deployment executor runs yet) is a Warning event FailedCreate on the
//     owner naming why, never a silent failure.
package workloads
