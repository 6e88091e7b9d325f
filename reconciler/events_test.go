package reconciler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/internal/podtest"
	"github.com/dockctl/dockctl/store"
)

// memRecorder records events in memory (podtest.MemRecorder).
type memRecorder = podtest.MemRecorder

func waitEvent(t *testing.T, h *harness, m *memRecorder, prefix, contains string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !m.Has(prefix, contains) {
		if time.Now().After(deadline) {
			t.Fatalf("no event %q containing %q; recorded:\n%s", prefix, contains, m.Dump())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSyncRecordsCreatedStartedAndScaling(t *testing.T) {
	m := &memRecorder{}
	h := newHarness(t, Options{Recorder: m})
	h.apply(testDeployment("web", 2, "x"))
	h.start()
	pods := h.waitReplicas("web", 2)
	pod := podName("web", &pods[0])
	waitEvent(t, h, m, "Pod/"+pod+" Normal Created", "Created container web")
	waitEvent(t, h, m, "Pod/"+pod+" Normal Started", "Started container web")
	waitEvent(t, h, m, "Deployment/web Normal ScalingReplicaSet", "Scaled up replica set web-"+pods[0].TemplateHash+" to 2 from 0")
	// Scaled down: removals are counted per revision.
	h.apply(testDeployment("web", 1, "x"))
	waitEvent(t, h, m, "Deployment/web Normal ScalingReplicaSet", "Scaled down replica set web-"+pods[0].TemplateHash+" to 1 from 2")
	waitEvent(t, h, m, "Pod/", "Normal Killing: Stopping container web")
}

func TestProbeFailureRecordsUnhealthy(t *testing.T) {
	m := &memRecorder{}
	h := newHarness(t, Options{Recorder: m})
	runner, _, c := startWithLiveness(h)
	runner.failTimes(c.ID, 1)
	pod := podName("web", &c)
	waitEvent(t, h, m, "Pod/"+pod+" Warning Unhealthy", "Liveness probe failed: ")
	waitEvent(t, h, m, "Pod/"+pod+" Normal Killing", "Container web failed liveness probe, will be restarted")
}

func TestCrashLoopRecordsBackOff(t *testing.T) {
	m := &memRecorder{}
	h := newHarness(t, Options{Recorder: m, CrashBackoffBase: time.Hour, CrashBackoffMax: time.Hour})
	var starts atomic.Int32
	h.engine.OnStart = func(id string) error {
		starts.Add(1)
		go func() {
			time.Sleep(time.Millisecond)
			_ = h.engine.Kill(id)
		}()
		return nil
	}
	h.apply(testDeployment("web", 1, "x"))
	h.start()
	waitEvent(t, h, m, "Pod/", "Warning BackOff: Back-off restarting failed container")
}

func TestRefusedPrivilegeRecordsWarning(t *testing.T) {
	m := &memRecorder{}
	h := newHarness(t, Options{Recorder: m})
	d := testDeployment("web", 1, "x")
	priv := true
	d.Spec.Template.Spec.Containers[0].SecurityContext = &manifests.SecurityContext{Privileged: &priv}
	h.apply(d)
	h.start()
	waitEvent(t, h, m, "Deployment/web Warning FailedCreate", "privileged")
}

// fakeSink is an EventSink counting its writes.
type fakeSink struct {
	mu     sync.Mutex
	writes [][]store.Event
	fail   error
}

func (f *fakeSink) RecordEvents(evs []store.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, append([]store.Event(nil), evs...))
	return f.fail
}

func (f *fakeSink) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.writes)
}

func TestStoreRecorderBatchesAndCounts(t *testing.T) {
	sink := &fakeSink{}
	r := NewStoreRecorder(sink, StoreRecorderOptions{FlushInterval: time.Hour, Buffer: 2})
	ref := deploymentRef("", "web")
	for range 5 {
		r.Event(ref, store.EventNormal, "ScalingReplicaSet", "up")
	}
	r.Event(ref, store.EventWarning, "FailedCreate", "a")
	r.Event(ref, store.EventWarning, "FailedCreate", "b") // the buffer holds 2: dropped
	if sink.count() != 0 {
		t.Fatal("recording wrote: it must only buffer")
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(sink.writes) != 1 || len(sink.writes[0]) != 2 || sink.writes[0][0].Count != 5 || sink.writes[0][0].InvolvedObject.Namespace != "default" || sink.writes[0][0].Source != "dockctl-controller" {
		t.Fatalf("writes %+v, want one of 2 events, the first counted 5 times", sink.writes)
	}
	if r.Dropped() != 1 {
		t.Errorf("dropped %d, want 1", r.Dropped())
	}
	// Nothing buffered: no write.
	if err := r.Flush(); err != nil || sink.count() != 1 {
		t.Errorf("an empty flush wrote (%d writes, %v)", sink.count(), err)
	}
	sink.fail = errors.New("disk full")
	r.Event(ref, store.EventNormal, "X", "y")
	if err := r.Flush(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("flush error %v", err)
	}
}

func TestStoreRecorderRunFlushesAsynchronouslyAndOnExit(t *testing.T) {
	sink := &fakeSink{}
	r := NewStoreRecorder(sink, StoreRecorderOptions{FlushInterval: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	r.Event(deploymentRef("", "web"), store.EventNormal, "A", "1")
	deadline := time.Now().Add(30 * time.Second)
	for sink.count() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("Run never flushed")
		}
		time.Sleep(time.Millisecond)
	}
	// Idle: no more writes however long it runs; checked by the exit flush
	// writing nothing either.
	r2 := NewStoreRecorder(sink, StoreRecorderOptions{FlushInterval: time.Hour})
	ctx2, cancel2 := context.WithCancel(context.Background())
	done2 := make(chan struct{})
	go func() { r2.Run(ctx2); close(done2) }()
	r2.Event(deploymentRef("", "web"), store.EventNormal, "B", "2")
	cancel2()
	<-done2
	cancel()
	<-done
	if n := sink.count(); n != 2 {
		t.Fatalf("%d writes, want 2 (one by Run, one at r2's exit)", n)
	}
}

// The store-backed recorder through a real state directory.
func TestStoreRecorderIntoStateDirectory(t *testing.T) {
	st, err := store.Open(t.TempDir(), "i")
	if err != nil {
		t.Fatal(err)
	}
	r := NewStoreRecorder(st, StoreRecorderOptions{})
	ref := containerPodRef("default", "web", &dockerx.Container{Name: "i_web-abc-0", TemplateHash: "abc"})
	r.Event(ref, store.EventWarning, "BackOff", "Back-off restarting failed container web")
	r.Event(ref, store.EventWarning, "BackOff", "Back-off restarting failed container web")
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events("", false)
	if err != nil || len(evs) != 1 || evs[0].Count != 2 || evs[0].InvolvedObject.Name != "web-abc-0" {
		t.Fatalf("events %+v, %v", evs, err)
	}
}

func TestRolloutProgressAndMissingConfigRecorded(t *testing.T) {
	m := &memRecorder{}
	h := newHarness(t, Options{Recorder: m})
	h.apply(testDeployment("web", 1, "x"))
	h.start()
	waitEvent(t, h, m, "Deployment/web Normal NewReplicaSetAvailable", "has successfully progressed")
	// A revision that needs a ConfigMap that does not exist: ReplicaFailure.
	d := testDeployment("web", 1, "y")
	d.Spec.Template.Spec.Containers[0].EnvFrom = []manifests.EnvFromSource{{ConfigMapRef: &manifests.ConfigMapEnvSource{Name: "missing"}}}
	h.apply(d)
	waitEvent(t, h, m, "Deployment/web Warning FailedCreate", "missing")
}

func TestFailedPullRecorded(t *testing.T) {
	m := &memRecorder{}
	h := newHarness(t, Options{Recorder: m})
	d := testDeployment("web", 1, "x")
	d.Spec.Template.Spec.Containers[0].Image = "absent:2"
	h.apply(d)
	h.start()
	waitEvent(t, h, m, "Deployment/web Warning Failed", `Failed to pull image "absent:2"`)
	waitEvent(t, h, m, "Deployment/web Warning ErrImagePull", "absent:2")
}

// syncCounter counts finished syncs, to wait for some without timing.
type syncCounter struct {
	nopObserver
	n atomic.Int64
}

func (s *syncCounter) SyncDone(_, name string, _ time.Duration, _ error) {
	if name == "web" {
		s.n.Add(1)
	}
}

// A steady deployment records nothing: its syncs do nothing, and the
// recorder, with nothing buffered, writes nothing.
func TestSteadySyncsRecordNothing(t *testing.T) {
	m := &memRecorder{}
	syncs := &syncCounter{}
	h := newHarness(t, Options{Recorder: m, Observer: syncs})
	h.apply(testDeployment("web", 2, "x"))
	h.start()
	h.waitReplicas("web", 2)
	waitEvent(t, h, m, "Deployment/web Normal NewReplicaSetAvailable", "")
	before := len(m.Events())
	for i := range 5 {
		n := syncs.n.Load()
		h.ctrl.queue.Add(store.Key("", "web"))
		h.waitFor(fmt.Sprintf("resync %d", i), func() bool { return syncs.n.Load() > n })
	}
	after := m.Events()[before:]
	if len(after) != 0 {
		t.Fatalf("steady syncs recorded:\n%s", strings.Join(after, "\n"))
	}
}

// imagePullPolicy Always whose pull fails, the image present on the host:
// the pod runs the local copy and says so with a Warning event on the pod,
// where `describe pod` shows it, not only in the controller's log.
func TestAlwaysPullFallbackRecordsWarningOnThePod(t *testing.T) {
	m := &memRecorder{}
	h := newHarness(t, Options{Recorder: m})
	d := testDeployment("web", 1, "x")
	d.Spec.Template.Spec.Containers[0].ImagePullPolicy = manifests.PullAlways
	h.apply(d)
	h.start()
	pods := h.waitReplicas("web", 1)
	pod := podName("web", &pods[0])
	waitEvent(t, h, m, "Pod/"+pod+" Warning "+ReasonPullFallback, "using the image present on the host")
}
