// Package reconciler keeps a dockctl instance's containers matching the
// deployments recorded in its state directory.
//
// It follows the Kubernetes controller pattern. Three sources — Docker
// events, a periodic resync and state-directory changes — only put a
// deployment's name on a rate-limited work queue; they never carry state.
// A worker then syncs that deployment from scratch: it observes the
// containers Docker reports, computes a plan with the pure ComputePlan, and
// executes it. Because every sync starts from observation, a lost event, a
// controller restart or a Docker daemon restart loses nothing: the next
// sync of that deployment sees the truth.
//
// Files, one story each (the reconcile contract every kind's loop follows,
// and the loop that runs one, are package reconcile; the Service controller
// is package services; the instance network's address plan is package
// netlayout): controller.go is the deployments' reconcile.Reconciler and
// wires its sources (events, resyncs and state-directory changes become
// keys); observe.go lists containers, sweeps the instance for work and
// orphans, and assesses a deployment (observe, then plan), observing only
// the pods the deployment owns (orphans.go: those a deletion with
// --cascade=orphan left are nobody's, store.PodOwner); plan.go,
// rollout.go, bounds.go and surge.go are the pure planner, which also
// orders the ops (Op.DependsOn; the ops are the pod runtime's,
// podruntime.Op, each create naming the kind-free dockerx.PodTemplate it
// is made from), with poddelete.go for the pods users
// deleted (`dockctl delete pod`: a request in the state directory, an
// input of the plan); execute.go hands the plan to the pod runtime's
// executor (podruntime.Runtime.Execute), which carries it out in that
// order and makes its Docker calls, and gives it this controller's share
// as podruntime.ExecHooks (deploymentExec: the events and waiting reasons
// of each op's outcome, the surge gate, the ReplicaFailure the errors
// amount to, the privilege gate, the instance network, what a create
// needs from outside the template, and a name conflict, which the
// runtime's NameConflicts judges and remembers with conflict.go's share:
// which container is this deployment's replica); stopper.go records the
// deadlines of the graceful stops the executor hands to the runtime's
// Stopper (Op.StopRequest); state.go and status.go keep the controller's
// memory and compute the status it writes, and hand the pod runtime's
// Prober its ProbeRunner (podruntime/probe: Runner, and the Route that
// says how probes reach pods); trust.go checks
// records and privileges; observer.go is the hook for metrics. The instance network (docs/design.md §10): network.go
// chooses its subnet and ensures it, netconnect.go connects earlier pods
// to it in place (with the sweep) and tells the probe route
// (podruntime/probe.Route) the network and its DNS helper, and stopdrain.go takes
// a pod out of the Services' endpoints before its graceful stop (drain.go:
// the Drainer it calls, services.Tracker when Services run).
//
// Namespaces: a deployment's key is "namespace/name" (store.Key;
// "default/web" in the default namespace), and so is every per-deployment
// memory of the controller. A container belongs to the deployment its
// deployment label and its namespace (dockerx.ParseNamespace: the
// io.dockctl.namespace label, absent on containers of earlier releases,
// which are default's) name; it is named ContainerName(instance, namespace,
// …), which keeps the names of earlier releases in default.
//
// Services (docs/design.md §10) run on a second loop, package services'
// Controller, which services.go wires (newServices): this package gives it
// narrow views of the deployments' side (the store, instance name,
// privileges, isSelf, orphan handling, the instance network) and feeds its
// Tracker with every pod the deployment sync judged (endpoints.go,
// readiness as status counts it); it asks it for pods' Service
// environment variables and for the host ports a Service claimed first.
//
// Invariants:
//   - Only containers carrying this instance's label are ever touched, and
//     never the controller's own container.
//   - Containers of a deployment the state directory never knew (orphans)
//     are left running unless PruneOrphans is set; containers of a deleted
//     deployment (a tombstone) are removed, but for the pods a deletion
//     with --cascade=orphan left and no deployment adopted
//     (store.PodOrphan), which are never touched.
//   - An unreadable deployment record stops that deployment's sync; it is
//     never taken to mean "deleted".
//   - A converged deployment plans no operation, so an idle controller makes
//     no Docker call that writes.
//   - The work queue never runs one deployment's sync twice at once, so a
//     sync needs no expectations: it sees its own previous writes when it
//     lists. The one exception is the graceful stop (the pod runtime's
//     Stopper), which runs outside the workers: a stop in flight, or one that ended after
//     the list began, is handed to the planner as such, so a sync never
//     mistakes a stopping container for a live replica or a crash.
//   - No container of a template that needs a privilege the controller was
//     not granted (Options.Allow) is created or started, whatever its
//     revision; nor is one of a revision whose template does not hash to
//     its recorded hash, or that is not in the history (trust.go).
//   - A container of a pod of another owner than a Deployment
//     (io.dockctl.owner-kind: the pod runtime's Sync runs it) is never a
//     deployment's orphan.
//   - A Service's helpers (role proxy, dns) are never a deployment's
//     orphans (package services states the Services' own invariants).
//   - A replica being stopped to be removed counts toward replicas +
//     maxSurge until it is gone. (How a pod stops — graceful, drained
//     first — is the pod runtime's invariant: package podruntime.)
//   - Every pod's network owner is on the instance network unless it uses
//     the host's; a network of that name without this instance's labels
//     is never used, and pods are then created as before it.
//
// The pod runtime (package podruntime, docs/design.md §17) is the kubelet
// half: this package's Deployment controller decides which pods exist and
// reads their status (podruntime.PodView, PodStatus); who restarts a
// crashed container, under which restartPolicy and with which backoff, how
// a pod is stopped, and how its status is computed are the runtime's
// rules, stated in its package doc. The controller holds a
// podruntime.Runtime, whose Prober runs probes and postStart hooks and
// whose Stopper carries out graceful stops (drain, preStop hooks, phases);
// this package plans which stops happen and what they run (setDrains,
// setPreStops) and records their deadlines (stopper.go). The ops inside
// a pod are the runtime's (podruntime.PlanPodSteps, ExpandPodOps):
// podplan.go only decides which template a pod runs and asks for them.
// The files that still carry out the runtime's rules here for the
// Deployment controller, as the executor's hooks or the sweep's — envctl.go
// (names the pod a create belongs to for the runtime's CreateEnv, holds
// its HostInfoCache, decides which revisions wait for a reference — the
// Deployment's gate — and indexes references by deployment in the
// runtime's ConfigRefs), files.go
// (hands the runtime's FileVolumes the deployment's pods and templates,
// and turns a refused subPath into the ReplicaFailure), claims.go (runs the runtime's
// ClaimSweep from the sweep, naming a container's owner by its deployment
// key; the creates' claims are the executor's),
// poddelete.go (how a deleted pod is stopped and counted; which units a
// request names is the runtime's Deletions), and the pod parts of state.go and observe.go —
// follow them; seccomp.go, pullsecrets.go and podip.go only hand a create
// to podruntime.CreateInputs, PullSecrets and PodIPs.Assign, and
// imageuser.go names the runtime's CreateContainerConfigError.
//
// Events (events.go). The write records the event: the executor's Ended
// hook (deploymentExec) records each op's outcome once it ended (Created, Started, Killing, Failed), and
// once the plan ran what the deployment controller and kubelet would
// (ScalingReplicaSet per revision, BackOff, the sync's failure); the
// prober records Unhealthy and FailedPostStartHook where a probe or hook
// fails, the stopper FailedPreStopHook, the status writes the rollout's
// progress and a Service's conditions and endpoints. The planner records
// nothing. Recording never blocks (Options.Recorder buffers; a full
// buffer drops and counts), and a steady state records nothing, so an
// idle controller writes no event. No message carries a Secret's value:
// they are built from names, reasons and Docker's or a probe's errors.
package reconciler
