package main

import (
	"strings"
	"testing"
)

// kubectl expands a category wherever it appears in a comma-separated
// list of kinds (the resource builder's ReplaceAliases splits on ',' and
// expands each part): `kubectl get all,configmaps` is a common line. dockctl
// expands "all" only when it is the whole argument: in a list it is "the
// server doesn't have a resource type \"all\"".
func TestReview12fGetAllInKindList(t *testing.T) {
	api, base, run := waitInstance(t)
	api.addContainer("t1_web-abc-0", "t1", "web", map[string]string{"app": "web"})
	run("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: b}\n", "apply", "-f", "-")
	for _, args := range [][]string{
		{"get", "all,configmaps", "-o", "name"},
		{"get", "configmaps,all", "-o", "name"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, errOut, err := runArgs(t, base, args...)
			if err != nil {
				t.Fatalf("%v: %v %s", args, err, errOut)
			}
			for _, want := range []string{"pod/web-abc-0\n", "deployment.apps/web\n", "configmap/cfg\n"} {
				if !strings.Contains(out, want) {
					t.Errorf("%v: no %q in:\n%s", args, want, out)
				}
			}
		})
	}
}

func runArgs(t *testing.T, base []string, args ...string) (string, string, error) {
	t.Helper()
	return run(t, "", append(base, args...)...)
}

// kubectl get prints named objects of several kinds in the order of the
// arguments, a new table (after a blank line) each time the kind changes
// (get.go: shouldGetNewPrinterForMapping on each object in turn):
// `get pod/A deployment/B pod/C` is three tables, pod/A's, B's, pod/C's.
// dockctl groups the names by kind (pods A and C in one table, then B),
// so the output order is not the arguments' order.
func TestReview12fGetNamedKindsInArgumentOrder(t *testing.T) {
	api, base, _ := waitInstance(t)
	api.addContainer("t1_web-abc-0", "t1", "web", map[string]string{"app": "web"})
	api.addContainer("t1_web-abc-1", "t1", "web", map[string]string{"app": "web"})
	out, errOut, err := runArgs(t, base, "get", "pod/web-abc-0", "deployment/web", "pod/web-abc-1", "--no-headers")
	if err != nil {
		t.Fatalf("%v %s", err, errOut)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	if got, want := strings.Join(names, " "), "pod/web-abc-0 deployment.apps/web pod/web-abc-1"; got != want {
		t.Errorf("objects printed in the order %q, want the arguments' %q:\n%s", got, want, out)
	}
}
