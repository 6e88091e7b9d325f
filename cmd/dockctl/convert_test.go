package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const convertCompose = `name: shop
services:
  web:
    image: shop/web:${TAG:-1}
    ports: ["8080:80"]
    environment:
      DB_URL: postgres://db:5432/shop
    depends_on:
      db: {condition: service_healthy}
    volumes:
      - ./static:/srv/static:ro
  db:
    image: postgres:16
    expose: ["5432"]
    healthcheck:
      test: pg_isready
    volumes: [data:/var/lib/postgresql/data]
    secrets: [db_password]
  worker:
    build: ./worker
volumes:
  data: {}
secrets:
  db_password:
    file: ./pw.txt
`

// convertProject writes the Compose project of convertCompose, with .env
// setting TAG, and returns its file.
func convertProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{"compose.yaml": convertCompose, ".env": "TAG=2.5\n", "pw.txt": "pw\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "compose.yaml")
}

// convert prints the manifests, names on stderr what it could not
// convert (build, the hostPath gate with its flag), and what it prints is
// what apply -f stores.
func TestConvertPrintsWhatApplyStores(t *testing.T) {
	file := convertProject(t)
	out, errOut, err := run(t, "", "convert", "-f", file)
	if err != nil {
		t.Fatalf("convert: %v %s", err, errOut)
	}
	for _, want := range []string{"image: shop/web:2.5", "name: wait-for-db", "type: LoadBalancer", "claimName: data", "kind: Secret"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{
		"Warning: service worker: build: not converted",
		"Warning: service web: volumes: spec.template.spec.volumes[0].hostPath.path: a host path mount (" + filepath.Join(filepath.Dir(file), "static") + "); the controller refuses it unless started with --allow-host-path=",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	dir := t.TempDir()
	applied, errOut, err := run(t, out, "--state-dir", dir, "apply", "-f", "-")
	if err != nil {
		t.Fatalf("apply of the converted manifests: %v %s", err, errOut)
	}
	for _, want := range []string{"deployment/web created", "service/web-published created", "persistentvolumeclaim/data created", "secret/db-password created", "configmap/web-env created"} {
		if !strings.Contains(applied, want) {
			t.Errorf("apply output lacks %q:\n%s", want, applied)
		}
	}
}

// -o DIR writes one file per object, NAME-KIND.yaml, lists them, and the
// directory applies as the printed stream does; -n sets the namespace.
func TestConvertOutputDir(t *testing.T) {
	file := convertProject(t)
	out := filepath.Join(t.TempDir(), "k8s")
	listed, errOut, err := run(t, "", "-n", "shop", "convert", "-f", file, "--profile", "none", "--project-name", "store", "-o", out)
	if err != nil {
		t.Fatalf("convert: %v %s", err, errOut)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"data-persistentvolumeclaim.yaml", "db-deployment.yaml", "db-password-secret.yaml", "db-service.yaml",
		"shop-namespace.yaml", "web-deployment.yaml", "web-env-configmap.yaml", "web-published-service.yaml", "web-service.yaml", "worker-deployment.yaml", "worker-service.yaml"}
	if !slices.Equal(names, want) {
		t.Fatalf("files %v, want %v", names, want)
	}
	if strings.Count(listed, "\n") != len(want) {
		t.Errorf("listed %q", listed)
	}
	b, err := os.ReadFile(filepath.Join(out, "web-deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "namespace: shop") || !strings.Contains(string(b), "app.kubernetes.io/part-of: store") {
		t.Errorf("web-deployment.yaml:\n%s", b)
	}
	if _, errOut, err := run(t, "", "--state-dir", t.TempDir(), "-n", "shop", "apply", "-f", out); err != nil {
		t.Fatalf("apply -f %s: %v %s", out, err, errOut)
	}
}

// The wait init container's image and command are flags, for hosts
// without the default image (no registry); a bad use is an error.
func TestConvertFlags(t *testing.T) {
	file := convertProject(t)
	out, errOut, err := run(t, "", "convert", "-f", file, "--wait-image", "dockctl-workload:dev",
		"--wait-command", "/workload", "--wait-command", "wait", "--wait-command", "{host}:{port}", "--claim-size", "5Gi")
	if err != nil {
		t.Fatalf("convert: %v %s", err, errOut)
	}
	for _, want := range []string{"image: dockctl-workload:dev\n        name: wait-for-db", "- db:5432", "storage: 5Gi"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"convert"}, "-f is required"},
		{[]string{"convert", "-f", file, "extra"}, "Unexpected args"},
		{[]string{"convert", "-f", filepath.Join(t.TempDir(), "none.yaml")}, "load compose project"},
	} {
		if _, _, err := run(t, "", tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err %v, want %q", tt.args, err, tt.want)
		}
	}
}

// -o DIR writes a Secret's file readable by its owner only: it holds the
// secret's value, read from a file the owner may keep private (0600), and
// an earlier conversion's file is made private too.
func TestConvertOutputDirKeepsSecretsPrivate(t *testing.T) {
	for _, tt := range []struct {
		name  string
		prior os.FileMode // of db-password-secret.yaml before, 0: none
	}{
		{"a new directory", 0},
		{"a secret file of an earlier conversion, readable by all", 0o644},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := convertProject(t)
			out := filepath.Join(t.TempDir(), "k8s")
			secret := filepath.Join(out, "db-password-secret.yaml")
			if tt.prior != 0 {
				if err := os.MkdirAll(out, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(secret, []byte("old\n"), tt.prior); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(secret, tt.prior); err != nil {
					t.Fatal(err)
				}
			}
			if _, errOut, err := run(t, "", "convert", "-f", file, "-o", out); err != nil {
				t.Fatalf("convert: %v %s", err, errOut)
			}
			fi, err := os.Stat(secret)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got&0o077 != 0 {
				t.Errorf("%s: mode %v, want no access but the owner's", secret, got)
			}
		})
	}
}

// -o DIR writes inside DIR only: a symbolic link where an object's file
// goes (a checked-out repository's k8s/ may hold one) is refused, never
// followed to replace or create a file elsewhere.
func TestConvertOutputDirNeverWritesThroughASymlink(t *testing.T) {
	for _, tt := range []struct {
		name   string
		exists bool // the link's target exists
	}{
		{"a link to a file outside", true},
		{"a dangling link to a path outside", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := convertProject(t)
			out := filepath.Join(t.TempDir(), "k8s")
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			victim := filepath.Join(t.TempDir(), "victim")
			if tt.exists {
				if err := os.WriteFile(victim, []byte("mine\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(victim, filepath.Join(out, "web-deployment.yaml")); err != nil {
				t.Fatal(err)
			}
			_, errOut, err := run(t, "", "convert", "-f", file, "-o", out)
			if err == nil || !strings.Contains(err.Error()+errOut, "web-deployment.yaml") {
				t.Errorf("convert: err %v, stderr %s; want a refusal naming web-deployment.yaml", err, errOut)
			}
			b, rerr := os.ReadFile(victim)
			switch {
			case tt.exists && string(b) != "mine\n":
				t.Errorf("the file outside was written: %q", b)
			case !tt.exists && rerr == nil:
				t.Errorf("a file outside was created: %q", b)
			}
		})
	}
}

// -o DIR names on stderr each manifest file already in DIR that this
// conversion did not write (a service since removed, a file of one's
// own): `apply -f DIR` would apply it with the others.
func TestConvertOutputDirNamesFilesItDidNotWrite(t *testing.T) {
	for _, tt := range []struct {
		name, file string
		warned     bool
	}{
		{"a manifest of a removed service", "old-deployment.yaml", true},
		{"a JSON manifest", "extra.json", true},
		{"a file apply does not read", "README.md", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := convertProject(t)
			out := filepath.Join(t.TempDir(), "k8s")
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(out, tt.file), []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, errOut, err := run(t, "", "convert", "-f", file, "-o", out)
			if err != nil {
				t.Fatalf("convert: %v %s", err, errOut)
			}
			if got := strings.Contains(errOut, "Warning: "+filepath.Join(out, tt.file)); got != tt.warned {
				t.Errorf("warned about %s: %v, want %v; stderr:\n%s", tt.file, got, tt.warned, errOut)
			}
		})
	}
}
