package podruntime

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/dockerx"
)

// TestPodStatusFromObservedContainers: a pod's status is computed from its
// containers as the kubelet computes it — phase, conditions, and per
// container its state (a completed init container terminated with its
// exit code, a running app container running and ready), restarts and
// Docker's ID — and carries when it became ready.
func TestPodStatusFromObservedContainers(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pv := PodView{Name: "web-0", Ready: 1, Total: 1, Restarts: 2, ReadySince: since, Available: true,
		Holder: &dockerx.Container{ID: "h", State: dockerx.StateRunning, PodUID: "u"},
		Containers: []PodContainer{
			{Name: "migrate", Init: true, Container: &dockerx.Container{ID: "i", State: dockerx.StateExited, ExitCode: 0, PodUID: "u"}},
			{Name: "app", Container: &dockerx.Container{ID: "a", State: dockerx.StateRunning, PodUID: "u"},
				View: ContainerView{Ready: true, Restarts: 2, ReadySince: since}},
		}}
	ps := pv.PodStatus()
	if ps.Phase != corev1.PodRunning || ps.Restarts != 2 || !ps.ReadySince.Equal(since) || !ps.Available || ps.Terminating {
		t.Errorf("pod: %+v", ps)
	}
	for _, c := range ps.Conditions {
		if c.Status != corev1.ConditionTrue {
			t.Errorf("condition %s is %s, want True", c.Type, c.Status)
		}
	}
	if len(ps.Containers) != 2 {
		t.Fatalf("containers: %+v", ps.Containers)
	}
	if init := ps.Containers[0]; !init.Init || !init.Ready || init.State.Terminated == nil || init.State.Terminated.Reason != "Completed" || init.ContainerID != "i" {
		t.Errorf("init container: %+v", init)
	}
	if app := ps.Containers[1]; app.Init || !app.Ready || app.State.Running == nil || !app.Started || app.Restarts != 2 || app.ContainerID != "a" {
		t.Errorf("app container: %+v", app)
	}
}
