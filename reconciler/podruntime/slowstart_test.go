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
