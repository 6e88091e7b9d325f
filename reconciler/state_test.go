package reconciler

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
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
			c := ctr("aaaa", 0, dockerx.StateExited, time.Second) // ran 1s: within podruntime.CrashWindow
			s := deploymentState{Containers: map[string]*podruntime.ContainerState{}}
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
		{`failed to create task for container: container "0123abcd": already exists: unknown`, true},
		// The shim's bundle directory of the task, left under the
		// container's ID (seen at every retry of such a start, for minutes).
		{"failed to start shim: mkdir /tmp/dkx-1/exec/containerd/daemon/io.containerd.runtime.v2.task/moby/0123abcd: file exists: unknown", true},
		// Another directory that exists: no leftover of the task's.
		{"error while creating mount source path '/srv/data': mkdir /srv/data: file exists", false},
		// Seen after a daemon restart too, but dockerd clears it: a retry starts.
		{"endpoint with name web-0 already exists in network dockctl_i", false},
		{`OCI runtime create failed: exec: "nope": executable file not found in $PATH`, false},
		{"failed to update store for object type *libnetwork.endpoint: open : no such file or directory", false},
		{"driver failed programming external connectivity: port is already allocated", false},
		// A firewall reload racing dockerd's rules: no leftover of the
		// container's own, a retry starts.
		{"driver failed programming external connectivity on endpoint web-0 (8d1c): (iptables failed: iptables --wait -t nat -N DOCKER: iptables: Chain already exists. (exit status 1))", false},
		// A listed container dockerd is still registering (a create a
		// killed client sent): a retry starts it.
		{"start i_web-3: Error response from daemon: No such container: 0123abcd: not found", false},
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
		cst   podruntime.ContainerState
		dead  bool
	}{
		{name: "created", state: dockerx.StateCreated, cst: podruntime.ContainerState{StartError: stuck, NotBefore: now.Add(-time.Second)}, dead: true},
		{name: "exited", state: dockerx.StateExited, cst: podruntime.ContainerState{StartError: stuck}, dead: true},
		{name: "created, in a long backoff", state: dockerx.StateCreated, cst: podruntime.ContainerState{StartError: stuck, NotBefore: now.Add(5 * time.Minute)}, dead: true},
		{name: "running", state: dockerx.StateRunning, cst: podruntime.ContainerState{StartError: stuck}},
		{name: "another refusal", state: dockerx.StateCreated, cst: podruntime.ContainerState{StartError: "exec: not found"}},
		{name: "no start error", state: dockerx.StateCreated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := []dockerx.Container{{ID: "a", State: tt.state}}
			cst := tt.cst
			out, why := markNeverStarting(cs, map[string]*podruntime.ContainerState{"a": &cst})
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

// A crash count from a hand-edited or garbled status file (zero or below)
// must not panic the sync when the next start fails: crashDelay must
// check n before shifting by n-1, as a negative shift panics.
func TestCrashDelayToleratesCrashCountFromStatusFile(t *testing.T) {
	c := New(nil, nil, Options{CrashBackoffBase: time.Second, CrashBackoffMax: time.Minute})
	for _, n := range []int{0, -1, -1 << 40} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("crashDelay(%d) panicked: %v", n, r)
				}
			}()
			if d := c.crashDelay(n); d < time.Second || d > time.Minute {
				t.Errorf("crashDelay(%d) = %v, want within [base, max]", n, d)
			}
		}()
		s := deploymentState{Containers: map[string]*podruntime.ContainerState{"x": {CrashCount: n - 1}}}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("recordStartFailures with crashCount %d from the status file panicked: %v", n-1, r)
				}
			}()
			c.recordStartFailures(&s, Plan{}, &startError{ID: "x", Name: "x", Err: dockerx.ErrConflict}, t0)
		}()
	}
}

// The status file is the controller's memory, not a trusted input: a
// crash count that is negative, or at the top of int, must not panic the
// sync (a negative shift) every time the container fails to start, which
// would leave the deployment retried in a panic loop with no backoff
// recorded.
func TestRecordStartFailuresOddCrashCount(t *testing.T) {
	c := &Controller{opts: Options{CrashBackoffBase: time.Second, CrashBackoffMax: time.Minute}}
	for _, n := range []int{-1, -5, int(^uint(0) >> 1)} {
		s := deploymentState{Containers: map[string]*podruntime.ContainerState{"id": {CrashCount: n}}}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("crashCount %d in the status file: panic %v", n, r)
				}
			}()
			c.recordStartFailures(&s, Plan{}, &startError{ID: "id", Name: "web", Err: errors.New("refused")}, t0)
		}()
		if d := s.Containers["id"].NotBefore.Sub(t0); d < time.Second || d > time.Minute {
			t.Errorf("crashCount %d: backoff %v, want between the base and the maximum", n, d)
		}
	}
}

// TestPodOfUnknownRevisionIsReady: running pods of a revision the history
// does not hold (a fresh state directory resuming from Docker, as the
// planner supports: "adopt what exists") are judged ready by their own
// containers, as a single-container replica of an unknown revision is
// (Docker's state → IsReady), not never ready because the template is
// unknown (podruntime.PodReady): else `get pods` shows them READY 2/2 Running while
// `get deployments` counts 0 ready and 0 available and the Available
// condition is false. Kubernetes judges a pod's readiness by the pod's own
// containers, never by its ReplicaSet's template.
func TestPodOfUnknownRevisionIsReady(t *testing.T) {
	d := podDeployment(3)
	d.Spec.Template.Spec.InitContainers = nil
	manifests.SetDefaults(d)
	const old = "0ld0"
	running := map[string]string{"app": dockerx.StateRunning, "log": dockerx.StateRunning}
	cs := concat(podOf(old, 0, dockerx.StateRunning, running), podOf(old, 1, dockerx.StateRunning, running), podOf(old, 2, dockerx.StateRunning, running))
	rec := &store.Record{Name: "web", Deployment: *d}
	st, _ := View(rec, nil, nil, cs, t0)
	pods := Pods(rec, nil, nil, cs, t0)
	if len(pods) != 3 || pods[0].Ready != 2 || pods[0].Status != "Running" {
		t.Fatalf("get pods: %+v", pods)
	}
	if st.ReadyReplicas != 3 {
		t.Fatalf("get deployments: %d ready replicas, while get pods shows 3 pods READY 2/2 Running: %+v", st.ReadyReplicas, st)
	}
}

// TestPodRestartsCountAsKubectl: an init container (migrate) failed twice
// before it succeeded; the pod is initialized and its app containers run
// without a restart. kubectl's RESTARTS of an initialized pod counts the
// app containers and native sidecars only (printers.go, printPod: once
// initialized, restarts = restartableInitContainerRestarts, then the app
// containers' restart counts are added): it shows 0, and Pods must too,
// not sum the restarts of every container, regular init containers
// included, for as long as the pod lives.
func TestPodRestartsCountAsKubectl(t *testing.T) {
	d := podDeployment(1)
	hash := manifests.TemplateHash(&d.Spec.Template)
	members := map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": dockerx.StateRunning, "log": dockerx.StateRunning}
	cs := podOf(hash, 0, dockerx.StateRunning, members)
	migrate := "id-" + dockerx.MemberName(dockerx.ContainerName("i", "", "web", hash, 0), "migrate")
	st := &store.Status{}
	if err := writeState(st, deploymentState{Containers: map[string]*podruntime.ContainerState{migrate: {Restarts: 2}}}); err != nil {
		t.Fatal(err)
	}
	rec := &store.Record{Name: "web", Deployment: *d}
	pods := Pods(rec, st, nil, cs, t0)
	if len(pods) != 1 || pods[0].Status != "Running" {
		t.Fatalf("pods %+v", pods)
	}
	if pods[0].Restarts != 0 {
		t.Fatalf("RESTARTS %d for an initialized pod whose app containers never restarted (kubectl: 0; the init container's retries are not counted)", pods[0].Restarts)
	}
}

// TestPodNameIsHostname: the pod name is the hostname, Hostname(deployment,
// hash, ordinal) (contract: "pod name (also the hostname)"), which cuts a
// long deployment name to keep a DNS label. A holder pod takes it from its
// io.dockctl.pod label; a single-container pod's name must be the same,
// not its container name after the instance prefix (podName), which is
// not cut: for a deployment name of 55 characters `get pods` would list a
// name that is neither the replica's hostname nor a valid DNS label (over
// 63 characters), unlike the pods of the same deployment with a holder.
func TestPodNameIsHostname(t *testing.T) {
	name := strings.Repeat("a", 55)
	d := deployment(1)
	d.Metadata.Name = name
	hash := manifests.TemplateHash(&d.Spec.Template)
	c := dockerx.Container{ID: "c1", Name: dockerx.ContainerName("i", "", name, hash, 0), State: dockerx.StateRunning,
		Instance: "i", Deployment: name, TemplateHash: hash, Role: dockerx.RoleReplica, Created: t0}
	rec := &store.Record{Name: name, Deployment: *d}
	pods := Pods(rec, nil, nil, []dockerx.Container{c}, t0)
	if len(pods) != 1 {
		t.Fatalf("pods %+v", pods)
	}
	if want := dockerx.Hostname(name, hash, 0); pods[0].Name != want {
		t.Fatalf("pod name %q (%d chars), want its hostname %q", pods[0].Name, len(pods[0].Name), want)
	}
}

// TestPodCompletedWithRunningSiblingIsNotReady: an initialized pod whose
// app container exited 0 while its sibling runs. kubectl prints
// "NotReady" (printers.go, printPod: `if reason == "Completed" &&
// hasRunning` → "Running" if the pod is Ready, else "NotReady"); the
// contract lists NotReady among the STATUS words. podStatus must not show
// "Completed" for a pod that still runs a container.
func TestPodCompletedWithRunningSiblingIsNotReady(t *testing.T) {
	d := podDeployment(1)
	hash := manifests.TemplateHash(&d.Spec.Template)
	members := map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": "exited:0", "log": dockerx.StateRunning}
	cs := podOf(hash, 0, dockerx.StateRunning, members)
	rec := &store.Record{Name: "web", Deployment: *d}
	pods := Pods(rec, nil, nil, cs, t0)
	if len(pods) != 1 {
		t.Fatalf("pods %+v", pods)
	}
	if pods[0].Status != "NotReady" {
		t.Fatalf("STATUS %q (READY %d/%d) for a pod whose app container completed while its sibling runs; kubectl shows NotReady", pods[0].Status, pods[0].Ready, pods[0].Total)
	}
}
