package main

import (
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// DESIGN §5: a deployment's counts come from Docker, "so they are right
// even when no controller runs; controller-only fields show as unknown
// when stale". wait --for=condition=Available judges the conditions the
// controller last recorded even when no controller runs: with the
// controller gone and every container of web removed (Docker: 0 of 3
// replicas, `get deployment` says 0/3 and AVAILABLE 0), the wait still
// reports "condition met" from the stale status file, and a CI line goes
// on with nothing running. (TestWaitTimeoutZeroAndNegative's "wait 0,
// condition met" case relies on the same stale read.)
func TestReview12fWaitStaleConditionWithoutController(t *testing.T) {
	_, base, st := fakeInstance(t)
	run := runner(t, base)
	run(webYAML, "apply", "-f", "-")
	rec, err := st.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	// What a controller recorded before it stopped: web available, for
	// the current generation.
	if err := st.WriteStatus("", "web", &store.Status{ObservedGeneration: rec.Generation,
		Conditions: []manifests.DeploymentCondition{{Type: manifests.ConditionAvailable, Status: "True", Reason: "MinimumReplicasAvailable"}}}); err != nil {
		t.Fatal(err)
	}
	if got := run("", "get", "deployment", "web", "--no-headers"); !strings.HasPrefix(got, "web   0/3 ") {
		t.Fatalf("get deployment web: %q, want 0/3 ready (no container)", got)
	}
	out, _, err := runArgs(t, base, "wait", "--for=condition=Available", "deployment/web", "--timeout=0")
	if err == nil {
		t.Errorf("no controller runs and no container of web exists, yet wait says %q", out)
	}
}
