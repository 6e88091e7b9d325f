package main

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Review of get -w (issue 12 item 2): each test here proves a defect.

// kubectl get -w ends on SIGINT (Ctrl-C) or SIGTERM through its interrupt
// handler, interrupt.New(nil, cancel): with no final function it calls
// os.Exit(1) (k8s.io/kubectl/pkg/util/interrupt), so `kubectl get pods
// -w` interrupted exits 1. dockctl's watchGet says "which ends it with
// status 0, as kubectl's" and exits 0: a script telling a watch that was
// cut short from one that ended by itself sees the opposite of kubectl.
func TestReview12dGetWatchInterruptedExitsAsKubectl(t *testing.T) {
	api, base, _ := fakeInstance(t)
	runner(t, base)(webYAML, "apply", "-f", "-")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			var out syncBuffer
			cmd := exec.Command(exe, append(base, "get", "deployments", "-w")...)
			cmd.Env = append(os.Environ(), runAsDockctlEnv+"=1", "DOCKER_HOST="+api.host)
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
			waitOutput(t, &out, "web")
			// The first listing is printed; the watch runs.
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			var werr error
			select {
			case werr = <-done:
				done <- werr
			case <-time.After(30 * time.Second):
				t.Fatal("get -w did not end on the signal")
			}
			code := 0
			var ee *exec.ExitError
			if errors.As(werr, &ee) {
				code = ee.ExitCode()
			}
			if code != 1 {
				t.Errorf("get -w ended by %v: exit status %d, want kubectl's 1; output:\n%s", sig, code, out.String())
			}
		})
	}
}
