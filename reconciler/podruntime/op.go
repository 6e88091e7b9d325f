package podruntime

import (
	"fmt"
	"strings"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// An Op is one operation on a pod's containers or volumes, as a plan
// orders them and an executor maps them to Docker calls (docs/design.md
// §17). Which ops a plan holds, and why, is its controller's decision;
// what each op does, and how it prints (Line, for plan goldens and the
// log), is the runtime's.

// OpKind is what one planned operation does to Docker.
type OpKind string

const (
	// OpCreate creates and starts a new replica.
	OpCreate OpKind = "create"
	// OpStart starts an existing container that is not running.
	OpStart OpKind = "start"
	// OpUnpause resumes a paused container.
	OpUnpause OpKind = "unpause"
	// OpRemove stops a container gracefully (its stop signal, then kill
	// after Grace) and removes it with its anonymous volumes; with no Grace
	// it is killed and removed at once.
	OpRemove OpKind = "remove"
	// OpRestart stops (with Grace) a running container whose liveness
	// probe failed, for a later sync to start it again as any stopped
	// replica (with the crash-loop backoff): Docker does not restart
	// unhealthy containers by itself.
	OpRestart OpKind = "restart"
	// OpCreateVolume creates an emptyDir volume of a holder pod.
	OpCreateVolume OpKind = "create-volume"
	// OpRemoveVolume removes the volume of a pod that is gone.
	OpRemoveVolume OpKind = "remove-volume"
)

// OpReason is why an operation is planned, for code to act on: the
// controller must never parse Cause, which is written for people and may
// change with any release.
type OpReason string

const (
	// ReasonMissing: a revision has fewer replicas than its size (OpCreate).
	ReasonMissing OpReason = "Missing"
	// ReasonStopped: a replica that ran has stopped (OpStart). Its start
	// counts as a restart.
	ReasonStopped OpReason = "Stopped"
	// ReasonNeverStarted: a replica was created but never started (OpStart).
	ReasonNeverStarted OpReason = "NeverStarted"
	// ReasonPaused: a replica is paused (OpUnpause).
	ReasonPaused OpReason = "Paused"
	// ReasonLiveness: a running replica failed its liveness probe
	// (OpRestart). The start that follows (ReasonStopped) is the restart.
	ReasonLiveness OpReason = "Liveness"
	// ReasonSurplus: the current revision has more replicas than desired
	// (OpRemove).
	ReasonSurplus OpReason = "Surplus"
	// ReasonRollout: an old revision is scaled down (OpRemove).
	ReasonRollout OpReason = "Rollout"
	// ReasonNoHash: a container with no template hash, not made by dockctl
	// (OpRemove).
	ReasonNoHash OpReason = "NoHash"
	// ReasonDead: Docker reports the container dead (OpRemove).
	ReasonDead OpReason = "Dead"
	// ReasonTerminating: a container whose stop was begun earlier, by this
	// or a previous controller, is stopped again (OpRemove).
	ReasonTerminating OpReason = "Terminating"
	// ReasonDeleted: the deployment was deleted (OpRemove).
	ReasonDeleted OpReason = "Deleted"
	// ReasonPodGone: the pod a volume belonged to has no container left
	// (OpRemoveVolume).
	ReasonPodGone OpReason = "PodGone"
)

// Op is one operation of a plan. Reason says why it is needed, for code;
// Cause says it in words a user reading the controller's log or `describe`
// output understands.
type Op struct {
	// ID names the op within its plan (1, 2, … in plan order), for
	// DependsOn; 0 in a plan not made by ComputePlan.
	ID OpID
	// DependsOn lists the ops that must have ended (succeeded, failed or
	// been skipped) before this one begins; OnDepFailure says what becomes
	// of this one when one of them did not succeed. The planner decides
	// the order, so that the executor hard-codes none (see link).
	DependsOn    []OpID
	OnDepFailure DepFailurePolicy
	// Needs lists ops that must have SUCCEEDED before this one runs,
	// whatever OnDepFailure says: within a pod, a member cannot join a
	// holder that was not made, nor a holder mount a volume that was not.
	Needs       []OpID
	Kind        OpKind
	Name        string // container name
	ContainerID string // empty for OpCreate
	Hash        string // template hash of the container to create
	Reason      OpReason
	Cause       string
	// Grace is, for OpRemove and OpRestart, how long the container has
	// between its stop signal and the kill: its own revision's
	// terminationGracePeriodSeconds, bounded (see graceFor). The plan
	// decides it so that the executor only maps the op to Docker calls.
	Grace time.Duration
	// From is, for OpCreate, the pod template to create the container
	// from, kind-free (docs/design.md §17): the desired deployment's, or
	// an old revision's for a replica of that revision, owned by the
	// deployment. The plan decides it so that the executor looks no
	// template up.
	From *dockerx.PodTemplate
	// Pod is, for the creates of a holder pod (holder and members) and the
	// graceful removal of one, the pod; Role says whether a create makes
	// its holder (dockerx.RoleHolder) and Container which template
	// container a member create makes.
	Pod       *dockerx.PodRef
	Role      string
	Container string
	// Volume is, for OpCreateVolume, the volume to create.
	Volume *dockerx.VolumeRequest
	// Phases is, for the graceful removal of a holder pod (ContainerID is
	// then the pod's unit ID), its containers in stop order: each phase is
	// stopped together, after the previous one is gone (StopPhases).
	Phases [][]StopTarget
	// Drain is, for a graceful stop (OpRemove with Grace, OpRestart) of a
	// running replica or pod, the pod the stopper takes out of every
	// Service's endpoints before the stop signal (setDrains); nil: nothing
	// to drain.
	Drain *DrainRef
	// PreStop is, for a graceful stop of a running container (not a
	// holder pod's: see StopTarget), its preStop hook (setPreStops).
	PreStop *Hook
	// Deadline is, for the OpRemove of a container whose stop is in
	// flight here, the earlier kill time a user's delete gave it (a pod
	// deleted again with a shorter grace period): the stopper shortens
	// the stop to it, and starts none (deleteOp).
	Deadline time.Time
	// AwaitFiles names, on a member's create or start, the holder whose
	// OpWriteFiles of the same plan it needs (the planner turns it into
	// Needs).
	AwaitFiles string
}

func (o Op) String() string {
	return fmt.Sprintf("%s %s: %s", o.Kind, o.Name, o.Cause)
}

// OpID names an op within its plan.
type OpID int

// DepFailurePolicy says what becomes of an op when one of its dependencies
// failed or was skipped.
type DepFailurePolicy uint8

const (
	// SkipOnDepFailure: the op is skipped.
	SkipOnDepFailure DepFailurePolicy = iota
	// RunOnDepFailure: the op only had to wait for its dependencies; it
	// runs whatever became of them.
	RunOnDepFailure
	// RunIfCreatesSafe: the op runs only if createsSafe judges the
	// dependencies' failures harmless to the surge bound (see link).
	RunIfCreatesSafe
)

func (f DepFailurePolicy) String() string {
	switch f {
	case RunOnDepFailure:
		return "run"
	case RunIfCreatesSafe:
		return "ifsafe"
	}
	return "skip"
}

// Line renders the op on one line, for Plan.String and the controller's
// log: id, kind, container, reason, grace, cause, dependencies.
func (o Op) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s %s reason=%s", o.ID, o.Kind, o.Name, o.Reason)
	if o.Kind == OpCreate {
		fmt.Fprintf(&b, " hash=%s", o.Hash)
	}
	if o.Role != "" {
		fmt.Fprintf(&b, " role=%s", o.Role)
	}
	if o.Container != "" {
		fmt.Fprintf(&b, " container=%s", o.Container)
	}
	if o.Pod != nil && o.Kind != OpRemove {
		fmt.Fprintf(&b, " pod=%s/%s", o.Pod.Name, o.Pod.UID)
	}
	for i, ph := range o.Phases {
		names := make([]string, len(ph))
		for j, t := range ph {
			names[j] = t.Name
		}
		fmt.Fprintf(&b, " phase%d=%s", i+1, strings.Join(names, ","))
	}
	if o.Grace > 0 {
		fmt.Fprintf(&b, " grace=%s", o.Grace)
	}
	fmt.Fprintf(&b, " cause=%q", o.Cause)
	if len(o.DependsOn) > 0 {
		fmt.Fprintf(&b, " after=%s on-failure=%s", IDRanges(o.DependsOn), o.OnDepFailure)
	}
	if len(o.Needs) > 0 {
		fmt.Fprintf(&b, " needs=%s", IDRanges(o.Needs))
	}
	return b.String()
}

// IDRanges renders sorted IDs compactly: "1-3,5".
func IDRanges(ids []OpID) string {
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprintf("#%d", ids[i]))
		} else {
			parts = append(parts, fmt.Sprintf("#%d-#%d", ids[i], ids[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

const (
	// OpWriteFiles writes the files of a pod's file volumes through its
	// holder (Name, ContainerID; "" for a holder created in the same plan).
	OpWriteFiles OpKind = "write-files"
	// ReasonFilesUnwritten: the pod's files were never written by this
	// controller (a new pod, or a controller restart) (OpWriteFiles).
	ReasonFilesUnwritten OpReason = "FilesUnwritten"
	// ReasonFilesChanged: a ConfigMap or Secret the pod's volumes project
	// changed (OpWriteFiles).
	ReasonFilesChanged OpReason = "FilesChanged"

	// ReasonPodDeleted: a user deleted the pod (OpRemove).
	ReasonPodDeleted OpReason = "PodDeleted"
)

// CountsAsRestart reports whether the op runs a replica again after it
// ran — a stopped replica started, whatever stopped it (a liveness
// restart only stops it; its start is this) — which status counts as a
// restart. A first start of a created container is not one.
func (o Op) CountsAsRestart() bool {
	return o.Reason == ReasonStopped
}

// StopRequest is a graceful stop op (OpRemove, OpRestart) as the
// Stopper takes it.
func (o Op) StopRequest() StopRequest {
	kind := StopRemove
	if o.Kind == OpRestart {
		kind = StopRestart
	}
	return StopRequest{Kind: kind, ContainerID: o.ContainerID, Name: o.Name, Grace: o.Grace,
		Phases: o.Phases, Drain: o.Drain, PreStop: o.PreStop, Deadline: o.Deadline}
}
