package statefulset

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/reconciler/workload"
)

func TestStatusCountsObservedPods(t *testing.T) {
	old := newSet(4)
	s := newSet(4, image("nginx:2"), minReady(60), onDelete)
	o, u := rev(old), rev(s)
	pods := []workload.ObservedPod{
		ready("web-0", o),
		pod("web-1", u, corev1.PodRunning, t0.Add(-30*time.Second)), // ready, not yet available
		notReady("web-2", u),
		terminating(ready("web-3", o)), // ready while it lasts, neither current nor updated
		ready("web-7", o),              // condemned still counts
	}
	d := Sync(s, history(old, s), Status{CurrentRevision: o, CollisionCount: 2}, pods, nil, t0)
	want := Status{ObservedGeneration: 3, Replicas: 5, ReadyReplicas: 4, AvailableReplicas: 3,
		CurrentReplicas: 2, UpdatedReplicas: 2, CurrentRevision: o, UpdateRevision: u, CollisionCount: 2}
	if d.Status != want {
		t.Errorf("status =\n %+v, want\n %+v", d.Status, want)
	}
	if at := t0.Add(30 * time.Second); !d.RequeueAt.Equal(at) {
		t.Errorf("RequeueAt = %v, want %v", d.RequeueAt, at)
	}
}

func TestUnknownCurrentRevisionStartsAtTheUpdateRevision(t *testing.T) {
	s := newSet(1)
	d := Sync(s, nil, Status{CurrentRevision: "web-gone"}, nil, nil, t0)
	if d.Status.CurrentRevision != rev(s) {
		t.Errorf("currentRevision = %q, want %q", d.Status.CurrentRevision, rev(s))
	}
}

func TestRollingUpdateCompletesOnlyWhenSpecReplicasAreUpdated(t *testing.T) {
	old := newSet(3)
	s := newSet(3, image("nginx:2"))
	o, u := rev(old), rev(s)
	// Two of three replicas exist, both updated and ready: the update is
	// not complete while web-2 is still to be made (completeRollingUpdate
	// compares with spec.replicas, not with the pods there are).
	d := Sync(s, history(old, s), Status{CurrentRevision: o}, []workload.ObservedPod{ready("web-0", u), ready("web-1", u)}, nil, t0)
	if d.Status.CurrentRevision != o || d.Status.CurrentReplicas != 0 || d.Status.UpdatedReplicas != 2 {
		t.Errorf("status %+v, want currentRevision %s with 0 current, 2 updated", d.Status, o)
	}
	d = Sync(s, history(old, s), Status{CurrentRevision: o}, []workload.ObservedPod{ready("web-0", u), ready("web-1", u), ready("web-2", u)}, nil, t0)
	if d.Status.CurrentRevision != u || d.Status.CurrentReplicas != 3 {
		t.Errorf("status %+v, want currentRevision %s with 3 current once all are updated", d.Status, u)
	}
}
