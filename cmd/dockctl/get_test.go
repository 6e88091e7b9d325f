package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// kubectl takes several types as TYPE1,TYPE2 (`kubectl get cm,secret`):
// cm,secret is not one unknown type ("the server doesn't have a resource
// type "cm,secret"" would tell a user both kinds are unknown when each is
// dockctl's), and delete, which takes several types (delete svc/web
// deployment/web), takes the comma form too.
//
// kubectl get lists each kind in turn, and refuses several kinds ("you
// may only specify a single resource type") only for a watch, whose
// builder takes a single resource type.
func TestGetCommaSeparatedTypes(t *testing.T) {
	checkKubectlErrors(t, []kubectlErrorCase{
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

// kubectl get prints named objects of several kinds in the order of the
// arguments, a new table (after a blank line) each time the kind changes
// (get.go: shouldGetNewPrinterForMapping on each object in turn): `get
// pod/A deployment/B pod/C` is three tables, pod/A's, B's, pod/C's, not
// the names grouped by kind (pods A and C in one table, then B).
func TestGetNamedKindsInArgumentOrder(t *testing.T) {
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

// kubectl get -A prints a NAMESPACE column for namespaced kinds only
// (printWithNamespace is false for a cluster-scoped mapping), also among
// several kinds: in `get pods,namespaces -A` the namespaces' table has no
// NAMESPACE column, as `get namespaces -A` has none (getSeveralKinds must
// not print every table with -A's column, empty cells for the
// namespaces).
func TestGetSeveralKindsClusterScopedHasNoNamespaceColumn(t *testing.T) {
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

// kubectl prefixes NAME with the kind only when the objects it prints are
// of several kinds (multipleGVKsRequested over the infos it got): in `get
// pod/nope deployment/web` the pod is a NotFound error, only the deployment
// is printed, and its NAME is "web", as `get deployment web` prints it —
// not "deployment.apps/web" because two kinds were asked for.
func TestGetSeveralKindsOneFoundHasNoPrefix(t *testing.T) {
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

// A get of some pods by name prints those pods' objects only, and asks
// Docker about their containers only (TestPodDetailsAsked: "an inspect of
// each container of the pods printed, once"). Several names (`get pods A B
// -o json`, or `get pod/A deployment/web -o yaml`) list the kind whole and
// pick the names out; the inspect must cover the pods picked, not every
// container of the instance (2 pods printed, 6 inspected).
func TestGetNamedPodsInspectsOnlyThem(t *testing.T) {
	api, _, run := waitInstance(t)
	for i := range 6 {
		api.addContainer(fmt.Sprintf("t1_web-abc-%d", i), "t1", "web", map[string]string{"app": "web"})
	}
	calls := countCalls(t, api)
	for _, args := range [][]string{
		{"get", "pods", "web-abc-0", "web-abc-1", "-o", "json"},
		{"get", "pod/web-abc-0", "pod/web-abc-1", "deployment/web", "-o", "yaml"},
	} {
		calls.reset()
		out := run("", args...)
		if n := strings.Count(out, "containerID: docker://") + strings.Count(out, `"containerID": "docker://`); n != 2 {
			t.Fatalf("%v: %d pods' containers printed, want 2:\n%s", args, n, out)
		}
		if n := calls.get("inspect"); n != 2 {
			t.Errorf("%v: %d container inspects for the 2 pods printed (one container each), want 2", args, n)
		}
	}
}

// An orphan is a container whose deployment the state directory
// never knew. One whose record exists but cannot be read is not: the
// controller never touches it (not even with --prune-orphans), and `get
// containers` must not call it an orphan.
func TestUnreadableRecordIsNoOrphan(t *testing.T) {
	f := startFakeDaemon(t)
	f.addContainer("rev_api-abc-0", "rev", "api", nil)
	dir := t.TempDir()
	if out, err := runCLI(t, dir, webYAML, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "deployments", "api.json"), []byte("{garbled"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, dir, "", "get", "containers")
	if err != nil || !strings.Contains(out, "rev_api-abc-0") || strings.Contains(out, "orphan") {
		t.Fatalf("get containers: %v\n%s", err, out)
	}
}

// `get containers NAME` of a container that does not exist fails
// (exit 1) as `get deployments NAME` does and as kubectl does, instead of
// exiting 0 — scripts test for a container with it.
func TestGetContainerByNameNotFound(t *testing.T) {
	f := startFakeDaemon(t)
	f.addContainer("rev_web-abc-0", "rev", "web", nil)
	dir := t.TempDir()
	if out, err := runCLI(t, dir, "", "get", "containers", "rev_web-abc-0"); err != nil || !strings.Contains(out, "rev_web-abc-0") {
		t.Fatalf("get containers of an existing one: %v\n%s", err, out)
	}
	out, err := runCLI(t, dir, "", "get", "containers", "rev_web-abc-9")
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("get containers of a missing one: err = %v, want not found\n%s", err, out)
	}
	if _, err := runCLI(t, dir, "", "get", "containers"); err != nil {
		t.Fatalf("get containers (all): %v", err)
	}
}

// A deployment whose record cannot be read exists; `get deployments
// NAME` and `describe` must say why it cannot be shown, not that it is not
// found (which invites applying it afresh over its history).
func TestUnreadableRecordIsNotNotFound(t *testing.T) {
	startFakeDaemon(t)
	dir := t.TempDir()
	if out, err := runCLI(t, dir, webYAML, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "deployments", "web.json"), []byte("{garbled"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"get", "deployments", "web"}, {"get", "deployment/web"}, {"describe", "deployment", "web"}} {
		out, err := runCLI(t, dir, "", args...)
		if err == nil || strings.Contains(err.Error(), "not found") || !strings.Contains(err.Error(), "deployments/web.json") {
			t.Errorf("%v: err = %v, want the unreadable state file named, not \"not found\"\n%s", args, err, out)
		}
	}
}
