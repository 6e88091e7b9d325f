package reconciler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// Tests of promises the README makes that nothing else pins down: the 10 s
// availability rule after a restart, the crash backoff's cap and reset, and
// every condition Conditions computes.

var p0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// A container dockctl has restarted counts as available only after it has
// run for max(minReadySeconds, 10s) since it was last seen ready.
func TestAvailabilityAfterRestart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		minReady  int32
		restarts  int
		readyFor  time.Duration
		wantAvail bool
		wantNext  time.Duration // 0: no requeue needed for it
		settle    time.Duration // the settle rule; 0 here: off
	}{
		{"restarted, ready 0s", 0, 1, 0, false, 10 * time.Second, 0},
		{"restarted, ready 9s", 0, 1, 9 * time.Second, false, time.Second, 0},
		{"restarted, ready 10s", 0, 1, 10 * time.Second, true, 0, 0},
		{"restarted many times, ready 10s", 0, 7, 10 * time.Second, true, 0, 0},
		{"restarted, minReadySeconds 20 wins, ready 15s", 20, 1, 15 * time.Second, false, 5 * time.Second, 0},
		{"restarted, minReadySeconds 20 wins, ready 20s", 20, 1, 20 * time.Second, true, 0, 0},
		{"restarted, minReadySeconds 5 is raised to 10s, ready 7s", 5, 1, 7 * time.Second, false, 3 * time.Second, 0},
		{"never restarted, minReadySeconds 5, ready 5s", 5, 0, 5 * time.Second, true, 0, 0},
		{"never restarted, minReadySeconds 5, ready 3s", 5, 0, 3 * time.Second, false, 2 * time.Second, 0},
		{"never restarted, settle 5s, ready 3s", 0, 0, 3 * time.Second, false, 2 * time.Second, 5 * time.Second},
		{"never restarted, settle 5s, ready 5s", 0, 0, 5 * time.Second, true, 0, 5 * time.Second},
		{"restarted, settle 5s is raised to 10s, ready 7s", 0, 1, 7 * time.Second, false, 3 * time.Second, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := testDeployment("web", 1, "x")
			d.Spec.MinReadySeconds = tc.minReady
			c := dockerx.Container{ID: "c1", Name: "web-0", State: dockerx.StateRunning, Created: p0.Add(-time.Hour)}
			states := map[string]*podruntime.ContainerState{"c1": {Restarts: tc.restarts, ReadySince: p0.Add(-tc.readyFor)}}
			avail, next := availability(d, []dockerx.Container{c}, map[string]bool{"c1": true}, states, tc.settle, p0)
			if avail["c1"] != tc.wantAvail || next != tc.wantNext {
				t.Fatalf("available %v, next %v; want %v, %v", avail["c1"], next, tc.wantAvail, tc.wantNext)
			}
		})
	}
}

// The crash backoff doubles from CrashBackoffBase up to CrashBackoffMax and
// stays there; an exit after a run of 10 s or more is no crash and resets
// it.
func TestCrashBackoffCapAndReset(t *testing.T) {
	c := &Controller{opts: Options{CrashBackoffBase: time.Second, CrashBackoffMax: 8 * time.Second}}
	s := deploymentState{Containers: map[string]*podruntime.ContainerState{}}
	now := p0
	exited := []dockerx.Container{{ID: "c1", Name: "web-0", State: dockerx.StateExited}}
	// run starts the container at now, lets it run for d, then observes
	// its exit and returns the backoff before the next start.
	run := func(d time.Duration) time.Duration {
		t.Helper()
		recordStarts(&s, Plan{Ops: []Op{{Kind: OpStart, Reason: ReasonStopped, Cause: causeStopped, ContainerID: "c1"}}}, now)
		now = now.Add(d)
		notBefore := c.observeContainers(&s, exited, nil, nil, now)
		// A second look at the same exit must not count it again.
		if again := c.observeContainers(&s, exited, nil, nil, now); !again["c1"].Equal(notBefore["c1"]) {
			t.Fatalf("the same exit counted twice: %v then %v", notBefore["c1"], again["c1"])
		}
		if notBefore["c1"].IsZero() {
			return 0
		}
		wait := notBefore["c1"].Sub(now)
		now = notBefore["c1"]
		return wait
	}
	var got []time.Duration
	for range 7 {
		got = append(got, run(time.Second))
	}
	want := []time.Duration{1, 2, 4, 8, 8, 8, 8}
	for i := range want {
		want[i] *= time.Second
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("backoffs of successive crashes %v, want %v (doubling, capped)", got, want)
	}
	// A run of 10 s is not a crash: its exit restarts at once, and the
	// next crash starts the backoff from the base again.
	if d := run(10 * time.Second); d != 0 {
		t.Fatalf("backoff after a 10s run %v, want none (reset)", d)
	}
	if d := run(time.Second); d != time.Second {
		t.Fatalf("backoff of the first crash after a reset %v, want the base 1s", d)
	}
	if n := s.Containers["c1"].Restarts; n != 9 {
		t.Fatalf("restarts %d, want 9", n)
	}
}

func TestConditions(t *testing.T) {
	const deadline = 60
	dep := func(replicas int32, mutate func(*manifests.Deployment)) *manifests.Deployment {
		d := testDeployment("web", replicas, "x")
		pd := int32(deadline)
		d.Spec.ProgressDeadlineSeconds = &pd
		if mutate != nil {
			mutate(d)
		}
		return d
	}
	paused := func(d *manifests.Deployment) { d.Spec.Paused = true }
	// Four replicas with the default 25 %: maxUnavailable 1.
	counts := func(replicas, updated, ready, available int32) manifests.DeploymentStatus {
		return manifests.DeploymentStatus{Replicas: replicas, UpdatedReplicas: updated, ReadyReplicas: ready, AvailableReplicas: available}
	}
	earlier := p0.Add(-30 * time.Second)
	longAgo := p0.Add(-deadline*time.Second - time.Second)
	c := func(typ, status, reason string, update, transition time.Time) manifests.DeploymentCondition {
		return manifests.DeploymentCondition{Type: typ, Status: status, Reason: reason, LastUpdateTime: update, LastTransitionTime: transition}
	}
	avail := func(status, reason string, update, transition time.Time) manifests.DeploymentCondition {
		return c(manifests.ConditionAvailable, status, reason, update, transition)
	}
	prog := func(status, reason string, update, transition time.Time) manifests.DeploymentCondition {
		return c(manifests.ConditionProgressing, status, reason, update, transition)
	}
	availTrue := avail("True", ReasonMinimumReplicasAvailable, earlier, earlier)
	availFalse := avail("False", ReasonMinimumReplicasUnavailable, earlier, earlier)
	updating := prog("True", ReasonReplicaSetUpdated, earlier, earlier)
	stale := prog("True", ReasonReplicaSetUpdated, longAgo, longAgo)

	for _, tc := range []struct {
		name         string
		d            *manifests.Deployment
		st, prev     manifests.DeploymentStatus
		newGen       bool
		fail         failure
		prevConds    []manifests.DeploymentCondition
		want         []manifests.DeploymentCondition
		wantDeadline time.Duration
	}{
		{name: "first sync, nothing yet", d: dep(4, nil), st: counts(0, 0, 0, 0), newGen: true,
			want: []manifests.DeploymentCondition{
				avail("False", ReasonMinimumReplicasUnavailable, p0, p0),
				prog("True", ReasonReplicaSetUpdated, p0, p0)}},
		{name: "available at replicas-maxUnavailable", d: dep(4, nil), st: counts(4, 4, 3, 3), prev: counts(4, 4, 3, 3),
			prevConds: []manifests.DeploymentCondition{availFalse, updating},
			want: []manifests.DeploymentCondition{
				avail("True", ReasonMinimumReplicasAvailable, p0, p0),
				prog("True", ReasonReplicaSetUpdated, earlier, earlier)},
			wantDeadline: 30 * time.Second},
		{name: "unavailable below replicas-maxUnavailable", d: dep(4, nil), st: counts(4, 4, 2, 2), prev: counts(4, 4, 2, 2),
			prevConds: []manifests.DeploymentCondition{availTrue, updating},
			want: []manifests.DeploymentCondition{
				avail("False", ReasonMinimumReplicasUnavailable, p0, p0),
				prog("True", ReasonReplicaSetUpdated, earlier, earlier)},
			wantDeadline: 30 * time.Second},
		{name: "complete", d: dep(4, nil), st: counts(4, 4, 4, 4), prev: counts(4, 4, 3, 3),
			prevConds: []manifests.DeploymentCondition{availTrue, updating},
			want: []manifests.DeploymentCondition{
				availTrue,
				prog("True", ReasonNewReplicaSetAvailable, p0, earlier)}},
		{name: "complete and unchanged keeps every time", d: dep(4, nil), st: counts(4, 4, 4, 4), prev: counts(4, 4, 4, 4),
			prevConds: []manifests.DeploymentCondition{availTrue, prog("True", ReasonNewReplicaSetAvailable, earlier, earlier)},
			want:      []manifests.DeploymentCondition{availTrue, prog("True", ReasonNewReplicaSetAvailable, earlier, earlier)}},
		{name: "paused", d: dep(4, paused), st: counts(4, 2, 4, 4), prev: counts(4, 2, 4, 4),
			prevConds: []manifests.DeploymentCondition{availTrue, updating},
			want: []manifests.DeploymentCondition{
				availTrue,
				prog("Unknown", ReasonDeploymentPaused, p0, p0)}},
		{name: "resumed after a pause progresses afresh", d: dep(4, nil), st: counts(4, 2, 4, 4), prev: counts(4, 2, 4, 4),
			prevConds: []manifests.DeploymentCondition{availTrue, prog("Unknown", ReasonDeploymentPaused, earlier, earlier)},
			want: []manifests.DeploymentCondition{
				availTrue,
				prog("True", ReasonReplicaSetUpdated, p0, p0)},
			wantDeadline: 0},
		{name: "progress: a new generation", d: dep(4, nil), st: counts(4, 0, 4, 4), prev: counts(4, 0, 4, 4), newGen: true,
			prevConds: []manifests.DeploymentCondition{availTrue, stale},
			want:      []manifests.DeploymentCondition{availTrue, prog("True", ReasonReplicaSetUpdated, p0, longAgo)}},
		{name: "progress: more updated", d: dep(4, nil), st: counts(5, 2, 4, 4), prev: counts(5, 1, 4, 4),
			prevConds: []manifests.DeploymentCondition{availTrue, stale},
			want:      []manifests.DeploymentCondition{availTrue, prog("True", ReasonReplicaSetUpdated, p0, longAgo)}},
		{name: "progress: more ready", d: dep(4, nil), st: counts(5, 2, 4, 3), prev: counts(5, 2, 3, 3),
			prevConds: []manifests.DeploymentCondition{availTrue, stale},
			want:      []manifests.DeploymentCondition{availTrue, prog("True", ReasonReplicaSetUpdated, p0, longAgo)}},
		{name: "progress: more available", d: dep(4, nil), st: counts(5, 2, 4, 4), prev: counts(5, 2, 4, 3),
			prevConds: []manifests.DeploymentCondition{availTrue, stale},
			want:      []manifests.DeploymentCondition{availTrue, prog("True", ReasonReplicaSetUpdated, p0, longAgo)}},
		{name: "progress: fewer old", d: dep(4, nil), st: counts(4, 2, 3, 3), prev: counts(5, 2, 3, 3),
			prevConds: []manifests.DeploymentCondition{availTrue, stale},
			want:      []manifests.DeploymentCondition{availTrue, prog("True", ReasonReplicaSetUpdated, p0, longAgo)}},
		{name: "no progress within the deadline keeps the condition", d: dep(4, nil), st: counts(5, 2, 4, 4), prev: counts(5, 2, 4, 4),
			prevConds:    []manifests.DeploymentCondition{availTrue, updating},
			want:         []manifests.DeploymentCondition{availTrue, updating},
			wantDeadline: 30 * time.Second},
		{name: "no progress past the deadline", d: dep(4, nil), st: counts(5, 2, 4, 4), prev: counts(5, 2, 4, 4),
			prevConds: []manifests.DeploymentCondition{availTrue, stale},
			want:      []manifests.DeploymentCondition{availTrue, prog("False", ReasonProgressDeadlineExceeded, p0, p0)}},
		{name: "deadline exceeded stays exceeded", d: dep(4, nil), st: counts(5, 2, 4, 4), prev: counts(5, 2, 4, 4),
			prevConds: []manifests.DeploymentCondition{availTrue, prog("False", ReasonProgressDeadlineExceeded, earlier, earlier)},
			want:      []manifests.DeploymentCondition{availTrue, prog("False", ReasonProgressDeadlineExceeded, earlier, earlier)}},
		{name: "progress after the deadline turns it True again", d: dep(4, nil), st: counts(5, 3, 4, 4), prev: counts(5, 2, 4, 4),
			prevConds: []manifests.DeploymentCondition{availTrue, prog("False", ReasonProgressDeadlineExceeded, earlier, earlier)},
			want:      []manifests.DeploymentCondition{availTrue, prog("True", ReasonReplicaSetUpdated, p0, p0)}},
		{name: "replica failure", d: dep(4, nil), st: counts(0, 0, 0, 0), newGen: true,
			fail: failure{ReasonFailedCreate, "boom"},
			want: []manifests.DeploymentCondition{
				avail("False", ReasonMinimumReplicasUnavailable, p0, p0),
				prog("True", ReasonReplicaSetUpdated, p0, p0),
				c(manifests.ConditionReplicaFailure, "True", ReasonFailedCreate, p0, p0)}},
		{name: "replica failure unchanged keeps its times", d: dep(4, nil), st: counts(0, 0, 0, 0),
			fail:      failure{ReasonErrImagePull, "no image"},
			prevConds: []manifests.DeploymentCondition{availFalse, updating, c(manifests.ConditionReplicaFailure, "True", ReasonErrImagePull, earlier, earlier)},
			want: []manifests.DeploymentCondition{availFalse, updating,
				c(manifests.ConditionReplicaFailure, "True", ReasonErrImagePull, earlier, earlier)},
			wantDeadline: 30 * time.Second},
		{name: "replica failure with a new reason updates, same status keeps the transition", d: dep(4, nil), st: counts(0, 0, 0, 0),
			fail:      failure{ReasonImagePullBackOff, "no image"},
			prevConds: []manifests.DeploymentCondition{availFalse, updating, c(manifests.ConditionReplicaFailure, "True", ReasonErrImagePull, earlier, earlier)},
			want: []manifests.DeploymentCondition{availFalse, updating,
				c(manifests.ConditionReplicaFailure, "True", ReasonImagePullBackOff, p0, earlier)},
			wantDeadline: 30 * time.Second},
		{name: "replica failure resolved disappears", d: dep(4, nil), st: counts(4, 4, 4, 4), prev: counts(4, 4, 4, 4),
			prevConds: []manifests.DeploymentCondition{availTrue, prog("True", ReasonNewReplicaSetAvailable, earlier, earlier),
				c(manifests.ConditionReplicaFailure, "True", ReasonFailedCreate, earlier, earlier)},
			want: []manifests.DeploymentCondition{availTrue, prog("True", ReasonNewReplicaSetAvailable, earlier, earlier)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Messages are prose; the table pins types, statuses, reasons
			// and times.
			if tc.fail.reason != "" {
				for i := range tc.prevConds {
					if tc.prevConds[i].Type == manifests.ConditionReplicaFailure {
						tc.prevConds[i].Message = tc.fail.message
					}
				}
			}
			got, deadlineIn := Conditions(tc.d, tc.st, tc.prev, tc.newGen, tc.fail, withMessages(tc.prevConds), p0)
			if fmt.Sprint(strip(got)) != fmt.Sprint(tc.want) || deadlineIn != tc.wantDeadline {
				t.Fatalf("got  %v, deadline in %v\nwant %v, deadline in %v", strip(got), deadlineIn, tc.want, tc.wantDeadline)
			}
		})
	}
}

// withMessages gives previous conditions the messages Conditions writes,
// so that "unchanged" means unchanged.
func withMessages(conds []manifests.DeploymentCondition) []manifests.DeploymentCondition {
	msgs := map[string]string{
		ReasonMinimumReplicasAvailable:   "Deployment has minimum availability.",
		ReasonMinimumReplicasUnavailable: "Deployment does not have minimum availability.",
		ReasonNewReplicaSetAvailable:     "Deployment has successfully progressed.",
		ReasonReplicaSetUpdated:          "Deployment is progressing.",
		ReasonDeploymentPaused:           "Deployment is paused.",
		ReasonProgressDeadlineExceeded:   "Deployment has timed out progressing: no progress for 1m0s.",
	}
	out := append([]manifests.DeploymentCondition(nil), conds...)
	for i := range out {
		if m, ok := msgs[out[i].Reason]; ok && out[i].Message == "" {
			out[i].Message = m
		}
	}
	return out
}

func strip(conds []manifests.DeploymentCondition) []manifests.DeploymentCondition {
	out := append([]manifests.DeploymentCondition(nil), conds...)
	for i := range out {
		out[i].Message = ""
	}
	return out
}

// The daemon-down path: a Down event makes the controller not ready at
// once (/readyz), without waiting for a failed list; when the daemon is
// back, the gap's resync makes it ready again and repairs what died
// meanwhile, an exit no event reported.
func TestControllerReadinessFollowsTheDaemon(t *testing.T) {
	h := newHarness(t, Options{}) // resync one hour: only events can help
	h.apply(testDeployment("web", 2, "x"))
	h.start()
	cs := h.waitReplicas("web", 2)
	h.waitFor("ready", h.ctrl.Ready)
	h.engine.DaemonDown()
	h.waitFor("not ready while the daemon is down", func() bool { return !h.ctrl.Ready() })
	if err := h.engine.KillSilently(cs[0].ID); err != nil {
		t.Fatal(err)
	}
	h.engine.DaemonUp()
	h.waitFor("ready again once the daemon is back", h.ctrl.Ready)
	after := h.waitReplicas("web", 2)
	if !hasID(after, cs[0].ID) {
		t.Fatalf("the replica that died while the daemon was down was replaced, not restarted: %s", summary(after))
	}
}

// A configuration the Docker client refuses to build (here a volumeMount
// naming no volume, from a record no validation stopped) is a FailedCreate
// in status, and creates nothing.
func TestControllerReportsConfigErrors(t *testing.T) {
	h := newHarness(t, Options{})
	d := testDeployment("web", 2, "x")
	d.Spec.Template.Spec.Containers[0].VolumeMounts = []manifests.VolumeMount{{Name: "nope", MountPath: "/x"}}
	h.apply(d)
	h.start()
	h.waitFor("ReplicaFailure FailedCreate naming the volumeMount", func() bool {
		st, err := h.store.ReadStatus("", "web")
		if err != nil || st == nil {
			return false
		}
		c := find(st.Conditions, manifests.ConditionReplicaFailure)
		return c != nil && c.Reason == ReasonFailedCreate && strings.Contains(c.Message, `volumeMount "nope"`)
	})
	if cs := h.ours("web"); len(cs) != 0 {
		t.Fatalf("containers created from a configuration that cannot be built: %s", summary(cs))
	}
}

// A container being removed (docker rm -f still under way) keeps its name
// until it is gone: the controller replaces it under another name at once,
// without a create that conflicts, and adds nothing when it is gone.
func TestControllerReplacesWhileRemoving(t *testing.T) {
	h := newHarness(t, Options{})
	h.apply(testDeployment("web", 2, "x"))
	h.start()
	cs := h.waitReplicas("web", 2)
	h.engine.HoldRemovals(true)
	if err := h.engine.Remove(cs[0].ID); err != nil {
		t.Fatal(err)
	}
	h.waitFor("2 running replicas beside the one being removed", func() bool {
		n := 0
		for _, c := range h.ours("web") {
			if c.State == dockerx.StateRunning {
				n++
			}
		}
		return n == 2
	})
	for _, c := range h.ours("web") {
		if c.State == dockerx.StateRunning && c.Name == cs[0].Name {
			t.Fatalf("replacement %s took the name of the container being removed", c.Name)
		}
	}
	h.engine.HoldRemovals(false)
	after := h.waitReplicas("web", 2)
	if hasID(after, cs[0].ID) {
		t.Fatalf("the removed container is back: %s", summary(after))
	}
}
