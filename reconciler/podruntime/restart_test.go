package podruntime

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// TestRestartPolicyDecidesWhetherAnExitedContainerStartsAgain: as the
// kubelet's ShouldContainerBeRestarted, Always restarts whatever the exit,
// OnFailure only a non-zero exit, Never nothing; an unset policy is
// Always (the API server's default).
func TestRestartPolicyDecidesWhetherAnExitedContainerStartsAgain(t *testing.T) {
	tests := []struct {
		policy   string
		exitCode int
		want     bool
	}{
		{manifests.RestartAlways, 0, true},
		{manifests.RestartAlways, 1, true},
		{manifests.RestartAlways, 137, true},
		{"", 0, true},
		{"", 2, true},
		{manifests.RestartOnFailure, 0, false},
		{manifests.RestartOnFailure, 1, true},
		{manifests.RestartOnFailure, 137, true},
		{manifests.RestartNever, 0, false},
		{manifests.RestartNever, 1, false},
	}
	for _, tt := range tests {
		if got := ShouldRestart(tt.policy, tt.exitCode); got != tt.want {
			t.Errorf("ShouldRestart(%q, exit %d) = %v, want %v", tt.policy, tt.exitCode, got, tt.want)
		}
	}
}

// TestRestartPolicyFinishesAPod: a pod whose app containers all ended and
// none of which its restartPolicy starts again is finished — Succeeded
// when every one exited 0, else Failed — as the kubelet's getPhase has
// it; any container still running, not yet started, or to be restarted
// keeps it unfinished (Pending or Running). A pod of restartPolicy Always
// never finishes.
func TestRestartPolicyFinishesAPod(t *testing.T) {
	exited := func(code int) *dockerx.Container {
		return &dockerx.Container{State: dockerx.StateExited, ExitCode: code}
	}
	running := &dockerx.Container{State: dockerx.StateRunning}
	created := &dockerx.Container{State: dockerx.StateCreated}
	tests := []struct {
		name   string
		policy string
		apps   []*dockerx.Container
		want   corev1.PodPhase // "" for unfinished
	}{
		{"always, all exited 0", manifests.RestartAlways, []*dockerx.Container{exited(0), exited(0)}, ""},
		{"always, one failed", manifests.RestartAlways, []*dockerx.Container{exited(1)}, ""},
		{"unset is always", "", []*dockerx.Container{exited(0)}, ""},
		{"onfailure, all exited 0", manifests.RestartOnFailure, []*dockerx.Container{exited(0), exited(0)}, corev1.PodSucceeded},
		{"onfailure, a failure restarts", manifests.RestartOnFailure, []*dockerx.Container{exited(0), exited(1)}, ""},
		{"onfailure, one still runs", manifests.RestartOnFailure, []*dockerx.Container{exited(0), running}, ""},
		{"never, all exited 0", manifests.RestartNever, []*dockerx.Container{exited(0), exited(0)}, corev1.PodSucceeded},
		{"never, one failed", manifests.RestartNever, []*dockerx.Container{exited(0), exited(3)}, corev1.PodFailed},
		{"never, one still runs", manifests.RestartNever, []*dockerx.Container{exited(1), running}, ""},
		{"never, one not started yet", manifests.RestartNever, []*dockerx.Container{exited(0), created}, ""},
		{"never, one not created yet", manifests.RestartNever, []*dockerx.Container{exited(0), nil}, ""},
		{"never, dead counts as failed", manifests.RestartNever, []*dockerx.Container{{State: dockerx.StateDead}}, corev1.PodFailed},
		{"no app container", manifests.RestartNever, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, finished := FinishedPhase(tt.policy, tt.apps)
			if finished != (tt.want != "") || got != tt.want {
				t.Errorf("FinishedPhase = %q, %v; want %q", got, finished, tt.want)
			}
		})
	}
}

// TestPodPhaseFollowsRestartPolicy: a pod's status.phase is Succeeded or
// Failed once it finished under its restartPolicy, and stays Running for
// restartPolicy Always (a Deployment's pods) whatever its containers'
// exits.
func TestPodPhaseFollowsRestartPolicy(t *testing.T) {
	pod := func(policy string, codes ...int) PodView {
		pv := PodView{Name: "p", RestartPolicy: policy}
		for _, code := range codes {
			pv.Containers = append(pv.Containers, PodContainer{Name: "c", Container: &dockerx.Container{State: dockerx.StateExited, ExitCode: code}})
		}
		return pv
	}
	tests := []struct {
		name string
		pv   PodView
		want corev1.PodPhase
	}{
		{"always", pod(manifests.RestartAlways, 0), corev1.PodRunning},
		{"unset", pod("", 1), corev1.PodRunning},
		{"never, succeeded", pod(manifests.RestartNever, 0, 0), corev1.PodSucceeded},
		{"never, failed", pod(manifests.RestartNever, 0, 1), corev1.PodFailed},
		{"onfailure, succeeded", pod(manifests.RestartOnFailure, 0), corev1.PodSucceeded},
		{"onfailure, restarting", pod(manifests.RestartOnFailure, 1), corev1.PodRunning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.pv.Phase(); got != tt.want {
				t.Errorf("Phase() = %s, want %s", got, tt.want)
			}
		})
	}
}
