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
