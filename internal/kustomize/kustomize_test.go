package kustomize

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n"

func TestFileFindsTheNamesKustomizeLooksFor(t *testing.T) {
	for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, map[string]string{name: "resources: []\n"})
			if got := File(dir); got != filepath.Join(dir, name) {
				t.Fatalf("File = %q", got)
			}
		})
	}
	if got := File(t.TempDir()); got != "" {
		t.Fatalf("File of an empty directory = %q", got)
	}
}

func TestBuildRunsGeneratorsAndRewritesReferences(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"kustomization.yaml": "resources: [pod.yaml]\nconfigMapGenerator:\n- name: cfg\n  literals: [A=1]\n",
		"pod.yaml":           "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - {name: web, image: x, envFrom: [{configMapRef: {name: cfg}}]}\n",
	})
	out, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	i := strings.Index(s, "name: cfg-")
	if i < 0 {
		t.Fatalf("no hash-suffixed ConfigMap in\n%s", s)
	}
	name := strings.Fields(s[i:])[1]
	if strings.Count(s, name) != 2 {
		t.Fatalf("the Deployment does not refer to %s:\n%s", name, s)
	}
}

func TestBuildRefusesWhatWouldBeFetched(t *testing.T) {
	for name, kust := range map[string]string{
		"git base":         "resources:\n- github.com/kubernetes-sigs/kustomize/examples/helloWorld?ref=v1.0.6\n",
		"https resource":   "resources:\n- https://raw.example.com/app.yaml\n",
		"ssh base":         "resources:\n- git@github.com:org/repo.git//deploy\n",
		"remote in a base": "resources: [base]\n",
		"remote env file":  "configMapGenerator:\n- name: c\n  envs: [https://example.com/app.env]\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, map[string]string{"kustomization.yaml": kust,
				"base/kustomization.yaml": "resources:\n- https://example.com/x.yaml\n"})
			_, err := Build(dir)
			if !errors.Is(err, ErrRemote) {
				t.Fatalf("err = %v, want ErrRemote", err)
			}
		})
	}
}

func TestBuildRefusesFilesOutsideTheRoot(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"cm.yaml": cm, "app/kustomization.yaml": "resources: [../cm.yaml]\n"})
	if _, err := Build(filepath.Join(dir, "app")); err == nil || !strings.Contains(err.Error(), "security") {
		t.Fatalf("err = %v, want kustomize's load restrictor error", err)
	}
}

func TestBuildWithoutKustomizationFileSaysSo(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"cm.yaml": cm})
	if _, err := Build(dir); err == nil || !strings.Contains(err.Error(), "no kustomization file") {
		t.Fatalf("err = %v", err)
	}
}
