package main

import "testing"

// kubectl takes several types as TYPE1,TYPE2 (`kubectl get cm,secret`).
// dockctl lists one kind at a time and says so for two TYPE/NAME
// arguments ("you may only specify a single resource type", the golden
// "several types"), but reads cm,secret as one unknown type: "the server
// doesn't have a resource type "cm,secret"" tells a user both kinds are
// unknown when each is dockctl's. delete, which does take several types
// (delete svc/web deployment/web), refuses the comma form the same way.
func TestReview12dGetOfCommaSeparatedTypes(t *testing.T) {
	review12dErrors(t, []review12dErrorCase{
		{situation: "get of two types, comma-separated", args: []string{"get", "cm,secret"},
			stderr: "error: you may only specify a single resource type\n", code: 1},
		// delete takes several types (delete svc/web deployment/web):
		// kubectl's comma form deletes both too.
		{situation: "delete of two types, comma-separated", args: []string{"delete", "svc,deployment", "web"},
			stderr: "", code: 0},
	})
}
