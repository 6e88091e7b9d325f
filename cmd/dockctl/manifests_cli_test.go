package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/sourcedir"
	"github.com/dockctl/dockctl/store"
)

const apiYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
    spec:
      containers:
      - name: api
        image: dockctl-workload:dev
`

// The directory's objects as the CLI sees them: diff --manifests previews
// what the controller's sync does, apply -f refuses them unless
// --force-conflicts, get manifests reports the last sync.
func TestManifestsDirectoryCLI(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(t.TempDir(), "k8s")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base := []string{"--state-dir", state, "--instance", "t1"}
	sync := func() {
		t.Helper()
		st, err := store.Open(state, "t1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sourcedir.New(st, sourcedir.Options{Paths: []string{dir}}).Sync(); err != nil {
			t.Fatal(err)
		}
	}
	diff := func(wantCode int, wantOut ...string) {
		t.Helper()
		out, errOut, err := run(t, "", append(base, "diff", "--manifests", dir)...)
		if code := exitCode(err); code != wantCode {
			t.Fatalf("diff --manifests: exit %d, want %d (%v)\n%s%s", code, wantCode, err, out, errOut)
		}
		for _, w := range wantOut {
			if !strings.Contains(out, w) {
				t.Fatalf("diff --manifests: no %q in\n%s", w, out)
			}
		}
	}

	writeFile("web.yaml", webYAML)
	diff(1, "+++ merged/web")
	sync()
	diff(0)
	if out, _, err := run(t, "", append(base, "get", "manifests")...); err != nil || !strings.Contains(out, dir) || !strings.Contains(out, "True") {
		t.Fatalf("get manifests: %v\n%s", err, out)
	}

	// A deletion is previewed; an invalid file is an error, after the diff.
	if err := os.Remove(filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	writeFile("api.yaml", apiYAML)
	diff(1, "+++ merged/api", "--- live/web", "-  replicas: 3")
	writeFile("bad.yaml", "kind: Deployment\nmetadata: {name: [\n")
	diff(2, "+++ merged/api")
	if err := os.Remove(filepath.Join(dir, "bad.yaml")); err != nil {
		t.Fatal(err)
	}
	writeFile("web.yaml", webYAML)

	// apply -f of the directory's object is a conflict, as server-side
	// apply's; --force-conflicts takes it over.
	changed := strings.Replace(webYAML, "replicas: 3", "replicas: 2", 1)
	if _, _, err := run(t, changed, append(base, "diff", "-f", "-")...); exitCode(err) != 2 || !strings.Contains(err.Error(), "conflict") {
		t.Fatalf("diff -f of the directory's object: %v", err)
	}
	if out, _, err := run(t, changed, append(base, "diff", "-f", "-", "--force-conflicts")...); exitCode(err) != 1 || !strings.Contains(out, "+  replicas: 2") {
		t.Fatalf("diff -f --force-conflicts: %v\n%s", err, out)
	}
	_, _, err := run(t, changed, append(base, "apply", "-f", "-")...)
	if exitCode(err) != 1 || !strings.Contains(err.Error(), `deployment/web is managed by "manifests:`+dir+`"`) {
		t.Fatalf("apply over the directory: %v", err)
	}
	out, _, err := run(t, changed, append(base, "apply", "-f", "-", "--force-conflicts")...)
	if err != nil || out != "deployment/web configured\n" {
		t.Fatalf("apply --force-conflicts: %v %q", err, out)
	}
	out, _, err = run(t, "", append(base, "describe", "deployment", "web")...)
	if err != nil || !strings.Contains(out, "Managed-By:        apply\n") {
		t.Fatalf("describe: %v\n%s", err, out)
	}
	// The directory now reports it as a conflict, and leaves it.
	sync()
	out, _, err = run(t, "", append(base, "get", "manifests", "-o", "yaml")...)
	if err != nil || !strings.Contains(out, "reason: Conflict") {
		t.Fatalf("get manifests -o yaml: %v\n%s", err, out)
	}
	// scale is an update: recorded, the manager stays.
	if _, _, err := run(t, "", append(base, "scale", "deployment/web", "--replicas", "4")...); err != nil {
		t.Fatal(err)
	}
	out, _, err = run(t, "", append(base, "get", "deployment", "web", "-o", "yaml")...)
	if err != nil || !strings.Contains(out, "  - manager: apply\n    operation: Apply\n") || !strings.Contains(out, "  - manager: scale\n    operation: Update\n") {
		t.Fatalf("get -o yaml: %v\n%s", err, out)
	}
}
