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

// Every diff that prints a Secret masks its values as kubectl diff does,
// in data and in kubectl's last-applied-configuration annotation: one it
// would create, change or delete, by diff -f and by diff --manifests
// (diff -f has no prune: it never deletes).
func TestDiffMasksSecretValues(t *testing.T) {
	secret := func(value string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  annotations:\n" +
			"    kubectl.kubernetes.io/last-applied-configuration: '{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"db\"},\"stringData\":{\"password\":\"" + value + "\"}}'\n" +
			"stringData: {password: " + value + "}\n"
	}
	const before, after = "old-" + cliSecret, "new-" + cliSecret
	tests := []struct {
		name      string
		stored    string // the Secret stored first ("": none)
		viaDir    bool   // stored by the manifests directory's sync, not apply -f
		next      string // the Secret in the files ("": removed)
		manifests bool   // diff --manifests rather than diff -f
		want      []string
	}{
		{"diff -f of a Secret created", "", false, secret(after), false,
			[]string{"+++ merged/secret/db", "+  password: '***'", "+    kubectl.kubernetes.io/last-applied-configuration: '***'"}},
		{"diff -f of a Secret changed", secret(before), false, secret(after), false,
			[]string{"-  password: '*** (before)'", "+  password: '*** (after)'", "+    kubectl.kubernetes.io/last-applied-configuration: '*** (after)'"}},
		{"diff --manifests of a Secret created", "", true, secret(after), true,
			[]string{"+++ merged/secret/db", "+  password: '***'", "+    kubectl.kubernetes.io/last-applied-configuration: '***'"}},
		{"diff --manifests of a Secret changed", secret(before), true, secret(after), true,
			[]string{"-  password: '*** (before)'", "+  password: '*** (after)'", "-    kubectl.kubernetes.io/last-applied-configuration: '*** (before)'"}},
		{"diff --manifests of a Secret deleted", secret(before), true, "", true,
			[]string{"--- live/secret/db", "-  password: '***'", "-    kubectl.kubernetes.io/last-applied-configuration: '***'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := t.TempDir()
			dir := filepath.Join(t.TempDir(), "k8s")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			// A deployment besides, so that the directory is never empty.
			if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(webYAML), 0o644); err != nil {
				t.Fatal(err)
			}
			writeSecret := func(content string) {
				t.Helper()
				path := filepath.Join(dir, "db.yaml")
				if content == "" {
					if err := os.Remove(path); err != nil {
						t.Fatal(err)
					}
					return
				}
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tt.stored != "" {
				writeSecret(tt.stored)
				if tt.viaDir {
					st, err := store.Open(state, "t1")
					if err != nil {
						t.Fatal(err)
					}
					if _, err := sourcedir.New(st, sourcedir.Options{Paths: []string{dir}}).Sync(); err != nil {
						t.Fatal(err)
					}
				} else if _, errOut, err := run(t, "", "--state-dir", state, "--instance", "t1", "apply", "-f", dir); err != nil {
					t.Fatalf("apply: %v %s", err, errOut)
				}
			}
			writeSecret(tt.next)
			args := []string{"--state-dir", state, "--instance", "t1", "diff", "-f", dir}
			if tt.manifests {
				args = []string{"--state-dir", state, "--instance", "t1", "diff", "--manifests", dir}
			}
			out, errOut, err := run(t, "", args...)
			if code := exitCode(err); code != 1 {
				t.Fatalf("exit %d, want 1 (%v)\n%s%s", code, err, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w+"\n") {
					t.Errorf("no line %q in:\n%s", w, out)
				}
			}
			for _, v := range []string{before, after} {
				for _, leak := range []string{v, base64.StdEncoding.EncodeToString([]byte(v))} {
					if strings.Contains(out+errOut, leak) {
						t.Errorf("the diff shows the value %q:\n%s%s", leak, out, errOut)
					}
				}
			}
		})
	}
}

// diff masks a Secret's data, and its annotations can hold the values too:
// a Secret exported with `kubectl get secret -o yaml` carries
// kubectl.kubernetes.io/last-applied-configuration with every value in it.
// describe leaves that annotation out for this reason (configs_cli.go
// lastApplied); diff, whose doc says it shows "which keys change and never
// what they hold", must not print it either.
func TestDiffMasksSecretValuesInLastAppliedAnnotation(t *testing.T) {
	dir := t.TempDir()
	secret := func(value string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  annotations:\n" +
			"    kubectl.kubernetes.io/last-applied-configuration: '{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"db\"},\"stringData\":{\"password\":\"" + value + "\"}}'\n" +
			"stringData: {password: " + value + "}\n"
	}
	if _, _, err := run(t, secret(cliSecret), "--state-dir", dir, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	// A change of the value: the diff prints both sides of the annotation.
	out, _, _ := run(t, secret("new-"+cliSecret), "--state-dir", dir, "diff", "-f", "-")
	if !strings.Contains(out, "secret/db") {
		t.Fatalf("no diff of the secret:\n%s", out)
	}
	if strings.Contains(out, cliSecret) {
		t.Errorf("diff shows the Secret's value:\n%s", out)
	}
}

// diff of a change of an immutable Secret's data is the error apply gives
// (kubectl diff's server-side dry run), and names no value.
func TestDiffOfAnImmutableSecretChangeIsRefused(t *testing.T) {
	dir := t.TempDir()
	secret := func(value string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nimmutable: true\nstringData: {password: " + value + "}\n"
	}
	if _, _, err := run(t, secret(cliSecret), "--state-dir", dir, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	if out, _, err := run(t, secret(cliSecret), "--state-dir", dir, "diff", "-f", "-"); err != nil || out != "" {
		t.Fatalf("diff of what is applied: %v %q", err, out)
	}
	out, _, err := run(t, secret("new-"+cliSecret), "--state-dir", dir, "diff", "-f", "-")
	if exitCode(err) != 2 || out != "" || !strings.Contains(err.Error(), "apply would refuse it") ||
		!strings.Contains(err.Error(), "data: field is immutable when `immutable` is set") {
		t.Fatalf("diff of an immutable secret's change: %v %q, want exit 2 naming the refusal", err, out)
	}
	if strings.Contains(err.Error(), cliSecret) {
		t.Errorf("the error shows the value: %v", err)
	}
}

// `diff -f` masks a Secret's values as kubectl diff does ("***"); the
// deletions `diff --manifests` previews must mask them too, not print the
// live object raw: a Secret removed from the directory would have its
// values printed (base64 in data, and in clear in kubectl's
// last-applied-configuration annotation when it was applied with
// stringData).
func TestDiffManifestsMasksDeletedSecretValues(t *testing.T) {
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
