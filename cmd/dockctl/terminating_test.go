package main

import (
	"encoding/json"
	"testing"
)

// Item 20: a replica dockctl is stopping gracefully shows as Terminating,
// not ready, in `get containers`, whatever Docker still says of it.
func TestContainerTerminating(t *testing.T) {
	snap, _ := fixture(t)
	c := snap.containers[0] // running and ready in the fixture
	if o := snap.containerObject(c); o.Phase != "Running" || !o.Ready {
		t.Fatalf("before: %s ready=%v, want Running and ready", o.Phase, o.Ready)
	}
	snap.statuses["web"].Extra["controller"] = json.RawMessage(`{"rollout":{},"containers":{"` + c.ID + `":{"stopDeadline":"2026-03-01T10:00:00Z"}}}`)
	snap.views = nil
	if o := snap.containerObject(c); o.Phase != "Terminating" || o.Ready {
		t.Fatalf("while stopping: %s ready=%v, want Terminating and not ready", o.Phase, o.Ready)
	}
}
