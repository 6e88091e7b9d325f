package podruntime

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// A pod's restartPolicy (Kubernetes' PodSpec.restartPolicy:
// manifests.RestartAlways, RestartOnFailure, RestartNever) decides what
// the runtime does when one of its containers exits. dockctl, not Docker,
// restarts containers (they are created with Docker's restart policy
// "no"), so the policy is the runtime's decision alone.

// ShouldRestart reports whether a container that ran and exited with
// exitCode is started again under the pod's restartPolicy, as the
// kubelet's ShouldContainerBeRestarted decides: Always (and unset, the API
// server's default) whatever the exit, OnFailure a non-zero exit only,
// Never not at all. A container that never started is started once
// whatever the policy: this decides only starts after an exit, each of
// which keeps the crash backoff.
func ShouldRestart(policy string, exitCode int) bool {
	switch policy {
	case manifests.RestartNever:
		return false
	case manifests.RestartOnFailure:
		return exitCode != 0
	default:
		return true
	}
}

// FinishedPhase reports whether a pod with these app containers (nil: not
// created yet) is finished under its restartPolicy — each one ended and
// none will be started again — and its phase then: Succeeded when every
// one exited 0, else Failed, as the kubelet's getPhase has it. A finished
// pod is kept as it is (its containers are neither started nor replaced):
// its owner reads its phase. Under Always a pod never finishes.
func FinishedPhase(policy string, apps []*dockerx.Container) (phase corev1.PodPhase, finished bool) {
	if len(apps) == 0 {
		return "", false
	}
	failed := false
	for _, c := range apps {
		if c == nil {
			return "", false
		}
		switch c.State {
		case dockerx.StateExited:
			if ShouldRestart(policy, c.ExitCode) {
				return "", false
			}
			failed = failed || c.ExitCode != 0
		case dockerx.StateDead:
			// Docker could not stop or remove it cleanly: no exit code
			// to trust, so no success.
			if ShouldRestart(policy, 1) {
				return "", false
			}
			failed = true
		default:
			return "", false
		}
	}
	if failed {
		return corev1.PodFailed, true
	}
	return corev1.PodSucceeded, true
}
