package workload

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/reconciler/podruntime"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestAvailableAfterMinReadySeconds(t *testing.T) {
	readyPod := func(since time.Time) *ObservedPod {
		return &ObservedPod{Status: podruntime.PodStatus{Phase: corev1.PodRunning, ReadySince: since,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	}
	notReady := &ObservedPod{Status: podruntime.PodStatus{Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}}}
	tests := []struct {
		name     string
		pod      *ObservedPod
		min      int32
		now      time.Time
		want     bool
		wantWake time.Time
	}{
		{"ready, no minimum", readyPod(t0), 0, t0, true, time.Time{}},
		{"ready too briefly", readyPod(t0), 10, t0.Add(9 * time.Second), false, t0.Add(10 * time.Second)},
		{"ready exactly long enough", readyPod(t0), 10, t0.Add(10 * time.Second), true, time.Time{}},
		{"ready without a since", readyPod(time.Time{}), 10, t0, false, time.Time{}},
		{"not ready", notReady, 0, t0, false, time.Time{}},
		{"no pod", nil, 0, t0, false, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.pod.Available(tt.min, tt.now); got != tt.want {
				t.Errorf("Available = %v, want %v", got, tt.want)
			}
			var r Requeue
			r.NotAvailableYet(tt.pod, tt.min, tt.now)
			if !r.At.Equal(tt.wantWake) {
				t.Errorf("requeue = %v, want %v", r.At, tt.wantWake)
			}
		})
	}
}

func TestHealthyIsRunningReadyAndNotTerminating(t *testing.T) {
	p := &ObservedPod{Status: podruntime.PodStatus{Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	if !p.Healthy() {
		t.Error("a running ready pod is not healthy")
	}
	p.Status.Terminating = true
	if p.Healthy() || !p.RunningAndReady() {
		t.Error("a terminating pod is healthy, or no longer running and ready")
	}
	p.Status.Phase = corev1.PodPending
	if p.RunningAndReady() {
		t.Error("a pending pod is running and ready")
	}
}

func TestRequeueKeepsTheEarliest(t *testing.T) {
	var r Requeue
	r.Before(time.Time{})
	r.Before(t0.Add(time.Minute))
	r.Before(t0)
	r.Before(t0.Add(time.Hour))
	if !r.At.Equal(t0) {
		t.Errorf("At = %v, want %v", r.At, t0)
	}
}
