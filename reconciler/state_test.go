package reconciler

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
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

// TestControllerReplacesContainerThatCanNeverStart: after a Docker daemon
// restart without live-restore, a start that raced the daemon's restore can
// leave the runtime holding the container's task, so that every later start
// of that container fails ("task <id>: already exists"). Retrying it can
// never succeed: it is replaced at once, as a dead container is, whatever
// its crash backoff (on Kubernetes every restart is a new container, so the
// kubelet never retries such a leftover). A start refused for any other
// reason (a wrong command) keeps being retried with the backoff
// (TestControllerStartFailureBacksOff).
func TestControllerReplacesContainerThatCanNeverStart(t *testing.T) {
	tests := []struct {
		name string
		pod  bool // a pod deployment: the failing container is a member
		err  func(id string) error
	}{
		{name: "containerd task left behind", err: func(id string) error {
			return fmt.Errorf("Error response from daemon: task %s: already exists: unknown", id)
		}},
		{name: "runc container left behind", err: func(id string) error {
			return fmt.Errorf("Error response from daemon: OCI runtime create failed: container with id exists: %s: unknown", id)
		}},
		{name: "pod member whose task was left behind", pod: true, err: func(id string) error {
			return fmt.Errorf("Error response from daemon: task %s: already exists: unknown", id)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// An hour of crash backoff: the stuck container is replaced at
			// once, not after its backoff (which a daemon's restore can
			// have grown to minutes).
			h := newHarness(t, Options{ResyncPeriod: 20 * time.Millisecond, CrashBackoffBase: time.Hour})
			d := testDeployment("web", 2, "x")
			if tt.pod {
				d = testPodDeployment("web", 2)
				d.Spec.Template.Spec.InitContainers = nil // straight to its app containers
			}
			// The first app container created is the one whose task the
			// runtime kept: each of its starts fails, every other succeeds.
			var mu sync.Mutex
			var stuck string
			var stuckStarts int
			h.engine.OnStart = func(id string) error {
				mu.Lock()
				defer mu.Unlock()
				if stuck == "" {
					for _, c := range h.engine.Snapshot() {
						if c.ID == id && c.Role != dockerx.RoleHolder && (!tt.pod || c.ContainerName == "app") {
							stuck = id
						}
					}
				}
				if id == stuck {
					stuckStarts++
					return tt.err(id)
				}
				return nil
			}
			h.apply(d)
			h.start()
			h.waitFor("the stuck container replaced and every replica running", func() bool {
				mu.Lock()
				s := stuck
				mu.Unlock()
				if s == "" {
					return false
				}
				running := map[string]int{}
				for _, c := range h.ours("web") {
					if c.ID == s {
						return false
					}
					if c.State == dockerx.StateRunning {
						running[c.ContainerName]++
					}
				}
				if tt.pod {
					return running["app"] == 2 && running["log"] == 2
				}
				return running[""] == 2 // units: no pod member name
			})
			mu.Lock()
			n := stuckStarts
			mu.Unlock()
			if n < 1 {
				t.Fatalf("the stuck container was never started")
			}
			h.waitFor("the ReplicaFailure to clear", func() bool { return h.condition("web", manifests.ConditionReplicaFailure) == nil })
		})
	}
}

// TestNeverStarts: only a refusal that names a leftover of the container's
// own identity in the runtime counts as never startable.
func TestNeverStarts(t *testing.T) {
	tests := []struct {
		err  string
		want bool
	}{
		{"task 0123abcd: already exists: unknown", true},
		{"OCI runtime create failed: container with id exists: 0123abcd: unknown", true},
		{"container 0123abcd: already exists", true},
		// Seen after a daemon restart too, but dockerd clears it: a retry starts.
		{"endpoint with name web-0 already exists in network dockctl_i", false},
		{`OCI runtime create failed: exec: "nope": executable file not found in $PATH`, false},
		{"failed to update store for object type *libnetwork.endpoint: open : no such file or directory", false},
		{"driver failed programming external connectivity: port is already allocated", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := neverStarts(tt.err); got != tt.want {
			t.Errorf("neverStarts(%q) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestMarkNeverStarting: a container that can never start is shown dead
// at once, its crash backoff notwithstanding (no wait can make it start);
// a running one, or one refused for another reason, is left as it is.
func TestMarkNeverStarting(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stuck := "task a: already exists"
	tests := []struct {
		name  string
		state string
		cst   containerState
		dead  bool
	}{
		{name: "created", state: dockerx.StateCreated, cst: containerState{StartError: stuck, NotBefore: now.Add(-time.Second)}, dead: true},
		{name: "exited", state: dockerx.StateExited, cst: containerState{StartError: stuck}, dead: true},
		{name: "created, in a long backoff", state: dockerx.StateCreated, cst: containerState{StartError: stuck, NotBefore: now.Add(5 * time.Minute)}, dead: true},
		{name: "running", state: dockerx.StateRunning, cst: containerState{StartError: stuck}},
		{name: "another refusal", state: dockerx.StateCreated, cst: containerState{StartError: "exec: not found"}},
		{name: "no start error", state: dockerx.StateCreated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := []dockerx.Container{{ID: "a", State: tt.state}}
			cst := tt.cst
			out, why := markNeverStarting(cs, map[string]*containerState{"a": &cst})
			if got := out[0].State == dockerx.StateDead; got != tt.dead {
				t.Fatalf("state %s, want dead %v", out[0].State, tt.dead)
			}
			if tt.dead && !strings.Contains(why["a"], "already exists") {
				t.Fatalf("why %v", why)
			}
			if cs[0].State != tt.state {
				t.Fatalf("the input was changed: %s", cs[0].State)
			}
		})
	}
}
