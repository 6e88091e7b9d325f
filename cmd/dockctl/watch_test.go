package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dockctl/dockctl/store"
)

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
		t.rows = append(t.rows, row{namespace: p.ns, name: p.name, labels: map[string]string{"app": "web"}, id: createdID(p.created),
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
				var out syncBuffer
				// The kind's state, which the test changes while the
				// watch lists it.
				var mu sync.Mutex
				var fail error
				lists := 0
				list := func() (*listing, error) {
					mu.Lock()
					defer mu.Unlock()
					lists++
					if fail != nil {
						return nil, fail
					}
					return &listing{t: podTable(pods), allNamespaces: tt.allNS}, nil
				}
				update := func(f func()) {
					mu.Lock()
					defer mu.Unlock()
					f()
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
					var before int
					update(func() {
						before = lists
						if st.change != nil {
							pods = st.change(pods, time.Now())
						}
						fail = st.fail
					})
					if st.signal {
						changes <- struct{}{}
					}
					if st.fail != nil {
						// A second failure says nothing more; the recovery
						// reprints nothing.
						time.Sleep(time.Second)
						changes <- struct{}{}
						time.Sleep(time.Second)
						synctest.Wait()
						update(func() { fail = nil })
					}
					time.Sleep(st.wait)
					synctest.Wait()
					update(func() {
						if want, ok := wantLists[st.what]; ok && lists-before != want {
							t.Errorf("%s: %d listings, want %d", st.what, lists-before, want)
						}
					})
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
			{output: "wide", noHeaders: true}, {output: "custom-columns=NAME:.metadata.name", noHeaders: true},
		} {
			t.Run(fmt.Sprintf("%s %s no-headers=%v", kind, f.output, f.noHeaders), func(t *testing.T) {
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

// get -w through the command line, the fake Docker daemon and a state
// directory: each source of change shows up as kubectl shows a watch
// event — a container Docker reports (its events), a record (scale), the
// controller's status, a deletion — and cancelling it ends it cleanly.
func TestGetWatchCLI(t *testing.T) {
	api, base, st := fakeInstance(t)
	run := runner(t, base)
	run(webYAML, "apply", "-f", "-")
	// No resync during the test: each change must come from its source.
	defer func(d time.Duration) { watchResync = d }(watchResync)
	watchResync = time.Hour
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errOut syncBuffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append(base, "get", "deployments", "-o", "wide", "--output-watch-events", "-w"))
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	// waitLine waits (generously: the machine is shared) for a line of the
	// stream matching re, after the lines seen so far.
	seen := 0
	waitLine := func(what, re string) {
		t.Helper()
		rx := regexp.MustCompile(re)
		deadline := time.Now().Add(30 * time.Second)
		for {
			lines := strings.Split(out.String(), "\n")
			for i := seen; i < len(lines)-1; i++ {
				if rx.MatchString(lines[i]) {
					seen = i + 1
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no line matching %s after line %d; output:\n%s\nstderr:\n%s", what, re, seen, out.String(), errOut.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitLine("header", `^EVENT +NAME +READY +UP-TO-DATE +AVAILABLE +AGE +IMAGE +TEMPLATE-HASH +GENERATION +OBSERVED$`)
	waitLine("the first listing", `^ADDED +web +0/3 +0 +0 +\S+ +dockctl-workload:dev +\S+ +1 +<unknown>$`)
	api.addContainer("t1.web-abc-0", "t1", "web", nil)
	waitLine("a container Docker reports", `^MODIFIED +web +1/3 +0 +1 `)
	run("", "scale", "deployment", "web", "--replicas", "5")
	waitLine("a record changed", `^MODIFIED +web +1/5 +0 +1 .* 2 +<unknown>$`)
	if err := st.WriteStatus("", "web", &store.Status{ObservedGeneration: 2}); err != nil {
		t.Fatal(err)
	}
	waitLine("the controller's status", `^MODIFIED +web +1/5 +0 +1 .* 2 +2 \(stale\?\)$`)
	run("", "delete", "deployment", "web")
	waitLine("a deletion", `^DELETED +web +1/5 `)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("get -w ended with %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("get -w did not end when cancelled")
	}
	if rest := strings.Split(out.String(), "\n")[seen:]; len(rest) > 1 || rest[0] != "" {
		t.Errorf("lines after the deletion: %q", rest)
	}
	if errOut.String() != "" {
		t.Errorf("stderr: %q", errOut.String())
	}
}

// The watch flags' mistakes, and what kubectl warns about.
func TestGetWatchFlags(t *testing.T) {
	_, base, _ := fakeInstance(t)
	runCases(t, base, []cliCase{
		{args: []string{"get", "pods", "--output-watch-events"}, wantErr: "--output-watch-events option can only be used with --watch or --watch-only"},
		{args: []string{"get", "deployment", "nope", "-w"}, wantErr: `deployments.apps "nope" not found`},
		{args: []string{"get", "pods", "-l", "app=web", "-w", "-o", "bogus"}, wantErr: `unable to match a printer suitable for the output format "bogus"`},
		{args: []string{"get", "deployments", "web", "api", "-w"}, wantErr: `watch is only supported on individual resources and resource collections, but 2 resources were found`},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	cmd := newRootCommand()
	var out, errOut syncBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append(base, "get", "pods", "-w", "--sort-by", ".metadata.name"))
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatal(err)
	}
	// Nothing found is no message in a watch: kubectl waits silently.
	if out.String() != "" || errOut.String() != "warning: --watch or --watch-only requested, --sort-by will be ignored\n" {
		t.Errorf("output %q, stderr %q", out.String(), errOut.String())
	}
}
