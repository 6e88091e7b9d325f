package workloadtest

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestPodIsReadyExactlyWhenGivenAReadySince(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if p := Pod("a", corev1.PodRunning, since); !p.Ready() || !p.Status.ReadySince.Equal(since) {
		t.Errorf("a pod ready since %v is not ready: %+v", since, p.Status)
	}
	if p := Pod("a", corev1.PodRunning, time.Time{}); p.Ready() {
		t.Errorf("a pod without a ready-since is ready: %+v", p.Status)
	}
	if p := Terminating(Pod("a", corev1.PodRunning, since)); !p.Terminating() || p.Active() {
		t.Errorf("Terminating gave a pod that is not terminating, or active: %+v", p.Status)
	}
}
