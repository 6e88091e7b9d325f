package reconciler

import (
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/store"
)

// The exit of a container dockctl is stopping (its stop signal sent, its
// StopDeadline recorded) is the end of a graceful termination, not a
// crash: it starts no crash-loop backoff and `get` shows the pod
// terminating, never CrashLoopBackOff (the kubelet neither restarts nor
// backs off the containers of a pod being deleted). The same quick exit
// of a container nobody stopped is a crash.
func TestGracefulStopExitIsNoCrash(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stopping  bool
		wantCrash bool
	}{
		{"exit after its stop signal", true, false},
		{"the same exit unasked", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{})
			c := ctr("aaaa", 0, dockerx.StateExited, time.Second) // ran 1s: within crashWindow
			s := deploymentState{Containers: map[string]*containerState{}}
			if tc.stopping {
				s.container(c.ID).StopDeadline = t0.Add(30 * time.Second)
			}
			notBefore := h.ctrl.observeContainers(&s, []dockerx.Container{c}, map[string]bool{}, nil, t0)
			_, backoff := notBefore[c.ID]
			crashes := s.Containers[c.ID] != nil && s.Containers[c.ID].CrashCount > 0
			if backoff != tc.wantCrash || crashes != tc.wantCrash {
				t.Fatalf("backoff %v (until %v), crash counted %v; want a crash: %v", backoff, notBefore[c.ID], crashes, tc.wantCrash)
			}
			var st store.Status
			if err := writeState(&st, s); err != nil {
				t.Fatal(err)
			}
			_, views := View(recordOf(deployment(1)), &st, nil, []dockerx.Container{c}, t0)
			if v := views[c.ID]; v.CrashLoopBackOff != tc.wantCrash || v.Terminating != tc.stopping {
				t.Errorf("view %+v; want CrashLoopBackOff %v, Terminating %v", v, tc.wantCrash, tc.stopping)
			}
		})
	}
}
