package podruntime

import (
	"testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// A container its pod's restartPolicy never starts again (an app
// container under Never, or one that exited 0 under OnFailure) is
// Terminated — Error or Completed — whatever backoff its exit recorded:
// the kubelet reports CrashLoopBackOff only for a container it will
// restart. One it restarts waits out its backoff as CrashLoopBackOff.
func TestContainerBacksOffOnlyWhenItsRestartPolicyStartsItAgain(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		code         int
		wantBackoff  bool
		wantWord     string
	}{
		{"Never, failed", manifests.RestartNever, 1, false, "Error"},
		{"Never, succeeded", manifests.RestartNever, 0, false, "Completed"},
		{"OnFailure, succeeded", manifests.RestartOnFailure, 0, false, "Completed"},
		{"OnFailure, failed", manifests.RestartOnFailure, 1, true, "CrashLoopBackOff"},
		{"Always, succeeded", manifests.RestartAlways, 0, true, "CrashLoopBackOff"},
		{"default (Always), failed", "", 1, true, "CrashLoopBackOff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pc := PodContainer{Name: "t", Container: &dockerx.Container{ID: "a", State: dockerx.StateExited, ExitCode: tc.code},
				View: ContainerView{CrashLoopBackOff: true}}
			pv := PodView{Name: "solo", RestartPolicy: tc.policy, Total: 1, Containers: []PodContainer{pc}}
			state, _ := pv.ContainerState(pc)
			if got := state.Waiting != nil && state.Waiting.Reason == "CrashLoopBackOff"; got != tc.wantBackoff {
				t.Errorf("state %+v: backing off %v, want %v", state, got, tc.wantBackoff)
			}
			if !tc.wantBackoff && (state.Terminated == nil || int(state.Terminated.ExitCode) != tc.code) {
				t.Errorf("state %+v, want terminated with exit code %d", state, tc.code)
			}
			if got := StatusWord(pv, nil, ""); got != tc.wantWord {
				t.Errorf("status %q, want %q", got, tc.wantWord)
			}
		})
	}
}
