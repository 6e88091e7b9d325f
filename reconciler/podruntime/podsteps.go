package podruntime

import (
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// The steps inside one holder pod, as the kubelet's computePodActions
// plans them for a pod whose sandbox is alive (docs/design.md §17): the
// holder first, then the write of its files, then the init containers one
// at a time and in order — each to a successful exit, a native sidecar
// only to its start —, then every app container; afterwards each container
// is repaired on its own (started again after the crash backoff, created
// again if removed, restarted when its liveness probe fails) without
// touching its siblings. Every step is level-triggered: an init container
// that is still running plans nothing, and its exit (a Docker event)
// brings the next sync, which plans the next step. Which pods exist, and
// of which template, is the workload controller's decision; the steps of
// one pod are the runtime's.

// CauseStopped is the Cause of a ReasonStopped start.
const CauseStopped = "stopped"

// PodStepsInput is what PlanPodSteps needs besides the pod: the owner's
// view of its containers (maps by container ID, shared by all its pods),
// the template the pod runs, and where its files stand.
type PodStepsInput struct {
	Now time.Time
	// Template is the pod's template, From what its members are created
	// from (Op.From).
	Template *manifests.PodTemplateSpec
	From     *dockerx.PodTemplate
	// Refused: the template may not be started or created from (a
	// refused revision); only unpauses are planned.
	Refused bool
	// Files is where the pod's files stand (zero: no file volumes, or
	// nothing known).
	Files PodFiles
	// LivenessGrace is the grace of a liveness restart of one of its
	// containers.
	LivenessGrace  time.Duration
	Stopping       map[string]bool
	StartNotBefore map[string]time.Time
	Unstarted      map[string]bool
	LivenessFailed map[string]bool
	NeverStarts    map[string]string
}

// PodSteps is what PlanPodSteps returns, accumulated over an owner's pods:
// Blocked and RequeueAfter start as the owner plan's and are carried on.
type PodSteps struct {
	Ops []Op
	// Refused reports a refused template that needed a start or create.
	Refused bool
	// Blocked says why containers of the pods were neither created nor
	// started.
	Blocked []string
	// RequeueAfter is the earliest backoff a stopped container waits out.
	RequeueAfter time.Duration
}

// PodFiles is where one holder pod's files stand, for the planner.
type PodFiles struct {
	// Want is the hash of the payload the pod should have ("": it cannot
	// be made now, Missing says why).
	Want string
	// Have is the hash of the payload this controller last wrote into
	// the pod ("": none, or unknown since a restart).
	Have    string
	Missing string
	// Pod is the pod's name, and FailedMount the kubelet's message for
	// each of its volumes that cannot be made now: Want is the payload of
	// the other volumes, which a pod that has its files is updated to.
	Pod         string
	FailedMount []string
}

// podStepper plans one pod's steps into out.
type podStepper struct {
	p   *Pod
	in  *PodStepsInput
	out *PodSteps
	ref *dockerx.PodRef
	// awaitFiles is the holder whose files this plan writes first.
	awaitFiles string
	// holdStarts says why no container of the pod may be created or
	// started (files).
	holdStarts string
}

// PlanPodSteps appends to out the ops that move holder pod p on.
func PlanPodSteps(p *Pod, in PodStepsInput, out *PodSteps) {
	if in.Stopping[p.Key] {
		return // the whole pod is being stopped
	}
	s := &podStepper{p: p, in: &in, out: out, ref: &dockerx.PodRef{Name: p.Name, UID: p.UID, Holder: p.Base}}
	if !s.holderStep() || !s.filesStep() || !s.initSteps() {
		return
	}
	s.appSteps()
	s.strays()
}

// add appends op unless the template is refused or the pod's starts are
// held; a create or start waits for the files written in the same plan.
func (s *podStepper) add(op Op) {
	if s.in.Refused && op.Kind != OpUnpause {
		s.out.Refused = true
		return
	}
	startish := op.Kind == OpCreate || op.Kind == OpStart
	if s.holdStarts != "" && startish {
		if !slices.Contains(s.out.Blocked, s.holdStarts) {
			s.out.Blocked = append(s.out.Blocked, s.holdStarts)
		}
		return
	}
	if s.awaitFiles != "" && startish {
		op.AwaitFiles = s.awaitFiles
	}
	s.out.Ops = append(s.out.Ops, op)
}

// member is the create of template container c.
func (s *podStepper) member(c *manifests.Container) Op {
	return Op{Kind: OpCreate, Name: dockerx.MemberName(s.p.Base, c.Name), Hash: s.p.Hash, From: s.in.From, Pod: s.ref, Container: c.Name}
}

// start plans the start of a stopped container, after its crash backoff.
func (s *podStepper) start(c *dockerx.Container, what string) {
	if nb, ok := s.in.StartNotBefore[c.ID]; ok && s.in.Now.Before(nb) {
		s.out.RequeueAfter = minPositive(s.out.RequeueAfter, nb.Sub(s.in.Now))
		return
	}
	reason, cause := ReasonStopped, what+" "+CauseStopped
	if c.State == dockerx.StateCreated {
		reason, cause = ReasonNeverStarted, what+" created but never started"
	}
	s.add(Op{Kind: OpStart, Name: c.Name, ContainerID: c.ID, Reason: reason, Cause: cause})
}

// remove plans the removal of a dead container, to be made again.
func (s *podStepper) removeDead(m *dockerx.Container, what string) {
	s.out.Ops = append(s.out.Ops, Op{Kind: OpRemove, Name: m.Name, ContainerID: m.ID, Reason: ReasonDead, Cause: DeadCause(s.in.NeverStarts, m.ID, what)})
}

// DeadCause is the Cause of the removal of dead container id: one Docker
// can never start again (neverStarts) is replaced.
func DeadCause(neverStarts map[string]string, id, what string) string {
	if msg, ok := neverStarts[id]; ok {
		return what + " can never be started again (" + msg + "): replaced"
	}
	return what + " is dead"
}

// holderStep tends the holder; false: nothing joins it yet.
func (s *podStepper) holderStep() bool {
	h := s.p.Holder
	switch h.State {
	case dockerx.StateCreated:
		// Nothing joins a holder that does not run.
		s.start(h, "holder")
		return false
	case dockerx.StatePaused:
		s.add(Op{Kind: OpUnpause, Name: h.Name, ContainerID: h.ID, Reason: ReasonPaused, Cause: "holder paused"})
	case dockerx.StateRunning:
	default:
		return false // restarting: look again at its next event
	}
	return true
}

// filesStep plans the write of the pod's files; false: its containers
// must not be created or started.
func (s *podStepper) filesStep() bool {
	write, proceed, hold := s.planFiles()
	s.holdStarts = hold
	if write != nil {
		s.out.Ops = append(s.out.Ops, *write)
		s.awaitFiles = s.ref.Holder
	}
	return proceed
}

// planFiles is the step of a running holder pod with file volumes
// (docs/design.md §11): a write when its files are not (known to be) what
// they should be. proceed false: the pod's containers must not be created
// or started (it never got its files and cannot get them now). hold, when
// not "", says why no container of the pod may be created or started now,
// though those that run are tended.
func (s *podStepper) planFiles() (write *Op, proceed bool, hold string) {
	p, pf := s.p, s.in.Files
	if !manifests.NeedsWriter(&s.in.Template.Spec) || p.Holder == nil || p.Holder.State != dockerx.StateRunning {
		return nil, true, ""
	}
	switch {
	case pf.Missing != "" && pf.Have == "" && len(p.Members) == 0:
		// Never started: it waits for its files, as a pod whose volume
		// cannot be mounted stays ContainerCreating.
		s.out.Blocked = append(s.out.Blocked, pf.Missing)
		return nil, false, ""
	case pf.Missing != "" && pf.Have == "":
		// Containers of a pod whose files are not known to be written
		// (a restarted controller's check said no or failed): no partial
		// write, which is kept for pods known to have had every volume
		// written; those that run go on, but none is created or started
		// on volumes that may be empty, as the kubelet starts no
		// container of a pod before all of its volumes are mounted. The
		// check is asked again at the next sync.
		return nil, true, pf.Missing
	case pf.Want != "" && pf.Want != pf.Have:
		reason, cause := ReasonFilesChanged, "files of its volumes changed"
		if pf.Have == "" {
			reason, cause = ReasonFilesUnwritten, "files of its volumes not written by this controller yet"
		}
		return &Op{Kind: OpWriteFiles, Name: p.Holder.Name, ContainerID: p.Holder.ID, Hash: p.Hash, From: s.in.From, Pod: s.ref,
			Reason: reason, Cause: fmt.Sprintf("pod %s: %s", p.Name, cause)}, true, ""
	case pf.Want == "" && pf.Have == "" && len(p.Members) == 0:
		return nil, false, "" // never started, and nothing to write yet
	}
	return nil, true, ""
}

// tend plans what a container that should keep running needs.
func (s *podStepper) tend(c *manifests.Container, m *dockerx.Container, kind string) {
	what := fmt.Sprintf("%s %s", kind, c.Name)
	switch {
	case m == nil:
		op := s.member(c)
		op.Reason, op.Cause = ReasonMissing, what+" missing"
		s.add(op)
	case s.in.Stopping[m.ID] || m.State == dockerx.StateRemoving:
	case m.State == dockerx.StateDead:
		// Docker cannot start it: removed, to be made again.
		s.removeDead(m, what)
	case m.State == dockerx.StateExited || m.State == dockerx.StateCreated:
		s.start(m, what)
	case m.State == dockerx.StatePaused:
		s.add(Op{Kind: OpUnpause, Name: m.Name, ContainerID: m.ID, Reason: ReasonPaused, Cause: what + " paused"})
	case m.State == dockerx.StateRunning && s.in.LivenessFailed[m.ID]:
		s.add(Op{Kind: OpRestart, Name: m.Name, ContainerID: m.ID, Reason: ReasonLiveness, Cause: what + ": liveness probe failed",
			Grace: s.in.LivenessGrace})
	}
}

// initSteps plans the init containers in order; false: the app
// containers wait.
func (s *podStepper) initSteps() bool {
	t := s.in.Template
	initialized := s.p.InitDone(t)
	from := s.p.LastInit(t)
	for i := range t.Spec.InitContainers {
		ic := &t.Spec.InitContainers[i]
		m := s.p.Members[ic.Name]
		if ic.IsSidecar() {
			s.tend(ic, m, "sidecar")
			if !initialized && (m == nil || m.State != dockerx.StateRunning || s.in.Unstarted[m.ID]) {
				// The next init container waits for this sidecar to run,
				// its postStart hook and startup probe done.
				return false
			}
			continue
		}
		if initialized || i < from {
			// Never run again once the pod has run, nor once a later
			// one has (the kubelet's findNextInitContainerToRun).
			continue
		}
		if m != nil && m.State == dockerx.StateExited && m.ExitCode == 0 {
			continue
		}
		s.initStep(ic, m, i)
		return false // running, or just planned: the next one waits
	}
	return true
}

// initStep plans what init container ic, the i-th, needs to run to its
// successful exit.
func (s *podStepper) initStep(ic *manifests.Container, m *dockerx.Container, i int) {
	what := "init container " + ic.Name
	switch {
	case m != nil && m.State == dockerx.StateRemoving:
	case m != nil && m.State == dockerx.StateDead:
		s.removeDead(m, what)
	case m == nil:
		op := s.member(ic)
		op.Reason, op.Cause = ReasonMissing, fmt.Sprintf("%s (%d of %d) not run yet", what, i+1, len(s.in.Template.Spec.InitContainers))
		s.add(op)
	case m.State == dockerx.StateExited && !ShouldRestart(s.in.Template.Spec.RestartPolicy, m.ExitCode):
		// Under restartPolicy Never a failed init container fails the
		// pod (the kubelet's getPhase): nothing of it runs again.
	case m.State == dockerx.StateExited || m.State == dockerx.StateCreated:
		// A failed init container is run again, with the crash
		// backoff, as the kubelet does under restartPolicy Always and
		// OnFailure.
		s.start(m, what)
	case m.State == dockerx.StatePaused:
		s.add(Op{Kind: OpUnpause, Name: m.Name, ContainerID: m.ID, Reason: ReasonPaused, Cause: what + " paused"})
	}
}

// appSteps tends the app containers, but those that ended under the
// pod's restartPolicy.
func (s *podStepper) appSteps() {
	t := s.in.Template
	for i := range t.Spec.Containers {
		c := &t.Spec.Containers[i]
		m := s.p.Members[c.Name]
		if m != nil && m.State == dockerx.StateExited && !ShouldRestart(t.Spec.RestartPolicy, m.ExitCode) {
			continue // it ended under the pod's restartPolicy: kept as it is
		}
		s.tend(c, m, "container")
	}
}

// strays removes the containers no template container claims (a
// duplicate made by hand with our labels): not part of the pod.
func (s *podStepper) strays() {
	stray := func(m *dockerx.Container) {
		if !s.in.Stopping[m.ID] {
			s.out.Ops = append(s.out.Ops, Op{Kind: OpRemove, Name: m.Name, ContainerID: m.ID, Reason: ReasonNoHash, Cause: "not a container of the pod's template"})
		}
	}
	for _, x := range s.p.Extra {
		stray(x)
	}
	for name, m := range s.p.Members {
		if s.in.Template.Spec.FindContainer(name) == nil {
			stray(m)
		}
	}
}

// NewPodUID derives the uid of a pod created now: unique enough to tell
// two incarnations of one pod name apart, and a pure function of its
// input so that plans stay reproducible.
func NewPodUID(base string, now time.Time) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d", base, now.UnixNano())
	return fmt.Sprintf("%08x", h.Sum32())
}
