package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/store"
)

// beats records the heartbeats written, in order.
type beats struct {
	mu  sync.Mutex
	got []store.Heartbeat
	c   chan struct{}
}

func (b *beats) WriteHeartbeat(h store.Heartbeat) error {
	b.mu.Lock()
	b.got = append(b.got, h)
	b.mu.Unlock()
	b.c <- struct{}{}
	return nil
}

func TestKeepHeartbeatBeatsAtEachTickAndMarksTheStop(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := t0
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	w := &beats{c: make(chan struct{}, 8)}
	ticks := make(chan time.Time)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		keepHeartbeat(ctx, w, store.Heartbeat{PID: 1, Started: t0, Interval: 10 * time.Second}, now, ticks, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	<-w.c // the first beat, at once
	advance(10 * time.Second)
	ticks <- t0
	<-w.c
	cancel()
	<-w.c
	<-done
	want := []time.Time{t0, t0.Add(10 * time.Second), t0.Add(10 * time.Second)}
	if len(w.got) != len(want) {
		t.Fatalf("%d beats written, want %d: %+v", len(w.got), len(want), w.got)
	}
	for i, h := range w.got {
		if !h.Beat.Equal(want[i]) {
			t.Errorf("beat %d at %v, want %v", i, h.Beat, want[i])
		}
		if stopped := !h.Stopped.IsZero(); stopped != (i == len(want)-1) {
			t.Errorf("beat %d stopped = %v", i, stopped)
		}
	}
	if msg := w.got[2].Staleness(t0.Add(11 * time.Second)); !strings.Contains(msg, "stopped") {
		t.Errorf("the last beat reads %q, want it stopped", msg)
	}
}

// TestKeepHeartbeatCarriesTheLastPass: every beat carries what the loop
// reports as its last finished pass, read at that beat.
func TestKeepHeartbeatCarriesTheLastPass(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	var pass time.Time // none yet
	lastPass := func() time.Time { mu.Lock(); defer mu.Unlock(); return pass }
	w := &beats{c: make(chan struct{}, 8)}
	ticks := make(chan time.Time)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		keepHeartbeat(ctx, w, store.Heartbeat{PID: 1, Started: t0, Interval: 10 * time.Second, PassEvery: 30 * time.Second},
			func() time.Time { return t0 }, ticks, lastPass, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	<-w.c
	mu.Lock()
	pass = t0.Add(5 * time.Second)
	mu.Unlock()
	ticks <- t0
	<-w.c
	cancel()
	<-w.c
	<-done
	if !w.got[0].LastPass.IsZero() || !w.got[1].LastPass.Equal(t0.Add(5*time.Second)) || w.got[1].PassEvery != 30*time.Second {
		t.Errorf("beats carry passes %v, %v (every %v); want none, then %v every 30s", w.got[0].LastPass, w.got[1].LastPass, w.got[1].PassEvery, t0.Add(5*time.Second))
	}
}

func TestControllerWarning(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	fresh := &store.Heartbeat{Beat: t0, Interval: 10 * time.Second}
	stopped := &store.Heartbeat{Beat: t0, Interval: 10 * time.Second, Stopped: t0.Add(time.Second)}
	for _, tc := range []struct {
		name     string
		hb       *store.Heartbeat
		lockHeld bool
		now      time.Time
		want     string
	}{
		{"fresh heartbeat", fresh, true, t0.Add(5 * time.Second), ""},
		{"never ran", nil, false, t0, `no controller is running for instance "web" (no controller has run for this state directory)`},
		{"a controller of a release before heartbeats holds the lock", nil, true, t0, ""},
		// The controller that marked it stopped let the lock go after:
		// another one holds it now (one of a release before heartbeats, or
		// one that took over and has yet to beat).
		{"the heartbeat says stopped but another controller holds the lock", stopped, true, t0.Add(time.Hour), ""},
		{"the heartbeat says stopped and no one holds the lock", stopped, false, t0.Add(time.Minute), `no controller is running for instance "web" (the controller stopped 59s ago)`},
		{"heartbeat too old although the lock is held", fresh, true, t0.Add(time.Minute), `no controller is running for instance "web" (the controller was last seen 1m0s ago)`},
		// Beating, but its loop finishes no pass: wedged in a Docker call.
		{"fresh beat, the last pass long ago", &store.Heartbeat{Beat: t0, Interval: 10 * time.Second, PassEvery: 30 * time.Second, LastPass: t0.Add(-4 * time.Minute)}, true, t0.Add(time.Second),
			`the controller of instance "web" runs, but its last pass over Docker ended 4m1s ago, and it starts one every 30s (Docker may not be answering)`},
		{"fresh beat, a recent pass", &store.Heartbeat{Beat: t0, Interval: 10 * time.Second, PassEvery: 30 * time.Second, LastPass: t0.Add(-time.Minute)}, true, t0.Add(time.Second), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := controllerWarning("web", tc.hb, tc.lockHeld, tc.now); got != tc.want {
				t.Errorf("controllerWarning = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWarnNoControllerReadsTheStateDirectory(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	warnNoController(&buf, st, "default", noControllerApply, t0)
	if want := "Warning: no controller is running for instance \"default\" (no controller has run for this state directory): " + noControllerApply + "\n"; buf.String() != want {
		t.Errorf("warning\n%q, want\n%q", buf.String(), want)
	}
	if err := st.WriteHeartbeat(store.Heartbeat{Beat: t0, Interval: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	warnNoController(&buf, st, "default", noControllerApply, t0.Add(time.Second))
	if buf.Len() != 0 {
		t.Errorf("warned with a fresh heartbeat: %q", buf.String())
	}
}

// controllerBeating gives state directory dir (of instance) the heartbeat
// of a running controller, fresh for the whole test (it beats daily): for
// the tests of output that a missing controller would add a warning to.
func controllerBeating(t *testing.T, dir, instance string) {
	t.Helper()
	st, err := store.Open(dir, instance)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := st.WriteHeartbeat(store.Heartbeat{Instance: instance, PID: 1, Started: now, Beat: now, Interval: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
}
