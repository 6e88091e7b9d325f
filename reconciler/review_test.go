package reconciler

import (
	"testing"
	"time"
)

// Review: a deployment deleted and applied again while its replicas are
// still being stopped gracefully (the stop began for the deletion, outside
// any status, since a deleted deployment's status is not kept). The revived
// deployment's status must record those stops: otherwise `get` shows the
// replicas about to be killed as Running, ready and available (READY 3/2),
// and a restarted controller would take them for live replicas.
func TestRevivedDeploymentRecordsStopsInFlight(t *testing.T) {
	h := newHarness(t, Options{Workers: 1, MaxGracePeriod: 2 * time.Hour})
	rec := ignoreStops(h, never, "web")
	h.apply(withGrace(testDeployment("web", 2, "x"), 3600))
	h.start()
	old := h.waitReplicas("web", 2)
	if err := h.store.Delete("web"); err != nil {
		t.Fatal(err)
	}
	waitLong(t, h, "both replicas asked to stop", func() bool { return len(rec.asked()) == 2 })
	h.apply(withGrace(testDeployment("web", 2, "x"), 3600))
	waitLong(t, h, "the revived deployment's status to record both stops in flight", func() bool {
		return terminating(h, "web", old[0].ID) && terminating(h, "web", old[1].ID)
	})
}
