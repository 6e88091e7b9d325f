package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/sourcedir"
	"github.com/dockctl/dockctl/store"
)

// `diff -f` masks a Secret's values as kubectl diff does ("***"); the
// deletions `diff --manifests` previews print the live object raw, so a
// Secret removed from the directory has its values printed (base64 in
// data, and in clear in kubectl's last-applied-configuration annotation
// when it was applied with stringData).
func TestReview12bDiffManifestsPrintsDeletedSecretValues(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(t.TempDir(), "k8s")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const secret = `apiVersion: v1
kind: Secret
metadata:
  name: db
stringData:
  password: hunter2-s3cr3t
`
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(webYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "db.yaml"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(state, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sourcedir.New(st, sourcedir.Options{Paths: []string{dir}}).Sync(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "db.yaml")); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(t, "", "--state-dir", state, "--instance", "t1", "diff", "--manifests", dir)
	if code := exitCode(err); code != 1 {
		t.Fatalf("diff --manifests: exit %d, want 1 (%v)\n%s%s", code, err, out, errOut)
	}
	if !strings.Contains(out, "secret/db") {
		t.Fatalf("the deletion of secret/db is not previewed:\n%s", out)
	}
	for _, leak := range []string{"hunter2-s3cr3t", base64.StdEncoding.EncodeToString([]byte("hunter2-s3cr3t"))} {
		if strings.Contains(out, leak) {
			t.Errorf("diff --manifests prints the deleted Secret's value %q (diff -f masks it as ***):\n%s", leak, out)
		}
	}
}
