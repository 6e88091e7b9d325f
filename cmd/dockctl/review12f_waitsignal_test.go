package main

import (
	"syscall"
	"testing"

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
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			lists := api.listCount()
			code, out := exitOnSignal(t, api.host, append(base, "wait", "--for=condition=Ready", "pod/web-abc-0", "--timeout=5m"), sig,
				func(*syncBuffer) { api.waitLists(t, lists+1) }) // it looked: it waits now
			if code != 1 {
				t.Errorf("wait ended by %v: exit status %d, want kubectl's exit status 1; output:\n%s", sig, code, out)
			}
		})
	}
}
