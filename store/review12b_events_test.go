package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// One corrupt event log (events/default.json cut short by a full disk,
// or edited by hand) must not stop the events of every other namespace.
// The controller flushes one batch for all namespaces; RecordEvents
// refuses the whole batch when any one namespace's file does not decode,
// so from then on no event of any namespace is ever recorded (the
// recorder drops each failed batch), and `dockctl events -A` fails
// outright. The file is never repaired, so this lasts until someone
// finds and deletes it by hand.
func TestReview12bCorruptEventLogStopsOtherNamespaces(t *testing.T) {
	s := openTemp(t)
	if err := os.MkdirAll(filepath.Join(s.Dir(), eventsDir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir(), eventsPath("")), []byte(`{"version":1,"events":[{"type":"Normal","rea`), 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	// What the controller's recorder flushes: one batch, two namespaces.
	err := s.RecordEvents([]Event{
		ev("Deployment", "", "web", EventNormal, "ScalingReplicaSet", "Scaled up replica set web-abc to 1 from 0", at),
		ev("Deployment", "shop", "cart", EventWarning, "ProgressDeadlineExceeded", "deployment \"cart\" exceeded its progress deadline", at),
	})
	t.Logf("RecordEvents: %v", err)
	got, err := s.Events("shop", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Errorf("namespace shop has %d events, want its 1: a corrupt events/default.json lost it", len(got))
	}
	if _, err := s.Events("", true); err != nil {
		t.Errorf("events -A fails because of one namespace's log: %v", err)
	}
}
