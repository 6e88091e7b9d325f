package podruntime_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// holderHarness runs one holder pod of a TestOwner through Sync, on the
// fake engine with a fake clock (the Sync's Now).
type holderHarness struct {
	t       *testing.T
	e       *dockerfake.Engine
	rt      *podruntime.Runtime
	spec    podruntime.PodSpec
	t0      time.Time
	stopped chan error
	// now is the fake clock, read by the engine from the stopper's
	// goroutines too.
	mu  sync.Mutex
	now time.Time
}

const (
	hhInstance, hhNS, hhKey = "t", "shop", "TestOwner/batch"
)

func newHolderHarness(t *testing.T, policy string, tmpl *manifests.PodTemplateSpec) *holderHarness {
	h := &holderHarness{t: t, e: dockerfake.New("img:1"), t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), stopped: make(chan error, 4)}
	h.now = h.t0
	h.e.SetNow(func() time.Time { h.mu.Lock(); defer h.mu.Unlock(); return h.now })
	h.rt = podruntime.NewRuntime(podruntime.RuntimeConfig{Backoff: podruntime.Backoff{Base: time.Minute, Max: time.Hour},
		Stopper: podruntime.StopperConfig{Docker: h.e, Log: slog.New(slog.DiscardHandler), Done: func(_ string, err error) { h.stopped <- err }}})
	t.Cleanup(h.rt.Stop)
	owner := podruntime.OwnerRef{Kind: "TestOwner", Name: "batch", UID: "u1"}
	h.spec = podruntime.PodSpec{Namespace: hhNS, Name: "job-0", Owner: owner, Template: tmpl, TemplateHash: manifests.TemplateHash(tmpl), RestartPolicy: policy}
	return h
}

// sync syncs the pod at t0+at and returns its status.
func (h *holderHarness) sync(at time.Duration) podruntime.PodStatus {
	h.t.Helper()
	now := h.t0.Add(at)
	h.mu.Lock()
	h.now = now
	h.mu.Unlock()
	ctx := context.Background()
	h.rt.Stopper().Listing(hhKey)
	cs, err := h.e.ListContainers(ctx, hhInstance)
	if err != nil {
		h.t.Fatal(err)
	}
	res, err := h.rt.Sync(ctx, h.e, podruntime.SyncInput{Instance: hhInstance, Key: hhKey, Namespace: hhNS, Owner: h.spec.Owner,
		Pods: []podruntime.PodSpec{h.spec}, Observed: cs, Now: now})
	if err != nil {
		h.t.Fatalf("sync at %s: %v", at, err)
	}
	return res.Pods[h.spec.Name]
}

// member is the pod's container of template container name (zero: none).
func (h *holderHarness) member(name string) dockerx.Container {
	want := dockerx.MemberName(dockerx.PodContainerName(hhInstance, hhNS, h.spec.Name), name)
	if name == "" {
		want = dockerx.PodContainerName(hhInstance, hhNS, h.spec.Name)
	}
	for _, c := range h.e.Snapshot() {
		if c.Name == want {
			return c
		}
	}
	return dockerx.Container{}
}

// TestSyncFailsAPodWhoseInitContainerFailed: as the kubelet, an init
// container that fails under restartPolicy Never fails the pod (phase
// Failed; it is not run again, and no app container is made); under
// OnFailure it is run again once its crash backoff passed, the pod
// Pending meanwhile.
func TestSyncFailsAPodWhoseInitContainerFailed(t *testing.T) {
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{
		InitContainers: []manifests.Container{{Name: "setup", Image: "img:1"}},
		Containers:     []manifests.Container{{Name: "work", Image: "img:1"}},
	}}
	for _, tc := range []struct {
		policy       string
		wantPhase    corev1.PodPhase
		wantRestarts int // of the init container, after its backoff
		wantState    string
	}{
		{manifests.RestartNever, corev1.PodFailed, 0, dockerx.StateExited},
		{manifests.RestartOnFailure, corev1.PodPending, 1, dockerx.StateRunning},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			h := newHolderHarness(t, tc.policy, tmpl)
			h.sync(0)
			setup := h.member("setup")
			if setup.State != dockerx.StateRunning {
				t.Fatalf("init container %+v, want running", setup)
			}
			if err := h.e.Exit(setup.ID, 1); err != nil {
				t.Fatal(err)
			}
			if st := h.sync(time.Second); st.Phase != tc.wantPhase {
				t.Errorf("init container failed: phase %s, want %s", st.Phase, tc.wantPhase)
			}
			st := h.sync(time.Second + 2*time.Minute)
			if st.Phase != tc.wantPhase {
				t.Errorf("after the backoff: phase %s, want %s", st.Phase, tc.wantPhase)
			}
			if got := h.member("setup"); got.State != tc.wantState || st.Containers[0].Restarts != tc.wantRestarts {
				t.Errorf("init container after the backoff: %s with %d restarts, want %s with %d", got.State, st.Containers[0].Restarts, tc.wantState, tc.wantRestarts)
			}
			if w := h.member("work"); w.ID != "" {
				t.Errorf("app container %s made though the init container failed", w.Name)
			}
		})
	}
}

// TestSyncReplacesAHolderPodWhoseHolderIsGone: a holder pod whose holder
// died or was removed while its members remain has lost its namespaces;
// as the Deployment controller's pods (and the kubelet's pod whose
// sandbox died), its members are removed and the pod is made again, under
// a new uid, Pending meanwhile — under restartPolicy Never it is Failed
// and kept, as the kubelet makes no new sandbox for a pod that ran.
func TestSyncReplacesAHolderPodWhoseHolderIsGone(t *testing.T) {
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{
		Containers: []manifests.Container{{Name: "web", Image: "img:1"}, {Name: "side", Image: "img:1"}},
	}}
	for _, tc := range []struct {
		name, policy string
		lose         func(e *dockerfake.Engine, id string) error
		wantPhase    corev1.PodPhase
		replaced     bool
	}{
		{"holder removed", manifests.RestartAlways, func(e *dockerfake.Engine, id string) error {
			err := e.Remove(id)
			e.FinishRemovals()
			return err
		}, corev1.PodPending, true},
		{"holder died", manifests.RestartOnFailure, (*dockerfake.Engine).Kill, corev1.PodPending, true},
		{"holder died under Never", manifests.RestartNever, (*dockerfake.Engine).Kill, corev1.PodFailed, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHolderHarness(t, tc.policy, tmpl)
			h.sync(0)
			holder, web := h.member(""), h.member("web")
			if holder.State != dockerx.StateRunning || web.State != dockerx.StateRunning {
				t.Fatalf("holder %+v, web %+v: want both running", holder, web)
			}
			if err := tc.lose(h.e, holder.ID); err != nil {
				t.Fatal(err)
			}
			if st := h.sync(time.Second); st.Phase != tc.wantPhase {
				t.Errorf("holder gone: phase %s, want %s", st.Phase, tc.wantPhase)
			}
			if !tc.replaced {
				if got := h.member("web"); got.ID != web.ID {
					t.Errorf("web %+v, want the member kept", got)
				}
				return
			}
			if err := <-h.stopped; err != nil {
				t.Fatalf("removal of the pod: %v", err)
			}
			h.e.FinishRemovals()
			h.sync(2 * time.Second)
			nh, nw := h.member(""), h.member("web")
			if nh.ID == "" || nh.ID == holder.ID || nh.State != dockerx.StateRunning || nh.PodUID == holder.PodUID {
				t.Errorf("holder after the replacement %+v, want a new running holder under a new uid", nh)
			}
			if nw.ID == "" || nw.ID == web.ID || nw.PodUID != nh.PodUID {
				t.Errorf("web after the replacement %+v, want a new member of the new pod", nw)
			}
		})
	}
}

// TestSyncStopsTheHolderOfAFinishedPod: as the kubelet stops the sandbox
// (and kills the sidecars) of a pod that reached a terminal phase, a
// holder pod whose app containers ended under its restartPolicy has its
// holder and sidecars stopped — not removed: its containers are kept for
// their logs and the pod keeps its phase, never replaced.
func TestSyncStopsTheHolderOfAFinishedPod(t *testing.T) {
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{
		InitContainers: []manifests.Container{{Name: "proxy", Image: "img:1", RestartPolicy: manifests.ContainerRestartPolicyAlways}},
		Containers:     []manifests.Container{{Name: "work", Image: "img:1"}},
	}}
	for _, tc := range []struct {
		policy    string
		exit      int
		wantPhase corev1.PodPhase
	}{
		{manifests.RestartNever, 1, corev1.PodFailed},
		{manifests.RestartNever, 0, corev1.PodSucceeded},
		{manifests.RestartOnFailure, 0, corev1.PodSucceeded},
	} {
		t.Run(fmt.Sprintf("%s exit %d", tc.policy, tc.exit), func(t *testing.T) {
			h := newHolderHarness(t, tc.policy, tmpl)
			for i := range 3 { // holder, sidecar, app container
				h.sync(time.Duration(i) * time.Second)
			}
			holder, proxy, work := h.member(""), h.member("proxy"), h.member("work")
			if holder.State != dockerx.StateRunning || proxy.State != dockerx.StateRunning || work.State != dockerx.StateRunning {
				t.Fatalf("holder %s, proxy %s, work %s: want all running", holder.State, proxy.State, work.State)
			}
			if err := h.e.Exit(work.ID, tc.exit); err != nil {
				t.Fatal(err)
			}
			if st := h.sync(10 * time.Second); st.Phase != tc.wantPhase {
				t.Errorf("app container exited %d: phase %s, want %s", tc.exit, st.Phase, tc.wantPhase)
			}
			if busy, _ := h.rt.Stopper().InFlight(hhKey); len(busy) == 0 {
				t.Fatalf("no stop of the finished pod: holder %s, sidecar %s", h.member("").State, h.member("proxy").State)
			}
			if err := <-h.stopped; err != nil {
				t.Fatalf("stop of the finished pod: %v", err)
			}
			for _, name := range []string{"", "proxy", "work"} {
				c := h.member(name)
				if c.ID == "" || c.State != dockerx.StateExited {
					t.Errorf("container %q of the finished pod: %+v, want kept, exited", name, c)
				}
			}
			// Later syncs keep it as it is: its phase, nothing started
			// again, nothing replaced.
			st := h.sync(time.Hour)
			if st.Phase != tc.wantPhase {
				t.Errorf("later: phase %s, want %s", st.Phase, tc.wantPhase)
			}
			if got := h.member(""); got.ID != holder.ID || got.State != dockerx.StateExited {
				t.Errorf("holder later %+v, want the same one, stopped", got)
			}
			if got := h.member("proxy"); got.ID != proxy.ID || got.State != dockerx.StateExited {
				t.Errorf("sidecar later %+v, want the same one, stopped", got)
			}
		})
	}
}
