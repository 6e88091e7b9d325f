package podruntime

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// ContainerView is how the read commands present one container's
// controller-side facts.
type ContainerView struct {
	Ready            bool
	Available        bool
	Restarts         int
	CrashLoopBackOff bool
	// Terminating is set while dockctl stops it to remove it.
	Terminating bool
	// StopDeadline is when a terminating container is killed, as recorded
	// (zero when unknown): a pod's metadata.deletionTimestamp.
	StopDeadline time.Time
	// ReadySince is when it was first seen ready in its current run (its
	// creation when not recorded); zero while not ready.
	ReadySince time.Time
}

// PodView is one replica as `get pods` shows it.
type PodView struct {
	Name      string // the pod's name (its hostname)
	Namespace string // its owner's, "default" included
	Owner     OwnerRef
	// RestartPolicy is the pod's (its template's) restartPolicy; "" is
	// Always.
	RestartPolicy string
	Hash          string
	Holder        *dockerx.Container // nil for a pod of one container
	// Containers are the template's containers, init containers first,
	// with what Docker shows of each (Container nil: not created).
	Containers []PodContainer
	// Ready and Total count app containers and sidecars (kubectl's READY).
	Ready, Total int
	Status       string // as kubectl shows it: Running, Init:1/2, CrashLoopBackOff…
	Restarts     int
	Created      time.Time
	Available    bool
	Terminating  bool
	// StopDeadline is when a terminating pod is killed, as recorded (zero
	// when unknown).
	StopDeadline time.Time
	// ReadySince is when the pod was first seen ready in its current run;
	// zero while not ready.
	ReadySince time.Time
	// Waiting is why its controller could not create it (or a container
	// of it), as recorded in its status (WithWaiting); nil: no such
	// failure.
	Waiting *WaitingPod
}

// PodContainer is one container of a PodView.
type PodContainer struct {
	Name          string
	Init, Sidecar bool
	Container     *dockerx.Container
	View          ContainerView
}

// Initialized reports whether a pod's init containers are done, as
// kubectl's printer and the kubelet's Initialized condition judge it: an
// app container exists (a pod does not initialize again), or every regular
// init container exited 0 and every sidecar runs.
func (pv PodView) Initialized() bool {
	if pv.Ran() {
		return true
	}
	for _, pc := range pv.Containers {
		if !pc.Init {
			continue
		}
		c := pc.Container
		switch {
		case c == nil:
			return false
		case pc.Sidecar && c.State != dockerx.StateRunning:
			return false
		case !pc.Sidecar && (c.State != dockerx.StateExited || c.ExitCode != 0):
			return false
		}
	}
	return true
}

// StatusWord words a pod's state as kubectl's printer does (the first that
// applies): Terminating; the holder's trouble; Init:Error,
// Init:CrashLoopBackOff or Init:N/M while initializing (a started sidecar
// counts as done); PodInitializing; then the worst app container:
// CrashLoopBackOff, Error, Completed, ContainerCreating; else Running.
func StatusWord(pv PodView, t *manifests.PodTemplateSpec, unitState string) string {
	if pv.Terminating || unitState == dockerx.StateRemoving {
		return "Terminating"
	}
	// A finished pod's holder is stopped with it (StopHalt): it is
	// worded by its containers, Completed or Error.
	if _, finished := pv.Terminal(); !finished && (pv.Holder != nil || unitState == dockerx.StateDead) {
		switch h := pv.Holder; {
		case h == nil || h.State == dockerx.StateDead || h.State == dockerx.StateExited:
			return "Error" // its namespaces are gone: the pod is replaced
		case h.State == dockerx.StateCreated:
			return "ContainerCreating"
		}
	}
	nInit, done := 0, 0
	initializing := false
	for _, pc := range pv.Containers {
		if !pc.Init {
			if pc.Container != nil {
				initializing = false // an app container exists: initialized
				break
			}
			continue
		}
		nInit++
		c := pc.Container
		switch {
		case c == nil:
			initializing = true
		case pc.Sidecar && c.State == dockerx.StateRunning:
			done++
		case !pc.Sidecar && c.State == dockerx.StateExited && c.ExitCode == 0:
			done++
		case pv.backingOff(pc):
			return "Init:CrashLoopBackOff"
		case c.State == dockerx.StateExited:
			return "Init:Error"
		default:
			initializing = true
		}
	}
	if initializing && done < nInit {
		return fmt.Sprintf("Init:%d/%d", done, nInit)
	}
	status, running := "", 0
	apps := 0
	for _, pc := range pv.Containers {
		if pc.Init {
			continue
		}
		apps++
		c := pc.Container
		switch {
		case c == nil || c.State == dockerx.StateCreated && !pv.backingOff(pc):
			if status == "" {
				status = "ContainerCreating"
				if nInit > 0 && !pv.Ran() {
					// The kubelet's word for app containers not yet
					// made after the init containers; one made again in
					// a pod that ran is ContainerCreating.
					status = "PodInitializing"
				}
			}
		case pv.backingOff(pc):
			status = "CrashLoopBackOff"
		case c.State == dockerx.StateExited && c.ExitCode == 0:
			if status == "" || status == "ContainerCreating" {
				status = "Completed"
			}
		case c.State == dockerx.StateExited || c.State == dockerx.StateDead:
			if status != "CrashLoopBackOff" {
				status = "Error"
			}
		case c.State == dockerx.StatePaused:
			if status == "" {
				status = "Paused"
			}
		case c.State == dockerx.StateRunning || c.State == dockerx.StateRestarting:
			running++
		}
	}
	if status == "Completed" && running > 0 {
		// kubectl: a container completed while another still runs.
		if pv.Ready == pv.Total {
			return "Running"
		}
		return "NotReady"
	}
	if status != "" {
		return status
	}
	if apps == 0 || running == 0 {
		return "Unknown"
	}
	return "Running"
}

// HasHolder reports whether the pod is a pod with a holder (whether or not
// its holder still exists).
func (e PodView) HasHolder() bool {
	if e.Holder != nil {
		return true
	}
	for _, pc := range e.Containers {
		if pc.Container != nil && pc.Container.PodUID != "" {
			return true
		}
	}
	return false
}

// DisplayName is how the pod calls one of its containers: its template
// name; for a container no template names (an orphan), its Docker name.
func (pc PodContainer) DisplayName() string {
	if pc.Name == "" && pc.Container != nil {
		return pc.Container.Name
	}
	return pc.Name
}

// initDone reports whether an init container did its part: a regular one
// exited 0, a sidecar started.
func initDone(pc PodContainer) bool {
	c := pc.Container
	if c == nil {
		return false
	}
	if pc.Sidecar {
		return c.State == dockerx.StateRunning
	}
	return c.State == dockerx.StateExited && c.ExitCode == 0
}

// Phase is the pod's status.phase, as the kubelet's getPhase has it: a
// holder pod whose holder is gone failed (it is replaced as a whole); a
// pod finished under its restartPolicy (FinishedPhase) Succeeded or
// Failed — never one of restartPolicy Always —, as is one of
// restartPolicy Never whose init container failed; else a pod
// is Pending until each app container has been started, then Running.
func (e PodView) Phase() corev1.PodPhase {
	if phase, finished := e.Terminal(); finished {
		// Whatever its holder: the runtime stops the holder of a
		// finished pod, as the kubelet its sandbox (StopHalt).
		return phase
	}
	if e.HasHolder() && (e.Holder == nil || e.Holder.State == dockerx.StateExited || e.Holder.State == dockerx.StateDead) {
		return corev1.PodFailed
	}
	for _, pc := range e.Containers {
		if pc.Init {
			continue
		}
		c := pc.Container
		if c == nil || c.State == dockerx.StateCreated && pc.View.Restarts == 0 && !pc.View.CrashLoopBackOff {
			return corev1.PodPending
		}
	}
	return corev1.PodRunning
}

// Terminal is the phase of a pod that reached a terminal one by its
// containers: its app containers ended under its restartPolicy
// (FinishedPhase), or, under restartPolicy Never, an init container failed
// before any app container ran.
func (e PodView) Terminal() (corev1.PodPhase, bool) {
	var apps []*dockerx.Container
	for _, pc := range e.Containers {
		if !pc.Init {
			apps = append(apps, pc.Container)
		}
	}
	if phase, finished := FinishedPhase(e.RestartPolicy, apps); finished {
		return phase, true
	}
	if e.RestartPolicy == manifests.RestartNever && !e.Ran() {
		for _, pc := range e.Containers {
			if c := pc.Container; pc.Init && !pc.Sidecar && c != nil && c.State == dockerx.StateExited && c.ExitCode != 0 {
				return corev1.PodFailed, true // its initialization failed, never to be retried
			}
		}
	}
	return "", false
}

// Conditions are the pod's Initialized, Ready, ContainersReady and
// PodScheduled conditions, as Kubernetes computes them (a pod is on the
// one host from its start).
func (e PodView) Conditions() []corev1.PodCondition {
	b := func(v bool) corev1.ConditionStatus {
		if v {
			return corev1.ConditionTrue
		}
		return corev1.ConditionFalse
	}
	containersReady := e.Total > 0 && e.Ready == e.Total
	holderUp := !e.HasHolder() || e.Holder != nil && e.Holder.State == dockerx.StateRunning
	return []corev1.PodCondition{
		{Type: corev1.PodInitialized, Status: b(e.Initialized())},
		{Type: corev1.PodReady, Status: b(containersReady && holderUp && !e.Terminating)},
		{Type: corev1.ContainersReady, Status: b(containersReady)},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
	}
}

// ContainerState is one container's state and last state, as a
// ContainerStatus words them.
func (e PodView) ContainerState(pc PodContainer) (state, last corev1.ContainerState) {
	c := pc.Container
	terminated := func() *corev1.ContainerStateTerminated {
		reason := "Error"
		if c.ExitCode == 0 {
			reason = "Completed"
		}
		return &corev1.ContainerStateTerminated{ExitCode: int32(c.ExitCode), Reason: reason}
	}
	switch {
	case c == nil && pc.Init && !pc.Sidecar && e.Ran():
		// Removed after the pod ran its app containers: it completed
		// (it is never run again), and its logs went with it.
		state.Terminated = &corev1.ContainerStateTerminated{Reason: "Completed", Message: "container removed after it completed"}
	case c == nil && e.Waiting != nil:
		if reason, msg, ok := e.waitingState(pc); ok {
			state.Waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: msg}
			break
		}
		state.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	case c == nil:
		reason := "ContainerCreating"
		if !e.Ran() && (pc.Init || hasInit(e.Containers)) {
			reason = "PodInitializing"
		}
		state.Waiting = &corev1.ContainerStateWaiting{Reason: reason}
	case e.backingOff(pc):
		state.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off restarting failed container %s in pod %s", pc.DisplayName(), e.Name)}
		if c.State != dockerx.StateCreated {
			last.Terminated = terminated()
		}
	case c.State == dockerx.StateCreated:
		state.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	case c.State == dockerx.StateExited || c.State == dockerx.StateDead || c.State == dockerx.StateRemoving:
		state.Terminated = terminated()
	default: // running, paused, restarting
		state.Running = &corev1.ContainerStateRunning{}
	}
	return state, last
}

// backingOff reports whether container pc waits out its crash-loop
// backoff to be started again: the backoff its exit recorded, when the
// pod's restartPolicy starts it again (a sidecar always). One it never
// starts again — an app or init container under Never, one that exited 0
// under OnFailure — is terminated, as the kubelet reports it.
func (e PodView) backingOff(pc PodContainer) bool {
	c := pc.Container
	return pc.View.CrashLoopBackOff && (pc.Sidecar || c == nil || c.State != dockerx.StateExited || ShouldRestart(e.RestartPolicy, c.ExitCode))
}

func hasInit(pcs []PodContainer) bool {
	for _, pc := range pcs {
		if pc.Init {
			return true
		}
	}
	return false
}

// Ran reports whether an app container of the pod exists: its init
// containers have run, and never run again.
func (e PodView) Ran() bool {
	for _, pc := range e.Containers {
		if !pc.Init && pc.Container != nil {
			return true
		}
	}
	return false
}

// ContainerReady is a container's ready flag: its readiness, or for a
// regular init container, that it completed (as the kubelet reports it).
func (e PodView) ContainerReady(pc PodContainer) bool {
	if pc.Init && !pc.Sidecar {
		return initDone(pc) || pc.Container == nil && e.Ran()
	}
	return pc.View.Ready
}
