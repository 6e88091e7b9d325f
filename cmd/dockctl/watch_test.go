package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
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
	cmd := cliCommand(nil, &out, &errOut, append(base, "get", "deployments", "-o", "wide", "--output-watch-events", "-w")...)
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
	var out, errOut syncBuffer
	if err := cliCommand(nil, &out, &errOut, append(base, "get", "pods", "-w", "--sort-by", ".metadata.name")...).ExecuteContext(ctx); err != nil {
		t.Fatal(err)
	}
	// Nothing found is no message in a watch: kubectl waits silently.
	if out.String() != "" || errOut.String() != "warning: --watch or --watch-only requested, --sort-by will be ignored\n" {
		t.Errorf("output %q, stderr %q", out.String(), errOut.String())
	}
}

// kubectl get -w prints every watch event: an object deleted and created
// again under the same name (a configmap deleted and re-applied, a pod
// recreated by its controller, `delete -f x.yaml && apply -f x.yaml`) is a
// DELETED then an ADDED, each a row, with or without
// --output-watch-events. When both happen between two of dockctl's
// listings (they are 150 ms apart in a burst) and the new object's cells
// read the same, comparing the printed cells by name (AGE blanked out)
// would print nothing: the object's identity (its creation time, or a uid)
// is part of what tells a change.
func TestWatchPrintsAnObjectReplacedBetweenListings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := newPrinter(printFlags{output: "table"})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var mu sync.Mutex
		pods := []fakePod{{"default", "web-a", "Running", 0, start.Add(-5 * time.Minute)}}
		list := func() (*listing, error) {
			mu.Lock()
			defer mu.Unlock()
			return &listing{t: podTable(pods)}, nil
		}
		var out syncBuffer
		changes := make(chan struct{}, 1)
		w := &watchLoop{list: list, changes: changes, debounce: watchDebounce, resync: watchResync,
			out: &out, printer: &watchPrinter{p: p, events: true}, warn: func(err error) { t.Errorf("listing: %v", err) }}
		first, _ := list()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- w.run(ctx, first) }()
		synctest.Wait()
		before := out.String()
		// web-a is deleted and a new web-a created, both reported (the
		// sources' signals fold into one pending change).
		mu.Lock()
		pods = []fakePod{{"default", "web-a", "Running", 0, time.Now()}}
		mu.Unlock()
		changes <- struct{}{}
		time.Sleep(time.Second)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		after := strings.TrimPrefix(out.String(), before)
		if !regexp.MustCompile(`(?m)^DELETED +web-a `).MatchString(after) || !regexp.MustCompile(`(?m)^ADDED +web-a `).MatchString(after) {
			t.Errorf("web-a deleted and created again: printed %q, want a DELETED row and an ADDED row (kubectl's two watch events)", after)
		}
	})
}

// kubectl get -w ends on SIGINT (Ctrl-C) or SIGTERM through its interrupt
// handler, interrupt.New(nil, cancel): with no final function it calls
// os.Exit(1) (k8s.io/kubectl/pkg/util/interrupt), so `kubectl get pods -w`
// interrupted exits 1. A script tells a watch that was cut short from one
// that ended by itself by that status, so dockctl exits 1 too, not 0.
func TestGetWatchInterruptedExitsOne(t *testing.T) {
	api, base, _ := fakeInstance(t)
	runner(t, base)(webYAML, "apply", "-f", "-")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			code, out := exitOnSignal(t, api.host, append(base, "get", "deployments", "-w"), sig,
				func(out *syncBuffer) { waitOutput(t, out, "web") }) // the first listing is printed; the watch runs
			if code != 1 {
				t.Errorf("get -w ended by %v: exit status %d, want kubectl's 1; output:\n%s", sig, code, out)
			}
		})
	}
}

// kubectl get -w on a cluster with nothing in it waits for the first
// object; dockctl's `get` of a state directory nothing was applied to yet
// is an empty listing, not an error (store.OpenReadOnly). get -w of the
// same directory must wait too, and print what is applied later: the
// record watch must not need deployments/, which only the first write
// creates ("error: watching state directory …: no such file or
// directory", exit 1), so that `dockctl get deployments -w` started before
// the first apply (a CI job watching while another step applies) shows
// what is applied.
func TestGetWatchBeforeTheFirstApply(t *testing.T) {
	for _, tc := range []struct {
		what  string
		setup func(t *testing.T, dir string)
	}{
		{"no state directory", func(*testing.T, string) {}},
		{"an empty state directory", func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			api := startFakeDaemon(t)
			dir := filepath.Join(t.TempDir(), "state")
			tc.setup(t, dir)
			base := []string{"--state-dir", dir, "--instance", "t1"}
			defer func(d time.Duration) { watchResync = d }(watchResync)
			watchResync = time.Hour // the change must come from a source
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var out, errOut syncBuffer
			cmd := cliCommand(nil, &out, &errOut, append(base, "get", "deployments", "-w")...)
			done := make(chan error, 1)
			go func() { done <- cmd.ExecuteContext(ctx) }()
			// The watch is set up once it subscribed to Docker's events,
			// which it does after the state directory's watches.
			deadline := time.Now().Add(30 * time.Second)
			for subscribed := false; !subscribed; {
				select {
				case err := <-done:
					t.Fatalf("get -w ended before anything was applied: %v; stderr %q", err, errOut.String())
				default:
				}
				api.mu.Lock()
				subscribed = len(api.subs) > 0
				api.mu.Unlock()
				if time.Now().After(deadline) {
					t.Fatal("get -w did not subscribe to Docker's events")
				}
				time.Sleep(10 * time.Millisecond)
			}
			runner(t, base)(webYAML, "apply", "-f", "-")
			for !regexp.MustCompile(`(?m)^web +0/3 `).MatchString(out.String()) {
				select {
				case err := <-done:
					t.Fatalf("get -w ended: %v; stderr %q", err, errOut.String())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("the deployment applied after get -w started was never printed; output %q, stderr %q", out.String(), errOut.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// A plain `get pods` asks Docker for no container's details (an inspect
// each): the table shows none. `get pods -w` prints the same table, so each
// of its listings — the first, and one per Docker event or resync — must
// not inspect every container of every pod (nor ask the host's name) only
// to read each pod's uid (rowIdentity): with N pods that would be N
// inspects per change, for nothing.
func TestGetPodsWatchInspectsNothing(t *testing.T) {
	api, base, run := waitInstance(t)
	for i := range 3 {
		api.addContainer(fmt.Sprintf("t1_web-abc-%d", i), "t1", "web", map[string]string{"app": "web"})
	}
	calls := countCalls(t, api)
	run("", "get", "pods")
	if n := calls.get("inspect") + calls.get("info"); n != 0 {
		t.Fatalf("get pods: %d inspect/info calls, want none", n)
	}
	calls.reset()
	out, done := startWait(t, base, "get", "pods", "-w")
	waitOutput(t, out, "web-abc-2")
	// A change: the listing it brings is printed (web-abc-1 stops).
	api.start("t1_web-abc-0")
	api.setState(httptest.NewRecorder(), "t1_web-abc-1", "exited", "Exited (1) 1 second ago")
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(out.String(), "web-abc-1") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("get -w printed no change:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("get -w ended: %v\n%s", err, out.String())
	default:
	}
	// The one die event is settled by the event stream with an inspect of
	// that container (dockerx's settle, so that the next list shows it
	// exited): that one is not the listings'.
	const settles = 1
	if n, h := calls.get("inspect"), calls.get("info"); n > settles || h != 0 {
		t.Errorf("get pods -w (a table, as get pods prints): %d container inspects (%d the event stream's) and %d host calls over %d listings, want none",
			n, settles, h, calls.get("list"))
	}
}
