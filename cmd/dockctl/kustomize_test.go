package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fixture: a base without apiVersion/kind (as most public bundles are
// written) with a configMapGenerator, and an overlay with namePrefix, an
// images transformer, replicas and a merging configMapGenerator.
const kustomizeOverlay = "testdata/kustomize/overlay"

func TestKustomizePrintsTheBuild(t *testing.T) {
	for _, tt := range []struct{ name, dir string }{
		{"kustomize-base", "testdata/kustomize/base"},
		{"kustomize-overlay", kustomizeOverlay},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, err := run(t, "", "--state-dir", t.TempDir(), "kustomize", tt.dir)
			if err != nil {
				t.Fatalf("kustomize: %v stderr %q", err, errOut)
			}
			golden(t, tt.name, []byte(out))
		})
	}
}

func TestApplyKustomizeStoresTheRenderedObjects(t *testing.T) {
	dir := t.TempDir()
	out, errOut, err := run(t, "", "--state-dir", dir, "apply", "-k", kustomizeOverlay)
	if err != nil {
		t.Fatalf("apply -k: %v stderr %q", err, errOut)
	}
	golden(t, "kustomize-apply", []byte(out))
	got, _, err := run(t, "", "--state-dir", dir, "get", "deployment", "prod-web", "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].envFrom[0].configMapRef.name}")
	if err != nil {
		t.Fatal(err)
	}
	if want := "2 dockctl-workload:1.2 prod-web-config-"; !strings.HasPrefix(got, want) {
		t.Fatalf("stored deployment: %q, want prefix %q", got, want)
	}
	cm := strings.Fields(got)[2]
	data, _, err := run(t, "", "--state-dir", dir, "get", "configmap", cm, "-o", "jsonpath={.data.GREETING}")
	if err != nil || data != "hello from prod" {
		t.Fatalf("configmap %s GREETING = %q (%v)", cm, data, err)
	}
	// diff -k of what is stored: no difference, exit 0.
	if out, _, err := run(t, "", "--state-dir", dir, "diff", "-k", kustomizeOverlay); err != nil || out != "" {
		t.Fatalf("diff -k after apply -k: %q %v", out, err)
	}
	out, errOut, err = run(t, "", "--state-dir", dir, "delete", "-k", kustomizeOverlay)
	if err != nil {
		t.Fatalf("delete -k: %v stderr %q", err, errOut)
	}
	for _, want := range []string{"deployment/prod-web deleted", "service/prod-web deleted", "configmap/" + cm + " deleted"} {
		if !strings.Contains(out, want) {
			t.Errorf("delete -k output lacks %q:\n%s", want, out)
		}
	}
}

func TestKustomizationInputErrors(t *testing.T) {
	remote := t.TempDir()
	if err := os.WriteFile(filepath.Join(remote, "kustomization.yaml"), []byte("resources:\n- github.com/org/repo//deploy?ref=v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"-f of a kustomization directory hints -k", []string{"apply", "-f", kustomizeOverlay}, "use -k " + kustomizeOverlay},
		{"diff -f of a kustomization directory hints -k", []string{"diff", "-f", kustomizeOverlay}, "use -k"},
		{"-f and -k together", []string{"apply", "-f", "x.yaml", "-k", kustomizeOverlay}, "only one of -f or -k can be specified"},
		{"-k of a directory without kustomization", []string{"apply", "-k", "testdata"}, "no kustomization file"},
		{"remote base", []string{"apply", "-k", remote}, "cannot be fetched"},
		{"kustomize of a remote base", []string{"kustomize", remote}, "cannot be fetched"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := run(t, "", append([]string{"--state-dir", t.TempDir()}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
