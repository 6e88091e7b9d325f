package reconciler

import (
	"testing"
)

// A deployment deleted and applied again while its replicas still
// terminate: the revived deployment starts with a fresh status file, and
// the stops in flight were never recorded in it (the deleted deployment's
// status is not kept, and a stop in flight plans no operation to record).
// A controller restarted then took the replicas it had sent their stop
// signal — draining, about to exit — for live replicas of the revived
// deployment, counted them, and removed healthy new ones as surplus.
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
