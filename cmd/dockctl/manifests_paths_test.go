package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The controller's --manifests flags are the syncer's options.
func TestControllerSourceOptions(t *testing.T) {
	o := &controllerOptions{}
	cmd := newControllerCommandWith(&globalOptions{}, o)
	if err := cmd.ParseFlags([]string{"--manifests=/srv/k8s", "--skip-unsupported", "--allow-empty", "--allow-empty-after=5m", "--force-conflicts"}); err != nil {
		t.Fatal(err)
	}
	got := o.sourceOptions()
	if len(got.Paths) != 1 || got.Paths[0] != "/srv/k8s" || !got.SkipUnsupported || !got.AllowEmpty || got.AllowEmptyAfter != 5*time.Minute || !got.ForceConflicts {
		t.Errorf("options %+v", got)
	}
}

// diff --manifests --skip-unsupported warns about each object it skips,
// as apply --skip-unsupported does.
func TestDiffManifestsWarnsSkipped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "k8s")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ingress := "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: web\n"
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(webYAML+"---\n"+ingress), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(t, "", "--state-dir", t.TempDir(), "diff", "--manifests", dir, "--skip-unsupported")
	want := "Warning: " + filepath.Join(dir, "web.yaml") + `:`
	if exitCode(err) != 1 || !strings.Contains(out, "+++ merged/web") || !strings.Contains(errOut, want) || !strings.Contains(errOut, `skipped Ingress "web": not supported by dockctl`) {
		t.Errorf("diff --manifests --skip-unsupported: exit %d (%v)\n%s%s", exitCode(err), err, out, errOut)
	}
}
