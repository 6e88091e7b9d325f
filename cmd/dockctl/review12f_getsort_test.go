package main

import (
	"strings"
	"testing"
)

// kubectl get sorts every kind's table (RuntimeSort over the tables)
// before it prints any: a --sort-by path that one kind's objects all lack
// ("couldn't find any field with path …") fails the command with nothing
// printed. `dockctl get all --sort-by=.status.phase` prints the pods'
// table and a blank line, then fails on the Services: a script reading
// stdout gets a partial listing with exit 1.
func TestReview12fGetAllSortByFailsBeforePrinting(t *testing.T) {
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
