package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// outcome is one scripted answer of a Reconcile.
type outcome struct {
	res   Result
	err   error
	panic bool
}

// scripted is a Reconciler answering from a per-key script, call by call
// (past its end: success). It records every call, in order, and runs
// onCall (if set) at the start of each.
type scripted struct {
	mu     sync.Mutex
	script map[string][]outcome
	calls  []string
	at     []time.Time
	onCall func(req Request)
}

func (s *scripted) Reconcile(_ context.Context, req Request) (Result, error) {
	s.mu.Lock()
	n := 0
	for _, k := range s.calls {
		if k == req.Key {
			n++
		}
	}
	s.calls = append(s.calls, req.Key)
	s.at = append(s.at, time.Now())
	var o outcome
	if steps := s.script[req.Key]; n < len(steps) {
		o = steps[n]
	}
	onCall := s.onCall
	s.mu.Unlock()
	if onCall != nil {
		onCall(req)
	}
	if o.panic {
		panic("injected for " + req.Key)
	}
	return o.res, o.err
}

func (s *scripted) called() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// recordingLimiter retries at once and counts what the loop asks of it, so
// that a retry's place in the queue is deterministic.
type recordingLimiter struct {
	mu           sync.Mutex
	when, forget map[string]int
}

func newRecordingLimiter() *recordingLimiter {
	return &recordingLimiter{when: map[string]int{}, forget: map[string]int{}}
}

func (r *recordingLimiter) When(req Request) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.when[req.Key]++
	return 0
}

func (r *recordingLimiter) Forget(req Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forget[req.Key]++
}

func (r *recordingLimiter) NumRequeues(req Request) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.when[req.Key]
}

func (r *recordingLimiter) counts(key string) (when, forget int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.when[key], r.forget[key]
}

// syncOutcome is what the loop's Done hook was told about one sync.
type syncOutcome struct {
	key string
	err error
}

type doneRecorder struct {
	mu  sync.Mutex
	got []syncOutcome
}

func (d *doneRecorder) done(req Request, _ time.Duration, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, syncOutcome{req.Key, err})
}

func (d *doneRecorder) of(key string) []error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, o := range d.got {
		if o.key == key {
			errs = append(errs, o.err)
		}
	}
	return errs
}

// quietLog drops the loop's logs: the tests read its outcomes, not its lines.
func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// waitClosed waits (generously) for ch to be closed.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// What the loop does with each kind of answer. One worker syncs a, then b,
// which queues c: a key retried at once (the limiter's delay is zero) is
// queued again before b's sync ends, so it runs between b and c; a key not
// retried never runs again.
func TestLoopOutcomes(t *testing.T) {
	failed := errors.New("docker said no")
	tests := []struct {
		name      string
		a         []outcome
		wantCalls []string
		wantWhen  int    // backoff delays asked for a
		wantErr   string // in the first error the Done hook got for a; "" = nil
		terminal  bool   // that error is terminal
	}{
		{
			name:      "success forgets the key",
			a:         []outcome{{}},
			wantCalls: []string{"a", "b", "c"},
		},
		{
			name:      "error is retried with backoff",
			a:         []outcome{{err: failed}},
			wantCalls: []string{"a", "b", "a", "c"},
			wantWhen:  1,
			wantErr:   "docker said no",
		},
		{
			name:      "error wins over its result",
			a:         []outcome{{res: Result{RequeueAfter: time.Hour}, err: failed}},
			wantCalls: []string{"a", "b", "a", "c"},
			wantWhen:  1,
			wantErr:   "docker said no",
		},
		{
			name:      "terminal error is not retried",
			a:         []outcome{{err: TerminalError(failed)}},
			wantCalls: []string{"a", "b", "c"},
			wantErr:   "terminal error: docker said no",
			terminal:  true,
		},
		{
			name:      "wrapped terminal error is not retried",
			a:         []outcome{{err: fmt.Errorf("sync a: %w", TerminalError(failed))}},
			wantCalls: []string{"a", "b", "c"},
			wantErr:   "sync a: terminal error: docker said no",
			terminal:  true,
		},
		{
			name:      "panic is this key's error, retried while the others proceed",
			a:         []outcome{{panic: true}},
			wantCalls: []string{"a", "b", "a", "c"},
			wantWhen:  1,
			wantErr:   "sync of a panicked: injected for a",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &scripted{script: map[string][]outcome{"a": tt.a}}
			limiter := newRecordingLimiter()
			rec := &doneRecorder{}
			l := NewLoop(r, Config{Name: "test", Workers: 1, RateLimiter: limiter, Done: rec.done, Log: quietLog()})
			cDone := make(chan struct{})
			r.onCall = func(req Request) {
				switch req.Key {
				case "b":
					l.Add(Request{Key: "c"})
				case "c":
					close(cDone)
				}
			}
			l.Add(Request{Key: "a"})
			l.Add(Request{Key: "b"})
			l.Start(context.Background())
			waitClosed(t, cDone, "c's sync")
			l.ShutDown()

			if got := r.called(); !slices.Equal(got, tt.wantCalls) {
				t.Errorf("syncs %v, want %v", got, tt.wantCalls)
			}
			if when, _ := limiter.counts("a"); when != tt.wantWhen {
				t.Errorf("a's backoff asked %d times, want %d", when, tt.wantWhen)
			}
			errs := rec.of("a")
			if len(errs) == 0 {
				t.Fatal("the Done hook was not told of a's sync")
			}
			switch {
			case tt.wantErr == "" && errs[0] != nil:
				t.Errorf("Done got %v for a, want nil", errs[0])
			case tt.wantErr != "" && (errs[0] == nil || !strings.Contains(errs[0].Error(), tt.wantErr)):
				t.Errorf("Done got %v for a, want an error saying %q", errs[0], tt.wantErr)
			}
			if IsTerminal(errs[0]) != tt.terminal {
				t.Errorf("IsTerminal(%v) = %v, want %v", errs[0], !tt.terminal, tt.terminal)
			}
			if n := len(rec.of("b")); n != 1 {
				t.Errorf("Done told of %d syncs of b, want 1", n)
			}
		})
	}
}

// A RequeueAfter brings the key back after that delay, with no event, and
// resets its backoff instead of counting as a failure.
func TestLoopRequeueAfter(t *testing.T) {
	const after = 50 * time.Millisecond
	r := &scripted{script: map[string][]outcome{"a": {{res: Result{RequeueAfter: after}}}}}
	limiter := newRecordingLimiter()
	l := NewLoop(r, Config{Name: "test", Workers: 2, RateLimiter: limiter, Log: quietLog()})
	again := make(chan struct{})
	var once sync.Once
	r.onCall = func(Request) {
		if len(r.called()) == 2 {
			once.Do(func() { close(again) })
		}
	}
	l.Add(Request{Key: "a"})
	l.Start(context.Background())
	waitClosed(t, again, "a's requeued sync")
	l.ShutDown()

	r.mu.Lock()
	gap := r.at[1].Sub(r.at[0])
	r.mu.Unlock()
	if gap < after {
		t.Errorf("a synced again after %s, before its RequeueAfter %s", gap, after)
	}
	if when, forget := limiter.counts("a"); when != 0 || forget == 0 {
		t.Errorf("a's backoff asked %d times and forgotten %d times; want never asked, forgotten", when, forget)
	}
}

// ShutDown waits for the sync in flight and for what was already queued,
// takes no new key, and drops the requeues asked for meanwhile.
func TestLoopShutDownDrains(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	r := &scripted{script: map[string][]outcome{
		"slow":   {{res: Result{RequeueAfter: time.Millisecond}}},
		"queued": {{err: errors.New("retry me")}},
	}}
	r.onCall = func(req Request) {
		if req.Key == "slow" {
			close(started)
			<-release
		}
	}
	rec := &doneRecorder{}
	l := NewLoop(r, Config{Name: "test", Workers: 1, Done: rec.done, Log: quietLog()})
	l.Add(Request{Key: "slow"})
	l.Start(context.Background())
	waitClosed(t, started, "slow's sync to start")
	l.Add(Request{Key: "queued"}) // behind slow: the only worker is busy

	stopped := make(chan struct{})
	go func() {
		l.ShutDown()
		close(stopped)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !l.queue.ShuttingDown() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the queue to shut down")
		}
		time.Sleep(time.Millisecond)
	}
	l.Add(Request{Key: "late"})
	select {
	case <-stopped:
		t.Fatal("shutDown returned while a sync was in flight")
	default:
	}
	close(release)
	waitClosed(t, stopped, "shutDown to return")

	if got, want := r.called(), []string{"slow", "queued"}; !slices.Equal(got, want) {
		t.Errorf("syncs %v, want %v (in flight and queued run to completion once; nothing after)", got, want)
	}
	if errs := rec.of("slow"); len(errs) != 1 || errs[0] != nil {
		t.Errorf("slow's syncs ended with %v, want one success", errs)
	}
}
