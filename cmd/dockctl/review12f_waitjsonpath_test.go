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
// the counts, 0 included, so the wait is met at once on a deployment with
// no replica ready at all: a CI line succeeds before anything runs.
func TestReview12fWaitJSONPathZeroCountIsAbsent(t *testing.T) {
	_, base, _ := waitInstance(t) // web, 3 replicas, no container at all
	for _, field := range []string{"readyReplicas", "availableReplicas", "updatedReplicas"} {
		t.Run(field, func(t *testing.T) {
			out, _, err := run(t, "", append(base, "wait", "--for=jsonpath={.status."+field+"}", "deployment/web", "--timeout=0")...)
			if err == nil || !strings.Contains(err.Error(), "condition not met for deployments/web") {
				t.Errorf("no replica at all: out %q err %v, want kubectl's \"condition not met for deployments/web\" (a zero count is absent)", out, err)
			}
		})
	}
}
