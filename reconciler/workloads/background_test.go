package workloads

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/store"
)

// heldCreates holds the fake engine's creates, from the from-th on (1:
// all), until released (or a watchdog fires: a sync that waited for its
// creates would otherwise hang the test, which then fails on what it saw
// instead). fail, when set, refuses each create held with that error once
// released.
type heldCreates struct {
	mu      sync.Mutex
	from    int
	seen    int
	held    int
	release chan struct{}
	fail    error
}

// startHeldJob applies Job name of spec on a new frame whose creates are
// held from the from-th on, syncs it once and waits until one create is
// held.
func startHeldJob(t *testing.T, name, spec string, from int) (*frame, *heldCreates, string) {
	t.Helper()
	f := newFrame(t)
	h := newHeldCreatesFrom(t, f, from)
	f.apply(jobYAML(name, spec))
	key := Key(store.KindJob, "default", name)
	f.syncOnly(key)
	h.waitHeld(t, 1)
	return f, h, key
}

func newHeldCreatesFrom(t *testing.T, f *frame, from int) *heldCreates {
	h := &heldCreates{from: from, release: make(chan struct{})}
	watchdog := time.AfterFunc(30*time.Second, h.open)
	t.Cleanup(func() { watchdog.Stop(); h.open() })
	f.d.OnCreate = func(dockerx.CreateRequest) error {
		h.mu.Lock()
		h.seen++
		if h.seen < h.from {
			h.mu.Unlock()
			return nil
		}
		h.held++
		release := h.release
		h.mu.Unlock()
		<-release
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.fail
	}
	return h
}

func (h *heldCreates) open() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

// waitHeld waits until n creates are held.
func (h *heldCreates) waitHeld(t *testing.T, n int) {
	t.Helper()
	for {
		h.mu.Lock()
		got, released := h.held, isClosed(h.release)
		h.mu.Unlock()
		if got >= n {
			return
		}
		if released {
			t.Fatalf("%d creates held when the watchdog fired, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// syncUntil syncs key, a second later each time, until done (the
// stopper's removals run in the background), for at most 10000 rounds.
func (f *frame) syncUntil(key string, done func() bool) {
	f.t.Helper()
	for round := 0; round < 10000 && !done(); round++ {
		f.advance(time.Second)
		f.sync(key)
		time.Sleep(time.Millisecond)
	}
}

// hasEvent reports whether an event of reason whose message holds text
// was recorded.
func (f *frame) hasEvent(reason, text string) bool {
	f.t.Helper()
	evs, err := f.st.Events("default", true)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, e := range evs {
		if e.Reason == reason && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// A Job's sync hands its creates to the runtime and returns: a pod that
// finishes meanwhile is answered at once, not after the creates of the
// sync before it started. The pods being created count as the Job's
// (Kubernetes counts a pod it created as active at once, its
// expectations until its informer shows it): a sync while they are
// created makes none again, and the status counts them active.
func TestJobSyncReturnsWhileItsCreatesRunAndCountsThemActive(t *testing.T) {
	f, h, key := startHeldJob(t, "bg", "  completions: 4\n  parallelism: 2", 1)
	if isClosed(h.release) {
		t.Fatal("the sync returned only once the watchdog released its creates: it waited for them")
	}
	for round := range 3 {
		f.advance(time.Second)
		f.syncOnly(key)
		if st := f.jobStatus("bg"); st.Active != 2 {
			t.Errorf("round %d: status active %d while 2 pods are being created, want 2", round, st.Active)
		}
	}
	h.open()
	f.c.runtime.WaitCreates()
	f.advance(time.Second)
	f.sync(key)
	if calls := f.d.Calls(); calls["create"] != 2 || calls["start"] != 2 {
		t.Errorf("%d creates and %d starts, want the 2 pods of parallelism once each", calls["create"], calls["start"])
	}
	if n := len(f.running(store.KindJob, "bg")); n != 2 {
		t.Errorf("%d pods running, want 2", n)
	}
}

// An Indexed Job's pod being created holds its index: a decision taken
// before a list shows it gives that index to no other pod.
func TestIndexedJobGivesTheIndexOfAPodBeingCreatedToNoOther(t *testing.T) {
	f, h, key := startHeldJob(t, "ix", "  completions: 3\n  parallelism: 2\n  completionMode: Indexed", 1)
	f.advance(time.Second)
	f.syncOnly(key)
	h.open()
	f.c.runtime.WaitCreates()
	f.sync(key)
	var indexes []string
	for _, c := range f.owned(store.KindJob, "ix") {
		indexes = append(indexes, c.Labels[batchv1.JobCompletionIndexAnnotation])
	}
	slices.Sort(indexes)
	if want := []string{"0", "1"}; !slices.Equal(indexes, want) {
		t.Errorf("pods of indexes %v, want %v: each index once", indexes, want)
	}
}

// A pod the Job deletes while it is being created (the Job suspended) is
// removed once a list shows it, as Kubernetes deletes a pod its informer
// shows late.
func TestJobPodDeletedWhileBeingCreatedIsRemovedOnceListed(t *testing.T) {
	f, h, key := startHeldJob(t, "susp", "  completions: 2\n  parallelism: 2", 1)
	f.apply(jobYAML("susp", "  completions: 2\n  parallelism: 2\n  suspend: true"))
	f.advance(time.Second)
	f.syncOnly(key)
	h.open()
	f.c.runtime.WaitCreates()
	// The removal is the stopper's, in the background: sync until it
	// is done.
	f.syncUntil(key, func() bool { return len(f.owned(store.KindJob, "susp")) == 0 })
	if left := f.owned(store.KindJob, "susp"); len(left) > 0 {
		t.Errorf("%d containers of the suspended Job left, want none: %+v", len(left), left)
	}
	if st := f.jobStatus("susp"); st.Active != 0 {
		t.Errorf("status active %d after the suspension, want 0", st.Active)
	}
}

// A Job that fails while one of its pods is being created stops that pod
// too: the decision deletes its active pods, the one being created
// included, which is removed once a list shows it (a failed Job keeps
// nothing running, as Kubernetes' Job controller deletes its active pods).
func TestJobFailedWhileAPodIsBeingCreatedLeavesNothingRunning(t *testing.T) {
	// The first pod is made; the second, launched once the first
	// succeeded (slow start), is held.
	f, h, key := startHeldJob(t, "doomed", "  completions: 2\n  parallelism: 2\n  backoffLimit: 0", 2)
	if n := f.exitAll(store.KindJob, "doomed", 1); n != 1 {
		t.Fatalf("%d pods exited, want the first one", n)
	}
	f.advance(time.Second)
	f.syncOnly(key)
	if st := f.jobStatus("doomed"); !hasCondition(st, batchv1.JobFailureTarget) {
		t.Fatalf("status %+v after a pod failed with backoffLimit 0, want FailureTarget", st)
	}
	// The pod still being created was deleted: terminating until its
	// create ends and it is removed, and the Job is Failed only then, as
	// Kubernetes' Job controller adds the terminal condition once its
	// terminating pods are gone.
	f.advance(time.Second)
	f.syncOnly(key)
	if st := f.jobStatus("doomed"); hasCondition(st, batchv1.JobFailed) || st.Terminating == nil || *st.Terminating != 1 {
		t.Fatalf("status %+v while the deleted pod is being created, want it terminating, not Failed yet", st)
	}
	h.open()
	f.c.runtime.WaitCreates()
	f.syncUntil(key, func() bool {
		return len(f.owned(store.KindJob, "doomed")) == 1 && hasCondition(f.jobStatus("doomed"), batchv1.JobFailed)
	})
	if run := f.running(store.KindJob, "doomed"); len(run) > 0 {
		t.Errorf("%d pods of the failed Job still run, want none: %+v", len(run), run)
	}
	if st := f.jobStatus("doomed"); !hasCondition(st, batchv1.JobFailed) {
		t.Errorf("status %+v once the deleted pod is gone, want Failed", st)
	}
}

// A create refused in the background is said on the Job (FailedCreate),
// and the Job makes the pod again at a later sync.
func TestJobCreateRefusedInTheBackgroundIsReportedAndMadeAgain(t *testing.T) {
	f, h, key := startHeldJob(t, "full", "  completions: 1", 1)
	f.mu.Lock()
	f.now = time.Now() // the store hides events older than its TTL on read
	f.mu.Unlock()
	h.mu.Lock()
	h.fail = errors.New("no space left on device")
	h.mu.Unlock()
	h.open()
	f.c.runtime.WaitCreates()
	f.d.OnCreate = nil
	f.advance(time.Second)
	f.sync(key)
	if !f.hasEvent("FailedCreate", "no space left on device") {
		t.Error("no FailedCreate event says why the create failed")
	}
	f.advance(time.Second)
	f.sync(key)
	if n := len(f.running(store.KindJob, "full")); n != 1 {
		t.Errorf("%d pods running after the engine accepts creates again, want 1", n)
	}
}

// A Job's pod's create event queues no sync: the create is the frame's
// own, and its pod counts as being created until the list after its
// start shows it. Its start queues the Job after PodStartBatchPeriod (as
// Kubernetes batches a Job's pod events), its die at once. Another
// kind's create event queues its owner at once, as before.
func TestJobPodEventsQueueTheJobAsTheyChangeIt(t *testing.T) {
	tests := []struct {
		name, kind, action string
		now, later         bool
	}{
		{"a Job pod's create", store.KindJob, "create", false, false},
		{"a Job pod's start, batched", store.KindJob, "start", false, true},
		{"a Job pod's die", store.KindJob, "die", true, true},
		{"a ReplicaSet pod's create", store.KindReplicaSet, "create", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFrame(t)
			key := Key(tt.kind, "default", "x")
			f.c.Event(dockerx.Event{Action: tt.action, ContainerID: "c1", Name: "wl_x-abcde.default_pod",
				Namespace: "default", OwnerKind: tt.kind, Owner: "x"})
			queued := func() bool {
				q := f.c.Loop().Queued()
				return len(q) == 1 && q[0].Key == key
			}
			got := queued()
			if got != tt.now {
				t.Errorf("queued at once: %v, want %v", got, tt.now)
			}
			if got || !tt.later {
				return
			}
			// Not a timed assertion: the bound only ends a wait that
			// would never end.
			deadline := time.Now().Add(30 * time.Second)
			for !queued() {
				if time.Now().After(deadline) {
					t.Fatal("the Job was not queued after the batch period")
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// A Job deleted while its pods are being created leaves nothing behind:
// the creates not begun are not made, and what a create begun made is
// removed once a list shows it, as the garbage collector deletes a pod
// whose owner is gone; applied again meanwhile, the new Job's pods are
// its own, none of the deleted one's counted as its.
func TestJobDeletedWhileItsPodsAreBeingCreatedLeavesNoContainer(t *testing.T) {
	tests := []struct {
		name    string
		reapply bool
	}{
		{"deleted", false},
		{"deleted and applied again before a sync", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := "  completions: 3\n  parallelism: 3"
			f, h, key := startHeldJob(t, "gone", spec, 1)
			if _, err := f.st.DeleteObjects([]store.ObjectRef{{Kind: store.KindJob, Namespace: "default", Name: "gone"}}); err != nil {
				t.Fatal(err)
			}
			if tt.reapply {
				f.advance(time.Second)
				f.apply(jobYAML("gone", spec))
			}
			f.advance(time.Second)
			f.syncOnly(key)
			h.open()
			f.c.runtime.WaitCreates()
			want := 0
			if tt.reapply {
				want = 3
			}
			mine := func() int {
				n := 0
				obj, err := f.st.LookupObject(store.ObjectRef{Kind: store.KindJob, Namespace: "default", Name: "gone"})
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range f.owned(store.KindJob, "gone") {
					if !obj.Deleted && c.Labels[dockerx.LabelOwnerUID] == obj.UID() && c.State == dockerx.StateRunning {
						n++
					}
				}
				return n
			}
			f.syncUntil(key, func() bool { return len(f.owned(store.KindJob, "gone")) == want && mine() == want })
			if n, m := len(f.owned(store.KindJob, "gone")), mine(); n != want || m != want {
				t.Errorf("%d containers, %d of them the live Job's running pods; want %d, all of them", n, m, want)
			}
		})
	}
}

// A pod whose background create succeeded but that no list ever shows
// (its container removed before the Job's next list: Docker lost it) is
// counted as being created only until that list: the Job then makes it
// again, never waiting on it forever.
func TestJobPodCreatedButNeverListedIsMadeAgain(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want int
	}{
		{"NonIndexed", "  completions: 1", 1},
		{"Indexed, parallelism 2", "  completions: 2\n  parallelism: 2\n  completionMode: Indexed", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, h, key := startHeldJob(t, "lost", tt.spec, 1)
			h.open()
			f.c.runtime.WaitCreates()
			for _, c := range f.owned(store.KindJob, "lost") {
				if err := f.d.Remove(c.ID); err != nil {
					t.Fatal(err)
				}
			}
			f.syncUntil(key, func() bool { return len(f.running(store.KindJob, "lost")) == tt.want })
			if n := len(f.running(store.KindJob, "lost")); n != tt.want {
				t.Errorf("%d pods running after the created ones were lost, want %d made again", n, tt.want)
			}
			if st := f.jobStatus("lost"); st.Active != int32(tt.want) {
				t.Errorf("status active %d, want %d", st.Active, tt.want)
			}
		})
	}
}

// A Job never runs more pods than its completions, whatever finishes
// while a pod is being created: the pod being created counts as one of
// its active pods, so that a completion meanwhile makes no extra one.
func TestJobRunsNoMorePodsThanCompletionsWhileOneIsBeingCreated(t *testing.T) {
	tests := []struct {
		name string
		spec string
	}{
		{"NonIndexed", "  completions: 2\n  parallelism: 2"},
		{"Indexed", "  completions: 2\n  parallelism: 2\n  completionMode: Indexed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The first pod is made; the second is held.
			f, h, key := startHeldJob(t, "few", tt.spec, 2)
			if n := f.exitAll(store.KindJob, "few", 0); n != 1 {
				t.Fatalf("%d pods exited, want the first one", n)
			}
			for range 3 {
				f.advance(time.Second)
				f.syncOnly(key)
			}
			h.open()
			f.c.runtime.WaitCreates()
			f.sync(key)
			f.exitAll(store.KindJob, "few", 0)
			f.syncUntil(key, func() bool { return hasCondition(f.jobStatus("few"), batchv1.JobComplete) })
			if calls := f.d.Calls(); calls["create"] != 2 {
				t.Errorf("%d creates, want 2: no more pods than completions", calls["create"])
			}
			if st := f.jobStatus("few"); st.Succeeded != 2 || !hasCondition(st, batchv1.JobComplete) {
				t.Errorf("status succeeded %d complete %v, want 2, true", st.Succeeded, hasCondition(st, batchv1.JobComplete))
			}
		})
	}
}

// A Job deleted with --cascade=orphan while its pods are being created,
// then applied again: what the deleted one made is left running, nobody's
// (a create begun is the deleted Job's pod, as an API write would be), and
// the new Job runs its own parallelism beside it under names of its own.
func TestJobOrphanedWhileItsPodsAreBeingCreatedThenAppliedAgain(t *testing.T) {
	tests := []struct {
		name        string
		syncBetween bool
	}{
		{"a sync of the tombstone between", true},
		{"applied again before any sync", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := "  completions: 4\n  parallelism: 2"
			f, h, key := startHeldJob(t, "orph", spec, 1)
			f.orphanDelete(store.KindJob, "orph")
			if tt.syncBetween {
				f.advance(time.Second)
				f.syncOnly(key)
			}
			f.advance(time.Second)
			f.apply(jobYAML("orph", spec))
			f.advance(time.Second)
			f.syncOnly(key)
			h.open()
			f.c.runtime.WaitCreates()
			obj, err := f.st.LookupObject(store.ObjectRef{Kind: store.KindJob, Namespace: "default", Name: "orph"})
			if err != nil {
				t.Fatal(err)
			}
			own := func() int {
				n := 0
				for _, c := range f.running(store.KindJob, "orph") {
					if c.Labels[dockerx.LabelOwnerUID] == obj.UID() {
						n++
					}
				}
				return n
			}
			f.syncUntil(key, func() bool { return own() == 2 })
			names := map[string]bool{}
			for _, c := range f.owned(store.KindJob, "orph") {
				if names[c.Name] {
					t.Errorf("two containers named %s", c.Name)
				}
				names[c.Name] = true
			}
			if n := own(); n != 2 {
				t.Errorf("the new Job runs %d pods, want its parallelism 2", n)
			}
			if st := f.jobStatus("orph"); st.Active != 2 {
				t.Errorf("status active %d, want 2 (the orphans are not its)", st.Active)
			}
		})
	}
}

// A Job whose parallelism is lowered while its pods are being created
// ends with no more pods running than its new parallelism: the surplus
// being created is not made or removed once listed.
func TestJobParallelismLoweredWhileItsPodsAreBeingCreated(t *testing.T) {
	tests := []struct {
		name string
		from string
		to   string
		want int
	}{
		{"NonIndexed 3 to 1", "  completions: 6\n  parallelism: 3", "  completions: 6\n  parallelism: 1", 1},
		{"Indexed 3 to 1", "  completions: 6\n  parallelism: 3\n  completionMode: Indexed", "  completions: 6\n  parallelism: 1\n  completionMode: Indexed", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, h, key := startHeldJob(t, "low", tt.from, 2)
			f.apply(jobYAML("low", tt.to))
			f.advance(time.Second)
			f.syncOnly(key)
			h.open()
			f.c.runtime.WaitCreates()
			f.syncUntil(key, func() bool { return len(f.owned(store.KindJob, "low")) == tt.want })
			if n := len(f.running(store.KindJob, "low")); n != tt.want {
				t.Errorf("%d pods running, want %d", n, tt.want)
			}
			if st := f.jobStatus("low"); st.Active != int32(tt.want) {
				t.Errorf("status active %d, want %d", st.Active, tt.want)
			}
		})
	}
}

// A pod the Job deletes while it is being created (suspended, its
// parallelism lowered) counts neither as succeeded nor as failed, however
// it ends before its removal, as Kubernetes' Job controller takes the
// tracking finalizer off the pods it deletes: only the pods it keeps
// count.
func TestJobPodDeletedWhileBeingCreatedCountsNeitherWay(t *testing.T) {
	tests := []struct {
		name string
		then string
		code int
	}{
		{"suspended, exits 0", "  completions: 2\n  parallelism: 2\n  suspend: true", 0},
		{"suspended, exits 1", "  completions: 2\n  parallelism: 2\n  suspend: true", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, h, key := startHeldJob(t, "cnt", "  completions: 2\n  parallelism: 2", 1)
			f.apply(jobYAML("cnt", tt.then))
			f.advance(time.Second)
			f.syncOnly(key)
			// Its removal waits: the pod made meanwhile ends first.
			release := f.holdRemoves(true)
			h.open()
			f.c.runtime.WaitCreates()
			f.exitAll(store.KindJob, "cnt", tt.code)
			for range 3 {
				f.advance(time.Second)
				f.sync(key)
			}
			release()
			f.syncUntil(key, func() bool { return len(f.owned(store.KindJob, "cnt")) == 0 })
			if st := f.jobStatus("cnt"); st.Succeeded != 0 || st.Failed != 0 {
				t.Errorf("status succeeded %d failed %d, want 0, 0: the pods were the Job's deletes", st.Succeeded, st.Failed)
			}
		})
	}
}
