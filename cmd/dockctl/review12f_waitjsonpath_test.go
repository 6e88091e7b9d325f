package main

import (
	"strings"
	"testing"
)

// `wait --for=jsonpath='{.status.readyReplicas}'` (no value) waits until
// the path finds a value. The API server omits a Deployment's zero counts
// (apps/v1 DeploymentStatus: replicas, updatedReplicas, readyReplicas,
// availableReplicas are all omitempty), so with kubectl that line waits
// for a first ready replica. dockctl's deployment object always carries
// the counts, 0 included (DESIGN §5 requires them in status): decided, the
// existence form is met at once, as it is on any object that has the
// field (the README's wait row says so). The value form behaves as
// kubectl's: `=0` is met on a deployment with no replica ready, `=3` is
// not.
func TestReview12fWaitJSONPathZeroCountIsPresent(t *testing.T) {
	_, base, _ := waitInstance(t) // web, 3 replicas, no container at all
	for _, field := range []string{"readyReplicas", "availableReplicas", "updatedReplicas"} {
		t.Run(field, func(t *testing.T) {
			path := "--for=jsonpath={.status." + field + "}"
			for _, tt := range []struct {
				forFlag string
				met     bool
			}{
				{path, true}, // present as 0
				{path + "=0", true},
				{path + "=3", false},
			} {
				out, _, err := run(t, "", append(base, "wait", tt.forFlag, "deployment/web", "--timeout=0")...)
				switch {
				case tt.met && (err != nil || out != "deployment.apps/web condition met\n"):
					t.Errorf("%s with no replica at all: out %q err %v, want it met", tt.forFlag, out, err)
				case !tt.met && (err == nil || !strings.Contains(err.Error(), "condition not met for deployments/web")):
					t.Errorf("%s with no replica at all: out %q err %v, want kubectl's \"condition not met for deployments/web\"", tt.forFlag, out, err)
				}
			}
		})
	}
}
