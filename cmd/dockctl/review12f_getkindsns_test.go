package main

import (
	"strings"
	"testing"
)

// kubectl get -A prints a NAMESPACE column for namespaced kinds only
// (printWithNamespace is false for a cluster-scoped mapping), also among
// several kinds: in `get pods,namespaces -A` the namespaces' table has no
// NAMESPACE column, as `get namespaces -A` has none. getSeveralKinds
// captures whether each listing has the column, then prints every table
// with -A's: the namespaces' table gets a NAMESPACE column of empty cells.
func TestReview12fGetSeveralKindsClusterScopedNoNamespaceColumn(t *testing.T) {
	api, _, run := waitInstance(t)
	api.addContainer("t1_web-abc-0", "t1", "web", map[string]string{"app": "web"})
	alone := run("", "get", "namespaces", "-A")
	if strings.HasPrefix(alone, "NAMESPACE") {
		t.Fatalf("get namespaces -A has a NAMESPACE column:\n%s", alone)
	}
	out := run("", "get", "pods,namespaces", "-A")
	tables := strings.Split(out, "\n\n")
	if len(tables) != 2 {
		t.Fatalf("want two tables:\n%s", out)
	}
	if !strings.HasPrefix(tables[0], "NAMESPACE ") {
		t.Errorf("the pods' table has no NAMESPACE column:\n%s", tables[0])
	}
	if strings.HasPrefix(tables[1], "NAMESPACE") {
		t.Errorf("the namespaces' table has a NAMESPACE column (kubectl: none for a cluster-scoped kind):\n%s", tables[1])
	}
}
