// Package podruntime is dockctl's kubelet: it makes the pods a workload
// controller decided should exist real on Docker and reads back their
// status (docs/design.md §17).
//
// The seam: a workload controller (the Deployment controller in package
// reconciler today; StatefulSet, Job, DaemonSet… later) decides which pods
// should exist — namespace, name, template, owner, restart policy, identity
// — and reads their status; the pod runtime makes each pod real and keeps
// it healthy. No workload controller creates a container itself, and no
// code of this package knows a workload kind: a pod's owner is data (kind,
// name, uid).
//
// Files: spec.go is what a controller hands in (PodSpec, OwnerRef,
// Identity); pod.go groups an owner's containers into pods (a holder and
// its members, or one container) and judges each (initialized, running,
// stranded, ready), with judge.go (Judge: readiness, probes, completed
// init containers) and uptime.go (Docker's uptime wording); podview.go
// is the pod as observed (PodView, PodContainer, ContainerView) and its
// kubelet-side judgement (Phase, Conditions, ContainerState, StatusWord),
// which views.go builds for any owner's judged pods (Views);
// status.go what a controller reads back (PodStatus); restart.go the
// restartPolicy decisions; backoff.go the per-container memory
// (ContainerState) and the crash-loop backoff; probes.go which probes
// the runtime runs; envresolve.go, filesplan.go and pullsecrets.go what a
// container is created with — environment, file volumes' payload, pull
// credentials — from the ConfigStore (configstore.go), configrefs.go
// which ConfigMaps and Secrets templates refer to (ConfigWatchKeys), which
// owners refer to each (ConfigRefs) and which an environment misses
// (EnvMissingRefs), hostinfo.go the Docker host's name and capacity,
// asked once (HostInfoCache: spec.nodeName, unset limits),
// poddeletions.go which units the pending `delete pod` requests name and
// which requests are done (Deletions), seccomp.go a
// Localhost seccomp profile from the host, and podip.go which pods get a
// static address before their create (status.podIP) and which one,
// which podipassign.go assigns (PodIPs);
// slowstart.go is how an executor runs a wave of creates (SlowStart) and
// other ops (Parallel), each guarded (GuardOps); claimplan.go plans the
// claims' volumes (PlanClaims: bind at once, release once no container mounts them, docs/design.md
// §12) and says which claims a template and which containers mount;
// imageuser.go is kubelet's runAsNonRoot check before a revision's
// creates (CheckRunAsNonRoot) and createinputs.go what a create needs
// from outside the template (CreateInputs: the image's user, a Localhost
// seccomp profile); op.go is what a plan of a pod's
// containers is made of (Op: its kinds, reasons, order and printed Line,
// the StopRequest of a graceful stop), the ops a workload controller's
// plan holds and an executor carries out; podsteps.go plans the steps
// inside one holder pod (PlanPodSteps: holder, files, init containers in
// order, sidecars, app containers, strays) and podexpand.go expands a
// pod's create (volumes, holder, file write, first step) and graceful
// removal (StopPhases) into container ops (ExpandPodOps), for every
// owner's planner; podfiles.go writes a pod's files through the files
// writer (WritePodFiles, RunFilesWriter), checks its subPath binds
// (CheckSubPaths) and remembers what each pod got
// (FilesMemory), and filevolumes.go is the same for a controller that
// plans its own pods (FileVolumes: where each pod's files stand, the
// write, the helper image, subPath checks); sync.go is Runtime.Sync, the entry point of a workload
// controller of any kind: its pods made real (created under
// dockerx.PodContainerName, started, restarted per restartPolicy with the
// backoff, stopped and removed once unwanted) and their PodStatus read
// back, with syncpod.go for pods that need a holder (the same steps, each
// op run once the ops it needs succeeded; env from the ConfigStore and
// the Service variables, images pulled, claims checked: ClaimUsable);
// waiting.go is what a pod its owner wants but could not create shows
// (docs/design.md §5: WaitingPod; which failed create shows, CreateWait,
// collected per owner in CreateWaits, kept or backed off by SettleWaits,
// the reason of a pod waiting for a reference, UnmadeReason), and
// recorded.go is what an owner of the workload frame records of that
// memory with its status for the read commands (Runtime.Recorded: live
// containers' restarts and readiness verdicts), what a restarted
// controller takes back (Recall: restarts, no verdict) and how the read
// commands judge a recorded verdict (CurrentVerdicts: for the run it was
// given in).
//
// The goroutines of the kubelet: runtime.go is the Runtime a workload
// controller holds and stops, which owns prober.go (Prober: one worker
// per running container with probes the runtime runs, through a
// ProbeRunner its controller gives it, which knows how to reach pods:
// sub-package probe's Runner, directly or relayed through the DNS helper
// as its Route decides, docs/design.md §10),
// startup.go (startup probes) and hooks.go (lifecycle hooks: postStart in
// the probe worker, RunHook for the stopper's preStop), and stopper.go
// (Stopper: each graceful stop, a StopRequest, in a goroutine of its own)
// with stopdrain.go (the drain out of the Services before the stop
// signal, through a Drainer, and the deadline a stop records,
// StopDeadline). An owner is named to them by the string its controller
// queues; they call back with it (Notify, Done).
//
// Who restarts a crashed container: dockctl, not Docker. Containers are
// created with restart policy "no" and the runtime starts a container that
// is not running, whatever stopped it (a crash, `docker stop`, `docker
// kill`, a daemon restart), as the pod's restartPolicy says (ShouldRestart:
// Always whatever the exit, OnFailure after a non-zero exit, Never not at
// all; a container that never started is started once). One restarter
// means one backoff, visible in status, that is configurable and never
// races Docker's own: after the n-th exit in a row within 10 s of its
// creation or of a start by dockctl (or a start Docker refused), a
// container waits CrashBackoffBase·2ⁿ⁻¹, capped at CrashBackoffMax, before
// the next start; a run of 10 s or more resets n. A pod whose app
// containers all ended and will not be started again is finished
// (FinishedPhase): kept, Succeeded or Failed, never a crash to repair.
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
//   - A pod's status is computed from what Docker shows of its containers
//     and the runtime's per-container memory (restarts, backoff, ready
//     since), never stored as such: a restarted controller, and `dockctl
//     get` without one, read the same status.
//   - A pod of restartPolicy Always never finishes; a finished pod
//     (FinishedPhase) is never started again nor replaced.
//   - A container is removed by a graceful stop (its own revision's
//     terminationGracePeriodSeconds, bounded by MaxGracePeriod): preStop
//     hooks, then the stop signal, then the kill at the recorded deadline.
//   - A running pod is drained (out of every Service, acknowledged, within
//     min(10 s, its grace period)) before its stop signal; a drain that
//     fails or does not answer never prevents the stop.
//   - A probe or hook that panics, and a stop, drain or preStop hook that
//     panics (Guard), is a failure of that container, never the end of
//     the controller.
//
// The plan executor: execute.go is Runtime.Execute, which carries out a
// workload controller's planned ops (the Deployment controller's today)
// in the order their dependencies give, in waves — graceful stops handed
// to the Stopper, the Docker calls on existing containers and volumes,
// and execcreate.go's creates (templates checked, images pulled with the
// pods' credentials, runAsNonRoot, claims' volumes made through
// claimvolumes.go's ClaimVolumes, which a sweep's release of a deleted
// claim's volume (claimsweep.go's ClaimSweep: PlanClaims carried out,
// pvc-protection, docs/design.md §12) never falls under, the holder image, then slow start
// and each create and start, a name conflict judged and remembered by
// names.go's NameConflicts: adopted, in flight, or blocked). What is the
// owner's own — the events and
// waiting reasons of each op's outcome, its surge gate, the failure its
// status reports, the privilege gate, the network, what a create needs
// from outside the template (environment — createenv.go's CreateEnv,
// from the pod its owner names, CreatePod —, pod address, seccomp profile,
// subPath checks) and which container under a conflicting name is its
// own (ConflictOwner) — it gives as ExecHooks,
// never as a switch on its kind (docs/design.md §17). The executor runs
// an op only once every op it depends on ended, never guesses an order
// (ops that wait on each other end the execution), and makes no choice of
// its own on a failed dependency: the op's OnDepFailure, and for
// RunIfCreatesSafe its owner's ExecHooks.CreatesSafe, decide; nothing is
// created from a template its owner refuses (ExecHooks.Refusal), checked
// again at the create whatever the plan says. The Deployment
// controller's remaining kubelet parts (package reconciler: poddelete.go;
// state.go records starts and refused starts in ContainerState) follow
// these rules.
package podruntime
