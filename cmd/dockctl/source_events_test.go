package main

import (
	"testing"

	"github.com/dockctl/dockctl/store"
)

type captureRecorder struct {
	got []store.InvolvedObject
	msg []string
}

func (c *captureRecorder) Event(obj store.InvolvedObject, eventType, reason, message string) {
	c.got = append(c.got, obj)
	c.msg = append(c.msg, eventType+" "+reason+" "+message)
}

// The manifests directories' events land in the controller's event log
// under the object they name, so describe and `events --for` find them.
func TestSourceEventsForwardsToRecorder(t *testing.T) {
	rec := &captureRecorder{}
	sourceEvents{rec}.Event("Deployment", "shop", "web", "Normal", "Created", "deployment.apps/web applied from /srv/m")
	sourceEvents{rec}.Event("ManifestsSource", "", "/srv/m", "Warning", "InvalidManifest", "bad.yaml: line 3")
	want := []store.InvolvedObject{
		{Kind: "Deployment", Namespace: "shop", Name: "web"},
		{Kind: "ManifestsSource", Name: "/srv/m"},
	}
	if len(rec.got) != len(want) {
		t.Fatalf("got %d events, want %d", len(rec.got), len(want))
	}
	for i := range want {
		if rec.got[i] != want[i] {
			t.Errorf("event %d: object %+v, want %+v", i, rec.got[i], want[i])
		}
	}
	if rec.msg[1] != "Warning InvalidManifest bad.yaml: line 3" {
		t.Errorf("message = %q", rec.msg[1])
	}
}
