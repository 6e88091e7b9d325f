package podruntime

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodStatus is what a workload controller (and a read command) reads of a
// pod, computed from its observed containers as the kubelet computes a
// v1 PodStatus: nothing in it is stored, so a restarted controller reads
// the same.
type PodStatus struct {
	Phase corev1.PodPhase
	// Conditions are Initialized, Ready, ContainersReady and
	// PodScheduled (always true: a pod is on the one host from its start).
	Conditions []corev1.PodCondition
	// Containers are the pod's containers, init containers first, in the
	// template's order.
	Containers []ContainerStatus
	// Restarts counts restarts as kubectl's RESTARTS column does.
	Restarts int
	// ReadySince is when the pod was first seen ready in its current run
	// (zero while not ready); Available whether it has been ready for its
	// owner's minimum (minReadySeconds and the settle time).
	ReadySince time.Time
	Available  bool
	// Terminating: the pod is being stopped to be removed.
	Terminating bool
}

// ContainerStatus is one container's status, as a v1 ContainerStatus
// words it.
type ContainerStatus struct {
	Name          string
	Init, Sidecar bool
	// Ready is its readiness, or for a regular init container that it
	// completed (ContainerReady).
	Ready    bool
	Restarts int
	// State and LastState are waiting, running or terminated (exit code
	// and reason), as ContainerState words them.
	State, LastState corev1.ContainerState
	// ContainerID is Docker's ID ("" when not created); Started whether
	// it runs.
	ContainerID string
	Started     bool
}

// PodStatus computes the pod's status from what was observed of it.
func (e PodView) PodStatus() PodStatus {
	ps := PodStatus{Phase: e.Phase(), Conditions: e.Conditions(), Restarts: e.Restarts, ReadySince: e.ReadySince,
		Available: e.Available, Terminating: e.Terminating}
	for _, pc := range e.Containers {
		cs := ContainerStatus{Name: pc.DisplayName(), Init: pc.Init, Sidecar: pc.Sidecar, Ready: e.ContainerReady(pc), Restarts: pc.View.Restarts}
		cs.State, cs.LastState = e.ContainerState(pc)
		if c := pc.Container; c != nil {
			cs.ContainerID = c.ID
			cs.Started = cs.State.Running != nil
		}
		ps.Containers = append(ps.Containers, cs)
	}
	return ps
}
