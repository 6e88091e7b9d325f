package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// kubectl wait: "--timeout: The length of time to wait before giving up.
// Zero means check once and don't wait, negative means wait for a week."
// dockctl's 0 waits forever: a script checking once with --timeout=0
// (as it would with kubectl) hangs for good on an unmet condition.
func TestReview12bWaitTimeoutZeroChecksOnce(t *testing.T) {
	dir, _, _ := appliedWeb(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // ends the command if it is still waiting
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		root := newRootCommand()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetIn(strings.NewReader(""))
		root.SetArgs([]string{"--state-dir", dir, "--instance", "rev", "wait", "--for=condition=Available", "deployment/web", "--timeout=0"})
		err := root.ExecuteContext(ctx)
		done <- result{out.String(), err}
	}()
	select {
	case r := <-done:
		// kubectl's words for a single look (getObjAndCheckCondition's
		// o.Timeout == 0 branch, k8s.io/kubectl/pkg/cmd/wait); "timed out
		// waiting…" is the error of a wait that ran out.
		if r.err == nil || !strings.Contains(r.err.Error(), "condition not met for deployments/web") {
			t.Errorf("wait --timeout=0 on an unmet condition: err %v, want kubectl's condition not met error at once\n%s", r.err, r.out)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("wait --timeout=0 still waiting after 20s on a condition that is not met (kubectl checks once and returns)")
	}
}
