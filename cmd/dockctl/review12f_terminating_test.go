package main

import (
	"testing"
)

// A pod kubectl shows as Terminating is one whose metadata has a
// deletionTimestamp (kubectl's printer derives the STATUS "Terminating"
// from it; scripts select such pods with
// jsonpath='{.metadata.deletionTimestamp}' and wait on it). dockctl's
// table says Terminating, while the pod's object (get -o json|yaml, the
// object wait --for=jsonpath judges) has no deletionTimestamp: nothing in
// it tells the pod is going.
func TestReview12fTerminatingPodHasDeletionTimestamp(t *testing.T) {
	snap := podsFixture(t)
	withDetails(snap)
	seen := false
	for _, e := range snap.allPods() {
		if e.Status != "Terminating" {
			continue
		}
		seen = true
		pod, err := e.podObject(snap)
		if err != nil {
			t.Fatal(err)
		}
		if pod.DeletionTimestamp == nil {
			t.Errorf("pod %s is Terminating in the table, but its object has no metadata.deletionTimestamp", e.Name)
		}
	}
	if !seen {
		t.Fatal("the fixture has no Terminating pod")
	}
}
