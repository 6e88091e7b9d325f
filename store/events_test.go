package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func fakeEventClock(t *testing.T, now *time.Time) {
	t.Helper()
	old := eventsNow
	eventsNow = func() time.Time { return *now }
	t.Cleanup(func() { eventsNow = old })
}

func ev(kind, ns, name, typ, reason, msg string, at time.Time) Event {
	return Event{Type: typ, Reason: reason, Message: msg, Source: "dockctl-controller",
		InvolvedObject: InvolvedObject{Kind: kind, Namespace: ns, Name: name}, FirstTimestamp: at, LastTimestamp: at}
}

func TestEventsAggregation(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := t0
	fakeEventClock(t, &now)
	tests := []struct {
		name string
		in   []Event
		want []string // reason|message|count
	}{
		{"a repeat is counted", []Event{
			ev("Pod", "", "web-1", EventNormal, "Started", "Started container app", t0),
			ev("Pod", "", "web-1", EventNormal, "Started", "Started container app", t0.Add(time.Minute)),
		}, []string{"Started|Started container app|2"}},
		{"another object is another row", []Event{
			ev("Pod", "", "web-1", EventNormal, "Started", "Started container app", t0),
			ev("Pod", "", "web-2", EventNormal, "Started", "Started container app", t0),
		}, []string{"Started|Started container app|1", "Started|Started container app|1"}},
		{"another type is another row", []Event{
			ev("Pod", "", "web-1", EventNormal, "X", "m", t0),
			ev("Pod", "", "web-1", EventWarning, "X", "m", t0),
		}, []string{"X|m|1", "X|m|1"}},
		{"the tenth distinct message is combined, and so are later ones", func() []Event {
			var out []Event
			for i := range 12 {
				out = append(out, ev("Pod", "", "web-1", EventWarning, "Unhealthy", fmt.Sprintf("probe %d", i), t0.Add(time.Duration(i)*time.Second)))
			}
			return out
		}(), append(func() []string {
			var w []string
			for i := range 9 {
				w = append(w, fmt.Sprintf("Unhealthy|probe %d|1", i))
			}
			return w
		}(), "Unhealthy|(combined from similar events): probe 11|3")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			// One at a time and all at once give the same log.
			for _, e := range tt.in {
				if err := s.RecordEvents([]Event{e}); err != nil {
					t.Fatal(err)
				}
			}
			s2 := openTemp(t)
			if err := s2.RecordEvents(tt.in); err != nil {
				t.Fatal(err)
			}
			for _, st := range []*Store{s, s2} {
				got, err := st.Events("", false)
				if err != nil {
					t.Fatal(err)
				}
				var rows []string
				for _, e := range got {
					rows = append(rows, fmt.Sprintf("%s|%s|%d", e.Reason, e.Message, e.Count))
					if e.Name == "" || !strings.HasPrefix(e.Name, e.InvolvedObject.Name+".") {
						t.Errorf("event name %q", e.Name)
					}
				}
				if strings.Join(rows, "\n") != strings.Join(tt.want, "\n") {
					t.Errorf("got\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(tt.want, "\n"))
				}
			}
		})
	}
}

func TestEventsCountAndTimestamps(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := t0
	fakeEventClock(t, &now)
	s := openTemp(t)
	for i := range 4 {
		if err := s.RecordEvents([]Event{ev("Deployment", "", "web", EventNormal, "ScalingReplicaSet", "Scaled up", t0.Add(time.Duration(i)*time.Minute))}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Events("default", false)
	if err != nil || len(got) != 1 {
		t.Fatalf("events %v, %v", got, err)
	}
	if e := got[0]; e.Count != 4 || !e.FirstTimestamp.Equal(t0) || !e.LastTimestamp.Equal(t0.Add(3*time.Minute)) {
		t.Errorf("got count %d first %v last %v", e.Count, e.FirstTimestamp, e.LastTimestamp)
	}
}

func TestEventsBoundAndTTL(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := t0
	fakeEventClock(t, &now)
	s := openTemp(t)
	var evs []Event
	for i := range MaxEventsPerNamespace + 50 {
		// Distinct objects, so that no aggregation applies.
		evs = append(evs, ev("Pod", "", fmt.Sprintf("p%d", i), EventNormal, "Started", "m", t0.Add(time.Duration(i)*time.Millisecond)))
	}
	if err := s.RecordEvents(evs); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Events("", false)
	if len(got) != MaxEventsPerNamespace || got[0].InvolvedObject.Name != "p50" {
		t.Fatalf("kept %d events, oldest %s; want %d from p50", len(got), got[0].InvolvedObject.Name, MaxEventsPerNamespace)
	}
	// Another namespace has its own bound.
	if err := s.RecordEvents([]Event{ev("Pod", "other", "x", EventWarning, "BackOff", "m", t0)}); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.Events("", true); len(all) != MaxEventsPerNamespace+1 {
		t.Errorf("-A: %d events, want %d", len(all), MaxEventsPerNamespace+1)
	}
	// Expired events are hidden on read, without a write, and dropped by the
	// next write.
	now = t0.Add(EventTTL + 2*time.Second)
	fi, _ := os.Stat(filepath.Join(s.Dir(), eventsPath("")))
	if got, _ := s.Events("", false); len(got) != 0 {
		t.Errorf("%d events after the TTL, want none", len(got))
	}
	if fi2, _ := os.Stat(filepath.Join(s.Dir(), eventsPath(""))); !fi2.ModTime().Equal(fi.ModTime()) {
		t.Error("reading rewrote the log")
	}
	if err := s.RecordEvents([]Event{ev("Pod", "", "new", EventNormal, "Started", "m", now)}); err != nil {
		t.Fatal(err)
	}
	raw, _ := s.readEvents("")
	if len(raw) != 1 {
		t.Errorf("the file keeps %d events after a write past the TTL, want 1", len(raw))
	}
}

func TestEventsNoWriteWhenNothingChanged(t *testing.T) {
	s := openTemp(t)
	if err := s.RecordEvents(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), eventsDir)); !os.IsNotExist(err) {
		t.Errorf("no event made the events directory: %v", err)
	}
}

func TestEventsMessageBoundedAndValidated(t *testing.T) {
	s := openTemp(t)
	long := strings.Repeat("é", MaxEventMessage)
	if err := s.RecordEvents([]Event{ev("Pod", "", "p", EventWarning, "Failed", long, time.Now())}); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Events("", false)
	if len(got) != 1 || len(got[0].Message) > MaxEventMessage || !strings.HasPrefix(long, got[0].Message) {
		t.Errorf("message of %d bytes kept, want at most %d and a prefix", len(got[0].Message), MaxEventMessage)
	}
	for _, bad := range []Event{ev("Pod", "", "p", "Info", "X", "m", time.Now()), ev("Pod", "../x", "p", EventNormal, "X", "m", time.Now())} {
		if err := s.RecordEvents([]Event{bad}); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	ro, err := OpenReadOnly(s.Dir(), s.Instance())
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.RecordEvents([]Event{ev("Pod", "", "p", EventNormal, "X", "m", time.Now())}); err != ErrReadOnly {
		t.Errorf("read-only store: %v", err)
	}
}

// Concurrent writers, in one process and across Store values (the flock),
// lose no count, and every file read is whole.
func TestEventsConcurrentWriters(t *testing.T) {
	s := openTemp(t)
	other, err := Open(s.Dir(), s.Instance())
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	var wg sync.WaitGroup
	const n = 20
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := s
			if i%2 == 1 {
				st = other
			}
			if err := st.RecordEvents([]Event{ev("Deployment", "", "web", EventNormal, "ScalingReplicaSet", "m", at)}); err != nil {
				t.Error(err)
			}
			if _, err := st.Events("", false); err != nil {
				t.Error(err) // a torn file would fail to decode
			}
		}()
	}
	wg.Wait()
	got, _ := s.Events("", false)
	if len(got) != 1 || got[0].Count != n {
		t.Errorf("got %+v, want one event counted %d times", got, n)
	}
	entries, _ := os.ReadDir(filepath.Join(s.Dir(), eventsDir))
	for _, e := range entries {
		if isTempName(e.Name()) {
			t.Errorf("temporary file %s left", e.Name())
		}
	}
}

func TestWatchEvents(t *testing.T) {
	s := openTemp(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := s.WatchEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordEvents([]Event{ev("Pod", "", "p", EventNormal, "Started", "m", time.Now())}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second)
	for got := false; !got; {
		select {
		case ns := <-ch:
			got = ns == "default" || ns == ""
		case <-deadline:
			t.Fatal("no change reported")
		}
	}
	cancel()
	for range ch {
	}
}

// A log that does not decode is moved aside and a new one started, once;
// a log of a newer format is never overwritten; either way the other
// namespaces' events are recorded, and listed by Events with all.
func TestEventsUnreadableLog(t *testing.T) {
	tests := []struct {
		name, content string
		newer         bool // refused and kept, not moved aside
	}{
		{"cut short", `{"version":1,"events":[{"type":"Normal","rea`, false},
		{"not JSON", "{not json", false},
		{"no version", `{"events":[]}`, false},
		{"empty", "", false},
		{"newer format", `{"version":99,"events":[]}`, true},
		{"newer format cut short", `{"version":2,"events":[{"ty`, true},
		{"newer format of another shape", `{"version":2,"events":{"by":"object"}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			dir := filepath.Join(s.Dir(), eventsDir)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			logPath := filepath.Join(s.Dir(), eventsPath(""))
			// An earlier copy moved aside: at most one is kept.
			if err := os.WriteFile(logPath+corruptMarker+"20260101T000000Z", []byte("older"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(logPath, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Events("", false); err == nil || !strings.Contains(err.Error(), "events/default.json") {
				t.Errorf("reading it: %v, want an error naming events/default.json", err)
			}
			evs, err := s.Events("", true)
			var skipped *SkippedLogsError
			if !errors.As(err, &skipped) || len(skipped.Errs) != 1 || len(evs) != 0 {
				t.Errorf("Events -A: %v %v, want the log skipped", evs, err)
			}

			at := time.Now()
			err = s.RecordEvents([]Event{
				ev("Deployment", "", "web", EventNormal, "ScalingReplicaSet", "Scaled up", at),
				ev("Deployment", "shop", "cart", EventWarning, "BackOff", "m", at),
			})
			if err == nil || !strings.Contains(err.Error(), "events/default.json") {
				t.Errorf("RecordEvents: %v, want an error naming events/default.json", err)
			}
			if got, _ := s.Events("shop", false); len(got) != 1 {
				t.Errorf("namespace shop has %d events, want 1", len(got))
			}
			aside, _ := filepath.Glob(logPath + corruptMarker + "*")
			got, readErr := s.Events("", false)
			if tt.newer {
				if b, _ := os.ReadFile(logPath); string(b) != tt.content {
					t.Errorf("a newer format's log rewritten as %q", b)
				}
				if len(aside) != 1 || !strings.HasSuffix(aside[0], "20260101T000000Z") {
					t.Errorf("a newer format's log moved aside: %v", aside)
				}
				if readErr == nil || errors.Is(readErr, ErrCorrupt) || !strings.Contains(readErr.Error(), "newer dockctl") {
					t.Errorf("reading a newer format's log: %v", readErr)
				}
				all, err := s.Events("", true)
				if !errors.As(err, &skipped) || len(all) != 1 || all[0].InvolvedObject.Namespace != "shop" {
					t.Errorf("Events -A: %v %v, want shop's event and the newer log skipped", all, err)
				}
				return
			}
			if !strings.Contains(err.Error(), "moved aside to events/default.json.corrupt-") {
				t.Errorf("RecordEvents: %v, want where the log went", err)
			}
			if len(aside) != 1 {
				t.Fatalf("moved aside: %v, want one copy", aside)
			}
			if b, _ := os.ReadFile(aside[0]); string(b) != tt.content {
				t.Errorf("the copy moved aside holds %q, want the log's %q", b, tt.content)
			}
			if readErr != nil || len(got) != 1 || got[0].Reason != "ScalingReplicaSet" {
				t.Errorf("the new log: %v %v, want the event recorded", got, readErr)
			}
			// Reported once: the next batch goes into the new log.
			if err := s.RecordEvents([]Event{ev("Deployment", "", "web", EventNormal, "ScalingReplicaSet", "Scaled up", at)}); err != nil {
				t.Errorf("the next batch: %v", err)
			}
			if all, err := s.Events("", true); err != nil || len(all) != 2 {
				t.Errorf("Events -A: %v %v, want both namespaces' events", all, err)
			}
		})
	}
}

// A namespace whose log cannot be read at all (here a directory in its
// place) loses its events, not the others'.
func TestRecordEventsOneNamespaceFailing(t *testing.T) {
	s := openTemp(t)
	if err := os.MkdirAll(filepath.Join(s.Dir(), eventsPath("shop")), 0o700); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	err := s.RecordEvents([]Event{
		ev("Deployment", "shop", "cart", EventWarning, "BackOff", "m", at),
		ev("Deployment", "", "web", EventNormal, "ScalingReplicaSet", "Scaled up", at),
		ev("Deployment", "", "web", "Info", "X", "an invalid event", at),
	})
	if err == nil || !strings.Contains(err.Error(), "events/shop.json") || !strings.Contains(err.Error(), `type "Info"`) {
		t.Errorf("RecordEvents: %v, want shop's log and the invalid event named", err)
	}
	if got, err := s.Events("", false); err != nil || len(got) != 1 {
		t.Errorf("default: %v %v, want its one valid event", got, err)
	}
	if fi, err := os.Stat(filepath.Join(s.Dir(), eventsPath("shop"))); err != nil || !fi.IsDir() {
		t.Errorf("shop's unreadable log was replaced: %v", err)
	}
}

// One corrupt event log (events/default.json cut short by a full disk,
// or edited by hand) must not stop the events of every other namespace,
// as in Kubernetes, where events are objects of their own namespace. The
// controller flushes one batch for all namespaces: were RecordEvents to
// refuse the whole batch when any one namespace's file does not decode,
// no event of any namespace would ever be recorded again (the recorder
// drops each failed batch) and `dockctl events -A` would fail outright,
// until someone found and deleted the file by hand.
func TestCorruptEventLogDoesNotStopOtherNamespaces(t *testing.T) {
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
