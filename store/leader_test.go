package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestControllerLockTakeover(t *testing.T) {
	old := controllerLockRetry
	controllerLockRetry = 20 * time.Millisecond
	t.Cleanup(func() { controllerLockRetry = old })

	leader := openTemp(t)
	// flock is per open file description, so a second Store on the same
	// directory in this process contends like another process would.
	standby, err := Open(leader.Dir(), "default")
	if err != nil {
		t.Fatal(err)
	}
	observer, err := OpenReadOnly(leader.Dir(), "default")
	if err != nil {
		t.Fatal(err)
	}
	if running, err := observer.ControllerRunning(); err != nil || running {
		t.Fatalf("ControllerRunning before any leader = %v, %v", running, err)
	}

	waits := 0
	release1, err := leader.AcquireControllerLock(t.Context(), func() { waits++ })
	if err != nil {
		t.Fatal(err)
	}
	if waits != 0 {
		t.Errorf("onWait called %d times for a free lock", waits)
	}
	if running, err := observer.ControllerRunning(); err != nil || !running {
		t.Errorf("ControllerRunning with a leader = %v, %v", running, err)
	}

	waiting := make(chan struct{}, 10)
	acquired := make(chan func(), 1)
	failed := make(chan error, 1)
	go func() {
		release, err := standby.AcquireControllerLock(t.Context(), func() { waiting <- struct{}{} })
		if err != nil {
			failed <- err
			return
		}
		acquired <- release
	}()
	select {
	case <-waiting:
	case <-time.After(5 * time.Second):
		t.Fatal("standby did not report waiting")
	}
	select {
	case <-acquired:
		t.Fatal("standby acquired a held lock")
	case err := <-failed:
		t.Fatal(err)
	case <-time.After(100 * time.Millisecond):
	}

	release1()
	release1() // idempotent
	var release2 func()
	select {
	case release2 = <-acquired:
	case err := <-failed:
		t.Fatal(err)
	case <-time.After(5 * time.Second):
		t.Fatal("standby did not take over after release")
	}
	defer release2()
	if len(waiting) != 0 {
		t.Errorf("onWait called more than once")
	}
	if running, err := observer.ControllerRunning(); err != nil || !running {
		t.Errorf("ControllerRunning with the new leader = %v, %v", running, err)
	}
}

func TestControllerLockContextEnds(t *testing.T) {
	s := openTemp(t)
	release, err := s.AcquireControllerLock(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.AcquireControllerLock(ctx, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want context.DeadlineExceeded", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("gave up only after %v", time.Since(start))
	}
}
