package reconciler

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

var webRef = store.ObjectRef{Kind: store.KindDeployment, Namespace: manifests.DefaultNamespace, Name: "web"}

// orphanWeb runs deployment web (d) to its replicas, labelled with its
// incarnation, then deletes it with --cascade=orphan and has a stopped
// controller sync the tombstone and sweep once: nothing is written to
// Docker, every pod still runs. It returns the orphans by ID.
func orphanWeb(t *testing.T, d *manifests.Deployment) (*harness, map[string]dockerx.Container) {
	t.Helper()
	h := newHarness(t, Options{})
	h.apply(d)
	h.start()
	cs := h.waitReplicas("web", int(d.Replicas()))
	rec, err := h.store.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	uid := store.OwnerUID(rec.CreatedAt)
	orphans := map[string]dockerx.Container{}
	for _, c := range cs {
		if got := c.Labels[dockerx.LabelOwnerUID]; got != uid {
			t.Fatalf("container %s labelled with incarnation %q, want %q", c.Name, got, uid)
		}
		orphans[c.ID] = c
	}
	h.stop()
	h.engine.ResetCalls()
	if _, err := h.store.DeleteObjectsWith([]store.ObjectRef{webRef}, store.DeleteOptions{Orphan: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ctrl.syncDeployment(t.Context(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if err := h.ctrl.sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	untouched(t, h, orphans, "the orphaning delete")
	return h, orphans
}

// untouched checks that what happened wrote nothing to Docker and left
// exactly the orphans, running as they were.
func untouched(t *testing.T, h *harness, orphans map[string]dockerx.Container, what string) {
	t.Helper()
	if n := h.engine.WriteCalls(); n != 0 {
		t.Errorf("%s made %d Docker writes (%v), want none", what, n, h.engine.Calls())
	}
	for _, c := range h.ours("web") {
		if _, ok := orphans[c.ID]; !ok || c.State != dockerx.StateRunning {
			t.Fatalf("after %s: %s, want the orphans running as they were", what, summary(h.ours("web")))
		}
	}
}

// restart runs a new controller on h's engine and store, as
// `dockctl controller` started again would.
func (h *harness) restart() {
	h.ctrl = New(h.engine, h.store, h.opts)
	h.start()
}

// selecting makes d select (and label its pods) app: v instead.
func selecting(d *manifests.Deployment, v string) *manifests.Deployment {
	d.Spec.Selector.MatchLabels = map[string]string{"app": v}
	d.Spec.Template.Metadata.Labels = map[string]string{"app": v}
	return d
}

// `delete deployment --cascade=orphan` stops nothing: the controller
// neither stops nor restarts the pods it left, and the sweep queues
// nothing for them.
func TestOrphaningDeleteOfADeploymentStopsNothing(t *testing.T) {
	h, orphans := orphanWeb(t, testDeployment("web", 2, "one"))
	h.engine.Kill(slices.Collect(maps.Keys(orphans))[0])
	h.engine.ResetCalls()
	if _, err := h.ctrl.syncDeployment(t.Context(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if n := h.engine.WriteCalls(); n != 0 {
		t.Errorf("a dead orphan made the tombstone's sync write %d times (%v): nobody keeps an orphan", n, h.engine.Calls())
	}
}

// A Deployment applied again over the orphans of one of its name whose
// template it has adopts them as they run: no create, no stop, and they
// count toward its replicas.
func TestDeploymentAppliedAgainAdoptsOrphansOfItsTemplate(t *testing.T) {
	h, orphans := orphanWeb(t, testDeployment("web", 2, "one"))
	h.apply(testDeployment("web", 2, "one"))
	if _, err := h.ctrl.syncDeployment(t.Context(), "default/web"); err != nil {
		t.Fatal(err)
	}
	untouched(t, h, orphans, "adopting")
	rec, err := h.store.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	st, err := h.store.ReadStatus("", "web")
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := View(rec, st, nil, OwnedContainers(rec, h.ours("web")), h.ctrl.opts.Now()); st.ObservedGeneration != rec.Generation || s.Replicas != 2 || s.UpdatedReplicas != 2 {
		t.Fatalf("after adopting: observed generation %d of %d, %d replicas, %d updated; want the adopted 2 counted", st.ObservedGeneration, rec.Generation, s.Replicas, s.UpdatedReplicas)
	}
	// A background deletion of the adopter takes what it adopted.
	if _, err := h.store.DeleteObjects([]store.ObjectRef{webRef}); err != nil {
		t.Fatal(err)
	}
	h.restart()
	h.waitFor("the adopted pods removed", func() bool { return len(h.ours("web")) == 0 })
	if calls := h.engine.Calls(); calls["create"] != 0 {
		t.Errorf("%d creates while adopting and deleting, want none", calls["create"])
	}
}

// A Deployment applied again with another template adopts the orphans
// its selector matches as an old revision's pods and rolls them by its
// strategy, within maxSurge and maxUnavailable.
func TestDeploymentAppliedAgainRollsAdoptedOrphans(t *testing.T) {
	for _, tc := range []struct{ surge, unavailable int }{{1, 0}, {0, 1}} {
		t.Run(fmt.Sprintf("surge=%d,unavailable=%d", tc.surge, tc.unavailable), func(t *testing.T) {
			h, orphans := orphanWeb(t, withStrategy(testDeployment("web", 3, "one"), manifests.StrategyRollingUpdate, tc.surge, tc.unavailable))
			var b boundsChecker
			b.install(h)
			h.apply(withStrategy(testDeployment("web", 3, "two"), manifests.StrategyRollingUpdate, tc.surge, tc.unavailable))
			h.restart()
			cs := h.waitReplicas("web", 3)
			for _, c := range cs {
				if _, ok := orphans[c.ID]; ok {
					t.Errorf("orphan %s of the old template kept, want it rolled", c.Name)
				}
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			if n := b.maxTotal(); n > 3+tc.surge {
				t.Errorf("%d containers at once, bound is %d", n, 3+tc.surge)
			}
			if b.minRunning < 3-tc.unavailable {
				t.Errorf("%d running at a removal, bound is %d", b.minRunning, 3-tc.unavailable)
			}
		})
	}
}

// A Deployment applied again whose selector does not match the orphans
// leaves them running, ownerless, and makes its own pods under names
// none of them holds; its background deletion takes its own pods only.
func TestDeploymentAppliedAgainLeavesOrphansItsSelectorMisses(t *testing.T) {
	h, orphans := orphanWeb(t, testDeployment("web", 2, "one"))
	h.apply(selecting(testDeployment("web", 2, "one"), "web-v2"))
	h.restart()
	rec, err := h.store.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	hash := manifests.TemplateHash(&rec.Deployment.Spec.Template)
	own := func() (out []dockerx.Container) {
		for _, c := range h.ours("web") {
			if _, ok := orphans[c.ID]; !ok && c.State == dockerx.StateRunning && c.TemplateHash == hash {
				out = append(out, c)
			}
		}
		return out
	}
	h.waitFor("2 pods of its own", func() bool { return len(own()) == 2 })
	names := map[string]bool{}
	for _, c := range orphans {
		names[c.Name] = true
	}
	for _, c := range own() {
		if names[c.Name] {
			t.Errorf("a new pod took the orphan's name %s", c.Name)
		}
	}
	if _, err := h.store.DeleteObjects([]store.ObjectRef{webRef}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("its own pods removed", func() bool { return len(h.ours("web")) == len(orphans) })
	for _, c := range h.ours("web") {
		if _, ok := orphans[c.ID]; !ok || c.State != dockerx.StateRunning {
			t.Errorf("after the adopter's deletion: %s, want only the orphans, running", summary(h.ours("web")))
		}
	}
}

// ownedPods observes what store.PodOwner gives the record and holds the
// names of the rest (the planner's blocked names: a new pod takes the
// next free ordinal), their volumes left alone. A container an earlier
// release made (no incarnation label) is read by its creation time
// (store.Record.PodUID).
func TestOwnedPodsHoldsTheOrphansNames(t *testing.T) {
	tomb := &store.Record{Name: "web", Deleted: true, Deployment: *testDeployment("web", 1, "one"), CreatedAt: t0}
	tomb.Orphaned = []string{store.OwnerUID(tomb.CreatedAt)}
	live := &store.Record{Name: "web", Deployment: *selecting(testDeployment("web", 1, "one"), "web-v2"), Orphaned: tomb.Orphaned,
		CreatedAt: t0.Add(time.Hour)}
	orphan := dockerx.Container{ID: "a", Name: "i-web-abc-0", PodUID: "p", Labels: map[string]string{dockerx.LabelOwnerUID: tomb.Orphaned[0], "app": "web"}}
	mine := dockerx.Container{ID: "b", Name: "i-web-abc-1", Labels: map[string]string{dockerx.LabelOwnerUID: store.OwnerUID(live.CreatedAt), "app": "web-v2"}}
	unlabelled := dockerx.Container{ID: "c", Name: "i-web-abc-2", Created: t0.Add(time.Minute), Labels: map[string]string{"app": "web"}}
	vols := []dockerx.Volume{{Name: "v-orphan", PodUID: "p"}, {Name: "v-other"}}
	for _, tc := range []struct {
		name     string
		rec      *store.Record
		wantOwn  []string
		wantVols []string
		wantHeld []string
	}{
		{"a tombstone of an orphaning delete observes only a later incarnation's", tomb, []string{"b"}, []string{"v-other"}, []string{"i-web-abc-0", "i-web-abc-2"}},
		{"the deployment applied again observes its own", live, []string{"b"}, []string{"v-other"}, []string{"i-web-abc-0", "i-web-abc-2"}},
		{"a record listing no orphans observes all", &store.Record{Name: "web", Deployment: *testDeployment("web", 1, "one")}, []string{"a", "b", "c"}, []string{"v-orphan", "v-other"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			own, ownVols, held := ownedPods(tc.rec, []dockerx.Container{orphan, mine, unlabelled}, vols)
			var ids, vnames []string
			for _, c := range own {
				ids = append(ids, c.ID)
			}
			for _, v := range ownVols {
				vnames = append(vnames, v.Name)
			}
			if !slices.Equal(ids, tc.wantOwn) || !slices.Equal(vnames, tc.wantVols) || !slices.Equal(slices.Sorted(maps.Keys(held)), tc.wantHeld) {
				t.Errorf("ownedPods: own %v vols %v held %v, want %v %v %v", ids, vnames, slices.Sorted(maps.Keys(held)), tc.wantOwn, tc.wantVols, tc.wantHeld)
			}
		})
	}
}

// Deleting the namespace removes a deployment's orphans in it, as the
// namespace controller deletes every pod of it: its record lists none any
// more, so the Deployment controller removes them with the tombstone
// (the frame's orphan keeper lets them go).
func TestNamespaceDeletionRemovesADeploymentsOrphans(t *testing.T) {
	h := newHarness(t, Options{})
	d := testDeployment("web", 2, "one")
	d.Metadata.Namespace = "team"
	h.applyBundle([]string{"team"}, d)
	h.start()
	h.waitIn("team", "web", 2)
	h.stop()
	ref := store.ObjectRef{Kind: store.KindDeployment, Namespace: "team", Name: "web"}
	if _, err := h.store.DeleteObjectsWith([]store.ObjectRef{ref}, store.DeleteOptions{Orphan: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ctrl.syncDeployment(t.Context(), "team/web"); err != nil {
		t.Fatal(err)
	}
	if n := len(h.in("team", "web")); n != 2 {
		t.Fatalf("%d containers after the orphaning delete, want the 2 orphans", n)
	}
	if _, err := h.store.DeleteObjects([]store.ObjectRef{{Kind: store.KindNamespace, Name: "team"}}); err != nil {
		t.Fatal(err)
	}
	// A controller started again (the stopped one's stopper is gone).
	h.restart()
	h.waitFor("team/web's orphans gone", func() bool { return len(h.in("team", "web")) == 0 })
}

// A container an earlier release made before its deployment's record was
// created (a state directory resumed from Docker, §16) is that
// incarnation's: orphaned with it, it is left running by a deployment
// applied again whose selector does not match it, as the
// ControllerRefManager adopts no pod its selector misses.
func TestDeploymentAppliedAgainLeavesEarlierReleasesOrphansItsSelectorMisses(t *testing.T) {
	h := newHarness(t, Options{})
	d := testDeployment("web", 2, "one")
	h.apply(d)
	ids := addMainReplicas(t, h, d, 2)
	h.start()
	h.waitReplicas("web", 2)
	h.stop()
	if _, err := h.store.DeleteObjectsWith([]store.ObjectRef{webRef}, store.DeleteOptions{Orphan: true}); err != nil {
		t.Fatal(err)
	}
	h.apply(selecting(testDeployment("web", 2, "one"), "web-v2"))
	h.restart()
	rec, err := h.store.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	hash := manifests.TemplateHash(&rec.Deployment.Spec.Template)
	// Converged: its 2 pods available, and only they counted.
	h.waitFor("its own 2 pods only", func() bool {
		st, err := h.store.ReadStatus("", "web")
		if err != nil || st.ObservedGeneration != rec.Generation {
			return false
		}
		s, _ := View(rec, st, nil, OwnedContainers(rec, h.ours("web")), h.ctrl.opts.Now())
		return s.Replicas == 2 && s.UpdatedReplicas == 2 && s.AvailableReplicas == 2
	})
	h.stop()
	running := map[string]bool{}
	for _, c := range h.ours("web") {
		running[c.ID] = c.State == dockerx.StateRunning && c.TemplateHash != hash
	}
	for _, id := range ids {
		if !running[id] {
			t.Errorf("orphan %s of an earlier release not left running: %s", id, summary(h.ours("web")))
		}
	}
}
