//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// An Indexed Job with parallelism 2 and completions 3 completes, each pod
// given its JOB_COMPLETION_INDEX; a Job whose pod fails reaches its
// backoffLimit of 1 (a second pod after the Job controller's 10 s backoff)
// and fails (docs/design.md §17.1).
func TestE2EJobs(t *testing.T) {
	e := newEnv(t)
	e.startController()
	manifest := `apiVersion: batch/v1
kind: Job
metadata: {name: idx}
spec:
  completions: 3
  parallelism: 2
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: IMAGE
        args: ["--listen=127.0.0.1:0", "--exit-after=300ms"]
---
apiVersion: batch/v1
kind: Job
metadata: {name: fails}
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: IMAGE
        args: ["--listen=127.0.0.1:0", "--crash-after=100ms", "--exit-code=3"]
`
	e.apply(strings.ReplaceAll(manifest, "IMAGE", workloadImage))
	status := func(name string) string {
		out, err := e.dockctl("", "get", "job", name, "--no-headers")
		if err != nil {
			return err.Error() + ": " + out
		}
		return out
	}
	eventually(t, 40*time.Second, "idx Complete 3/3 and fails Failed", func() (bool, string) {
		idx, fails := status("idx"), status("fails")
		return strings.Contains(idx, "Complete") && strings.Contains(idx, "3/3") && strings.Contains(fails, "Failed"), idx + fails
	})
	seen := map[string]bool{}
	for _, c := range containers(t, "io.dockctl.instance="+e.instance, "io.dockctl.owner=idx") {
		in, err := dockerCli.ContainerInspect(context.Background(), c.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range in.Config.Env {
			if ix, ok := strings.CutPrefix(v, "JOB_COMPLETION_INDEX="); ok {
				seen[ix] = true
			}
		}
	}
	if !seen["0"] || !seen["1"] || !seen["2"] {
		t.Errorf("JOB_COMPLETION_INDEX of the pods: %v, want 0, 1 and 2", seen)
	}
	if n := len(containers(t, "io.dockctl.instance="+e.instance, "io.dockctl.owner=fails")); n != 2 {
		t.Errorf("the failing Job made %d pods, want 2 (backoffLimit 1)", n)
	}
}
