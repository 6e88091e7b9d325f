package main

import (
	"strings"
	"testing"
)

// Each imperative create prints, with --dry-run=client -o yaml, the object
// kubectl's generator makes (golden files), and stores nothing.
func TestCreateDryRunPrintsKubectlsObject(t *testing.T) {
	const d = "testdata/create/"
	for _, tt := range []struct {
		golden string
		args   []string
	}{
		{"create-configmap", []string{"create", "configmap", "app", "--from-literal=LOG=debug", "--from-file=" + d + "greeting.txt", "--from-file=motd=" + d + "greeting.txt"}},
		{"create-configmap-env-file", []string{"create", "cm", "app", "--from-env-file=" + d + "app.env", "-n", "team"}},
		{"create-secret-generic", []string{"create", "secret", "generic", "db", "--from-literal=password=s3cret", "--from-env-file=" + d + "app.env"}},
		{"create-secret-tls", []string{"create", "secret", "tls", "web-tls", "--cert=" + d + "tls.crt", "--key=" + d + "tls.key"}},
		{"create-secret-docker-registry", []string{"create", "secret", "docker-registry", "regcred", "--docker-server=registry.example.com", "--docker-username=me", "--docker-password=pw", "--docker-email=me@example.com"}},
		{"create-deployment", []string{"create", "deployment", "web", "--image=registry.example.com/team/web_app:1.2", "--replicas=3", "--port=8080"}},
		{"create-deployment-command", []string{"create", "deploy", "job", "--image=busybox", "--", "sleep", "3600"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			dir := t.TempDir()
			out, errOut, err := run(t, "", append([]string{"--state-dir", dir}, withFlags(tt.args, "--dry-run=client", "-o", "yaml")...)...)
			if err != nil {
				t.Fatalf("%v stderr %q", err, errOut)
			}
			golden(t, tt.golden, []byte(out))
			if got, _, _ := run(t, "", "--state-dir", dir, "get", "all", "-o", "name"); strings.TrimSpace(got) != "" {
				t.Fatalf("a dry run stored %q", got)
			}
		})
	}
}

// Without --dry-run the object is stored as apply -f of its YAML would
// store it, and a second create of the same name is kubectl's
// AlreadyExists.
func TestCreateStoresAndRefusesAnExistingName(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		out   string
		check []string // a get that must succeed, and its output
		want  string
	}{
		{[]string{"create", "configmap", "app", "--from-literal=A=1"}, "configmap/app created\n",
			[]string{"get", "cm", "app", "-o", "jsonpath={.data.A}"}, "1"},
		{[]string{"create", "secret", "generic", "db", "--from-literal=p=x"}, "secret/db created\n",
			[]string{"get", "secret", "db", "-o", "jsonpath={.type}"}, "Opaque"},
		{[]string{"create", "deployment", "web", "--image=nginx", "--replicas=2"}, "deployment/web created\n",
			[]string{"get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"}, "2"},
	} {
		t.Run(strings.Join(tt.args[:2], " "), func(t *testing.T) {
			dir := t.TempDir()
			out, errOut, err := run(t, "", append([]string{"--state-dir", dir}, tt.args...)...)
			if err != nil || out != tt.out {
				t.Fatalf("%q %v stderr %q, want %q", out, err, errOut, tt.out)
			}
			got, _, err := run(t, "", append([]string{"--state-dir", dir}, tt.check...)...)
			if err != nil || got != tt.want {
				t.Fatalf("%v: %q %v, want %q", tt.check, got, err, tt.want)
			}
			if _, _, err := run(t, "", append([]string{"--state-dir", dir}, tt.args...)...); err == nil || !strings.Contains(err.Error(), "already exists") {
				t.Fatalf("second create: %v, want AlreadyExists", err)
			}
		})
	}
}

func TestCreateRefusesBadInput(t *testing.T) {
	const d = "testdata/create/"
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"literal without =", []string{"create", "configmap", "a", "--from-literal=A"}, "invalid literal source A, expected key=value"},
		{"duplicate key", []string{"create", "configmap", "a", "--from-literal=A=1", "--from-literal=A=2"}, "cannot add key A, another key by that name already exists"},
		{"invalid key", []string{"create", "secret", "generic", "a", "--from-literal=a b=1"}, "not a valid key name"},
		{"missing file", []string{"create", "configmap", "a", "--from-file=" + d + "nothing"}, "nothing"},
		{"tls key not matching", []string{"create", "secret", "tls", "t", "--cert=" + d + "tls.crt", "--key=" + d + "greeting.txt"}, "failed to load key pair"},
		{"tls without key", []string{"create", "secret", "tls", "t", "--cert=" + d + "tls.crt"}, "key and cert must be specified"},
		{"docker-registry without credentials", []string{"create", "secret", "docker-registry", "r"}, "--docker-username"},
		{"deployment without image", []string{"create", "deployment", "web"}, `required flag(s) "image" not set`},
		{"invalid name", []string{"create", "configmap", "Bad_Name"}, "Bad_Name"},
		{"-o of a format create does not print", []string{"create", "configmap", "a", "-o", "wide"}, "allowed formats are: json,name,yaml"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := run(t, "", append([]string{"--state-dir", t.TempDir()}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// withFlags is args with flags added before a "--" (what follows it is a
// command).
func withFlags(args []string, flags ...string) []string {
	out := append([]string{}, args...)
	for i, a := range args {
		if a == "--" {
			return append(append(append([]string{}, args[:i]...), flags...), args[i:]...)
		}
	}
	return append(out, flags...)
}
