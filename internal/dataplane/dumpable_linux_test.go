package dataplane

import (
	"bytes"
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// A writer holder is non-dumpable once it runs, so that no container of
// its pod reaches its read-write mounts through /proc/PID/root.
func TestHoldIsNotDumpable(t *testing.T) {
	// Other tests ran the writer in this process: dumpable again first.
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 1, 0); errno != 0 {
		t.Fatal(errno)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		var out, errb bytes.Buffer
		done <- run(ctx, []string{helperapi.ModeHold}, nil, &out, &errb)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_GET_DUMPABLE, 0, 0)
		if errno != 0 {
			t.Fatal(errno)
		}
		if d == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("hold runs, and the process is still dumpable")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != helperapi.ExitOK {
		t.Errorf("exit %d", code)
	}
}
