package main

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// configFixtureYAML: ConfigMaps and Secrets of every shape, in default and
// in another namespace, and a deployment that uses some of them.
var configFixtureYAML = `apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web.config
  labels: {app: web}
  annotations:
    team: shop
    kubectl.kubernetes.io/last-applied-configuration: '{"leaks":"everything"}'
data:
  nginx.conf: |
    server {
      listen 80;
    }
  LOG_LEVEL: info
binaryData:
  logo.png: ` + base64.StdEncoding.EncodeToString([]byte{0x89, 'P', 'N', 'G', 0}) + `
---
apiVersion: v1
kind: ConfigMap
metadata: {name: empty}
immutable: true
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web.config, namespace: team}
data: {a: "1"}
---
apiVersion: v1
kind: Secret
metadata: {name: db, labels: {app: web}}
type: kubernetes.io/basic-auth
stringData: {username: admin, password: ` + cliSecret + `}
---
apiVersion: v1
kind: Secret
metadata:
  name: tls
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{"stringData":{"tls.key":"` + cliSecret + `"}}'}
type: kubernetes.io/tls
immutable: true
stringData: {tls.crt: CERT, tls.key: ` + cliSecret + `}
---
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: team}
data: {token: ` + base64.StdEncoding.EncodeToString([]byte(cliSecret)) + `}
`

var fixtureTime = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// configFixture applies the fixture (and a deployment that refers to
// db and web.config) to a fresh state directory and returns it with its
// records, their times fixed for golden output.
func configFixture(t *testing.T) (dir string, cms []*store.ConfigMapRecord, secs []*store.SecretRecord) {
	t.Helper()
	dir = t.TempDir()
	if out, errOut, err := run(t, configFixtureYAML, "--state-dir", dir, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply: %v %s %s", err, out, errOut)
	}
	st, err := store.Open(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	d := &manifests.Deployment{APIVersion: manifests.APIVersion, Kind: manifests.Kind,
		Metadata: manifests.ObjectMeta{Name: "web"},
		Spec: manifests.DeploymentSpec{Selector: &manifests.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: manifests.PodTemplateSpec{Metadata: manifests.TemplateMeta{Labels: map[string]string{"app": "web"}},
				Spec: manifests.PodSpec{
					Containers: []manifests.Container{{Name: "web", Image: "nginx",
						Env: []manifests.EnvVar{{Name: "PASSWORD", ValueFrom: &manifests.EnvVarSource{SecretKeyRef: &manifests.SecretKeySelector{Name: "db", Key: "password"}}}}}},
					Volumes: []manifests.Volume{{Name: "conf", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "web.config"}}},
				}}}}
	if _, err := st.Apply(store.Deployments(d), store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	cmAll, errs := st.ListConfigMaps()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	secAll, errs := st.ListSecrets()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, r := range cmAll {
		r.Created, r.Object.Metadata.CreationTimestamp = fixtureTime, &fixtureTime
	}
	for _, r := range secAll {
		r.Created, r.Object.Metadata.CreationTimestamp = fixtureTime, &fixtureTime
	}
	return dir, cmAll, secAll
}

func inNamespace[T any](recs []*store.ObjectRecord[T], meta func(*T) *manifests.ObjectMeta, ns string) []*store.ObjectRecord[T] {
	var out []*store.ObjectRecord[T]
	for _, r := range recs {
		if meta(&r.Object).NamespaceOrDefault() == ns {
			out = append(out, r)
		}
	}
	return out
}

func cmMeta(c *manifests.ConfigMap) *manifests.ObjectMeta { return &c.Metadata }
func secMeta(s *manifests.Secret) *manifests.ObjectMeta   { return &s.Metadata }

func TestRenderConfigListings(t *testing.T) {
	_, cms, secs := configFixture(t)
	now := fixtureTime.Add(90 * time.Minute)
	for _, tt := range []struct {
		golden, output string
		all, secrets   bool
	}{
		{"get-configmaps-table", "table", false, false},
		{"get-configmaps-all-namespaces", "wide", true, false},
		{"get-configmaps-name", "name", false, false},
		{"get-configmaps-yaml", "yaml", false, false},
		{"get-secrets-table", "table", false, true},
		{"get-secrets-all-namespaces", "table", true, true},
		{"get-secrets-json", "json", false, true},
		{"get-secrets-yaml", "yaml", false, true},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			var buf bytes.Buffer
			var err error
			if tt.secrets {
				list := secs
				if !tt.all {
					list = inNamespace(secs, secMeta, "default")
				}
				err = renderSecrets(&buf, now, list, pr(t, tt.output), false, tt.all)
			} else {
				list := cms
				if !tt.all {
					list = inNamespace(cms, cmMeta, "default")
				}
				err = renderConfigMaps(&buf, now, list, pr(t, tt.output), false, tt.all)
			}
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.golden, buf.Bytes())
		})
	}
}

// describe shows a ConfigMap's data and a Secret's sizes, never a value of
// a Secret (nor kubectl's last-applied annotation, which holds them).
func TestDescribeConfigObjects(t *testing.T) {
	dir, _, _ := configFixture(t)
	for _, tt := range []struct{ golden, kind, name string }{
		{"describe-configmap", "configmap", "web.config"},
		{"describe-configmap-empty", "cm", "empty"},
		{"describe-secret", "secret", "db"},
		{"describe-secret-tls", "secrets", "tls"},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			out, errOut, err := run(t, "", "--state-dir", dir, "describe", tt.kind, tt.name)
			if err != nil {
				t.Fatalf("%v %s", err, errOut)
			}
			golden(t, tt.golden, []byte(out))
			if strings.Contains(out, cliSecret) || strings.Contains(out, base64.StdEncoding.EncodeToString([]byte(cliSecret))) || strings.Contains(out, "leaks") {
				t.Errorf("describe shows a secret value:\n%s", out)
			}
		})
	}
}

// The commands end to end, without a Docker daemon: get by name and
// selector, -n and -A, values only with -o yaml|json, delete.
func TestConfigCommands(t *testing.T) {
	dir, _, _ := configFixture(t)
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	cli := func(args ...string) (string, string, error) {
		return run(t, "", append([]string{"--state-dir", dir}, args...)...)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(cliSecret))
	steps := []struct {
		args    []string
		want    string // every line of it in the output
		wantErr string
		secret  bool // the output may hold the secret (base64)
	}{
		{args: []string{"get", "cm"}, want: "NAME         DATA   AGE\nempty        0      "},
		{args: []string{"get", "configmaps", "-n", "team", "-o", "name"}, want: "configmap/web.config\n"},
		{args: []string{"get", "configmap/web.config", "-o", "json"}, want: `"LOG_LEVEL": "info"`},
		{args: []string{"get", "secrets", "-l", "app=web"}, want: "db     kubernetes.io/basic-auth   2      "},
		{args: []string{"get", "secret", "token", "-n", "team", "-o", "yaml"}, want: "  token: " + b64 + "\n", secret: true},
		{args: []string{"get", "secrets", "-A", "-o", "name"}, want: "secret/db\nsecret/tls\nsecret/token\n"},
		{args: []string{"get", "secret", "nope"}, wantErr: `secrets "nope" not found`},
		{args: []string{"get", "cm", "-n", "empty-ns"}, want: ""},
		{args: []string{"describe", "secret", "token", "-n", "team"}, want: "token:  14 bytes\n"},
		{args: []string{"describe", "cm", "nope"}, wantErr: `configmaps "nope" not found`},
		{args: []string{"delete", "cm", "web.config", "-n", "team"}, want: "configmap/web.config deleted\n"},
		{args: []string{"delete", "secret/db"}, want: "secret/db deleted\n"},
		{args: []string{"delete", "secret", "db"}, wantErr: `secrets "db" not found`},
		{args: []string{"get", "cm", "-A", "-o", "name"}, want: "configmap/empty\nconfigmap/web.config\n"},
		{args: []string{"describe", "configmap", "web.config", "-n", "team"}, wantErr: `configmaps "web.config" not found in namespace "team"`},
	}
	for _, s := range steps {
		out, errOut, err := cli(s.args...)
		if s.wantErr != "" {
			if err == nil || err.Error() != s.wantErr {
				t.Fatalf("%v: error %v, want %q", s.args, err, s.wantErr)
			}
			continue
		}
		if err != nil || !strings.Contains(out, s.want) {
			t.Fatalf("%v: %v, stderr %q, out:\n%s\nwant it to contain %q", s.args, err, errOut, out, s.want)
		}
		if !s.secret && (strings.Contains(out, cliSecret) || strings.Contains(out, b64)) {
			t.Fatalf("%v shows a secret value:\n%s", s.args, out)
		}
	}
	if _, errOut, _ := cli("get", "cm", "-n", "empty-ns"); errOut != "No resources found in empty-ns namespace.\n" {
		t.Errorf("empty listing: %q", errOut)
	}
}

// describe deployment says where a variable comes from, never its value.
func TestDescribeTemplateEnv(t *testing.T) {
	yes := true
	c := &manifests.Container{Name: "web", Image: "nginx", ImagePullPolicy: "IfNotPresent",
		Env: []manifests.EnvVar{
			{Name: "PLAIN", Value: "v"},
			{Name: "PASSWORD", ValueFrom: &manifests.EnvVarSource{SecretKeyRef: &manifests.SecretKeySelector{Name: "db", Key: "password"}}},
			{Name: "LEVEL", ValueFrom: &manifests.EnvVarSource{ConfigMapKeyRef: &manifests.ConfigMapKeySelector{Name: "web.config", Key: "LOG_LEVEL", Optional: &yes}}},
			{Name: "POD", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "MEM", ValueFrom: &manifests.EnvVarSource{ResourceFieldRef: &manifests.ResourceFieldSelector{Resource: "limits.memory"}}},
		},
		EnvFrom: []manifests.EnvFromSource{
			{ConfigMapRef: &manifests.ConfigMapEnvSource{Name: "web.config"}},
			{Prefix: "DB_", SecretRef: &manifests.SecretEnvSource{Name: "db", Optional: &yes}},
		}}
	var buf bytes.Buffer
	describeTemplateContainer(&buf, &manifests.PodSpec{}, c)
	want := `   web:
    Image:    nginx (pull: IfNotPresent)
    Environment:
      PLAIN=v
      PASSWORD=<set to the key 'password' in secret 'db'>  Optional: false
      LEVEL=<set to the key 'LOG_LEVEL' of config map 'web.config'>  Optional: true
      POD=(v1:metadata.name)
      MEM=(limits.memory)
    Environment Variables from:
      web.config  ConfigMap  Optional: false
      db  Secret (prefix "DB_")  Optional: true
`
	if got := buf.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// describe words mounts as kubectl's: a file volume read-only (its
// containers mount it so), a subPath as path="…".
func TestMountString(t *testing.T) {
	ps := &manifests.PodSpec{Volumes: []manifests.Volume{
		{Name: "config", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "app"}},
		{Name: "cache", EmptyDir: &manifests.EmptyDirVolumeSource{}},
	}}
	for _, tt := range []struct {
		m    manifests.VolumeMount
		want string
	}{
		{manifests.VolumeMount{Name: "config", MountPath: "/etc/app"}, "/etc/app from config (ro)"},
		{manifests.VolumeMount{Name: "config", MountPath: "/etc/motd.txt", SubPath: "motd.txt"}, `/etc/motd.txt from config (ro,path="motd.txt")`},
		{manifests.VolumeMount{Name: "cache", MountPath: "/cache"}, "/cache from cache (rw)"},
		{manifests.VolumeMount{Name: "cache", MountPath: "/ro", ReadOnly: true}, "/ro from cache (ro)"},
	} {
		if got := mountString(ps, tt.m); got != tt.want {
			t.Errorf("mountString(%+v) = %q, want %q", tt.m, got, tt.want)
		}
	}
}
