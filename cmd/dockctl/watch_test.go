package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// lockedBuffer is a buffer the watch and the test write in turn.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// fakePod is one object of the fake kind the loop tests watch.
type fakePod struct {
	ns, name, status string
	restarts         int
	created          time.Time
}

// podTable lays fake pods out as a kind's getter does: the cells of get
// pods and a Kubernetes-shaped object.
func podTable(pods []fakePod) *table {
	t := &table{kind: "pod", columns: []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}, wide: []string{"NODE"}}
	for _, p := range pods {
		ready := "0/1"
		if p.status == "Running" {
			ready = "1/1"
		}
		obj := map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": p.name, "namespace": p.ns, "creationTimestamp": p.created.UTC().Format(time.RFC3339)},
			"status":   map[string]any{"phase": p.status, "restarts": p.restarts}}
		t.rows = append(t.rows, row{namespace: p.ns, name: p.name, labels: map[string]string{"app": "web"},
			cells:  []string{p.name, ready, p.status, fmt.Sprint(p.restarts), age(time.Since(p.created))},
			wide:   []string{"host"},
			object: func() (any, error) { return obj, nil }})
	}
	return t
}

// The watch loop, driven by fake changes on a fake clock (synctest's),
// prints what kubectl's get -w prints: the stream of each format is a
// golden file. One script for every format: each step changes the fake
// kind, signals a change or not, and lets time pass; a "# …" line in the
// golden file marks where each step began.
func TestWatchStream(t *testing.T) {
	type step struct {
		what   string
		change func(pods []fakePod, now time.Time) []fakePod // nil: no change to the kind
		signal bool                                          // a source reports a change
		fail   error                                         // the listing fails (Docker down)
		wait   time.Duration
	}
	set := func(name, status string, restarts int) func([]fakePod, time.Time) []fakePod {
		return func(pods []fakePod, _ time.Time) []fakePod {
			for i := range pods {
				if pods[i].name == name {
					pods[i].status, pods[i].restarts = status, restarts
				}
			}
			return pods
		}
	}
	const (
		burst   = "a burst: web-c added, then web-a restarts, in one listing"
		burstOn = "(the burst goes on)"
		nothing = "a signal, nothing changed"
		idle    = "three minutes pass: only the ages move (resyncs)"
	)
	// The listings some steps make: one per burst, after the quiet time,
	// and one per resync period without a change.
	wantLists := map[string]int{burst: 0, burstOn: 1, nothing: 1, idle: 6}
	script := []step{
		{what: "web-b runs", change: set("web-b", "Running", 0), signal: true, wait: time.Second},
		{what: burst, change: func(pods []fakePod, now time.Time) []fakePod {
			return append(set("web-a", "Running", 1)(pods, now), fakePod{"default", "web-c", "Pending", 0, now})
		}, signal: true, wait: 50 * time.Millisecond},
		{what: burstOn, signal: true, wait: time.Second},
		{what: nothing, signal: true, wait: time.Second},
		{what: idle, wait: 3 * time.Minute},
		{what: "the listing fails twice (Docker down), then works again", fail: errors.New("Cannot connect to the Docker daemon"), signal: true, wait: 31 * time.Second},
		{what: "web-a deleted", change: func(pods []fakePod, _ time.Time) []fakePod { return pods[1:] }, signal: true, wait: time.Second},
		{what: "web-c runs, no source says so: the resync sees it", change: set("web-c", "Running", 0), wait: 31 * time.Second},
		{what: "web-a back", change: func(pods []fakePod, now time.Time) []fakePod {
			return append([]fakePod{{"default", "web-a", "Pending", 0, now}}, pods...)
		}, signal: true, wait: time.Second},
	}
	for _, tt := range []struct {
		golden    string
		output    string
		events    bool
		watchOnly bool
		allNS     bool
		name      string
		labels    bool
	}{
		{golden: "table", output: "table"},
		{golden: "wide-show-labels-all-namespaces", output: "wide", labels: true, allNS: true},
		{golden: "watch-only", output: "table", watchOnly: true},
		{golden: "events", output: "table", events: true},
		{golden: "events-watch-only-all-namespaces", output: "table", events: true, watchOnly: true, allNS: true},
		{golden: "single-name", output: "table", name: "web-a"},
		{golden: "name", output: "name"},
		{golden: "name-events", output: "name", events: true},
		{golden: "json", output: "json"},
		{golden: "json-events", output: "json", events: true},
		{golden: "yaml", output: "yaml"},
		{golden: "yaml-events", output: "yaml", events: true},
		{golden: "jsonpath-events", output: `jsonpath={.type} {.object.metadata.name} {.object.status.phase}{"\n"}`, events: true},
		{golden: "custom-columns", output: "custom-columns=NAME:.metadata.name,PHASE:.status.phase"},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, err := newPrinter(printFlags{output: tt.output, showLabels: tt.labels})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				pods := []fakePod{
					{"default", "web-a", "Running", 0, start.Add(-5 * time.Minute)},
					{"default", "web-b", "Pending", 0, start.Add(-5 * time.Second)},
				}
				var out lockedBuffer
				var fail error
				lists := 0
				list := func() (*listing, error) {
					lists++
					if fail != nil {
						return nil, fail
					}
					return &listing{t: podTable(pods), allNamespaces: tt.allNS}, nil
				}
				changes := make(chan struct{}, 1)
				warned := map[string]bool{}
				w := &watchLoop{list: list, name: tt.name, changes: changes, debounce: watchDebounce, resync: watchResync,
					out: &out, printer: &watchPrinter{p: p, events: tt.events}, watchOnly: tt.watchOnly,
					warn: func(err error) {
						if !warned[err.Error()] {
							fmt.Fprintf(&out, "stderr: warning: %v\n", err)
						}
						warned[err.Error()] = true
					}}
				first, _ := list()
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error)
				go func() { done <- w.run(ctx, first) }()
				synctest.Wait()
				for _, st := range script {
					fmt.Fprintf(&out, "# %s\n", st.what)
					before := lists
					if st.change != nil {
						pods = st.change(pods, time.Now())
					}
					fail = st.fail
					if st.signal {
						changes <- struct{}{}
					}
					if fail != nil {
						// A second failure says nothing more; the recovery
						// reprints nothing.
						time.Sleep(time.Second)
						changes <- struct{}{}
						time.Sleep(time.Second)
						synctest.Wait()
						fail = nil
					}
					time.Sleep(st.wait)
					synctest.Wait()
					if want, ok := wantLists[st.what]; ok && lists-before != want {
						t.Errorf("%s: %d listings, want %d", st.what, lists-before, want)
					}
				}
				cancel()
				if err := <-done; err != nil {
					t.Errorf("watch ended with %v, want nil on cancel", err)
				}
				golden(t, "get-watch-"+tt.golden, []byte(out.String()))
			})
		})
	}
}

// An idle watch lists nothing but its resync: no polling.
func TestWatchIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lists := 0
		p, _ := newPrinter(printFlags{output: "table"})
		w := &watchLoop{list: func() (*listing, error) { lists++; return &listing{}, nil }, changes: make(chan struct{}),
			debounce: watchDebounce, resync: watchResync, out: io.Discard, printer: &watchPrinter{p: p}, warn: func(error) {}}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- w.run(ctx, &listing{}) }()
		time.Sleep(10*time.Minute + time.Second)
		synctest.Wait()
		cancel()
		<-done
		if lists != 20 {
			t.Errorf("an idle watch listed %d times in 10 minutes, want 20 (one per resync)", lists)
		}
	})
}

// The first listing of a watch prints what get prints, for every kind:
// the rows of the table (and its header), names, custom columns.
func TestWatchFirstListingIsGets(t *testing.T) {
	for kind, render := range kindRenderers {
		for _, f := range []printFlags{
			{output: "table"}, {output: "wide"}, {output: "table", showLabels: true, labelColumns: []string{"app"}},
			{output: "name"}, {output: "custom-columns=NAME:.metadata.name,KIND:.kind"},
		} {
			t.Run(kind+" "+f.output, func(t *testing.T) {
				p, err := newPrinter(f)
				if err != nil {
					t.Fatal(err)
				}
				var want bytes.Buffer
				if err := render(t, &want, p, false); err != nil {
					t.Fatal(err)
				}
				var l *listing
				capture := *p
				capture.capture = func(t *table, all bool) { l = &listing{t: t, allNamespaces: all} }
				if err := render(t, io.Discard, &capture, false); err != nil {
					t.Fatal(err)
				}
				var got bytes.Buffer
				w := &watchLoop{out: &got, printer: &watchPrinter{p: p}}
				changes, err := w.diff(l)
				if err != nil {
					t.Fatal(err)
				}
				if err := w.print(changes); err != nil {
					t.Fatal(err)
				}
				if got.String() != want.String() {
					t.Errorf("watch's first listing:\n%s\nget's:\n%s", got.String(), want.String())
				}
			})
		}
	}
}

// Later rows line up with the rows above, and a wider cell widens its
// column from then on, as kubectl's watch output does.
func TestAlignedWriterRemembersWidths(t *testing.T) {
	var a alignedWriter
	var out strings.Builder
	for _, lines := range [][][]string{
		{{"NAME", "READY", "AGE"}, {"web-a", "1/1", "5s"}},
		{{"w", "0/1", "1s"}},
		{{"web-with-a-long-name", "1/1", "2s"}},
		{{"web-a", "1/1", "9s"}},
	} {
		if err := a.write(&out, lines); err != nil {
			t.Fatal(err)
		}
	}
	want := "NAME    READY   AGE\n" +
		"web-a   1/1     5s\n" +
		"w       0/1     1s\n" +
		"web-with-a-long-name   1/1     2s\n" +
		"web-a                  1/1     9s\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
