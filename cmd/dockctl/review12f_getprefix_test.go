package main

import (
	"strings"
	"testing"
)

// kubectl prefixes NAME with the kind only when the objects it prints
// are of several kinds (multipleGVKsRequested over the infos it got): in
// `get pod/nope deployment/web` the pod is a NotFound error, only the
// deployment is printed, and its NAME is "web", as `get deployment web`
// prints it. dockctl prefixes it ("deployment.apps/web") because two
// kinds were asked for.
func TestReview12fGetSeveralKindsOneFoundHasNoPrefix(t *testing.T) {
	_, base, _ := waitInstance(t)
	out, _, err := runArgs(t, base, "get", "pod/nope", "deployment/web")
	if err == nil || !strings.Contains(err.Error(), `pods "nope" not found`) {
		t.Fatalf("err %v, want the pod's NotFound", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "web ") {
		t.Errorf("output:\n%s\nwant kubectl's table of one kind: a header, then a row named \"web\"", out)
	}
}
