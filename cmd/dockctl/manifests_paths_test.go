package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// --manifests paths must not overlap, as given or with their links
// resolved: a file read through two of them would be refused as
// declaring what it declares itself.
func TestCheckManifestPaths(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"k8s/apps", "k8s-staging", "git/wt1/k8s"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// git-sync's link, and a second name for the checkout.
	if err := os.Symlink(filepath.Join(root, "git/wt1"), filepath.Join(root, "git/current")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "k8s"), filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	r := func(p string) string { return filepath.Join(root, p) }
	tests := []struct {
		name  string
		paths []string
		want  string // "" when accepted
	}{
		{"one", []string{r("k8s")}, ""},
		{"siblings sharing a prefix", []string{r("k8s"), r("k8s-staging")}, ""},
		{"apart, one through a link", []string{r("git/current/k8s"), r("k8s")}, ""},
		{"not there yet", []string{r("git/current/k8s"), r("later/k8s")}, ""},
		{"relative", []string{"k8s"}, "must be an absolute path"},
		{"empty", []string{""}, "empty path"},
		{"twice", []string{r("k8s"), r("k8s") + "/"}, "given twice"},
		{"nested", []string{r("k8s"), r("k8s/apps")}, "overlap"},
		{"nested, inner first", []string{r("k8s/apps"), r("k8s")}, "overlap"},
		{"a file inside", []string{r("k8s"), r("k8s/apps/web.yaml")}, "overlap"},
		{"nested through a link", []string{r("alias/apps"), r("k8s")}, "overlap"},
		{"one directory, two names", []string{r("alias"), r("k8s")}, "overlap"},
		{"nested below a missing part", []string{r("k8s"), r("alias/later/k8s")}, "overlap"},
		{"the root", []string{"/", r("k8s")}, "overlap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkManifestPaths(tt.paths)
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("checkManifestPaths(%q) = %v, want %q", tt.paths, err, tt.want)
			}
		})
	}
}

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
	ingress := "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: web\n"
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(webYAML+"---\n"+ingress), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(t, "", "--state-dir", t.TempDir(), "diff", "--manifests", dir, "--skip-unsupported")
	want := "Warning: " + filepath.Join(dir, "web.yaml") + `:`
	if exitCode(err) != 1 || !strings.Contains(out, "+++ merged/web") || !strings.Contains(errOut, want) || !strings.Contains(errOut, `skipped NetworkPolicy "web": not supported by dockctl`) {
		t.Errorf("diff --manifests --skip-unsupported: exit %d (%v)\n%s%s", exitCode(err), err, out, errOut)
	}
}
