package main

import (
	"regexp"
	"testing"
)

// kubectl takes several types as TYPE1,TYPE2 (`kubectl get cm,secret`).
// dockctl read cm,secret as one unknown type: "the server doesn't have a
// resource type "cm,secret"" tells a user both kinds are unknown when
// each is dockctl's. delete, which does take several types (delete
// svc/web deployment/web), refused the comma form the same way.
//
// (Adjusted: the review expected get cm,secret to be refused with "you
// may only specify a single resource type"; kubectl get lists each kind
// in turn, and refuses several kinds only for a watch, whose builder
// takes a single resource type.)
func TestReview12dGetOfCommaSeparatedTypes(t *testing.T) {
	review12dErrors(t, []review12dErrorCase{
		// kubectl lists each kind: a table per kind (secrets: none).
		{situation: "get of two types, comma-separated", args: []string{"get", "cm,secret"}, stderr: "", code: 0},
		{situation: "get -w of two types, comma-separated", args: []string{"get", "cm,secret", "-w"},
			stderr: "error: you may only specify a single resource type\n", code: 1},
		{situation: "get of two types, one unknown", args: []string{"get", "cm,nope"},
			stderr: "error: the server doesn't have a resource type \"nope\"\n", code: 1},
		// delete takes several types (delete svc/web deployment/web):
		// kubectl's comma form deletes both too.
		{situation: "delete of two types, comma-separated", args: []string{"delete", "svc,deployment", "web"},
			stderr: "", code: 0},
		{situation: "get of the two types deleted", args: []string{"get", "svc,deployment"},
			stderr: "No resources found in default namespace.\n", code: 0},
	})
	// kubectl's output for several kinds: each kind's table, a blank line
	// between two, each name prefixed with its kind (an empty kind
	// prints nothing).
	code, out, errOut := runMain(t, "", "get", "cm,secret,ns")
	want := regexp.MustCompile(`^NAME +DATA +AGE\nconfigmap/cfg +1 +\d+s\n\nNAME +STATUS +AGE\nnamespace/default +Active +\d+s\nnamespace/team +Active +\d+s\n$`)
	if code != 0 || errOut != "" || !want.MatchString(out) {
		t.Errorf("get cm,secret,ns: exit %d, stderr %q, stdout:\n%s\nwant it to match %s", code, errOut, out, want)
	}
	if code, out, _ := runMain(t, "", "get", "cm,ns", "-o", "name"); code != 0 || out != "configmap/cfg\nnamespace/default\nnamespace/team\n" {
		t.Errorf("get cm,ns -o name: exit %d, stdout:\n%s", code, out)
	}
}
