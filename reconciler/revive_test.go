package reconciler

import (
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// A deployment deleted and applied again with a new template starts clean:
// containers of the deleted version that still exist (the deletion had not
// finished) are removed, and none of them is ever created again — with the
// old history and revision sizes kept, the controller recreated the missing
// replicas of the deleted revision.
func TestRevivedDeploymentDoesNotResurrectDeletedRevision(t *testing.T) {
	h := newHarness(t, Options{})
	h.apply(testDeployment("web", 3, "one"))
	h.start()
	h.waitReplicas("web", 3)
	old := testDeployment("web", 3, "two")
	h.apply(old)
	olds := h.waitReplicas("web", 3)
	h.stop()

	// Deleted while no controller runs, and the deletion half done: one
	// container of the deleted version is gone, two remain.
	if err := h.store.Delete("", "web"); err != nil {
		t.Fatal(err)
	}
	if err := h.engine.Remove(olds[0].ID); err != nil {
		t.Fatal(err)
	}
	next := testDeployment("web", 3, "three")
	h.apply(next)
	nextHash := manifests.TemplateHash(&next.Spec.Template)

	var mu sync.Mutex
	var wrong []string
	h.engine.OnCreate = func(req dockerx.CreateRequest) error {
		if req.TemplateHash != nextHash {
			mu.Lock()
			wrong = append(wrong, req.Name)
			mu.Unlock()
		}
		return nil
	}
	h.ctrl = New(h.engine, h.store, Options{Instance: "i", ResyncPeriod: time.Hour, CrashBackoffBase: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	h.start()
	h.waitReplicas("web", 3) // exactly 3, all of the new template: the old ones are gone
	mu.Lock()
	defer mu.Unlock()
	if len(wrong) > 0 {
		t.Fatalf("containers of the deleted revision created again: %v", wrong)
	}
}

// The store keeps in the history every revision the controller's rollout
// state lists (it has containers), whatever revisionHistoryLimit says; this
// holds the format the store reads (Status.Extra["controller"]) to the one
// writeState writes.
func TestStoreKeepsRevisionsOfRolloutState(t *testing.T) {
	st, err := store.Open(t.TempDir(), "i")
	if err != nil {
		t.Fatal(err)
	}
	zero := int32(0)
	v := func(env string) *manifests.Deployment {
		d := testDeployment("web", 2, env)
		d.Spec.RevisionHistoryLimit = &zero
		return d
	}
	if _, err := st.Apply(store.Deployments([]*manifests.Deployment{v("one")}...), store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	one := manifests.TemplateHash(&v("one").Spec.Template)
	var status store.Status
	if err := writeState(&status, deploymentState{Rollout: RolloutState{Sizes: map[string]int32{one: 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteStatus("", "web", &status); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"two", "three"} {
		if _, err := st.Apply(store.Deployments([]*manifests.Deployment{v(env)}...), store.ApplyOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := st.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	var hashes []string
	for _, r := range rec.Revisions {
		hashes = append(hashes, r.Hash)
	}
	if len(hashes) != 2 || hashes[0] != one {
		b, _ := json.Marshal(hashes)
		t.Fatalf("revisions %s: want revision one (still sized) and the current one", b)
	}
}

// A deployment deleted and applied again while its replicas still
// terminate: the revived deployment starts with a fresh status file, and
// the stops in flight are not in it (the deleted deployment's status is
// not kept, and a stop in flight plans no operation to record). They must
// be recorded, or a controller restarted then takes the replicas it had
// sent their stop signal - draining, about to exit - for live replicas of
// the revived deployment, counts them, and removes healthy new ones as
// surplus.
func TestRevivedDeploymentRecordsStopsInFlight(t *testing.T) {
	h := newHarness(t, Options{})
	rec := ignoreStops(h, never, "web")
	h.apply(withGrace(testDeployment("web", 2, "x"), 3600))
	h.start()
	old := h.waitReplicas("web", 2)
	if err := h.store.Delete("", "web"); err != nil {
		t.Fatal(err)
	}
	waitLong(t, h, "both replicas sent their stop signal", func() bool { return len(rec.asked()) == 2 })
	h.apply(withGrace(testDeployment("web", 2, "x"), 3600))
	waitLong(t, h, "a replacement created for the revived deployment", func() bool { return len(h.ours("web")) == 3 })
	waitLong(t, h, "the revived deployment's stops in flight recorded", func() bool {
		return terminating(h, "web", old[0].ID) && terminating(h, "web", old[1].ID)
	})
}
