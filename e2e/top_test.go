//go:build e2e

package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTop: top pods and top deployments read the real daemon's stats. The
// workload idles at a working set of about 1.8 MiB (measured on Engine
// 20.10, cgroup v1: 11.3 MiB used, 9.4 MiB of it inactive page cache), so
// each pod shows at least 1Mi, and the deployment their sum.
func TestTop(t *testing.T) {
	independent(t)
	e := newEnv(t)
	e.apply(testDeployment{name: "web", replicas: 2}.manifest())
	e.startController()
	e.waitRunning("web", 2, "")

	start := time.Now()
	out := e.mustDockctl("", "top", "pods")
	t.Logf("top pods of 2 pods took %v:\n%s", time.Since(start), out)
	rows := topTable(t, out, "NAME CPU(cores) MEMORY(bytes)", 2)
	for _, r := range rows {
		if !strings.HasPrefix(r[0], "web-") || mebibytes(t, r[2]) < 1 {
			t.Fatalf("top pods: row %q, want a pod of web with a working set of at least 1Mi:\n%s", r, out)
		}
	}

	out = e.mustDockctl("", "top", "pods", "--containers", "-l", "app=web")
	for _, r := range topTable(t, out, "POD NAME CPU(cores) MEMORY(bytes)", 2) {
		if r[1] != "app" { // the holder is never a container of the pod
			t.Fatalf("top pods --containers: row %q:\n%s", r, out)
		}
	}

	out = e.mustDockctl("", "top", "deployments", "--sum")
	rows = topTable(t, out, "NAME CPU(cores) MEMORY(bytes)", 3)
	if rows[0][0] != "web" || mebibytes(t, rows[0][2]) < 2 || rows[1][0] != "________" {
		t.Fatalf("top deployments --sum:\n%s", out)
	}
}

// topTable checks top's header and returns its n rows, split on spaces,
// after checking that each figure is in kubectl's units.
func topTable(t testing.TB, out, header string, n int) [][]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != n+1 || strings.Join(strings.Fields(lines[0]), " ") != header {
		t.Fatalf("want %q and %d rows:\n%s", header, n, out)
	}
	var rows [][]string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		cpu, mem := f[len(f)-2], f[len(f)-1]
		if cpu != "________" && (!regexpMatch(`^[0-9]+m$`, cpu) || !regexpMatch(`^[0-9]+Mi$`, mem)) {
			t.Fatalf("row %q: figures not in millicores and MiB:\n%s", l, out)
		}
		rows = append(rows, f)
	}
	return rows
}

func mebibytes(t testing.TB, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSuffix(s, "Mi"))
	if err != nil {
		t.Fatalf("memory %q: %v", s, err)
	}
	return n
}
