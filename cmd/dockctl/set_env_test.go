package main

import (
	"strings"
	"testing"
)

const setFixtureYAML = workloadsFixtureYAML + `---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: postgres, env: [{name: KEEP, value: "1"}]}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      initContainers: [{name: migrate, image: busybox}]
      containers:
      - {name: api, image: nginx, env: [{name: A, value: "1"}, {name: B, value: "2"}]}
      - {name: sidecar, image: busybox}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: app}
data: {log.level: debug, MODE: fast}
---
apiVersion: v1
kind: Secret
metadata: {name: db}
stringData: {password: s3cret}
`

// setFixture is a state directory holding an object of each kind with a
// pod template, a ConfigMap and a Secret.
func setFixture(t *testing.T) []string {
	t.Helper()
	base := []string{"--state-dir", t.TempDir()}
	if _, errOut, err := run(t, setFixtureYAML, append(base, "apply", "-f", "-")...); err != nil {
		t.Fatalf("apply: %v %s", err, errOut)
	}
	return base
}

// set env and set resources change the pod template of every kind that
// has one and may change it, at its path (a CronJob's is under its
// jobTemplate), and print kubectl's line.
func TestSetEnvAndResourcesChangeEveryKindWithAPodTemplate(t *testing.T) {
	base := setFixture(t)
	for _, tt := range []struct {
		object, template, printed string
	}{
		{"deployment/api", "{.spec.template.spec", "deployment.apps/api"},
		{"statefulset/db", "{.spec.template.spec", "statefulset.apps/db"},
		{"ds/agent", "{.spec.template.spec", "daemonset.apps/agent"},
		{"rs/web", "{.spec.template.spec", "replicaset.apps/web"},
		{"cronjob/backup", "{.spec.jobTemplate.spec.template.spec", "cronjob.batch/backup"},
	} {
		t.Run(tt.object, func(t *testing.T) {
			out, errOut, err := runArgs(t, base, "set", "env", tt.object, "NEW=v")
			if err != nil || out != tt.printed+" env updated\n" {
				t.Fatalf("set env: %q %v %s", out, err, errOut)
			}
			got, _, err := runArgs(t, base, "get", tt.object, "-o", "jsonpath="+tt.template+`.containers[0].env[?(@.name=="NEW")].value}`)
			if err != nil || got != "v" {
				t.Errorf("stored env NEW: %q %v", got, err)
			}
			out, errOut, err = runArgs(t, base, "set", "resources", tt.object, "--limits=cpu=500m,memory=256Mi", "--requests=cpu=100m")
			if err != nil || out != tt.printed+" resource requirements updated\n" {
				t.Fatalf("set resources: %q %v %s", out, err, errOut)
			}
			got, _, err = runArgs(t, base, "get", tt.object, "-o", "jsonpath="+tt.template+".containers[0].resources.limits.memory} "+tt.template+".containers[0].resources.requests.cpu}")
			if err != nil || got != "256Mi 100m" {
				t.Errorf("stored resources: %q %v", got, err)
			}
			// The same again changes nothing and, as kubectl, prints nothing.
			if out, _, err := runArgs(t, base, "set", "env", tt.object, "NEW=v"); err != nil || out != "" {
				t.Errorf("set env unchanged: %q %v", out, err)
			}
		})
	}
}

// A Job's template is immutable, as the API server keeps it: set env of a
// Job is refused with its words and stores nothing.
func TestSetEnvOfAJobIsRefused(t *testing.T) {
	base := setFixture(t)
	_, errOut, err := runArgs(t, base, "set", "env", "job/migrate", "NEW=v")
	if want := `the Job "migrate" is invalid: spec.template: Invalid value: `; err == nil || !strings.Contains(err.Error()+errOut, want) {
		t.Fatalf("set env job: %v %s; want %s…", err, errOut, want)
	}
	got, _, err := runArgs(t, base, "get", "job/migrate", "-o", `jsonpath={.spec.template.spec.containers[0].env[?(@.name=="NEW")].value}`)
	if err != nil || got != "" {
		t.Errorf("stored env NEW after the refusal: %q %v", got, err)
	}
}

// set env's arguments: KEY=VAL set or replaced in place, KEY- removed,
// --from a reference per key (sorted, named as kubectl names them),
// -c a glob of containers, init containers too; --list prints the
// result (golden) and stores nothing.
func TestSetEnvArguments(t *testing.T) {
	for _, tt := range []struct {
		situation string
		args      []string
		stderr    string
	}{
		{"set replace and remove", []string{"B=two", "A-", "C=3"}, ""},
		{"from a configmap with a prefix", []string{"--from=configmap/app", "--prefix=APP_"}, "Warning: key log.level transferred to LOG_LEVEL\n"},
		{"from some keys of a secret", []string{"--from=secret/db", "--keys=password"}, "Warning: key password transferred to PASSWORD\n"},
		{"one container", []string{"X=1", "-c", "sidecar"}, ""},
		{"a variable given with -e", []string{"-e", "B=two", "--env=D=4"}, ""},
		{"a glob of containers and init containers", []string{"X=1", "-c", "[ms]*"}, ""},
	} {
		t.Run(tt.situation, func(t *testing.T) {
			base := setFixture(t)
			_, errOut, err := runArgs(t, base, append([]string{"set", "env", "deployment/api"}, tt.args...)...)
			if err != nil || errOut != tt.stderr {
				t.Fatalf("%v stderr %q, want %q", err, errOut, tt.stderr)
			}
			out, _, err := runArgs(t, base, "set", "env", "deployment/api", "--list")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "set-env-list-"+strings.ReplaceAll(tt.situation, " ", "-"), []byte(out))
		})
	}
	base := setFixture(t)
	if out, _, err := runArgs(t, base, "set", "env", "deployment/api", "Z=1", "--list", "-c", "api"); err != nil || !strings.Contains(out, "Z=1") {
		t.Fatalf("--list with a change: %q %v", out, err)
	}
	if got, _, _ := runArgs(t, base, "get", "deployment/api", "-o", "jsonpath={.spec.template.spec.containers[0].env[*].name}"); got != "A B" {
		t.Errorf("--list stored a change: env %q", got)
	}
}

// set env --from names a variable as kubectl does (upper case, each
// character but [A-Za-z0-9_] as _, the "transferred to" warning), and
// since Kubernetes 1.34 takes any printable ASCII name but '=' the name
// of a key such as "1st-key" is stored: the command no longer fails.
func TestSetEnvFromKeysNamedAsKubectlAreStored(t *testing.T) {
	for _, tt := range []struct {
		key, name, stderr string
	}{
		{"1st-key", "1ST_KEY", "Warning: key 1st-key transferred to 1ST_KEY\n"},
		{"9.lives", "9_LIVES", "Warning: key 9.lives transferred to 9_LIVES\n"},
		{"TOKEN", "TOKEN", ""},
	} {
		t.Run(tt.key, func(t *testing.T) {
			base := setFixture(t)
			if _, errOut, err := runArgs(t, base, "create", "secret", "generic", "keys", "--from-literal="+tt.key+"=v"); err != nil {
				t.Fatalf("create secret: %v %s", err, errOut)
			}
			out, errOut, err := runArgs(t, base, "set", "env", "deployment/api", "--from=secret/keys")
			if err != nil || errOut != tt.stderr || out != "deployment.apps/api env updated\n" {
				t.Fatalf("set env: %q %v stderr %q, want stderr %q", out, err, errOut, tt.stderr)
			}
			got, _, err := runArgs(t, base, "get", "deployment/api", "-o", `jsonpath={.spec.template.spec.containers[0].env[?(@.name=="`+tt.name+`")].valueFrom.secretKeyRef.key}`)
			if err != nil || got != tt.key {
				t.Errorf("stored %s from key %q, want %q: %v", tt.name, got, tt.key, err)
			}
		})
	}
}

// The mistakes are kubectl's errors, and change nothing.
func TestSetEnvAndResourcesErrors(t *testing.T) {
	base := setFixture(t)
	for _, tt := range []struct {
		args         []string
		want, stderr string
	}{
		{[]string{"env", "A=1"}, "one or more resources must be specified as <resource> <name> or <resource>/<name>", ""},
		{[]string{"env", "deployment/api"}, "at least one environment variable must be provided", ""},
		{[]string{"env", "configmap/app", "A=1"}, "configmaps/app the object is not a pod or does not have a pod template: *v1.ConfigMap", ""},
		{[]string{"env", "deployment/nope", "A=1"}, `deployments.apps "nope" not found`, ""},
		{[]string{"env", "deployment/api", "A=9", "--overwrite=false"}, "deployment.apps/api 'A' already has a value (1), and --overwrite is false", ""},
		{[]string{"env", "deployment/api", "--from=deployment/api"}, "unsupported resource specified in --from: deployments", ""},
		{[]string{"env", "deployment/api", "--from=configmap/nope"}, `configmaps "nope" not found`, ""},
		{[]string{"resources", "deployment/api"}, "you must specify an update to requests or limits (in the form of --requests/--limits)", ""},
		{[]string{"resources", "deployment/api", "--limits=cpu"}, "invalid argument syntax cpu, expected <resource>=<value>", ""},
		{[]string{"resources", "deployment/api", "--limits=cpu=lots"}, `invalid value "lots" of resource cpu`, ""},
		{[]string{"resources", "svc/api", "--limits=cpu=1"}, "services/api the object is not a pod or does not have a pod template: *v1.Service", ""},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, errOut, err := runArgs(t, base, append([]string{"set"}, tt.args...)...)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || errOut != tt.stderr {
				t.Fatalf("err %v stderr %q, want %q", err, errOut, tt.want)
			}
		})
	}
	// A container selector that matches none changes nothing: set env
	// warns as kubectl's WarningPrinter ("Warning: "), set resources
	// fails as kubectl's ("unable to find container named NAME").
	for _, tt := range []struct {
		verb           []string
		wantErr, warns string
	}{
		{[]string{"env", "deployment/api", "A=2"}, "", `Warning: Deployment/api does not have any containers matching "nope"` + "\n"},
		{[]string{"resources", "deployment/api", "--limits=cpu=1"}, "unable to find container named nope", ""},
	} {
		out, errOut, err := runArgs(t, base, append(append([]string{"set"}, tt.verb...), "-c", "nope")...)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if gotErr != tt.wantErr || out != "" || errOut != tt.warns {
			t.Errorf("set %s -c nope: %q %v %q, want error %q and stderr %q", tt.verb[0], out, err, errOut, tt.wantErr, tt.warns)
		}
	}
	if got, _, _ := runArgs(t, base, "get", "deployment/api", "-o", `jsonpath={.spec.template.spec.containers[0].env[0].value}`); got != "1" {
		t.Errorf("a refused set changed env A to %q", got)
	}
}
