package main

import (
	"syscall"
	"testing"
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
