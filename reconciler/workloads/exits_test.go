package workloads

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/store"
)

// die is the die event of container ct of Job name, unsettled or not.
func die(name string, ct dockerx.Container, code int, unsettled bool) dockerx.Event {
	return dockerx.Event{Action: "die", ContainerID: ct.ID, Name: ct.Name, Namespace: "default",
		OwnerKind: store.KindJob, Owner: name, ExitCode: code, Unsettled: unsettled}
}

// queuedKeys drains the frame's queue.
func (f *frame) queuedKeys() []string {
	var keys []string
	for _, r := range f.c.Loop().Queued() {
		keys = append(keys, r.Key)
	}
	return keys
}

// A Job pod's die sent before Docker lists it (EventsWithExits) queues
// the Job at once, and its sync takes the pod for what the die said while
// the list still shows it running: counted, and replaced. Its settled
// die then queues nothing more, and the pod is counted once.
func TestJobPodUnsettledDieIsReplacedBeforeTheListShowsIt(t *testing.T) {
	tests := []struct {
		name          string
		code          int
		wantSucceeded int32
		wantFailed    int32
		// wantActive: a failure is replaced after the Job's backoff.
		wantActive int32
	}{
		{name: "a success is counted and replaced", code: 0, wantSucceeded: 1, wantActive: 1},
		{name: "a failure is counted, its replacement waits for the backoff", code: 2, wantFailed: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFrame(t)
			f.apply(jobYAML("early", "  completions: 3\n  parallelism: 1\n  backoffLimit: 6"))
			key := Key(store.KindJob, "default", "early")
			f.sync(key)
			run := f.running(store.KindJob, "early")
			if len(run) != 1 {
				t.Fatalf("%d pods running, want 1", len(run))
			}
			f.queuedKeys()
			f.c.Event(die("early", run[0], tt.code, true))
			if got := f.queuedKeys(); !reflect.DeepEqual(got, []string{key}) {
				t.Fatalf("the unsettled die queued %v, want the Job's key", got)
			}
			f.advance(time.Second)
			f.d.ResetCalls()
			f.sync(key)
			if calls := f.d.Calls(); calls["create"] != int(tt.wantActive) || calls["start"] != int(tt.wantActive) {
				t.Errorf("the sync made %d creates and %d starts, want %d each", calls["create"], calls["start"], tt.wantActive)
			}
			st := f.jobStatus("early")
			if st.Succeeded != tt.wantSucceeded || st.Failed != tt.wantFailed || st.Active != tt.wantActive {
				t.Errorf("status succeeded %d failed %d active %d, want %d, %d, %d", st.Succeeded, st.Failed, st.Active, tt.wantSucceeded, tt.wantFailed, tt.wantActive)
			}
			// Docker catches up: the container exits, its settled die
			// follows.
			if err := f.d.Exit(run[0].ID, tt.code); err != nil {
				t.Fatal(err)
			}
			f.c.Event(die("early", run[0], tt.code, false))
			if got := f.queuedKeys(); len(got) != 0 {
				t.Errorf("the settled die of a die a sync took queued %v, want nothing", got)
			}
			f.d.ResetCalls()
			f.sync(key)
			if calls := f.d.Calls(); calls["create"] != 0 {
				t.Errorf("a sync after the settled die made %d creates, want none", calls["create"])
			}
			st = f.jobStatus("early")
			if st.Succeeded != tt.wantSucceeded || st.Failed != tt.wantFailed || st.Active != tt.wantActive {
				t.Errorf("after the settled die: succeeded %d failed %d active %d, want %d, %d, %d (counted once)", st.Succeeded, st.Failed, st.Active, tt.wantSucceeded, tt.wantFailed, tt.wantActive)
			}
		})
	}
}

// A die a sync cannot take waits for its settled die: that of a pod
// restarted in place (OnFailure), one no sync took before it settled,
// one forgotten by a start or by a gap in the stream.
func TestUnsettledDieATakeCannotUseWaitsForTheSettledDie(t *testing.T) {
	tests := []struct {
		name string
		spec string
		// between runs after the unsettled die, before the sync.
		between func(f *frame, ct dockerx.Container)
		// sync: a sync runs before the settled die.
		sync bool
	}{
		{name: "a pod restarted in place (OnFailure)", spec: "onfailure", sync: true},
		{name: "no sync took it before it settled", spec: "never"},
		{name: "a start forgets it", spec: "never", sync: true, between: func(f *frame, ct dockerx.Container) {
			f.c.Event(dockerx.Event{Action: "start", ContainerID: ct.ID, Namespace: "default", OwnerKind: store.KindJob, Owner: "late"})
		}},
		{name: "a gap in the stream forgets it", spec: "never", sync: true, between: func(f *frame, _ dockerx.Container) {
			f.c.Event(dockerx.Event{Gap: true})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFrame(t)
			yaml := jobYAML("late", "  completions: 3\n  parallelism: 1")
			if tt.spec == "onfailure" {
				yaml = strings.Replace(yaml, "restartPolicy: Never", "restartPolicy: OnFailure", 1)
			}
			f.apply(yaml)
			key := Key(store.KindJob, "default", "late")
			f.sync(key)
			run := f.running(store.KindJob, "late")
			if len(run) != 1 {
				t.Fatalf("%d pods running, want 1", len(run))
			}
			f.c.Event(die("late", run[0], 0, true))
			if tt.between != nil {
				tt.between(f, run[0])
			}
			f.queuedKeys()
			if tt.sync {
				f.advance(time.Second)
				f.d.ResetCalls()
				f.sync(key)
				if calls := f.d.Calls(); calls["create"] != 0 || calls["start"] != 0 {
					t.Errorf("a sync while the list shows the pod running made %d creates and %d starts, want none", calls["create"], calls["start"])
				}
				if st := f.jobStatus("late"); st.Succeeded != 0 || st.Active != 1 {
					t.Errorf("status succeeded %d active %d while the list shows the pod running, want 0 and 1", st.Succeeded, st.Active)
				}
			}
			if err := f.d.Exit(run[0].ID, 0); err != nil {
				t.Fatal(err)
			}
			f.c.Event(die("late", run[0], 0, false))
			if got := f.queuedKeys(); !reflect.DeepEqual(got, []string{key}) {
				t.Fatalf("the settled die queued %v, want the Job's key", got)
			}
			f.advance(time.Second)
			f.sync(key)
			if st := f.jobStatus("late"); st.Succeeded != 1 {
				t.Errorf("after the settled die: %d succeeded, want 1", st.Succeeded)
			}
		})
	}
}

// withExits shows the containers whose dies are known exited with their
// code, their addresses gone, and leaves the list it was given as it was.
func TestWithExitsShowsTheKnownDiesExited(t *testing.T) {
	all := []dockerx.Container{
		{ID: "a", State: dockerx.StateRunning, Status: "Up 1 second", Networks: map[string]string{"n": "10.0.0.2"}},
		{ID: "b", State: dockerx.StateExited, ExitCode: 1, Status: "Exited (1) 2 seconds ago"},
		{ID: "c", State: dockerx.StateRunning, Status: "Up 3 seconds"},
	}
	got := withExits(all, map[string]int{"a": 3, "b": 0})
	if got[0].State != dockerx.StateExited || got[0].ExitCode != 3 || got[0].Networks["n"] != "" {
		t.Errorf("a = %+v, want exited (3) without its address", got[0])
	}
	if got[1].ExitCode != 1 || got[2].State != dockerx.StateRunning {
		t.Errorf("b = %+v, c = %+v: want an exited container and one not named as they were", got[1], got[2])
	}
	if all[0].State != dockerx.StateRunning || all[0].Networks["n"] != "10.0.0.2" {
		t.Errorf("the list given was changed: %+v", all[0])
	}
}
