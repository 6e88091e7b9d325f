package podruntime

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestSlowStart(t *testing.T) {
	ops := make([]int, 20)
	t.Run("healthy runs everything and reaches the cap", func(t *testing.T) {
		var inFlight, peak int
		var mu = make(chan struct{}, 1)
		errs, _ := SlowStart(ops, 4, 1, func(int) error {
			mu <- struct{}{}
			inFlight++
			if inFlight > peak {
				peak = inFlight
			}
			<-mu
			time.Sleep(5 * time.Millisecond)
			mu <- struct{}{}
			inFlight--
			<-mu
			return nil
		})
		if len(errs) != 0 || peak > 4 || peak < 2 {
			t.Fatalf("errs %v, peak %d (want 2..4)", errs, peak)
		}
	})
	t.Run("failing op stops after the first", func(t *testing.T) {
		calls := 0
		errs, _ := SlowStart(ops, 8, 1, func(int) error { calls++; return fmt.Errorf("boom") })
		if calls != 1 || len(errs) != 1 {
			t.Fatalf("calls %d errs %d, want 1 and 1", calls, len(errs))
		}
	})
}

// TestSlowStartCarriesItsWindow: a later wave of creates (a pod's members
// after their holders) starts at the window the previous wave reached,
// instead of ramping up from one again; a failure resets nothing of it but
// what it returns.
func TestSlowStartCarriesItsWindow(t *testing.T) {
	ops := make([]int, 4)
	var mu sync.Mutex
	inFlight, peak := 0, 0
	release := make(chan struct{})
	done := make(chan []error)
	go func() {
		errs, _ := SlowStart(ops, 8, 4, func(int) error {
			mu.Lock()
			inFlight++
			peak = max(peak, inFlight)
			mu.Unlock()
			<-release
			mu.Lock()
			inFlight--
			mu.Unlock()
			return nil
		})
		done <- errs
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := inFlight
		mu.Unlock()
		if n == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d in flight, want all 4 at once with a window of 4", n)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	if errs := <-done; errs != nil {
		t.Fatal(errs)
	}
	if _, reached := SlowStart(ops, 8, 1, func(int) error { return nil }); reached != 5 {
		t.Fatalf("window reached %d after 4 successes from 1, want 5", reached)
	}
}

// TestOpenStart: a first wave creates one op alone; its create answered,
// the rest are created at once (up to the limit) while it starts, and a
// refused create stops the launches as SlowStart's failure does.
func TestOpenStart(t *testing.T) {
	tests := []struct {
		name      string
		ops       int
		limit     int
		refuse    map[int]bool
		wantPeak  int // creates in flight at once, all held
		wantCalls int
		wantErrs  int
		wantReach int
	}{
		{name: "the first create answered opens the window to the limit", ops: 10, limit: 8, wantPeak: 8, wantCalls: 10, wantReach: 8},
		{name: "the first create refused launches nothing more", ops: 10, limit: 8, refuse: map[int]bool{0: true}, wantPeak: 1, wantCalls: 1, wantErrs: 1, wantReach: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := make([]int, tt.ops)
			for i := range ops {
				ops[i] = i
			}
			var mu sync.Mutex
			calls, holding, peak, started := 0, 0, 0, 0
			release := make(chan struct{})
			type result struct {
				errs  []error
				reach int
			}
			done := make(chan result)
			go func() {
				errs, reach := OpenStart(ops, tt.limit, 1, func(op int) error {
					mu.Lock()
					defer mu.Unlock()
					calls++
					if tt.refuse[op] {
						return fmt.Errorf("refused %d", op)
					}
					return nil
				}, func(int) {
					mu.Lock()
					holding++
					peak = max(peak, holding)
					mu.Unlock()
					<-release
					mu.Lock()
					holding--
					started++
					mu.Unlock()
				})
				done <- result{errs, reach}
			}()
			// Every start is held: the window opened without any start
			// having returned, or the wave would stop at one.
			deadline := time.Now().Add(30 * time.Second)
			for {
				mu.Lock()
				h, c := holding, calls
				mu.Unlock()
				if h == tt.wantPeak || (tt.wantErrs > 0 && c == tt.wantCalls) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d starts held, %d creates, want %d starts in flight at once", h, c, tt.wantPeak)
				}
				time.Sleep(time.Millisecond)
			}
			close(release)
			res := <-done
			if calls != tt.wantCalls || len(res.errs) != tt.wantErrs || res.reach != tt.wantReach {
				t.Errorf("%d creates, errors %v, window %d; want %d, %d errors, window %d", calls, res.errs, res.reach, tt.wantCalls, tt.wantErrs, tt.wantReach)
			}
			if tt.wantErrs == 0 && (peak != tt.wantPeak || started != tt.ops) {
				t.Errorf("peak %d, %d started; want %d, %d", peak, started, tt.wantPeak, tt.ops)
			}
		})
	}
}
