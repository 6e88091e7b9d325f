package main

import (
	"strings"
	"testing"
)

// mutateFixture is a small world of every stored kind, in two namespaces.
const mutateFixture = `apiVersion: v1
kind: Namespace
metadata: {name: team, labels: {tier: back}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, labels: {tier: front}}
data: {k: v}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: other}
data: {k: v}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: team, labels: {tier: front}}
data: {k: v}
---
apiVersion: v1
kind: Secret
metadata: {name: sec}
stringData: {k: v}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Service
metadata: {name: web, labels: {tier: front}}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: api}
spec:
  selector: {app: api}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {tier: front}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      initContainers: [{name: migrate, image: migrate:1}]
      containers:
      - {name: web, image: web:1}
      - {name: log, image: log:1}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: team}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: api, image: api:1}]
`

// mutateCase is a sequence of commands run on a fresh copy of the
// fixture; the last one's output (stdout, stderr) and error are checked
// exactly (wantErr "" means none).
type mutateCase struct {
	name             string
	before           [][]string
	args             []string
	wantOut, wantErr string
	wantStderr       string
	after            []string // a command whose output must then be afterOut
	afterOut         string
}

func runMutateCases(t *testing.T, tests []mutateCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
			must := runner(t, base)
			must(mutateFixture, "apply", "-f", "-")
			for _, b := range tt.before {
				must("", b...)
			}
			out, errOut, err := run(t, "", append(base, tt.args...)...)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if out != tt.wantOut || gotErr != tt.wantErr || errOut != tt.wantStderr {
				t.Fatalf("%v:\nstdout %q\nerr    %q\nstderr %q\nwant\nstdout %q\nerr    %q", tt.args, out, gotErr, errOut, tt.wantOut, tt.wantErr)
			}
			if tt.after != nil {
				if got := must("", tt.after...); got != tt.afterOut {
					t.Fatalf("%v:\n%s\nwant\n%s", tt.after, got, tt.afterOut)
				}
			}
		})
	}
}

func TestDeleteAllSelectorIgnoreNotFound(t *testing.T) {
	cms := []string{"get", "cm", "-A", "-o", "name"}
	runMutateCases(t, []mutateCase{
		{name: "--all: the namespace's only", args: []string{"delete", "configmaps", "--all"},
			wantOut: "configmap/cfg deleted\nconfigmap/other deleted\n", after: cms, afterOut: "configmap/cfg\n"},
		{name: "--all -n", args: []string{"delete", "cm", "--all", "-n", "team"},
			wantOut: "configmap/cfg deleted\n", after: cms, afterOut: "configmap/cfg\nconfigmap/other\n"},
		{name: "--all -A", args: []string{"delete", "cm", "--all", "-A"},
			wantOut: "configmap/cfg deleted\nconfigmap/other deleted\nconfigmap/cfg deleted\n", after: cms, afterOut: ""},
		{name: "-l", args: []string{"delete", "cm", "-l", "tier=front"},
			wantOut: "configmap/cfg deleted\n", after: cms, afterOut: "configmap/other\nconfigmap/cfg\n"},
		{name: "-l -A", args: []string{"delete", "configmap", "-l", "tier in (front,x)", "-A"},
			wantOut: "configmap/cfg deleted\nconfigmap/cfg deleted\n", after: cms, afterOut: "configmap/other\n"},
		{name: "-l !key", args: []string{"delete", "svc", "-l", "!tier"}, wantOut: "service/api deleted\n",
			after: []string{"get", "svc", "-o", "name"}, afterOut: "service/web\n"},
		{name: "deployments -l", args: []string{"delete", "deploy", "-l", "tier=front"}, wantOut: "deployment/web deleted\n"},
		{name: "deployments --all -A", args: []string{"delete", "deployments", "--all", "-A"},
			wantOut: "deployment/web deleted\ndeployment/api deleted\n"},
		{name: "secrets --all", args: []string{"delete", "secrets", "--all"}, wantOut: "secret/sec deleted\n"},
		{name: "pvc --all", args: []string{"delete", "pvc", "--all"}, wantOut: "persistentvolumeclaim/data deleted\n"},
		{name: "namespaces -l", args: []string{"delete", "ns", "-l", "tier=back"}, wantOut: "namespace/team deleted\n",
			after: cms, afterOut: "configmap/cfg\nconfigmap/other\n"},
		{name: "namespaces --all: default refused, as the API server refuses it", args: []string{"delete", "ns", "--all"},
			wantOut: "namespace/team deleted\n", wantErr: `namespaces "default" is forbidden: this namespace may not be deleted`},
		{name: "nothing matches", args: []string{"delete", "cm", "-l", "tier=none"}, wantOut: "No resources found\n"},
		{name: "nothing left", before: [][]string{{"delete", "secret", "sec"}}, args: []string{"delete", "secret", "--all"},
			wantOut: "No resources found\n"},
		{name: "--all and -l", args: []string{"delete", "cm", "--all", "-l", "a=b"}, wantErr: "cannot set --all and labels at the same time"},
		{name: "--all with a name", args: []string{"delete", "cm", "cfg", "--all"}, wantErr: "--all and -l take a kind alone, not names (e.g. `dockctl delete deployments --all`)"},
		{name: "--all with kind/name", args: []string{"delete", "cm/cfg", "--all"}, wantErr: "--all and -l take a kind alone, not names (e.g. `dockctl delete deployments --all`)"},
		{name: "--all of an unknown kind", args: []string{"delete", "pods", "--all"}, wantErr: `expected one of deployment, service, namespace, configmap, secret, pvc; got "pods"`},
		{name: "bad selector", args: []string{"delete", "cm", "-l", "a=(b"}, wantErr: `invalid label selector "a=(b": unable to parse requirement: found '(', expected: identifier`},
		{name: "name with -A", args: []string{"delete", "cm", "cfg", "-A"}, wantErr: "a resource cannot be retrieved by name across all namespaces"},
		{name: "missing: an error", args: []string{"delete", "cm", "nope"}, wantErr: `configmap "nope" not found in instance "t1"`},
		{name: "missing, --ignore-not-found", args: []string{"delete", "cm", "nope", "--ignore-not-found"}},
		{name: "missing namespace, --ignore-not-found", args: []string{"delete", "ns", "nope", "--ignore-not-found"}},
		{name: "--ignore-not-found keeps other errors", args: []string{"delete", "ns", "default", "--ignore-not-found"},
			wantErr: `namespaces "default" is forbidden: this namespace may not be deleted`},
		{name: "--ignore-not-found deletes what exists", args: []string{"delete", "deploy", "web", "--ignore-not-found"},
			wantOut: "deployment/web deleted\n"},
	})
}

func TestDeleteIgnoreNotFoundFile(t *testing.T) {
	base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
	must := runner(t, base)
	must(mutateFixture, "apply", "-f", "-")
	must("", "delete", "ns", "team")
	out, _, err := run(t, mutateFixture, append(base, "delete", "-f", "-", "--ignore-not-found")...)
	want := "deployment/web deleted\nservice/web deleted\nservice/api deleted\nconfigmap/cfg deleted\nconfigmap/other deleted\nsecret/sec deleted\npersistentvolumeclaim/data deleted\n"
	if err != nil || out != want {
		t.Fatalf("delete -f --ignore-not-found: %q %v", out, err)
	}
	if _, _, err := run(t, mutateFixture, append(base, "delete", "-f", "-")...); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("delete -f again: %v", err)
	}
}

func TestSetImage(t *testing.T) {
	hist := []string{"rollout", "history", "deployment/web"}
	runMutateCases(t, []mutateCase{
		{name: "one container", args: []string{"set", "image", "deployment/web", "web=web:2"},
			wantOut: "deployment.apps/web image updated\n"},
		{name: "deploy NAME, init container and container", args: []string{"set", "image", "deploy", "web", "migrate=migrate:2", "log=log:2"},
			wantOut: "deployment.apps/web image updated\n"},
		{name: "every container", args: []string{"set", "image", "deployments/web", "*=all:2"},
			wantOut: "deployment.apps/web image updated\n"},
		{name: "-n", args: []string{"set", "image", "deployment/api", "api=api:2", "-n", "team"},
			wantOut: "deployment.apps/api image updated\n"},
		{name: "the same image: nothing printed, nothing changed", args: []string{"set", "image", "deployment/web", "web=web:1"}},
		{name: "unknown container", args: []string{"set", "image", "deployment/web", "web=web:2", "nope=x:1"},
			wantErr: `unable to find container named "nope"`},
		{name: "unknown deployment", args: []string{"set", "image", "deployment/nope", "web=web:2"},
			wantErr: `deployment "nope" not found in instance "t1"`},
		{name: "another namespace's", args: []string{"set", "image", "deployment/api", "api=api:2"},
			wantErr: `deployment "api" not found in instance "t1"`},
		{name: "no image", args: []string{"set", "image", "deployment/web"}, wantErr: "at least one image update is required"},
		{name: "empty image", args: []string{"set", "image", "deployment/web", "web="}, wantErr: "invalid image to update: web="},
		{name: "* and more", args: []string{"set", "image", "deployment/web", "*=a:1", "web=b:1"},
			wantErr: "all containers are already specified by *, but saw more than one container_name=container_image pairs"},
		{name: "not a deployment", args: []string{"set", "image", "svc/web", "web=b:1"}, wantErr: `expected deployment/NAME, got "svc/web"`},
	})

	// A change of image is a new revision; none is no revision.
	base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
	must := runner(t, base)
	must(mutateFixture, "apply", "-f", "-")
	must("", "set", "image", "deployment/web", "web=web:1")
	if out := must("", hist...); strings.Count(out, "\n") != 3 {
		t.Fatalf("history after a set image that changes nothing:\n%s", out)
	}
	must("", "set", "image", "deployment/web", "web=web:2", "migrate=migrate:2")
	if out := must("", hist...); strings.Count(out, "\n") != 4 {
		t.Fatalf("history after set image:\n%s", out)
	}
	got := must("", "get", "deployment", "web", "-o", "yaml")
	for _, want := range []string{"image: web:2", "image: migrate:2", "image: log:1", "generation: 2"} {
		if !strings.Contains(got, want) {
			t.Errorf("after set image, no %q in:\n%s", want, got)
		}
	}
	must("", "set", "image", "deployment/web", "*=all:3")
	got = must("", "get", "deployment", "web", "-o", "yaml")
	if n := strings.Count(got, "image: all:3"); n != 3 {
		t.Errorf("*=all:3 set %d images:\n%s", n, got)
	}
}
