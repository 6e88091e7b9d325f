//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestCronJobForbidSkipsWhileActive: a CronJob of schedule "* * * * *"
// under concurrencyPolicy Forbid whose Job runs longer than a minute
// (docs/design.md §17.1): a Job NAME-<minutes since the epoch> fires at
// the minute, and at the next minute the run is skipped — the
// JobAlreadyActive event, still that one Job, one active — as
// Kubernetes' CronJob controller does. The schedule is real time: the
// test waits up to two minute boundaries.
func TestCronJobForbidSkipsWhileActive(t *testing.T) {
	independent(t)
	e := newEnv(t)
	e.startController()
	e.apply(strings.ReplaceAll(`apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "* * * * *"
  concurrencyPolicy: Forbid
  jobTemplate:
    spec:
      backoffLimit: 0
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: work
            image: IMAGE
            args: ["--listen=127.0.0.1:0", "--exit-after=150s"]
`, "IMAGE", workloadImage))

	type jobList struct {
		Items []struct {
			Metadata struct {
				Name            string `json:"name"`
				OwnerReferences []struct {
					Kind string `json:"kind"`
					Name string `json:"name"`
				} `json:"ownerReferences"`
			} `json:"metadata"`
			Status struct {
				Active int `json:"active"`
			} `json:"status"`
		} `json:"items"`
	}
	jobs := func() (jobList, string) {
		out, err := e.dockctl("", "get", "jobs", "-o", "json")
		var l jobList
		if err != nil || json.Unmarshal([]byte(out), &l) != nil {
			return jobList{}, out
		}
		return l, out
	}
	var first string
	eventually(t, 90*time.Second, "the first Job of cronjob tick running", func() (bool, string) {
		l, out := jobs()
		if len(l.Items) != 1 || l.Items[0].Status.Active != 1 {
			return false, out
		}
		first = l.Items[0].Metadata.Name
		return true, out
	})
	l, _ := jobs()
	if refs := l.Items[0].Metadata.OwnerReferences; len(refs) != 1 || refs[0].Kind != "CronJob" || refs[0].Name != "tick" {
		t.Errorf("job %s: ownerReferences %+v, want the CronJob tick", first, refs)
	}
	if !strings.HasPrefix(first, "tick-") {
		t.Errorf("job %s: want tick-<minutes since the epoch>", first)
	}
	// The next minute's run is skipped while the first Job runs (150 s).
	eventually(t, 75*time.Second, "the JobAlreadyActive event of cronjob tick", func() (bool, string) {
		out, err := e.dockctl("", "events", "--for", "cronjob/tick")
		return err == nil && strings.Contains(out, "JobAlreadyActive"), out
	})
	l, out := jobs()
	if len(l.Items) != 1 || l.Items[0].Metadata.Name != first || l.Items[0].Status.Active != 1 {
		t.Fatalf("after the skipped run, want only job %s, active: %s", first, out)
	}
	if n := len(containers(t, "io.dockctl.instance="+e.instance, "io.dockctl.owner-kind=Job")); n != 1 {
		t.Errorf("%d Job pods, want 1", n)
	}
	if out := e.mustDockctl("", "get", "cronjob", "tick", "-o", "jsonpath={.status.active[*].name}"); strings.TrimSpace(out) != first {
		t.Errorf("cronjob tick status.active: %q, want %s", out, first)
	}
}
