package main

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// exitOnSignal runs dockctl with args in a child process (against the
// fake Engine API at dockerHost), waits until running says it is under
// way, sends it sig and returns its exit status and output. The child
// is killed if the test ends first.
func exitOnSignal(t *testing.T, dockerHost string, args []string, sig syscall.Signal, running func(out *syncBuffer)) (int, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), runAsDockctlEnv+"=1", "DOCKER_HOST="+dockerHost)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-done
	}()
	running(&out)
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	var werr error
	select {
	case werr = <-done:
		done <- werr
	case <-time.After(30 * time.Second):
		t.Fatalf("dockctl %v did not end on %v", args, sig)
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		return ee.ExitCode(), out.String()
	}
	return 0, out.String()
}
