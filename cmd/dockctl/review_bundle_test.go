package main

import (
	"strings"
	"testing"
)

// reviewPruneCase applies web and api, then applies stdin with
// --skip-unsupported --prune --all and returns the live deployments left.
func reviewPruneCase(t *testing.T, stdin string) (left, out, errOut string, err error) {
	t.Helper()
	api := strings.ReplaceAll(webYAML, "web", "api")
	base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
	if _, e, err := run(t, webYAML+"---\n"+api, append(base, "apply", "-f", "-")...); err != nil {
		t.Fatalf("apply: %v %s", err, e)
	}
	out, errOut, err = run(t, stdin, append(base, "apply", "-f", "-", "--skip-unsupported", "--prune", "--all")...)
	st := openForTest(t, base)
	recs, lerr := st.List()
	if lerr != nil {
		t.Fatal(lerr)
	}
	var names []string
	for _, r := range recs {
		names = append(names, r.Name)
	}
	return strings.Join(names, " "), out, errOut, err
}

// A Deployment whose kind is miscased ("deployment") is not an object of an
// unsupported kind: kubectl refuses it (no matches for kind "deployment" in
// apps/v1). With --skip-unsupported dockctl skips it as "not supported" and
// then --prune deletes the live deployment the file still declares.
func TestReviewPruneSkipsMiscasedDeploymentAndDeletesIt(t *testing.T) {
	api := strings.Replace(strings.ReplaceAll(webYAML, "web", "api"), "kind: Deployment", "kind: deployment", 1)
	left, out, errOut, err := reviewPruneCase(t, webYAML+"---\n"+api)
	if !strings.Contains(left, "api") {
		t.Fatalf("deployment api, declared in the file with kind %q, was pruned: out %q stderr %q err %v; left %q",
			"deployment", out, errOut, err, left)
	}
}

// A List inside a List (or a typed DeploymentList, which kubectl apply
// flattens as a list) holds Deployments. dockctl skips the whole inner list
// as "unsupported" and --prune deletes the Deployments it carries.
func TestReviewPruneSkipsNestedListAndDeletesItsDeployments(t *testing.T) {
	indent := func(s string) string {
		return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
	}
	api := strings.ReplaceAll(webYAML, "web", "api")
	for _, tc := range []struct{ name, stdin string }{
		{"List in List", webYAML + "---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items:\n  -" + indent(indent(api))[3:] + "\n"},
		{"DeploymentList", webYAML + "---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: apps/v1\n  kind: DeploymentList\n  items:\n  -" + indent(indent(api))[3:] + "\n"},
		{"top-level DeploymentList", webYAML + "---\napiVersion: apps/v1\nkind: DeploymentList\nitems:\n-" + indent(api)[1:] + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			left, out, errOut, err := reviewPruneCase(t, tc.stdin)
			if !strings.Contains(left, "api") {
				t.Fatalf("deployment api, declared inside a %s, was pruned: out %q stderr %q err %v; left %q\ninput:\n%s",
					tc.name, out, errOut, err, left, tc.stdin)
			}
		})
	}
}
