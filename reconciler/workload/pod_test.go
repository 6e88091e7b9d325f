package workload

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

func TestActiveIsNeitherFinishedNorTerminating(t *testing.T) {
	tests := []struct {
		name        string
		phase       corev1.PodPhase
		terminating bool
		want        bool
	}{
		{"running", corev1.PodRunning, false, true},
		{"pending", corev1.PodPending, false, true},
		{"running, being stopped", corev1.PodRunning, true, false},
		{"succeeded", corev1.PodSucceeded, false, false},
		{"failed", corev1.PodFailed, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &ObservedPod{Status: podruntime.PodStatus{Phase: tt.phase, Terminating: tt.terminating}}
			if got := p.Active(); got != tt.want {
				t.Errorf("Active = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFinishTimePrefersTheRecordedThenTheLastContainerExit(t *testing.T) {
	exit := func(at time.Time) podruntime.ContainerStatus {
		return podruntime.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(at)}}}
	}
	tests := []struct {
		name string
		pod  ObservedPod
		want time.Time
	}{
		{"recorded", ObservedPod{Created: t0, FinishedAt: t0.Add(time.Hour),
			Status: podruntime.PodStatus{Containers: []podruntime.ContainerStatus{exit(t0.Add(2 * time.Hour))}}}, t0.Add(time.Hour)},
		{"latest container exit", ObservedPod{Created: t0,
			Status: podruntime.PodStatus{Containers: []podruntime.ContainerStatus{exit(t0.Add(2 * time.Minute)), exit(t0.Add(time.Minute)), {}}}}, t0.Add(2 * time.Minute)},
		{"creation", ObservedPod{Created: t0}, t0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.pod.FinishTime(); !got.Equal(tt.want) {
				t.Errorf("FinishTime = %v, want %v", got, tt.want)
			}
		})
	}
}
