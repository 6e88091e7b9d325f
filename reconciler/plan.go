package reconciler

import (
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// The ops a plan is made of are the pod runtime's (podruntime.Op: what
// a pod's creates, starts and stops are, docs/design.md §17); the
// Deployment controller names them as before.
type Op = podruntime.Op

// OpKind is what an op does to Docker; OpReason why it is planned, for
// code; OpID names it within its plan; DepFailurePolicy says what becomes
// of it when a dependency failed.
type (
	OpKind           = podruntime.OpKind
	OpReason         = podruntime.OpReason
	OpID             = podruntime.OpID
	DepFailurePolicy = podruntime.DepFailurePolicy
)

// The kinds, dependency policies and reasons of the pod runtime's ops.
const (
	OpCreate         = podruntime.OpCreate
	OpStart          = podruntime.OpStart
	OpUnpause        = podruntime.OpUnpause
	OpRemove         = podruntime.OpRemove
	OpRestart        = podruntime.OpRestart
	OpCreateVolume   = podruntime.OpCreateVolume
	OpRemoveVolume   = podruntime.OpRemoveVolume
	OpWriteFiles     = podruntime.OpWriteFiles
	SkipOnDepFailure = podruntime.SkipOnDepFailure
	RunOnDepFailure  = podruntime.RunOnDepFailure
	RunIfCreatesSafe = podruntime.RunIfCreatesSafe

	ReasonMissing        = podruntime.ReasonMissing
	ReasonStopped        = podruntime.ReasonStopped
	ReasonNeverStarted   = podruntime.ReasonNeverStarted
	ReasonPaused         = podruntime.ReasonPaused
	ReasonLiveness       = podruntime.ReasonLiveness
	ReasonSurplus        = podruntime.ReasonSurplus
	ReasonRollout        = podruntime.ReasonRollout
	ReasonNoHash         = podruntime.ReasonNoHash
	ReasonDead           = podruntime.ReasonDead
	ReasonTerminating    = podruntime.ReasonTerminating
	ReasonDeleted        = podruntime.ReasonDeleted
	ReasonPodGone        = podruntime.ReasonPodGone
	ReasonPodDeleted     = podruntime.ReasonPodDeleted
	ReasonFilesUnwritten = podruntime.ReasonFilesUnwritten
	ReasonFilesChanged   = podruntime.ReasonFilesChanged
)

// String renders the plan deterministically, one line per op in plan
// order, then what else the plan says, for golden tests and people.
func (p Plan) String() string {
	var b strings.Builder
	if p.Refused != "" {
		fmt.Fprintf(&b, "refused: %s\n", p.Refused)
	}
	for _, op := range p.Ops {
		b.WriteString(op.Line())
		b.WriteByte('\n')
	}
	for _, msg := range p.Blocked {
		fmt.Fprintf(&b, "blocked: %s\n", msg)
	}
	if p.RequeueAfter > 0 {
		fmt.Fprintf(&b, "requeue after %s\n", p.RequeueAfter)
	}
	for _, d := range p.DeletionsDone {
		fmt.Fprintf(&b, "deletion done: pod %s\n", d.Pod)
	}
	if len(p.Ops) == 0 && p.Refused == "" {
		b.WriteString("(nothing to do)\n")
	}
	return b.String()
}

// link numbers the plan's ops and sets their dependencies, the order the
// executor carries them out in:
//   - starts and unpauses wait for every stop (removals, and liveness
//     restarts, which begin with a stop) to be carried out, or for a
//     graceful one to be handed to the stopper, so that a replacement never
//     fights its predecessor for a host port; a failed removal does not
//     hold them back (RunOnDepFailure): a start adds no container;
//   - creates wait for the stops and the starts. A failed removal blocks
//     them unless createsSafe judges it harmless (RunIfCreatesSafe): it may
//     still be running, hold a host port or a place under the surge
//     bound, and only carrying the removals out tells which failed. A
//     failed start changes no count and does not block them; anything else
//     (an unpause refused) does.
//
// Every dependent shares one slice of IDs, so that a plan of thousands of
// stops and creates costs no more than its ops.
func link(ops []Op) {
	var nStops, nStarts, nCreates int
	for i := range ops {
		ops[i].ID = OpID(i + 1)
		switch ops[i].Kind {
		case OpRemove, OpRestart:
			nStops++
		case OpStart, OpUnpause:
			nStarts++
		case OpCreate, OpCreateVolume:
			nCreates++
		}
	}
	// Only the lists someone depends on are made: a scale-down of
	// thousands, all removals, allocates none.
	var stops, stopsAndStarts []OpID // in ID order
	if nStarts > 0 && nStops > 0 {
		stops = make([]OpID, 0, nStops)
	}
	if nCreates > 0 && nStops+nStarts > 0 {
		stopsAndStarts = make([]OpID, 0, nStops+nStarts)
	}
	for i := range ops {
		switch ops[i].Kind {
		case OpRemove, OpRestart:
			if stops != nil {
				stops = append(stops, ops[i].ID)
			}
			if stopsAndStarts != nil {
				stopsAndStarts = append(stopsAndStarts, ops[i].ID)
			}
		case OpStart, OpUnpause:
			if stopsAndStarts != nil {
				stopsAndStarts = append(stopsAndStarts, ops[i].ID)
			}
		}
	}
	for i := range ops {
		switch ops[i].Kind {
		case OpStart, OpUnpause:
			if len(stops) > 0 {
				ops[i].DependsOn, ops[i].OnDepFailure = stops, RunOnDepFailure
			}
		case OpCreate, OpCreateVolume:
			if len(stopsAndStarts) > 0 {
				ops[i].DependsOn, ops[i].OnDepFailure = stopsAndStarts, RunIfCreatesSafe
			}
		}
	}
}

// Plan is the outcome of comparing desired with observed state.
type Plan struct {
	Ops []Op
	// RequeueAfter, when non-zero, asks for another sync after that delay even
	// if no event arrives: some containers are waiting out a restart backoff.
	RequeueAfter time.Duration
	// State is the rollout state to persist once the plan is executed.
	State RolloutState
	// Blocked says why containers that a revision needs were neither
	// started nor created (PlanInput.Refused), for ReplicaFailure.
	Blocked []string
	// Refused, when set, says why nothing was planned (a deployment over
	// the replica cap): the containers are left as they are, but for the
	// pods users deleted (deletionsOnly).
	Refused string
	// DeletionsDone are the requests of PlanInput.Deletions whose pod is
	// gone (removed, or replaced before the request was read): the
	// controller clears them.
	DeletionsDone []store.PodDeletion
	// Unmade are the pods a waiting revision (PlanInput.Waiting) needs
	// but the plan does not create, under the names it would create them
	// with: the controller's status shows them waiting (waiting.go).
	Unmade []UnmadePod
}

// UnmadePod is a pod the plan wants but does not create.
type UnmadePod struct {
	Name, Hash string
}

// key is the deployment's key, "namespace/name": how the controller's
// memory (stops in flight, blocked names) names it.
func (in PlanInput) key() string { return store.Key(in.Namespace, in.Name) }

// namespace is the deployment's namespace, "default" for "".
func (in PlanInput) namespace() string {
	if in.Namespace == "" {
		return manifests.DefaultNamespace
	}
	return in.Namespace
}

// PlanInput is everything the planner looks at. It is plain data so that a
// plan can be tested as a table of inputs and outputs.
type PlanInput struct {
	Instance string
	// Namespace and Name are the deployment's ("" is the default
	// namespace); they make its container names (dockerx.ContainerName).
	Namespace string
	Name      string
	// OwnerUID is the deployment's incarnation (store.OwnerUID): what the
	// containers it creates are labelled with (dockerx.LabelOwnerUID).
	OwnerUID string
	// Desired is the defaulted deployment, or nil when it was deleted: every
	// container is then removed.
	Desired *manifests.Deployment
	// Hash is the template hash of Desired.
	Hash string
	// Revisions are the deployment's known revisions: their numbers order
	// old revisions (oldest scaled down first) and their templates let a
	// replica of an old revision be recreated mid-rollout.
	Revisions []store.Revision
	// Containers are the observed containers carrying this instance's and
	// this deployment's labels.
	Containers []dockerx.Container
	// Ready holds, by container ID, the containers that count as ready:
	// running, healthy, and passing the controller-run readiness probe
	// (readiness). Nil means "judge by Docker's state and health alone"
	// (IsReady), for callers that run no probes.
	Ready map[string]bool
	// Available holds, by container ID, the containers that count as
	// available (see availability: ready for max(minReadySeconds, the
	// settle time)).
	Available map[string]bool
	// NeverStarts holds, by container ID, Docker's refusal of a start that
	// can never succeed (neverStarts): such a container is observed dead,
	// and its replacement says why.
	NeverStarts map[string]string
	// StartNotBefore holds, per container ID, the earliest time dockctl may
	// start it again (crash-loop backoff).
	StartNotBefore map[string]time.Time
	// LivenessFailed holds the running containers whose liveness probe
	// failed: they are restarted.
	LivenessFailed map[string]bool
	// State is the rollout state persisted by the previous sync.
	State RolloutState
	Now   time.Time
	// BlockedNames are container names held by containers this deployment
	// does not own (made by hand, another instance's, or reserved by
	// Docker past ReservedNameWindow): their ordinals are skipped.
	BlockedNames map[string]bool
	// InFlight are container names Docker reserves for a create still in
	// flight (conflict.go): taken, and, when the name is a replica's,
	// counted toward its revision's replicas until the container shows or
	// the window ends (then it is in BlockedNames instead).
	InFlight map[string]InFlightName
	// Refused maps the template hashes whose containers may not be created
	// or started (an old revision needing a privilege this controller does
	// not grant, or whose template does not match its hash, or a hash that
	// is not in the deployment's history) to why (refusedRevisions).
	Refused map[string]string
	// Waiting maps the template hashes whose containers cannot be made
	// yet — their environment refers to a ConfigMap, Secret or key that
	// does not exist — to why: no container of them is created (existing
	// ones are still started), and the plan says why (Blocked).
	Waiting map[string]string
	// Unstarted holds, by container ID, the running containers whose
	// postStart hook or startup probe is not done yet: a native sidecar's
	// successors wait for it to be started, as kubelet's do (KEP-753).
	Unstarted map[string]bool
	// MaxReplicas is the controller's replica cap (0: DefaultMaxReplicas);
	// a deployment over it is refused, not planned.
	MaxReplicas int32
	// MaxGracePeriod bounds every grace period (0: DefaultMaxGracePeriod).
	MaxGracePeriod time.Duration
	// Terminating holds, by container ID, the containers that were sent
	// their stop signal, with the time they are killed (the stop deadline).
	// They count toward replicas + maxSurge until they are gone, never as
	// replicas of their revision.
	Terminating map[string]time.Time
	// Stopping holds the containers whose stop (or liveness restart) is in
	// flight in this process: nothing more is planned for them.
	Stopping map[string]bool
	// Pods maps the unit ID of each holder pod in Containers to the pod
	// (podruntime.GroupPods); Containers then holds units, not containers.
	Pods map[string]*podruntime.Pod
	// Volumes are the deployment's pod volumes, when it has holder pods
	// (nil otherwise): a volume whose pod has no container left is removed.
	Volumes []dockerx.Volume
	// DrainPods: graceful stops of running pods drain them first
	// (setDrains); set when the controller has a Drainer.
	DrainPods bool
	// Files holds, per holder pod with file volumes (unit ID), where its
	// files stand (files.go).
	Files map[string]PodFiles
	// Deletions are the pods users deleted, pending (poddelete.go): their
	// units are removed (ReasonPodDeleted) and replaced.
	Deletions []store.PodDeletion
}

// ComputePlan decides which operations bring the observed containers to the
// desired state. It is pure: the same input always yields the same plan, and
// a converged input yields an empty one, which is what makes two syncs in a
// row with no change in between write nothing to Docker.
//
// It works in two steps, like Kubernetes' Deployment and ReplicaSet
// controllers: computeSizes decides how many containers each revision should
// have (the rollout), then each revision's containers are created, started
// or removed to match its size.
func ComputePlan(in PlanInput) Plan {
	var plan Plan
	if msg := replicaRefusal(in.Desired, in.MaxReplicas); msg != "" {
		// Checked first: planning 2^31-1 replicas would try to allocate
		// about a terabyte. The pods users deleted are removed all the
		// same.
		plan := in.deletionsOnly()
		plan.Refused = msg
		return plan
	}
	dels := in.deletions()
	if in.Desired == nil {
		for _, c := range sortedByName(in.Containers) {
			req := dels.Of(&c)
			if c.State == dockerx.StateRemoving {
				continue
			}
			op, ok := in.removeOp(&c, ReasonDeleted, "deployment deleted")
			if req != nil {
				op, ok = in.deleteOp(&c, req)
			}
			if ok {
				plan.Ops = append(plan.Ops, op)
			}
		}
		plan.DeletionsDone = dels.Done()
		plan.Ops = append(in.expandPods(plan.Ops), in.collectVolumes()...)
		in.setDrains(plan.Ops)
		in.setPreStops(plan.Ops)
		link(plan.Ops)
		return plan
	}

	p := resolveParams(in.Desired)
	// Pointers into in.Containers, never copies: a converged deployment of
	// thousands of containers is planned without copying or sorting them.
	groups := map[string][]*dockerx.Container{}
	var dead, terminating []*dockerx.Container
	var nameBlocked map[string]bool // holder pods a member's name is held from
	var removingOld, total int32
	for i := range in.Containers {
		c := &in.Containers[i]
		total++
		req := dels.Of(c)
		_, stopping := in.Terminating[c.ID]
		if stopping && c.State != dockerx.StateRemoving ||
			req != nil && c.State != dockerx.StateRemoving && c.State != dockerx.StateDead {
			// Stopping, or deleted by a user and about to stop: counted
			// in total (surge) like a container being removed, never as
			// a replica of its revision.
			terminating = append(terminating, c)
			if c.TemplateHash != in.Hash {
				removingOld++
			}
			continue
		}
		state := c.State
		if p := in.Pods[c.ID]; p != nil && state != dockerx.StateRemoving && in.memberNameBlocked(p) {
			state = dockerx.StateDead // it cannot be completed: replaced, as a dead one
			if nameBlocked == nil {
				nameBlocked = map[string]bool{}
			}
			nameBlocked[c.ID] = true
		}
		switch state {
		case dockerx.StateRemoving:
			if c.TemplateHash != in.Hash {
				removingOld++
			}
			continue
		case dockerx.StateDead:
			if p := in.Pods[c.ID]; p != nil && p.AnyRunning() && c.TemplateHash != in.Hash {
				// A dead pod whose members still run is old pods
				// running: Recreate waits for them (oldPodsRunning).
				removingOld++
			}
			// Docker cannot start a dead container; a fresh one replaces it.
			// It runs nothing, so Recreate does not wait for Docker to
			// manage to remove it (Kubernetes' oldPodsRunning skips Failed
			// pods); it still counts in total, against the bound.
			dead = append(dead, c)
			continue
		}
		groups[c.TemplateHash] = append(groups[c.TemplateHash], c)
	}
	for _, c := range byName(dead) {
		op := Op{Kind: OpRemove, Name: c.Name, ContainerID: c.ID, Reason: ReasonDead, Cause: in.deadCause(c.ID, "container")}
		if in.Pods[c.ID] != nil {
			// Its running members, if any, are stopped gracefully.
			cause := "holder gone or stopped: the pod is replaced"
			if nameBlocked[c.ID] {
				cause = "a member's name is held by a container this deployment does not own: the pod is replaced"
			}
			op, _ = in.removeOp(c, ReasonDead, cause)
		}
		if op.Kind != "" {
			plan.Ops = append(plan.Ops, op)
		}
	}
	for _, c := range byName(terminating) {
		op, ok := in.removeOp(c, ReasonTerminating, "terminating")
		if req := dels.Of(c); req != nil {
			op, ok = in.deleteOp(c, req)
		}
		if ok {
			plan.Ops = append(plan.Ops, op)
		}
	}
	plan.DeletionsDone = dels.Done()

	byHash := map[string]*revisionSet{}
	set := func(hash string) *revisionSet {
		if s, ok := byHash[hash]; ok {
			return s
		}
		s := &revisionSet{hash: hash, active: int32(len(groups[hash]))}
		if r := store.FindRevision(in.Revisions, hash); r != nil {
			s.number = r.Number
		}
		for _, c := range groups[hash] {
			if in.Available[c.ID] {
				s.available++
			}
		}
		size, known := in.State.Sizes[hash]
		size = min(max(size, 0), manifests.MaxReplicasLimit) // the status file is not trusted with allocations
		switch {
		case hash == "":
			size = 0 // no template hash: made by hand, never a revision
		case !known:
			size = s.active // adopt what exists: a fresh state directory resumes from Docker
		}
		s.size = size
		byHash[hash] = s
		return s
	}
	for hash := range groups {
		set(hash)
	}
	for hash := range in.State.Sizes {
		set(hash)
	}
	// The current template's set exists unless the deployment is paused
	// and it has no containers or size yet: like Kubernetes, which creates
	// no new ReplicaSet for a paused deployment, a deployment created paused
	// gets no replicas, and a template changed while paused is not rolled
	// out, until it is resumed.
	var newSet *revisionSet
	if _, exists := byHash[in.Hash]; exists || !p.paused {
		newSet = set(in.Hash)
		if newSet.number == 0 {
			newSet.number = math.MaxInt64 // the current template is the newest revision
		}
	}
	sets := make([]*revisionSet, 0, len(byHash))
	for _, s := range byHash {
		sets = append(sets, s)
	}
	sort.Slice(sets, func(i, j int) bool {
		return sets[i].number < sets[j].number || (sets[i].number == sets[j].number && sets[i].hash < sets[j].hash)
	})
	computeSizes(sets, newSet, p, in.State, removingOld, total)

	for _, s := range sets {
		if ops := in.reconcileRevision(s, groups[s.hash], &plan); len(plan.Ops) == 0 {
			plan.Ops = ops
		} else {
			plan.Ops = append(plan.Ops, ops...)
		}
	}
	plan.Ops = capCreates(plan.Ops, p, total)
	plan.Ops = append(in.expandPods(plan.Ops), in.collectVolumes()...)
	in.setDrains(plan.Ops)
	in.setPreStops(plan.Ops)
	link(plan.Ops)

	desired := p.replicas
	plan.State = RolloutState{Sizes: map[string]int32{}, DesiredReplicas: &desired, MaxReplicas: p.replicas + p.maxSurge}
	if p.recreate {
		plan.State.MaxReplicas = p.replicas
	}
	for _, s := range sets {
		if s.size > 0 || s.active > 0 || hasRemoving(in.Containers, s.hash) {
			if s.hash != "" {
				plan.State.Sizes[s.hash] = s.size
			}
		}
	}
	return plan
}

// reconcileRevision brings one revision's containers to its size: surplus
// removed least valuable first, stopped ones started (after any crash
// backoff), paused ones unpaused, missing ones created.
func (in PlanInput) reconcileRevision(s *revisionSet, cs []*dockerx.Container, plan *Plan) []Op {
	var ops []Op
	current := cs
	if n := int32(len(cs)); n > s.size {
		ops = make([]Op, 0, n-s.size)
		ranked := rankForRemoval(cs, in.isReady, in.Available)
		reason, cause := in.removeCause(s, n)
		for _, c := range ranked[:n-s.size] {
			ops = append(ops, Op{Kind: OpRemove, Name: c.Name, ContainerID: c.ID, Reason: reason, Cause: cause, Grace: in.graceFor(c)})
		}
		current = ranked[n-s.size:]
	}
	refusal, refused := in.Refused[s.hash]
	blocked := false
	from := dockerx.TemplateOf(in.Desired)
	if s.hash != in.Hash {
		if rev := store.FindRevision(in.Revisions, s.hash); rev != nil {
			// A replica of an old revision (one removed by hand
			// mid-rollout) is made from that revision's template.
			t := rev.Template
			from.Template = &t
		} else {
			from = nil // unknown: it cannot be made again
		}
	}
	var needWork []*dockerx.Container
	for _, c := range current {
		if p := in.Pods[c.ID]; p != nil {
			if from == nil || p.Holder == nil {
				continue // an unknown revision's pod is only ever removed
			}
			podOps, b := in.planPod(p, podPlan{t: from.Template, from: from, refused: refused}, plan)
			ops = append(ops, podOps...)
			blocked = blocked || b
			continue
		}
		if in.Stopping[c.ID] {
			continue // a liveness restart is in flight
		}
		if c.State != dockerx.StateRunning || in.LivenessFailed[c.ID] {
			needWork = append(needWork, c)
		}
	}
	for _, c := range byName(needWork) {
		if refused && c.State != dockerx.StatePaused {
			blocked = true // never started, nor restarted, whatever it needs
			continue
		}
		switch c.State {
		case dockerx.StateExited, dockerx.StateCreated:
			if c.State == dockerx.StateExited && from != nil && !podruntime.ShouldRestart(from.Template.Spec.RestartPolicy, c.ExitCode) {
				continue // it ended under the pod's restartPolicy: kept as it is
			}
			if nb, ok := in.StartNotBefore[c.ID]; ok && in.Now.Before(nb) {
				plan.RequeueAfter = minPositive(plan.RequeueAfter, nb.Sub(in.Now))
				continue
			}
			reason, cause := ReasonStopped, causeStopped
			if c.State == dockerx.StateCreated {
				reason, cause = ReasonNeverStarted, "created but never started"
			}
			ops = append(ops, Op{Kind: OpStart, Name: c.Name, ContainerID: c.ID, Reason: reason, Cause: cause})
		case dockerx.StatePaused:
			ops = append(ops, Op{Kind: OpUnpause, Name: c.Name, ContainerID: c.ID, Reason: ReasonPaused, Cause: "paused"})
		case dockerx.StateRunning:
			if in.LivenessFailed[c.ID] {
				ops = append(ops, Op{Kind: OpRestart, Name: c.Name, ContainerID: c.ID, Reason: ReasonLiveness, Cause: "liveness probe failed",
					Grace: in.graceFor(c)})
			}
		}
	}
	missing := s.size - int32(len(current)) - in.inFlightReplicas(s.hash, plan)
	if refused && (blocked || missing > 0) {
		plan.Blocked = append(plan.Blocked, refusal)
	}
	if wait, ok := in.Waiting[s.hash]; ok && missing > 0 && !refused && from != nil {
		plan.Blocked = append(plan.Blocked, wait)
		for _, ord := range freeOrdinals(in.Containers, in.takenNames(), in.Instance, in.Namespace, in.Name, s.hash, int(missing), memberNames(from.Template)) {
			plan.Unmade = append(plan.Unmade, UnmadePod{Name: dockerx.Hostname(in.Name, s.hash, ord), Hash: s.hash})
		}
		return ops
	}
	if missing <= 0 || refused || from == nil {
		// An old revision whose template is no longer known cannot be
		// made again; the rollout carries on without it.
		return ops
	}
	holder := manifests.NeedsHolder(&from.Template.Spec)
	for _, ord := range freeOrdinals(in.Containers, in.takenNames(), in.Instance, in.Namespace, in.Name, s.hash, int(missing), memberNames(from.Template)) {
		name := dockerx.ContainerName(in.Instance, in.Namespace, in.Name, s.hash, ord)
		cause := fmt.Sprintf("missing: %d of %d replicas exist", len(current), s.size)
		if s.hash != in.Hash {
			cause = fmt.Sprintf("old revision %s: %d of %d replicas exist", s.hash, len(current), s.size)
		}
		op := Op{Kind: OpCreate, Name: name, Hash: s.hash, Reason: ReasonMissing, Cause: cause, From: from}
		if holder {
			// The pod's create; expandPods adds its volumes and first
			// containers once capCreates has counted it.
			op.Role = dockerx.RoleHolder
			op.Pod = &dockerx.PodRef{Name: dockerx.Hostname(in.Name, s.hash, ord), UID: podUID(name, in.Now), Holder: name}
		}
		ops = append(ops, op)
	}
	return ops
}

// collectVolumes removes the pod volumes whose pod has no container left
// (podruntime.CollectVolumes).
func (in PlanInput) collectVolumes() []Op {
	return podruntime.CollectVolumes(in.Volumes, in.Containers)
}

// isReady judges readiness as status does: by the controller's verdict
// when the caller gave one.
func (in PlanInput) isReady(c *dockerx.Container) bool {
	if in.Ready == nil {
		return podruntime.IsReady(*c)
	}
	return in.Ready[c.ID]
}

func (in PlanInput) removeCause(s *revisionSet, n int32) (OpReason, string) {
	switch {
	case s.hash == "":
		return ReasonNoHash, "no template hash: not made by dockctl"
	case s.hash == in.Hash:
		return ReasonSurplus, fmt.Sprintf("surplus: %d replicas, %d desired", n, s.size)
	default:
		return ReasonRollout, fmt.Sprintf("rollout to %s: old revision %s scaled to %d", in.Hash, s.hash, s.size)
	}
}

// resolveParams resolves the strategy against the desired replicas with
// Kubernetes' rounding. A deployment that publishes a host port, or shares
// the host's network (where any listening port is a host port), cannot run
// two containers at once, so it rolls with no surge — and so with at least
// one unavailable, or it could never make room. That forced value only
// drives the rollout: the Available condition keeps the user's own
// maxUnavailable (availableBudget), so that it never calls a deployment with
// too few available replicas available.
func resolveParams(d *manifests.Deployment) rolloutParams {
	p := rolloutParams{replicas: d.Replicas(), paused: d.Spec.Paused, recreate: d.Spec.Strategy.Type == manifests.StrategyRecreate}
	if p.recreate {
		return p // Kubernetes: a Recreate deployment tolerates no unavailable replica
	}
	surge, unavailable, err := manifests.ParseMaxSurgeUnavailable(d)
	if err != nil {
		surge, unavailable = 0, 1
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1 // Kubernetes' ResolveFenceposts: a rollout must be able to move
	}
	// Kubernetes' MaxUnavailable: never more than replicas.
	p.availableBudget = min32(unavailable, p.replicas)
	if needsExclusiveHost(d) {
		surge = 0
		if unavailable == 0 {
			unavailable = 1
		}
	}
	p.maxSurge, p.maxUnavailable = surge, unavailable
	return p
}

// needsExclusiveHost reports whether two replicas of the template cannot run
// side by side on one host: a published host port, or the host's network.
func needsExclusiveHost(d *manifests.Deployment) bool {
	return d.Spec.Template.Spec.HostNetwork || d.Spec.Template.Spec.HostPort() != 0
}

func hasRemoving(cs []dockerx.Container, hash string) bool {
	for _, c := range cs {
		if c.TemplateHash == hash && (c.State == dockerx.StateRemoving || c.State == dockerx.StateDead) {
			return true
		}
	}
	return false
}

// causeStopped is the Cause of a ReasonStopped start.
const causeStopped = podruntime.CauseStopped

// rankForRemoval orders containers least valuable first, as Kubernetes ranks
// pods for scale-down: not running before running, not ready before ready,
// not yet available before available, newer before older (an older replica
// has proven itself for longer). Readiness and availability are the ones
// status shows (controller-run probes included), so that a rollout that
// removes as many old replicas as are unavailable removes exactly those and
// availability never drops below replicas - maxUnavailable. Ties break on
// name so that plans are deterministic.
func rankForRemoval(cs []*dockerx.Container, ready func(*dockerx.Container) bool, available map[string]bool) []*dockerx.Container {
	// Keys computed once: a scale-down of thousands compares them often.
	type ranked struct {
		c                         *dockerx.Container
		running, ready, available bool
		created                   int64
	}
	keys := make([]ranked, len(cs))
	for i, c := range cs {
		keys[i] = ranked{c, c.State == dockerx.StateRunning, ready(c), available[c.ID], c.Created.UnixNano()}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := &keys[i], &keys[j]
		if a.running != b.running {
			return !a.running
		}
		if a.ready != b.ready {
			return !a.ready
		}
		if a.available != b.available {
			return !a.available
		}
		if a.created != b.created {
			return a.created > b.created
		}
		return a.c.Name > b.c.Name
	})
	out := make([]*dockerx.Container, len(keys))
	for i := range keys {
		out[i] = keys[i].c
	}
	return out
}

// inFlightReplicas counts the replicas of the revision hash whose create
// is still in flight (InFlight) and that the list does not show yet: they
// count as existing, as the kube-controller-manager's expectations count a
// create it sent until its informer sees the pod, so that no replacement is
// made under another ordinal. The plan is requeued for when the first
// window ends.
func (in PlanInput) inFlightReplicas(hash string, plan *Plan) int32 {
	if len(in.InFlight) == 0 {
		return 0
	}
	listed := map[string]bool{}
	for _, c := range in.Containers {
		listed[c.Name] = true
	}
	var n int32
	for name, f := range in.InFlight {
		if f.Hash != hash || !f.Replica || listed[name] {
			continue
		}
		n++
		plan.RequeueAfter = minPositive(plan.RequeueAfter, f.Until.Sub(in.Now))
	}
	return n
}

// takenNames are the names no create may use besides the observed
// containers': the blocked ones and those of creates in flight.
func (in PlanInput) takenNames() map[string]bool {
	if len(in.InFlight) == 0 {
		return in.BlockedNames
	}
	out := maps.Clone(in.BlockedNames)
	if out == nil {
		out = map[string]bool{}
	}
	for name := range in.InFlight {
		out[name] = true
	}
	return out
}

// freeOrdinals returns the n lowest ordinals whose container name is not
// taken by any observed container nor blocked. Names are deterministic so
// that a create that raced with another (a second controller, a retry after
// a timeout) fails with a name conflict instead of making a duplicate
// replica.
func freeOrdinals(cs []dockerx.Container, blocked map[string]bool, instance, namespace, name, hash string, n int, members []string) []int {
	taken := maps.Clone(blocked)
	if taken == nil {
		taken = map[string]bool{}
	}
	for _, c := range cs {
		taken[c.Name] = true
	}
	var out []int
	for ord := 0; len(out) < n; ord++ {
		base := dockerx.ContainerName(instance, namespace, name, hash, ord)
		free := !taken[base]
		for _, m := range members {
			free = free && !blocked[dockerx.MemberName(base, m)]
		}
		if free {
			out = append(out, ord)
		}
	}
	return out
}

func sortedByName(cs []dockerx.Container) []dockerx.Container {
	out := append([]dockerx.Container(nil), cs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// byName sorts a few pointers in place, so that plans list operations in a
// deterministic order.
func byName(cs []*dockerx.Container) []*dockerx.Container {
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	return cs
}

// minPositive returns the smaller of two delays, where zero means "none".
func minPositive(a, b time.Duration) time.Duration {
	switch {
	case b <= 0:
		return a
	case a <= 0 || b < a:
		return b
	}
	return a
}
