package main

import (
	"strings"
	"testing"
)

// kubectl expands a category wherever it appears in a comma-separated list
// of kinds (the resource builder's ReplaceAliases splits on ',' and expands
// each part): `kubectl get all,configmaps` is a common line. "all" in a
// list is not "the server doesn't have a resource type \"all\"".
func TestGetAllInKindList(t *testing.T) {
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

// Several kinds share one snapshot of Docker (getOptions.snap), and a
// failure to take it is shared too: when Docker cannot be reached, `get
// all` says so once, not once per kind (nor, with a daemon that hangs,
// waits out the ping's timeout once per kind). kubectl says once that the
// server cannot be reached; docs/design.md §15: "one line per error".
func TestGetAllDockerDownSaidOnce(t *testing.T) {
	_, base, _ := waitInstance(t)
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	for _, args := range [][]string{{"get", "all"}, {"get", "pods,deployments", "-o", "name"}} {
		_, _, err := runArgs(t, base, args...)
		if err == nil {
			t.Fatalf("%v: no error without Docker", args)
		}
		if n := strings.Count(err.Error(), "cannot reach the Docker daemon"); n != 1 {
			t.Errorf("%v: the Docker error said %d times, want once:\n%v", args, n, err)
		}
	}
}

// kubectl get sorts every kind's table (RuntimeSort over the tables)
// before it prints any: a --sort-by path that one kind's objects all lack
// ("couldn't find any field with path …") fails the command with nothing
// printed. `dockctl get all --sort-by=.status.phase` must not print the
// pods' table and a blank line, then fail on the Services: a script
// reading stdout would get a partial listing with exit 1.
func TestGetAllSortByFailsBeforePrinting(t *testing.T) {
	api, base, run := waitInstance(t)
	run("apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  selector: {app: web}\n  ports: [{port: 80}]\n", "apply", "-f", "-")
	api.addContainer("t1_web-abc-0", "t1", "web", map[string]string{"app": "web"})
	out, _, err := runArgs(t, base, "get", "all", "--sort-by=.status.phase")
	if err == nil || !strings.Contains(err.Error(), `couldn't find any field with path "{.status.phase}"`) {
		t.Fatalf("err %v, want kubectl's sort error", err)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing: kubectl sorts every table before printing one", out)
	}
}
