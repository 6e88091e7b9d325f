package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/internal/testio"
	"github.com/dockctl/dockctl/store"
)

// eventsFixture is a state directory with events recorded relative to a
// fixed "now" (the store expires events against the real clock, so the
// timestamps are recent ones; the ages printed are fixed).
func eventsFixture(t *testing.T) (dir string, now time.Time) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "state")
	st, err := store.Open(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	now = time.Now().Add(-time.Minute)
	old := eventsNow
	eventsNow = func() time.Time { return now }
	t.Cleanup(func() { eventsNow = old })
	at := func(ago time.Duration) time.Time { return now.Add(-ago) }
	ev := func(kind, ns, name, typ, reason, msg string, first, last time.Duration, count int32) store.Event {
		return store.Event{Type: typ, Reason: reason, Message: msg, Source: "dockctl-controller", Count: count,
			InvolvedObject: store.InvolvedObject{Kind: kind, Namespace: ns, Name: name}, FirstTimestamp: at(first), LastTimestamp: at(last)}
	}
	if err := st.RecordEvents([]store.Event{
		ev("Deployment", "", "web", store.EventNormal, "ScalingReplicaSet", "Scaled up replica set web-5d8f9c7b6a by 2", 10*time.Minute, 10*time.Minute, 1),
		ev("Pod", "", "web-5d8f9c7b6a-0", store.EventNormal, "Created", "Created container web", 9*time.Minute, 9*time.Minute, 1),
		ev("Pod", "", "web-5d8f9c7b6a-0", store.EventNormal, "Started", "Started container web", 9*time.Minute, 9*time.Minute, 1),
		ev("Pod", "", "web-5d8f9c7b6a-0", store.EventWarning, "Unhealthy", "Liveness probe failed: connection refused", 8*time.Minute, 3*time.Minute, 4),
		ev("Deployment", "", "web", store.EventWarning, "FailedCreate", "image nope: not found", 2*time.Minute, 30*time.Second, 2),
		ev("Pod", "team", "api-1a2b3c4d5e-0", store.EventNormal, "Started", "Started container api", 5*time.Minute, 5*time.Minute, 1),
	}); err != nil {
		t.Fatal(err)
	}
	return dir, now
}

func TestEventsCommand(t *testing.T) {
	dir, _ := eventsFixture(t)
	for _, tt := range []struct {
		golden string
		args   []string
	}{
		{"events-table", []string{"events"}},
		{"events-all-namespaces", []string{"events", "-A"}},
		{"events-for-deployment", []string{"events", "--for", "deployment/web"}},
		{"events-warnings", []string{"events", "--types", "Warning"}},
		{"get-events-table", []string{"get", "ev"}},
		{"get-events-sort-by-reason", []string{"get", "events", "--sort-by", ".reason", "-o", "custom-columns=REASON:.reason,COUNT:.count,OBJECT:.involvedObject.name"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			out, errOut, err := run(t, "", append([]string{"--state-dir", dir}, tt.args...)...)
			if err != nil {
				t.Fatalf("%v %s", err, errOut)
			}
			golden(t, tt.golden, []byte(out))
		})
	}
}

func TestEventsJSONIsV1Event(t *testing.T) {
	dir, _ := eventsFixture(t)
	for _, args := range [][]string{{"events", "-o", "json"}, {"get", "events", "-o", "json"}} {
		out, errOut, err := run(t, "", append([]string{"--state-dir", dir}, args...)...)
		if err != nil {
			t.Fatalf("%v %s", err, errOut)
		}
		var list struct {
			APIVersion, Kind string
			Items            []struct {
				APIVersion, Kind string
				Metadata         struct{ Name, Namespace string }
				InvolvedObject   struct{ Kind, Name, Namespace string } `json:"involvedObject"`
				Reason, Type     string
				Count            int32
				Source           struct{ Component string }
				FirstTimestamp   time.Time `json:"firstTimestamp"`
				LastTimestamp    time.Time `json:"lastTimestamp"`
			}
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if list.Kind != "List" || len(list.Items) != 5 {
			t.Fatalf("%v: %s", args, out)
		}
		for _, it := range list.Items {
			if it.APIVersion != "v1" || it.Kind != "Event" || it.Metadata.Namespace != "default" || it.InvolvedObject.Namespace != "default" ||
				!strings.HasPrefix(it.Metadata.Name, it.InvolvedObject.Name+".") || it.Source.Component != "dockctl-controller" || it.Count < 1 ||
				it.LastTimestamp.Before(it.FirstTimestamp) {
				t.Errorf("%v: not a v1.Event as kubectl shows one: %+v", args, it)
			}
		}
	}
}

func TestEventsErrors(t *testing.T) {
	dir, _ := eventsFixture(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"events", "--for", "web"}, "expected KIND/NAME"},
		{[]string{"events", "--for", "bogus/web"}, "expected KIND/NAME"},
		{[]string{"events", "--types", "Info"}, "valid --types are Normal or Warning"},
		{[]string{"events", "-o", "wide"}, "unable to match a printer"},
	} {
		_, _, err := run(t, "", append([]string{"--state-dir", dir}, tt.args...)...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.args, err, tt.want)
		}
	}
	// No event: kubectl's line on stderr, nothing on stdout.
	empty := filepath.Join(t.TempDir(), "state")
	out, errOut, err := run(t, "", "--state-dir", empty, "events")
	if err != nil || out != "" || !strings.Contains(errOut, "No events found in") {
		t.Errorf("empty: %q %q %v", out, errOut, err)
	}
}

func TestDescribeEventsSection(t *testing.T) {
	dir, now := eventsFixture(t)
	st, err := store.OpenReadOnly(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events("", false)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	writeEvents(&b, evs, "Deployment", "web", now)
	writeEvents(&b, evs, "Pod", "web-5d8f9c7b6a-0", now)
	writeEvents(&b, evs, "Service", "web", now)
	golden(t, "describe-events", b.Bytes())
}

// events -w prints the events already there, then each one that is
// added or counted again, from the store's watch.
func TestEventsWatch(t *testing.T) {
	dir, now := eventsFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	cmd := cliCommand(nil, &out, &out, "--state-dir", dir, "events", "-w", "--for", "pod/web-5d8f9c7b6a-0")
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	waitOutput(t, &out, "Liveness probe failed")
	st, err := store.Open(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	// Writes keep coming until the watch, started in another goroutine,
	// has surely seen one: a repeat only moves the count.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "BackOff") {
		if time.Now().After(deadline) {
			t.Fatalf("no BackOff line in:\n%s", out.String())
		}
		if err := st.RecordEvents([]store.Event{{Type: store.EventWarning, Reason: "BackOff", Message: "Back-off restarting failed container web",
			InvolvedObject: store.InvolvedObject{Kind: "Pod", Name: "web-5d8f9c7b6a-0"}, FirstTimestamp: now, LastTimestamp: now}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "LAST SEEN"); n != 1 {
		t.Errorf("%d headers, want 1:\n%s", n, out.String())
	}
}

// syncBuffer collects output written while the test reads it.
type syncBuffer = testio.Buffer

func waitOutput(t *testing.T, b *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(b.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in:\n%s", want, b.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// One namespace's log that cannot be read: events -A and get events -A
// warn about it on stderr and list the others; the namespace alone is an
// error; describe keeps its "<unknown>" section.
func TestEventsUnreadableNamespaceLog(t *testing.T) {
	dir, _ := eventsFixture(t)
	if err := os.WriteFile(filepath.Join(dir, "events", "team.json"), []byte(`{"version":1,"events":[{"ty`), 0o600); err != nil {
		t.Fatal(err)
	}
	const warning = "warning: state file events/team.json: corrupt"
	for _, tt := range []struct {
		args    []string
		wantErr bool
		warn    bool
	}{
		{[]string{"events", "-A"}, false, true},
		{[]string{"get", "events", "-A"}, false, true},
		{[]string{"events", "-A", "-o", "json"}, false, true},
		{[]string{"events"}, false, false},
		{[]string{"events", "-n", "team"}, true, false},
		{[]string{"get", "events", "-n", "team"}, true, false},
	} {
		out, errOut, err := run(t, "", append([]string{"--state-dir", dir}, tt.args...)...)
		if tt.wantErr {
			if err == nil || !strings.Contains(err.Error(), "events/team.json") {
				t.Errorf("%v: error %v, want one naming events/team.json", tt.args, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v %s", tt.args, err, errOut)
			continue
		}
		if !strings.Contains(out, "web-5d8f9c7b6a-0") || strings.Contains(out, "api-1a2b3c4d5e-0") {
			t.Errorf("%v: want default's events only:\n%s", tt.args, out)
		}
		if got := strings.Count(errOut, warning); got != map[bool]int{true: 1, false: 0}[tt.warn] {
			t.Errorf("%v: stderr %q, want the warning %v", tt.args, errOut, tt.warn)
		}
	}
	var b bytes.Buffer
	describeEvents(&b, &globalOptions{stateDir: dir, instance: "default", namespace: "team"}, kindDeployment, "api")
	if !strings.HasPrefix(b.String(), "Events:  <unknown> (state file events/team.json") {
		t.Errorf("describe's events section: %q", b.String())
	}
}
