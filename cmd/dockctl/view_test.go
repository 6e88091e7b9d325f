package main

import "testing"

// The replicas of a deleted deployment are being stopped (gracefully,
// over their grace period) to be removed; `get containers` must not show
// them as Running and ready meanwhile.
func TestDeletedDeploymentContainersTerminating(t *testing.T) {
	snap, _ := fixture(t)
	snap.records = nil
	snap.statuses = nil
	snap.tombstones["default/web"] = true
	c := snap.containers[0] // running, no health check
	o := snap.containerObject(c)
	if o.Phase != "Terminating" || o.Ready || o.Orphan {
		t.Fatalf("container of a deleted deployment: %s ready=%v orphan=%v, want Terminating, not ready, not an orphan", o.Phase, o.Ready, o.Orphan)
	}
}
