package statefulset

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/workload"
)

func TestOrderedReadyCreatesOnePodAtATime(t *testing.T) {
	s := newSet(3)
	d := Sync(s, nil, Status{}, nil, nil, t0)
	eq(t, "created", podNames(d.CreatePods), []string{"web-0"})
	if d.Waiting == "" {
		t.Error("an ordered set that created a pod waits for it")
	}
}

func TestParallelCreatesAllAtOnce(t *testing.T) {
	s := newSet(3, parallel)
	d := Sync(s, nil, Status{}, nil, nil, t0)
	eq(t, "created", podNames(d.CreatePods), []string{"web-0", "web-1", "web-2"})
	if d.Waiting != "" {
		t.Errorf("Waiting = %q, want none under Parallel", d.Waiting)
	}
}

func TestOrderedReadyWaitsForLowerOrdinalReady(t *testing.T) {
	s := newSet(3)
	r := rev(s)
	tests := []struct {
		name string
		pods []workload.ObservedPod
		want []string
	}{
		{"pending", []workload.ObservedPod{pod("web-0", r, corev1.PodPending, time.Time{})}, nil},
		{"running, not ready", []workload.ObservedPod{notReady("web-0", r)}, nil},
		{"terminating", []workload.ObservedPod{terminating(ready("web-0", r))}, nil},
		{"ready", []workload.ObservedPod{ready("web-0", r)}, []string{"web-1"}},
		{"a middle ordinal not ready", []workload.ObservedPod{ready("web-0", r), notReady("web-1", r)}, nil},
		{"a gap below", []workload.ObservedPod{ready("web-1", r), ready("web-2", r)}, []string{"web-0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Sync(s, history(s), Status{CurrentRevision: r}, tt.pods, nil, t0)
			eq(t, "created", podNames(d.CreatePods), tt.want)
			if len(d.DeletePods) != 0 {
				t.Errorf("deleted %q", d.DeletePods)
			}
		})
	}
}

func TestOrderedReadyWaitsForMinReadySeconds(t *testing.T) {
	s := newSet(2, minReady(30))
	r := rev(s)
	p := pod("web-0", r, corev1.PodRunning, t0.Add(-10*time.Second))
	d := Sync(s, history(s), Status{CurrentRevision: r}, []workload.ObservedPod{p}, nil, t0)
	eq(t, "created", podNames(d.CreatePods), nil)
	if want := t0.Add(20 * time.Second); !d.RequeueAt.Equal(want) {
		t.Errorf("RequeueAt = %v, want %v (when web-0 becomes available)", d.RequeueAt, want)
	}
	if d.Status.ReadyReplicas != 1 || d.Status.AvailableReplicas != 0 {
		t.Errorf("ready/available = %d/%d, want 1/0", d.Status.ReadyReplicas, d.Status.AvailableReplicas)
	}
	d = Sync(s, history(s), Status{CurrentRevision: r}, []workload.ObservedPod{p}, nil, t0.Add(20*time.Second))
	eq(t, "created at the requeue", podNames(d.CreatePods), []string{"web-1"})
	if !d.RequeueAt.IsZero() {
		t.Errorf("RequeueAt = %v, want none once available", d.RequeueAt)
	}
}

func TestOrderedReadyReachesAllReadyInOrdinalOrder(t *testing.T) {
	c := newCluster(newSet(4))
	d := c.settle(t)
	eq(t, "creation order", c.created, []string{"web-0", "web-1", "web-2", "web-3"})
	st := d.Status
	if st.Replicas != 4 || st.ReadyReplicas != 4 || st.AvailableReplicas != 4 || st.CurrentReplicas != 4 || st.UpdatedReplicas != 4 {
		t.Errorf("status = %+v, want 4 of each", st)
	}
	if st.CurrentRevision != rev(c.set) || st.UpdateRevision != rev(c.set) {
		t.Errorf("revisions = %q/%q, want %q", st.CurrentRevision, st.UpdateRevision, rev(c.set))
	}
}

func TestScaleDownRemovesHighestOrdinalFirst(t *testing.T) {
	for _, policy := range []string{"OrderedReady", "Parallel"} {
		t.Run(policy, func(t *testing.T) {
			s := newSet(4)
			if policy == "Parallel" {
				parallel(s)
			}
			c := newCluster(s)
			c.settle(t)
			one := int32(1)
			s.Spec.Replicas = &one
			d := c.step()
			want := []string{"web-3"}
			if policy == "Parallel" {
				want = []string{"web-3", "web-2", "web-1"}
			}
			eq(t, "first deletions", d.DeletePods, want)
			c.settle(t)
			eq(t, "all deletions", c.deleted, []string{"web-3", "web-2", "web-1"})
		})
	}
}

func TestScaleDownWaitsWhileLowerOrdinalUnhealthy(t *testing.T) {
	s := newSet(2)
	r := rev(s)
	tests := []struct {
		name string
		pods []workload.ObservedPod
		want []string
	}{
		{"a kept replica not ready", []workload.ObservedPod{ready("web-0", r), notReady("web-1", r), ready("web-2", r), ready("web-3", r)}, nil},
		// Kubernetes judges the condemned target itself: a healthy one goes
		// although a lower condemned pod is not ready.
		{"a lower condemned pod not ready, the highest healthy", []workload.ObservedPod{ready("web-0", r), ready("web-1", r), notReady("web-2", r), ready("web-3", r)}, []string{"web-3"}},
		{"the highest unhealthy and a lower condemned one too", []workload.ObservedPod{ready("web-0", r), ready("web-1", r), notReady("web-2", r), notReady("web-3", r)}, nil},
		{"a kept replica missing", []workload.ObservedPod{ready("web-0", r), ready("web-2", r)}, nil},
		{"the highest is the first unhealthy", []workload.ObservedPod{ready("web-0", r), ready("web-1", r), ready("web-2", r), notReady("web-3", r)}, []string{"web-3"}},
		{"a higher one terminating", []workload.ObservedPod{ready("web-0", r), ready("web-1", r), ready("web-2", r), terminating(ready("web-3", r))}, nil},
		{"all healthy", []workload.ObservedPod{ready("web-0", r), ready("web-1", r), ready("web-2", r), ready("web-3", r)}, []string{"web-3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Sync(s, history(s), Status{CurrentRevision: r}, tt.pods, nil, t0)
			eq(t, "deleted", d.DeletePods, tt.want)
		})
	}
}

func TestParallelScaleDownIgnoresHealth(t *testing.T) {
	s := newSet(1, parallel)
	r := rev(s)
	pods := []workload.ObservedPod{notReady("web-0", r), notReady("web-1", r), terminating(ready("web-2", r)), ready("web-3", r)}
	d := Sync(s, history(s), Status{CurrentRevision: r}, pods, nil, t0)
	eq(t, "deleted", d.DeletePods, []string{"web-3", "web-1"})
}

func TestFailedPodIsDeletedAndRecreated(t *testing.T) {
	s := newSet(3)
	r := rev(s)
	failed := pod("web-1", r, corev1.PodFailed, time.Time{})
	pods := []workload.ObservedPod{ready("web-0", r), failed, ready("web-2", r)}
	d := Sync(s, history(s), Status{CurrentRevision: r}, pods, nil, t0)
	eq(t, "deleted", d.DeletePods, []string{"web-1"})
	eq(t, "created", podNames(d.CreatePods), nil)
	wantEvents := []workload.Event{
		{Type: corev1.EventTypeWarning, Reason: "RecreatingFailedPod", Message: "StatefulSet shop/web is recreating failed Pod web-1"},
		{Type: corev1.EventTypeNormal, Reason: "SuccessfulDelete", Message: "delete Pod web-1 in StatefulSet web successful"},
	}
	if fmt.Sprint(d.Events) != fmt.Sprint(wantEvents) {
		t.Errorf("events = %v, want %v", d.Events, wantEvents)
	}
	// While it is being deleted nothing else happens; once it is gone,
	// it is created again under its name.
	d = Sync(s, history(s), Status{CurrentRevision: r}, []workload.ObservedPod{ready("web-0", r), terminating(failed), ready("web-2", r)}, nil, t0)
	if len(d.DeletePods)+len(d.CreatePods) != 0 {
		t.Errorf("while terminating: deleted %q, created %q", d.DeletePods, podNames(d.CreatePods))
	}
	d = Sync(s, history(s), Status{CurrentRevision: r}, []workload.ObservedPod{ready("web-0", r), ready("web-2", r)}, nil, t0)
	eq(t, "created", podNames(d.CreatePods), []string{"web-1"})
}

func TestSucceededPodIsRecreatedToo(t *testing.T) {
	s := newSet(1)
	r := rev(s)
	d := Sync(s, history(s), Status{CurrentRevision: r}, []workload.ObservedPod{pod("web-0", r, corev1.PodSucceeded, time.Time{})}, nil, t0)
	eq(t, "deleted", d.DeletePods, []string{"web-0"})
	if len(d.Events) == 0 || d.Events[0].Reason != "RecreatingTerminatedPod" || d.Events[0].Type != corev1.EventTypeNormal {
		t.Errorf("events = %v, want RecreatingTerminatedPod first", d.Events)
	}
}

func TestParallelDoesNotWaitForFailedPod(t *testing.T) {
	s := newSet(3, parallel)
	r := rev(s)
	d := Sync(s, history(s), Status{CurrentRevision: r}, []workload.ObservedPod{pod("web-0", r, corev1.PodFailed, time.Time{})}, nil, t0)
	eq(t, "deleted", d.DeletePods, []string{"web-0"})
	eq(t, "created", podNames(d.CreatePods), []string{"web-1", "web-2"})
}

func TestPodNamesWithoutOrdinalAreIgnored(t *testing.T) {
	s := newSet(1)
	r := rev(s)
	pods := []workload.ObservedPod{ready("web-0", r), ready("web-x", r), ready("web-01", r), ready("webby-2", r), ready("web--1", r)}
	d := Sync(s, history(s), Status{CurrentRevision: r}, pods, nil, t0)
	if len(d.DeletePods)+len(d.CreatePods) != 0 {
		t.Errorf("deleted %q, created %q: foreign names must be left alone", d.DeletePods, podNames(d.CreatePods))
	}
	if d.Status.Replicas != 1 {
		t.Errorf("replicas = %d, want 1 (only web-0 is the set's)", d.Status.Replicas)
	}
}

func TestOrdinalsStartShiftsTheRange(t *testing.T) {
	s := newSet(2, parallel)
	s.Spec.Ordinals = &manifests.StatefulSetOrdinals{Start: 5}
	r := rev(s)
	d := Sync(s, history(s), Status{CurrentRevision: r}, []workload.ObservedPod{ready("web-0", r)}, nil, t0)
	eq(t, "created", podNames(d.CreatePods), []string{"web-5", "web-6"})
	eq(t, "deleted", d.DeletePods, []string{"web-0"})
}

func TestEventsWording(t *testing.T) {
	s := newSet(1, claimTemplate("www"))
	d := Sync(s, nil, Status{}, nil, nil, t0)
	want := []workload.Event{
		{Type: corev1.EventTypeNormal, Reason: "SuccessfulCreate", Message: "create Claim www-web-0 Pod web-0 in StatefulSet web success"},
		{Type: corev1.EventTypeNormal, Reason: "SuccessfulCreate", Message: "create Pod web-0 in StatefulSet web successful"},
	}
	if fmt.Sprint(d.Events) != fmt.Sprint(want) {
		t.Errorf("events = %v, want %v", d.Events, want)
	}
}

func TestNewRevisionIsRecordedOnce(t *testing.T) {
	s := newSet(1)
	d := Sync(s, nil, Status{}, nil, nil, t0)
	if d.NewRevision == nil || d.NewRevision.Name != rev(s) || d.NewRevision.Hash != s.TemplateHash() {
		t.Fatalf("NewRevision = %+v, want %q", d.NewRevision, rev(s))
	}
	if d = Sync(s, history(s), d.Status, nil, nil, t0); d.NewRevision != nil {
		t.Errorf("NewRevision = %+v, want none when history has it", d.NewRevision)
	}
}

func TestDecisionIsAFunctionOfItsInputs(t *testing.T) {
	s := newSet(3, parallel, claimTemplate("data"))
	r := rev(s)
	pods := []workload.ObservedPod{ready("web-0", r), notReady("web-4", r)}
	a := Sync(s, history(s), Status{CurrentRevision: r}, pods, nil, t0)
	b := Sync(s, history(s), Status{CurrentRevision: r}, pods, nil, t0)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("two decisions on one observation differ:\n%+v\n%+v", a, b)
	}
}
