package dockerfake

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// These tests hold the fake to Docker's behaviour where a kinder fake would
// let controller bugs pass: each one fails against a fake that removes at
// once, keeps nanosecond creation times, skips BuildConfig, never reports
// the daemon down, or ignores imagePullPolicy.

const img = "img:1"

func deployment(name string, mutate func(*manifests.Deployment)) *manifests.Deployment {
	replicas := int32(1)
	d := &manifests.Deployment{
		APIVersion: manifests.APIVersion, Kind: manifests.Kind,
		Metadata: manifests.ObjectMeta{Name: name},
		Spec: manifests.DeploymentSpec{
			Replicas: &replicas,
			Selector: &manifests.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: manifests.PodTemplateSpec{
				Metadata: manifests.TemplateMeta{Labels: map[string]string{"app": name}},
				Spec:     manifests.PodSpec{Containers: []manifests.Container{{Name: name, Image: img}}},
			},
		},
	}
	if mutate != nil {
		mutate(d)
	}
	manifests.SetDefaults(d)
	return d
}

func create(t *testing.T, e *Engine, name string) string {
	t.Helper()
	id, err := e.CreateContainer(context.Background(), dockerx.CreateRequest{Instance: "i", Name: name, TemplateHash: "h", From: dockerx.TemplateOf(deployment("web", nil))})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return id
}

func state(t *testing.T, e *Engine, id string) (string, bool) {
	t.Helper()
	c, ok := find(t, e, id)
	return c.State, ok
}

// find returns the container of instance i with that ID, as listed.
func find(t *testing.T, e *Engine, id string) (dockerx.Container, bool) {
	t.Helper()
	cs, err := e.ListContainers(context.Background(), "i")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.ID == id {
			return c, true
		}
	}
	return dockerx.Container{}, false
}

func waitGone(t *testing.T, e *Engine, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, ok := state(t, e, id); !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %s still listed after its removal", short(id))
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFakeRemovalPassesThroughRemoving(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		remove func(e *Engine, id string) error
	}{
		{"RemoveContainer", func(e *Engine, id string) error { return e.RemoveContainer(ctx, id) }},
		{"Remove (docker rm -f)", func(e *Engine, id string) error { return e.Remove(id) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(img)
			e.HoldRemovals(true)
			id := create(t, e, "web-0")
			if err := e.StartContainer(ctx, id); err != nil {
				t.Fatal(err)
			}
			if err := tc.remove(e, id); err != nil {
				t.Fatal(err)
			}
			if st, ok := state(t, e, id); !ok || st != dockerx.StateRemoving {
				t.Fatalf("after remove: listed=%v state=%q, want it listed as removing", ok, st)
			}
			// The name is still taken while the removal runs.
			if _, err := e.CreateContainer(ctx, dockerx.CreateRequest{Instance: "i", Name: "web-0", TemplateHash: "h", From: dockerx.TemplateOf(deployment("web", nil))}); !errors.Is(err, dockerx.ErrConflict) {
				t.Fatalf("create of a name being removed: %v, want ErrConflict", err)
			}
			// A second removal meanwhile succeeds (already in progress).
			if err := e.RemoveContainer(ctx, id); err != nil {
				t.Fatalf("second removal: %v", err)
			}
			if n := e.FinishRemovals(); n != 1 {
				t.Fatalf("FinishRemovals completed %d removals, want 1", n)
			}
			if _, ok := state(t, e, id); ok {
				t.Fatal("container still listed after FinishRemovals")
			}
			create(t, e, "web-0") // the name is free again
		})
	}
}

func TestFakeRemovalCompletesByItself(t *testing.T) {
	e := New(img)
	id := create(t, e, "web-0")
	if err := e.RemoveContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	waitGone(t, e, id)
}

func TestFakeRemovalCanLeaveDead(t *testing.T) {
	ctx := context.Background()
	e := New(img)
	e.HoldRemovals(true)
	busy := true
	e.DeadOnRemove = func(string) bool { return busy }
	id := create(t, e, "web-0")
	if err := e.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	e.FinishRemovals()
	if st, _ := state(t, e, id); st != dockerx.StateDead {
		t.Fatalf("state after a failed removal: %q, want dead", st)
	}
	if _, err := e.CreateContainer(ctx, dockerx.CreateRequest{Instance: "i", Name: "web-0", TemplateHash: "h", From: dockerx.TemplateOf(deployment("web", nil))}); !errors.Is(err, dockerx.ErrConflict) {
		t.Fatalf("create of a dead container's name: %v, want ErrConflict", err)
	}
	busy = false
	if err := e.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	e.FinishRemovals()
	if _, ok := state(t, e, id); ok {
		t.Fatal("a dead container was not removed by a later removal")
	}
}

func TestFakeCreatedHasSecondResolution(t *testing.T) {
	e := New(img)
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := base.Add(100 * time.Millisecond)
	e.now = func() time.Time { return now }
	a := create(t, e, "web-0")
	now = base.Add(900 * time.Millisecond)
	b := create(t, e, "web-1")
	cs, err := e.ListContainers(context.Background(), "i")
	if err != nil {
		t.Fatal(err)
	}
	created := map[string]time.Time{}
	for _, c := range cs {
		created[c.ID] = c.Created
	}
	if !created[a].Equal(base) || !created[b].Equal(base) {
		t.Fatalf("created %v and %v; want both %v (whole seconds, so they tie)", created[a], created[b], base)
	}
}

func TestFakeCreateBuildsTheRealConfig(t *testing.T) {
	e := New(img)
	bad := deployment("web", func(d *manifests.Deployment) {
		d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, manifests.Container{Name: "second", Image: img})
	})
	_, err := e.CreateContainer(context.Background(), dockerx.CreateRequest{Instance: "i", Name: "web-0", TemplateHash: "h", From: dockerx.TemplateOf(bad)})
	if _, _, _, want := dockerx.BuildConfig(dockerx.CreateRequest{Instance: "i", Name: "web-0", TemplateHash: "h", From: dockerx.TemplateOf(bad)}); want == nil || err == nil || err.Error() != want.Error() {
		t.Fatalf("create of a configuration BuildConfig refuses: %v, want %v", err, want)
	}
	if n := len(e.Snapshot()); n != 0 {
		t.Fatalf("%d containers after a refused create, want 0", n)
	}

	// Labels are BuildConfig's: the ownership labels win over the template's.
	d := deployment("web", func(d *manifests.Deployment) {
		d.Spec.Template.Metadata.Labels[dockerx.LabelInstance] = "other"
	})
	if _, err := e.CreateContainer(context.Background(), dockerx.CreateRequest{Instance: "i", Name: "web-0", TemplateHash: "h", From: dockerx.TemplateOf(d)}); err != nil {
		t.Fatal(err)
	}
	if got := e.Snapshot()[0].Labels[dockerx.LabelInstance]; got != "i" {
		t.Fatalf("instance label %q, want the ownership label i", got)
	}
}

func TestFakeDaemonDown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := New(img)
	events := e.Events(ctx, "i")
	next := func() dockerx.Event {
		t.Helper()
		select {
		case ev := <-events:
			return ev
		case <-time.After(30 * time.Second):
			t.Fatal("no event within 30s")
		}
		return dockerx.Event{}
	}
	if ev := next(); !ev.Gap {
		t.Fatalf("first event %+v, want a gap", ev)
	}
	id := create(t, e, "web-0")
	if ev := next(); ev.Action != "create" {
		t.Fatalf("event %+v, want create", ev)
	}

	e.DaemonDown()
	if ev := next(); !ev.Down || !errors.Is(ev.Err, dockerx.ErrUnreachable) {
		t.Fatalf("event after DaemonDown %+v, want Down with ErrUnreachable", ev)
	}
	if _, err := e.ListContainers(ctx, "i"); !errors.Is(err, dockerx.ErrUnreachable) {
		t.Fatalf("list while down: %v, want ErrUnreachable", err)
	}
	if err := e.StartContainer(ctx, id); !errors.Is(err, dockerx.ErrUnreachable) {
		t.Fatalf("start while down: %v, want ErrUnreachable", err)
	}
	if err := e.EnsureImage(ctx, img, manifests.PullIfNotPresent, nil); !errors.Is(err, dockerx.ErrUnreachable) {
		t.Fatalf("image while down: %v, want ErrUnreachable", err)
	}
	// A subscription made while down reports Down too.
	late := e.Events(ctx, "i")
	select {
	case ev := <-late:
		if !ev.Down {
			t.Fatalf("first event of a subscription made while down: %+v, want Down", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no event on a subscription made while down")
	}

	e.DaemonUp()
	if ev := next(); !ev.Gap || ev.Err == nil {
		t.Fatalf("event after DaemonUp %+v, want a gap with the cause", ev)
	}
	if _, err := e.ListContainers(ctx, "i"); err != nil {
		t.Fatalf("list after DaemonUp: %v", err)
	}
}

// A stopped dockerd answers no call: each container call fails with
// ErrUnreachable while the daemon is down and changes nothing, as a
// connection refused on the socket does; a kinder fake would let a
// controller that stops, inspects, execs or unpauses during an outage
// take a success it never had.
func TestFakeRefusesContainerCallsWhileDaemonDown(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		setup func(e *Engine, id string) error // before the daemon goes down
		call  func(e *Engine, id string) error
		want  string // the container's state after the refused call
	}{
		{name: "stop", call: func(e *Engine, id string) error { return e.StopContainer(ctx, id, time.Second) }, want: dockerx.StateRunning},
		{name: "stop without grace", call: func(e *Engine, id string) error { return e.StopContainer(ctx, id, 0) }, want: dockerx.StateRunning},
		{name: "inspect", call: func(e *Engine, id string) error { _, err := e.InspectContainer(ctx, id); return err }, want: dockerx.StateRunning},
		{name: "exec", call: func(e *Engine, id string) error { _, err := e.Exec(ctx, id, []string{"true"}, time.Second); return err }, want: dockerx.StateRunning},
		{name: "exec with output", call: func(e *Engine, id string) error {
			_, _, err := e.ExecOutput(ctx, id, []string{"true"}, time.Second)
			return err
		}, want: dockerx.StateRunning},
		{name: "unpause", setup: func(e *Engine, id string) error { return e.Pause(id) },
			call: func(e *Engine, id string) error { return e.UnpauseContainer(ctx, id) }, want: dockerx.StatePaused},
		{name: "start", setup: func(e *Engine, id string) error { return e.Kill(id) },
			call: func(e *Engine, id string) error { return e.StartContainer(ctx, id) }, want: dockerx.StateExited},
		{name: "remove", call: func(e *Engine, id string) error { return e.RemoveContainer(ctx, id) }, want: dockerx.StateRunning},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := New(img)
			id := create(t, e, "web-0")
			if err := e.StartContainer(ctx, id); err != nil {
				t.Fatal(err)
			}
			if tc.setup != nil {
				if err := tc.setup(e, id); err != nil {
					t.Fatal(err)
				}
			}
			executed := 0
			e.OnExec = func(string, []string) (int, error) { executed++; return 0, nil }
			e.DaemonDown()
			if err := tc.call(e, id); !errors.Is(err, dockerx.ErrUnreachable) {
				t.Fatalf("%s while the daemon is down: %v, want ErrUnreachable", tc.name, err)
			}
			if executed != 0 {
				t.Fatalf("%s ran %d commands while the daemon is down", tc.name, executed)
			}
			e.DaemonUp()
			if got, ok := state(t, e, id); !ok || got != tc.want {
				t.Fatalf("after a refused %s: state %q (present %v), want %q", tc.name, got, ok, tc.want)
			}
		})
	}
}

func TestFakeCutEventsReportsDownThenGap(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := New(img)
	events := e.Events(ctx, "i")
	<-events // the first gap
	e.CutEvents()
	var got []dockerx.Event
	for len(got) < 2 {
		select {
		case ev := <-events:
			got = append(got, ev)
		case <-time.After(30 * time.Second):
			t.Fatalf("events after a cut: %+v, want Down then Gap", got)
		}
	}
	if !got[0].Down || !got[1].Gap || got[1].Err == nil {
		t.Fatalf("events after a cut: %+v, want Down then a Gap with its cause", got)
	}
}

func TestFakeEnsureImageFollowsPullPolicy(t *testing.T) {
	const present, remote, nowhere, both = "present:1", "remote:1", "nowhere:1", "both:1"
	for _, tc := range []struct {
		policy, ref string
		wantErr     error // nil: success
		wantPulls   int
	}{
		{manifests.PullNever, present, nil, 0},
		{manifests.PullNever, remote, dockerx.ErrNotFound, 0},
		{manifests.PullIfNotPresent, present, nil, 0},
		{manifests.PullIfNotPresent, both, nil, 0},
		{manifests.PullIfNotPresent, remote, nil, 1},
		{manifests.PullIfNotPresent, nowhere, dockerx.ErrImagePull, 1},
		{"", remote, nil, 1},
		{manifests.PullAlways, both, nil, 1},
		{manifests.PullAlways, present, nil, 1}, // pull fails, the local copy is used
		{manifests.PullAlways, remote, nil, 1},
		{manifests.PullAlways, nowhere, dockerx.ErrImagePull, 1},
	} {
		t.Run(tc.policy+"/"+tc.ref, func(t *testing.T) {
			e := New(present, both)
			e.AddRemoteImage(remote)
			e.AddRemoteImage(both)
			err := e.EnsureImage(context.Background(), tc.ref, tc.policy, nil)
			if (tc.wantErr == nil) != (err == nil) || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Fatalf("EnsureImage: %v, want %v", err, tc.wantErr)
			}
			if got := e.Calls()["pull"]; got != tc.wantPulls {
				t.Fatalf("%d pulls, want %d", got, tc.wantPulls)
			}
			if err == nil {
				// Whatever it ensured is now present: Never finds it.
				if err := e.EnsureImage(context.Background(), tc.ref, manifests.PullNever, nil); err != nil {
					t.Fatalf("image not present after EnsureImage succeeded: %v", err)
				}
			}
		})
	}
	if err := New().EnsureImage(context.Background(), present, "Sometimes", nil); err == nil {
		t.Fatal("an unknown pull policy was accepted")
	}
}

// Docker refuses to start a container that is being removed or that a
// failed removal left dead ("container is marked for removal and cannot be
// started"). So does the fake: were it to start one, a controller that
// starts one (a liveness restart racing a removal, say) would go
// unnoticed in tests, the container coming back running and never
// destroyed.
func TestStartRefusesRemovingAndDead(t *testing.T) {
	e := New("img")
	e.HoldRemovals(true)
	id, err := e.Add(dockerx.Container{Name: "c", Image: "img", State: dockerx.StateRunning,
		Labels: map[string]string{dockerx.LabelInstance: "i"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RemoveContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if err := e.StartContainer(context.Background(), id); err == nil {
		t.Errorf("start of a container being removed succeeded; Docker refuses it")
	}
	e.DeadOnRemove = func(string) bool { return true }
	e.FinishRemovals()
	if err := e.StartContainer(context.Background(), id); err == nil {
		t.Errorf("start of a dead container succeeded; Docker refuses it")
	}
	for _, c := range e.Snapshot() {
		if c.ID == id && c.State != dockerx.StateDead {
			t.Fatalf("container %s after the refused starts, want dead", c.State)
		}
	}
}
