package reconciler

import (
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// Planning inside a holder pod, as the kubelet's computePodActions does for
// a pod whose sandbox is alive: the holder first, then the init containers
// one at a time and in order — each to a successful exit, a native sidecar
// only to its start —, then every app container; afterwards each container
// is repaired on its own (started again after the crash backoff, created
// again if removed, restarted when its liveness probe fails) without
// touching its siblings. Every step is level-triggered: an init container
// that is still running plans nothing, and its exit (a Docker event) brings
// the next sync, which plans the next step.

// podPlan is what planPod needs besides the pod.
type podPlan struct {
	t    *manifests.PodTemplateSpec
	from *manifests.Deployment // what members are created from (Op.From)
	// refused: the revision may not be started or created (PlanInput.Refused).
	refused bool
}

// planPod returns the ops that move one holder pod on. blocked reports a
// refused revision that needed a start or create.
func (in PlanInput) planPod(p *podruntime.Pod, pp podPlan, plan *Plan) (ops []Op, blocked bool) {
	if in.Stopping[p.Key] {
		return nil, false // the whole pod is being stopped
	}
	h := p.Holder
	ref := &dockerx.PodRef{Name: p.Name, UID: p.UID, Holder: p.Base}
	member := func(c *manifests.Container) Op {
		return Op{Kind: OpCreate, Name: dockerx.MemberName(p.Base, c.Name), Hash: p.Hash, From: pp.from, Pod: ref, Container: c.Name}
	}
	// start plans the start of a stopped container, after its crash
	// backoff; false when it must wait.
	start := func(c *dockerx.Container, what string) (Op, bool) {
		if nb, ok := in.StartNotBefore[c.ID]; ok && in.Now.Before(nb) {
			plan.RequeueAfter = minPositive(plan.RequeueAfter, nb.Sub(in.Now))
			return Op{}, false
		}
		reason, cause := ReasonStopped, what+" "+causeStopped
		if c.State == dockerx.StateCreated {
			reason, cause = ReasonNeverStarted, what+" created but never started"
		}
		return Op{Kind: OpStart, Name: c.Name, ContainerID: c.ID, Reason: reason, Cause: cause}, true
	}
	awaitFiles := "" // the holder whose files this plan writes first
	holdStarts := "" // why no container of the pod may be created or started (planPodFiles)
	add := func(op Op) {
		if pp.refused && op.Kind != OpUnpause {
			blocked = true
			return
		}
		if holdStarts != "" && (op.Kind == OpCreate || op.Kind == OpStart) {
			if !slices.Contains(plan.Blocked, holdStarts) {
				plan.Blocked = append(plan.Blocked, holdStarts)
			}
			return
		}
		if awaitFiles != "" && (op.Kind == OpCreate || op.Kind == OpStart) {
			op.awaitFiles = awaitFiles
		}
		ops = append(ops, op)
	}

	switch h.State {
	case dockerx.StateCreated:
		// Nothing joins a holder that does not run.
		if op, ok := start(h, "holder"); ok {
			add(op)
		}
		return ops, blocked
	case dockerx.StatePaused:
		add(Op{Kind: OpUnpause, Name: h.Name, ContainerID: h.ID, Reason: ReasonPaused, Cause: "holder paused"})
	case dockerx.StateRunning:
	default:
		return nil, false // restarting: look again at its next event
	}
	write, proceed, hold := in.planPodFiles(p, pp, ref, plan) // files.go
	holdStarts = hold
	if write != nil {
		ops = append(ops, *write)
		awaitFiles = ref.Holder
	}
	if !proceed {
		return ops, blocked
	}

	// tend plans what a container that should keep running needs.
	tend := func(c *manifests.Container, m *dockerx.Container, kind string) {
		what := fmt.Sprintf("%s %s", kind, c.Name)
		switch {
		case m == nil:
			op := member(c)
			op.Reason, op.Cause = ReasonMissing, what+" missing"
			add(op)
		case in.Stopping[m.ID] || m.State == dockerx.StateRemoving:
		case m.State == dockerx.StateDead:
			// Docker cannot start it: removed, to be made again.
			ops = append(ops, Op{Kind: OpRemove, Name: m.Name, ContainerID: m.ID, Reason: ReasonDead, Cause: in.deadCause(m.ID, what)})
		case m.State == dockerx.StateExited || m.State == dockerx.StateCreated:
			if op, ok := start(m, what); ok {
				add(op)
			}
		case m.State == dockerx.StatePaused:
			add(Op{Kind: OpUnpause, Name: m.Name, ContainerID: m.ID, Reason: ReasonPaused, Cause: what + " paused"})
		case m.State == dockerx.StateRunning && in.LivenessFailed[m.ID]:
			add(Op{Kind: OpRestart, Name: m.Name, ContainerID: m.ID, Reason: ReasonLiveness, Cause: what + ": liveness probe failed",
				Grace: boundGrace(pp.t, in.MaxGracePeriod)})
		}
	}

	initialized := p.InitDone(pp.t)
	from := p.LastInit(pp.t)
	for i := range pp.t.Spec.InitContainers {
		ic := &pp.t.Spec.InitContainers[i]
		m := p.Members[ic.Name]
		if ic.IsSidecar() {
			tend(ic, m, "sidecar")
			if !initialized && (m == nil || m.State != dockerx.StateRunning || in.Unstarted[m.ID]) {
				// The next init container waits for this sidecar to run,
				// its postStart hook and startup probe done.
				return ops, blocked
			}
			continue
		}
		if initialized || i < from {
			// Never run again once the pod has run, nor once a later
			// one has (the kubelet's findNextInitContainerToRun).
			continue
		}
		what := "init container " + ic.Name
		switch {
		case m != nil && m.State == dockerx.StateRemoving:
		case m != nil && m.State == dockerx.StateDead:
			ops = append(ops, Op{Kind: OpRemove, Name: m.Name, ContainerID: m.ID, Reason: ReasonDead, Cause: in.deadCause(m.ID, what)})
		case m == nil:
			op := member(ic)
			op.Reason, op.Cause = ReasonMissing, fmt.Sprintf("%s (%d of %d) not run yet", what, i+1, len(pp.t.Spec.InitContainers))
			add(op)
		case m.State == dockerx.StateExited && m.ExitCode == 0:
			continue
		case m.State == dockerx.StateExited || m.State == dockerx.StateCreated:
			// A failed init container is run again, with the crash
			// backoff, as the kubelet does under restartPolicy Always.
			if op, ok := start(m, what); ok {
				add(op)
			}
		case m.State == dockerx.StatePaused:
			add(Op{Kind: OpUnpause, Name: m.Name, ContainerID: m.ID, Reason: ReasonPaused, Cause: what + " paused"})
		}
		return ops, blocked // running, or just planned: the next one waits
	}
	for i := range pp.t.Spec.Containers {
		c := &pp.t.Spec.Containers[i]
		m := p.Members[c.Name]
		if m != nil && m.State == dockerx.StateExited && !podruntime.ShouldRestart(pp.t.Spec.RestartPolicy, m.ExitCode) {
			continue // it ended under the pod's restartPolicy: kept as it is
		}
		tend(c, m, "container")
	}
	// A container no template container claims (a duplicate made by hand
	// with our labels) is not part of the pod.
	for _, x := range p.Extra {
		if !in.Stopping[x.ID] {
			ops = append(ops, Op{Kind: OpRemove, Name: x.Name, ContainerID: x.ID, Reason: ReasonNoHash, Cause: "not a container of the pod's template"})
		}
	}
	for name, m := range p.Members {
		if pp.t.Spec.FindContainer(name) == nil && !in.Stopping[m.ID] {
			ops = append(ops, Op{Kind: OpRemove, Name: m.Name, ContainerID: m.ID, Reason: ReasonNoHash, Cause: "not a container of the pod's template"})
		}
	}
	return ops, blocked
}

// podUID derives the uid of a pod created now: unique enough to tell two
// incarnations of one pod name apart, and a pure function of the plan's
// input so that plans stay reproducible.
func podUID(base string, now time.Time) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d", base, now.UnixNano())
	return fmt.Sprintf("%08x", h.Sum32())
}

// expandPods turns the unit ops of holder pods into container ops, after
// the revision planner has capped its creates:
//   - the create of a pod becomes the creates of its emptyDir volumes, of
//     its holder (after the volumes) and of its first step (after the
//     holder): its first init or sidecar container, or every app
//     container;
//   - the graceful removal of a pod stays one op, carried out by the
//     stopper in phases (app containers, sidecars in reverse order, the
//     holder); a removal without grace (a dead pod, or a grace of 0)
//     becomes the removal of each of its containers.
//
// Needs within a pod are set as IDs of the final order (link numbers the
// ops by position).
func (in PlanInput) expandPods(ops []Op) []Op {
	expanded := false
	for i := range ops {
		if (ops[i].Kind == OpCreate && ops[i].Role == dockerx.RoleHolder) || (ops[i].Kind == OpRemove && in.Pods[ops[i].ContainerID] != nil) || ops[i].awaitFiles != "" {
			expanded = true
			break
		}
	}
	if !expanded {
		return ops
	}
	out := make([]Op, 0, len(ops))
	id := func() OpID { return OpID(len(out) + 1) }
	writes := map[string]OpID{} // holder name → its pod's OpWriteFiles
	for _, op := range ops {
		switch {
		case op.Kind == OpCreate && op.Role == dockerx.RoleHolder:
			t := &op.From.Spec.Template
			var vols []OpID
			for i := range t.Spec.Volumes {
				v := &t.Spec.Volumes[i]
				if v.EmptyDir == nil && !v.IsFileVolume() {
					continue
				}
				kind := "emptyDir"
				if v.IsFileVolume() {
					kind = v.FileVolumeKind()
				}
				vr := dockerx.PodVolumeRequest(in.Instance, op.Hash, op.From, *op.Pod, v)
				req := &vr
				vols = append(vols, id())
				out = append(out, Op{Kind: OpCreateVolume, Name: dockerx.VolumeName(op.Pod.Holder, v.Name, op.Pod.UID), Hash: op.Hash,
					Reason: ReasonMissing, Cause: fmt.Sprintf("pod %s: %s %s", op.Pod.Name, kind, v.Name), Volume: req})
			}
			op.Needs = vols
			holder := id()
			out = append(out, op)
			needs := []OpID{holder}
			if manifests.NeedsWriter(&t.Spec) {
				// Its files before any of its containers (files.go).
				needs = []OpID{holder, id()}
				out = append(out, Op{Kind: OpWriteFiles, Name: op.Pod.Holder, Hash: op.Hash, From: op.From, Pod: op.Pod,
					Reason: ReasonFilesUnwritten, Cause: fmt.Sprintf("pod %s: files of its volumes", op.Pod.Name), Needs: []OpID{holder}})
			}
			first := firstStep(t)
			for _, c := range first {
				out = append(out, Op{Kind: OpCreate, Name: dockerx.MemberName(op.Pod.Holder, c.Name), Hash: op.Hash, From: op.From, Pod: op.Pod,
					Container: c.Name, Reason: ReasonMissing, Cause: fmt.Sprintf("pod %s created", op.Pod.Name), Needs: needs})
			}
		case op.Kind == OpWriteFiles && op.Pod != nil:
			writes[op.Pod.Holder] = id()
			out = append(out, op)
		case op.awaitFiles != "":
			if w, ok := writes[op.awaitFiles]; ok {
				op.Needs = append(slices.Clip(op.Needs), w)
			}
			out = append(out, op)
		case op.Kind == OpRemove && in.Pods[op.ContainerID] != nil:
			p := in.Pods[op.ContainerID]
			if op.Grace > 0 {
				op.Phases = stopPhases(p, in.templateOf(p.Hash))
				out = append(out, op)
				continue
			}
			for _, c := range p.Containers() {
				if in.Stopping[c.ID] || c.State == dockerx.StateRemoving {
					continue
				}
				out = append(out, Op{Kind: OpRemove, Name: c.Name, ContainerID: c.ID, Reason: op.Reason, Cause: op.Cause})
			}
		default:
			out = append(out, op)
		}
	}
	return out
}

// firstStep returns the containers a new pod starts with: its first init
// container (sidecar or not), or, without any, every app container.
func firstStep(t *manifests.PodTemplateSpec) []*manifests.Container {
	if len(t.Spec.InitContainers) > 0 {
		return []*manifests.Container{&t.Spec.InitContainers[0]}
	}
	out := make([]*manifests.Container, len(t.Spec.Containers))
	for i := range t.Spec.Containers {
		out[i] = &t.Spec.Containers[i]
	}
	return out
}

// stopPhases orders a pod's graceful stop (docs/design.md §8, Graceful
// stop): its app containers together, then its native sidecars one at a time
// in reverse order (Kubernetes stops sidecars after the app containers, last
// started first), then the holder; init containers that are not running and
// containers the template does not know go with the app containers.
func stopPhases(p *podruntime.Pod, t *manifests.PodTemplateSpec) [][]podruntime.StopTarget {
	var apps []podruntime.StopTarget
	var sidecars [][]podruntime.StopTarget
	isSidecar := map[string]bool{}
	if t != nil {
		for i := len(t.Spec.InitContainers) - 1; i >= 0; i-- {
			ic := &t.Spec.InitContainers[i]
			if !ic.IsSidecar() {
				continue
			}
			isSidecar[ic.Name] = true
			if m := p.Members[ic.Name]; m != nil {
				sidecars = append(sidecars, []podruntime.StopTarget{{ID: m.ID, Name: m.Name}})
			}
		}
	}
	for _, c := range p.Containers() {
		if c == p.Holder || isSidecar[c.ContainerName] && p.Members[c.ContainerName] == c {
			continue
		}
		apps = append(apps, podruntime.StopTarget{ID: c.ID, Name: c.Name})
	}
	var phases [][]podruntime.StopTarget
	if len(apps) > 0 {
		phases = append(phases, apps)
	}
	phases = append(phases, sidecars...)
	if p.Holder != nil {
		phases = append(phases, []podruntime.StopTarget{{ID: p.Holder.ID, Name: p.Holder.Name, Holder: true}})
	}
	return phases
}

// memberNameBlocked reports whether a container the pod still has to make
// cannot get its name (held by a container this deployment does not own):
// the pod can never be completed under its name, so it is replaced by one
// under the next free ordinal, as a replica's create would move on.
func (in PlanInput) memberNameBlocked(p *podruntime.Pod) bool {
	if len(in.BlockedNames) == 0 {
		return false
	}
	t := in.templateOf(p.Hash)
	if t == nil {
		return false
	}
	for _, c := range t.Spec.AllContainers() {
		if p.Members[c.Name] == nil && in.BlockedNames[dockerx.MemberName(p.Base, c.Name)] {
			return true
		}
	}
	return false
}

// memberNames lists the container names of a template that needs a holder
// (nil otherwise): a new pod's ordinal must leave all of them free.
func memberNames(t *manifests.PodTemplateSpec) []string {
	if !manifests.NeedsHolder(&t.Spec) {
		return nil
	}
	var out []string
	for _, c := range t.Spec.AllContainers() {
		out = append(out, c.Name)
	}
	return out
}
