package main

import (
	"strings"
	"testing"
)

// Review 11 (apply CLI): the ignored-fields warning is worded from every
// document of the files before `-l` filters them (runApply calls
// warnIgnored before b.filter), so `apply -l app=api` names
// deployment/web, which it does not apply, as having its fields ignored.
// The warning is per apply; it must name what this apply applies.
func TestReview11IgnoredWarningNamesOnlyAppliedObjects(t *testing.T) {
	web := strings.Replace(webYAML, "    spec:\n      containers:", "    spec:\n      nodeSelector: {disk: ssd}\n      containers:", 1)
	if web == webYAML {
		t.Fatal("precondition: could not add nodeSelector")
	}
	api := strings.ReplaceAll(webYAML, "web", "api")
	dir := t.TempDir()
	out, errOut, err := run(t, web+"---\n"+api, "--state-dir", dir, "apply", "-f", "-", "-l", "app=api")
	if err != nil {
		t.Fatalf("apply: %v stderr %q", err, errOut)
	}
	if strings.Contains(out, "deployment/web") {
		t.Fatalf("precondition: -l applied web: %q", out)
	}
	if strings.Contains(errOut, "deployment/web") {
		t.Errorf("apply -l app=api applied %q but warned about deployment/web, which it did not apply:\n%s", strings.TrimSpace(out), errOut)
	}
}
