package main

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// kubectl wait runs its watch under interrupt.New(nil, cancel): SIGINT or
// SIGTERM cancels it and, with no final function, exits 1, as get -w does
// (TestReview12dGetWatchInterruptedExitsAsKubectl). dockctl's wait has no
// signal handler at all: Ctrl-C kills it with the signal (no exit status
// 1; a shell sees 130), unlike its get -w and kubectl's wait.
func TestReview12fWaitInterruptedExitsAsKubectl(t *testing.T) {
	api, base, _ := waitInstance(t)
	api.add("t1_web-abc-0", "created", map[string]string{dockerx.LabelInstance: "t1", dockerx.LabelDeployment: "web",
		dockerx.LabelTemplateHash: "abc", "app": "web"}) // never Ready
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			var out syncBuffer
			lists := api.listCount()
			cmd := exec.Command(exe, append(base, "wait", "--for=condition=Ready", "pod/web-abc-0", "--timeout=5m")...)
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
			api.waitLists(t, lists+1) // it looked: it waits now
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			var werr error
			select {
			case werr = <-done:
				done <- werr
			case <-time.After(30 * time.Second):
				t.Fatal("wait did not end on the signal")
			}
			code := 0
			var ee *exec.ExitError
			if errors.As(werr, &ee) {
				code = ee.ExitCode()
			}
			if code != 1 {
				t.Errorf("wait ended by %v: %v (exit status %d), want kubectl's exit status 1; output:\n%s", sig, werr, code, out.String())
			}
		})
	}
}
