package reconciler

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/reconcile"
	"github.com/dockctl/dockctl/store"
)

// The controller running as a replica of a deployment it manages (dockctl
// deployed by dockctl) ignores its own container, so the planner wants a
// replica in its place, under the first free name - its own. The create
// conflicts, and the name conflict, finding the holder labelled as a
// replica of this deployment, must not "adopt" it: nothing would be
// created, the next sync would do the same, and the deployment would stay
// a replica short forever. Its own container's name must be skipped like
// any name held by a container the deployment does not manage.
func TestControllerDoesNotAdoptItselfOnNameConflict(t *testing.T) {
	h := newHarness(t, Options{})
	d := testDeployment("web", 1, "x")
	hash := manifests.TemplateHash(&d.Spec.Template)
	self, err := h.engine.Add(dockerx.Container{Name: dockerx.ContainerName("i", "", "web", hash, 0), State: dockerx.StateRunning,
		Labels: map[string]string{dockerx.LabelInstance: "i", dockerx.LabelDeployment: "web", dockerx.LabelTemplateHash: hash}}, "")
	if err != nil {
		t.Fatal(err)
	}
	h.ctrl.opts.SelfID = self[:12]
	h.apply(d)
	h.start()
	h.waitFor("one replica besides the controller", func() bool { return len(h.ours("web")) == 2 })
	if !hasID(h.engine.Snapshot(), self) {
		t.Fatal("the controller removed its own container")
	}
}

// reservedNameHarness is a controller on a fake clock whose engine answers
// a create of the replica at ordinal 1 with a name conflict while Docker
// shows no container under that name — a create a killed controller sent,
// which dockerd is still completing — until the test lets it land
// (appear). Syncs run one at a time (sync), so every count is exact.
type reservedNameHarness struct {
	*harness
	d        *manifests.Deployment
	hash     string
	reserved string // the name Docker reserves
	clock    *testClock
	mu       sync.Mutex
	holding  bool
}

func newReservedNameHarness(t *testing.T, replicas int32) *reservedNameHarness {
	r := &reservedNameHarness{clock: &testClock{now: time.Unix(1_000_000, 0)}, holding: true}
	r.harness = newHarness(t, Options{Now: r.clock.Now})
	r.d = testDeployment("web", replicas, "x")
	r.hash = manifests.TemplateHash(&r.d.Spec.Template)
	r.reserved = dockerx.ContainerName("i", "", "web", r.hash, 1)
	r.engine.OnCreate = func(req dockerx.CreateRequest) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.holding && req.Name == r.reserved {
			return fmt.Errorf("create %s: name already in use: %w", req.Name, dockerx.ErrConflict)
		}
		return nil
	}
	r.apply(r.d)
	return r
}

// appear lands the create in flight: its container shows, created and
// never started, as dockerd leaves a dead client's create.
func (r *reservedNameHarness) appear() {
	r.mu.Lock()
	r.holding = false
	r.mu.Unlock()
	if _, err := r.engine.Add(dockerx.Container{Name: r.reserved, Image: testImage, State: dockerx.StateCreated,
		Labels: map[string]string{dockerx.LabelInstance: "i", dockerx.LabelDeployment: "web", dockerx.LabelTemplateHash: r.hash}}, "create"); err != nil {
		r.t.Fatal(err)
	}
}

// sync runs one sync of the deployment and returns its replicas' names,
// failing the test if it ever made more than the deployment's replicas.
func (r *reservedNameHarness) sync() map[string]bool {
	r.t.Helper()
	_, _ = r.ctrl.Reconcile(context.Background(), reconcile.Request{Key: store.Key("", "web")})
	names := map[string]bool{}
	for _, c := range r.ours("web") {
		names[c.Name] = true
	}
	if len(names) > int(*r.d.Spec.Replicas) {
		r.t.Fatalf("%d containers for %d replicas: %v", len(names), *r.d.Spec.Replicas, names)
	}
	return names
}

func (r *reservedNameHarness) ordinal(n int) string {
	return dockerx.ContainerName("i", "", "web", r.hash, n)
}

// A name Docker reserves without showing its container is, right after a
// controller restart, most often a create still in flight: it counts as a
// replica of the deployment for the window, so no replacement is made
// under another ordinal (which would leave one container too many once the
// create lands), and the container that shows up is simply observed.
func TestReservedNameCountsAsAReplicaInFlight(t *testing.T) {
	r := newReservedNameHarness(t, 3)
	// The first sync may stop its creates at the conflict (slow start);
	// the next ones complete the others, never under another ordinal.
	var names map[string]bool
	for i, step := range []time.Duration{0, 10 * time.Second, 10 * time.Second} {
		r.clock.Advance(step)
		names = r.sync()
		for n := range names {
			if n != r.ordinal(0) && n != r.ordinal(2) {
				t.Fatalf("sync %d inside the window: containers %v, want ordinals 0 and 2 only", i, names)
			}
		}
	}
	if len(names) != 2 {
		t.Fatalf("inside the window: containers %v, want ordinals 0 and 2", names)
	}
	r.appear()
	r.clock.Advance(time.Second)
	names = r.sync()
	want := map[string]bool{r.ordinal(0): true, r.ordinal(1): true, r.ordinal(2): true}
	if !maps.Equal(names, want) {
		t.Fatalf("after the create landed: containers %v, want %v", names, want)
	}
	// Past the window the name is observed, not blocked.
	r.clock.Advance(time.Minute)
	if names := r.sync(); !maps.Equal(names, want) {
		t.Fatalf("after the window: containers %v, want %v", names, want)
	}
	for _, c := range r.ours("web") {
		if c.State != dockerx.StateRunning {
			t.Errorf("%s is %s, want running", c.Name, c.State)
		}
	}
	if b := r.ctrl.blockedNames(store.Key("", "web")); len(b) != 0 {
		t.Errorf("blocked names %v, want none", b)
	}
}

// A name Docker still reserves, showing nothing, when the window ends is no
// create in flight: it is blocked for good, as a name held by another
// container, and the planner takes the next free ordinal.
func TestReservedNameBecomesBlockedAfterTheWindow(t *testing.T) {
	r := newReservedNameHarness(t, 3)
	// The first sync may stop its creates at the conflict (slow start, the
	// creates run concurrently); the next one completes the other.
	var names map[string]bool
	for _, step := range []time.Duration{0, 10 * time.Second} {
		r.clock.Advance(step)
		names = r.sync()
	}
	if len(names) != 2 {
		t.Fatalf("inside the window: containers %v, want 2", names)
	}
	r.clock.Advance(DefaultReservedNameWindow)
	// The name is tried once more; the conflict blocks it and is reported.
	if names := r.sync(); len(names) != 2 {
		t.Fatalf("the sync that blocks the name: containers %v, want 2", names)
	}
	if b := r.ctrl.blockedNames(store.Key("", "web")); !b[r.reserved] {
		t.Errorf("blocked names %v, want %s", b, r.reserved)
	}
	if msg := r.replicaFailure("web"); !strings.Contains(msg, r.reserved) || !strings.Contains(msg, "still reserves") {
		t.Errorf("ReplicaFailure %q does not name %s as a name Docker still reserves", msg, r.reserved)
	}
	names = r.sync()
	want := map[string]bool{r.ordinal(0): true, r.ordinal(2): true, r.ordinal(3): true}
	if !maps.Equal(names, want) {
		t.Fatalf("after the window: containers %v, want %v", names, want)
	}
}

// A start refused with "No such container" for a container the list showed
// (dockerd still registering a create a killed controller sent) is retried
// at a later sync, after the crash backoff, like any refused start: it is
// not judged a container that can never start, and no replacement is made.
func TestStartOfAListedContainerDockerStillRegistersIsRetried(t *testing.T) {
	r := newReservedNameHarness(t, 3)
	r.appear() // no conflict: the dead client's create has landed
	refused := false
	r.engine.OnStart = func(id string) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if !refused {
			for _, c := range r.engine.Snapshot() {
				if c.ID == id && c.Name == r.reserved {
					refused = true
					return fmt.Errorf("Error response from daemon: No such container: %s: %w", id, dockerx.ErrNotFound)
				}
			}
		}
		return nil
	}
	want := map[string]bool{r.ordinal(0): true, r.ordinal(1): true, r.ordinal(2): true}
	if names := r.sync(); !maps.Equal(names, want) {
		t.Fatalf("after the refused start: containers %v, want %v", names, want)
	}
	if !refused {
		t.Fatal("the start of the listed container was never tried")
	}
	r.clock.Advance(time.Minute) // past the crash backoff
	if names := r.sync(); !maps.Equal(names, want) {
		t.Fatalf("after the retry: containers %v, want %v", names, want)
	}
	for _, c := range r.ours("web") {
		if c.State != dockerx.StateRunning {
			t.Errorf("%s is %s, want running", c.Name, c.State)
		}
	}
}

// The planner counts a replica whose create is in flight (a name Docker
// reserves) toward its revision and never creates under its name; once the
// list shows the container, it counts once.
func TestPlanCountsReplicasInFlight(t *testing.T) {
	const H = "aaaa"
	running := dockerx.StateRunning
	name := func(ord int) string { return dockerx.ContainerName("i", "", "web", H, ord) }
	until := t0.Add(20 * time.Second)
	tests := []struct {
		name       string
		containers []dockerx.Container
		inFlight   map[string]InFlightName
		want       []string
		requeue    time.Duration
	}{
		{
			name:       "a replica in flight is not replaced elsewhere",
			containers: []dockerx.Container{ctr(H, 0, running, time.Hour), ctr(H, 2, running, time.Hour)},
			inFlight:   map[string]InFlightName{name(1): {Hash: H, Replica: true, Until: until}},
			requeue:    20 * time.Second,
		},
		{
			name:       "other missing replicas skip its ordinal",
			containers: []dockerx.Container{ctr(H, 0, running, time.Hour)},
			inFlight:   map[string]InFlightName{name(1): {Hash: H, Replica: true, Until: until}},
			want:       []string{"create " + name(2)},
			requeue:    20 * time.Second,
		},
		{
			name:       "shown, it counts once",
			containers: []dockerx.Container{ctr(H, 0, running, time.Hour), ctr(H, 1, dockerx.StateCreated, 0), ctr(H, 2, running, time.Hour)},
			inFlight:   map[string]InFlightName{name(1): {Hash: H, Replica: true, Until: until}},
			want:       []string{"start " + name(1)},
		},
		{
			name:       "a pod member's name is taken, not counted",
			containers: []dockerx.Container{ctr(H, 0, running, time.Hour)},
			inFlight:   map[string]InFlightName{name(1): {Hash: H, Until: until}},
			want:       []string{"create " + name(2), "create " + name(3)},
		},
		{
			name:       "another revision's is not counted for this one",
			containers: []dockerx.Container{ctr(H, 0, running, time.Hour), ctr(H, 2, running, time.Hour)},
			inFlight:   map[string]InFlightName{name(1): {Hash: "bbbb", Replica: true, Until: until}},
			want:       []string{"create " + name(3)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := ComputePlan(PlanInput{
				Instance: "i", Name: "web", Desired: deployment(3), Hash: H,
				Containers: tt.containers, Now: t0, Available: availableIfRunning(tt.containers),
				InFlight: tt.inFlight,
			})
			var got []string
			for _, op := range plan.Ops {
				got = append(got, fmt.Sprintf("%s %s", op.Kind, op.Name))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if plan.RequeueAfter != tt.requeue {
				t.Errorf("requeue %v, want %v", plan.RequeueAfter, tt.requeue)
			}
		})
	}
}
