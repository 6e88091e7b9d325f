package main

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
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
// exactly (wantErr "" means none; one ending in "…" is a prefix).
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
			if p, ok := strings.CutSuffix(tt.wantErr, "…"); ok && strings.HasPrefix(gotErr, p) {
				gotErr = tt.wantErr // a prefix is enough
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
		{name: "--all and -l", args: []string{"delete", "cm", "--all", "-l", "a=b"}, wantErr: "cannot set --all and --selector at the same time"},
		{name: "--all with a name", args: []string{"delete", "cm", "cfg", "--all"}, wantErr: "name cannot be provided when a selector is specified"},
		{name: "--all with kind/name", args: []string{"delete", "cm/cfg", "--all"}, wantErr: "selectors and the all flag cannot be used when passing resource/name arguments"},
		{name: "--all of a kind delete does not delete", args: []string{"delete", "endpoints", "--all"},
			wantErr: "endpoints are not supported here: expected deployments, pods, services, namespaces, configmaps, secrets, persistentvolumeclaims, daemonsets, replicasets, statefulsets, cronjobs, jobs, ingresses, ingressclasses, gatewayclasses, gateways, httproutes or referencegrants"},
		{name: "--all of an unknown kind", args: []string{"delete", "nopes", "--all"}, wantErr: `the server doesn't have a resource type "nopes"`},
		{name: "bad selector", args: []string{"delete", "cm", "-l", "a=(b"},
			wantErr: `Unable to find "/v1, Resource=configmaps" that match label selector "a=(b", field selector "": unable to parse requirement: found '(', expected: identifier`},
		{name: "name with -A", args: []string{"delete", "cm", "cfg", "-A"}, wantErr: "a resource cannot be retrieved by name across all namespaces"},
		{name: "missing: an error", args: []string{"delete", "cm", "nope"}, wantErr: `configmaps "nope" not found in instance "t1"`},
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
			wantErr: `deployments.apps "nope" not found in instance "t1"`},
		{name: "another namespace's", args: []string{"set", "image", "deployment/api", "api=api:2"},
			wantErr: `deployments.apps "api" not found in instance "t1"`},
		{name: "no image", args: []string{"set", "image", "deployment/web"}, wantErr: "at least one image update is required"},
		{name: "empty image", args: []string{"set", "image", "deployment/web", "web="}, wantErr: `deployment "web": spec.template.spec.containers[0].image: required`},
		{name: "no container", args: []string{"set", "image", "deployment/web", "=web:1"}, wantErr: "invalid image format: =web:1"},
		{name: "* and more", args: []string{"set", "image", "deployment/web", "*=a:1", "web=b:1"},
			wantErr: "all containers are already specified by *, but saw more than one container_name=container_image pairs"},
		{name: "not a deployment", args: []string{"set", "image", "svc/web", "web=b:1"}, wantErr: `services/web the object is not a pod or does not have a pod template: *v1.Service`},
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

func TestLabelAnnotate(t *testing.T) {
	depLabels := []string{"get", "deploy", "web", "-o", "yaml"}
	runMutateCases(t, []mutateCase{
		{name: "label a deployment", args: []string{"label", "deployment", "web", "team=a"}, wantOut: "deployment.apps/web labeled\n"},
		{name: "label deploy/NAME, two", args: []string{"label", "deploy/web", "team=a", "env=prod"}, wantOut: "deployment.apps/web labeled\n"},
		{name: "refused without --overwrite", args: []string{"label", "deployment", "web", "tier=back"},
			wantErr: "'tier' already has a value (front), and --overwrite is false"},
		{name: "two refused", before: [][]string{{"label", "deployment", "web", "env=prod"}}, args: []string{"label", "deployment", "web", "tier=back", "env=dev"},
			wantErr: "'env' already has a value (prod), and --overwrite is false\n'tier' already has a value (front), and --overwrite is false"},
		{name: "the same value needs no --overwrite", args: []string{"label", "deployment", "web", "tier=front"}, wantOut: "deployment.apps/web not labeled\n"},
		{name: "--overwrite", args: []string{"label", "deployment", "web", "tier=back", "--overwrite"}, wantOut: "deployment.apps/web labeled\n"},
		{name: "remove", args: []string{"label", "deployment", "web", "tier-"}, wantOut: "deployment.apps/web unlabeled\n"},
		{name: "remove one absent", args: []string{"label", "deployment", "web", "nope-"}, wantOut: "label \"nope\" not found.\ndeployment.apps/web not labeled\n"},
		{name: "modify and remove", args: []string{"label", "deployment", "web", "a=b", "a-"}, wantErr: "can not both modify and remove a label in the same command"},
		{name: "no pair", args: []string{"label", "deployment", "web"}, wantErr: "at least one label update is required"},
		{name: "bad value", args: []string{"label", "deployment", "web", "a=b c"},
			wantErr: `invalid label value: "a=b c": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
		{name: "two =", args: []string{"label", "deployment", "web", "a=b=c"}, wantErr: "invalid label spec: a=b=c"},
		{name: "bad key: the store's validation", args: []string{"label", "deployment", "web", "a/b/c=d"}, wantErr: "the Deployment \"web\" is invalid: metadata.labels[a/b/c]: invalid label key \"a/b/c\": a qualified name must consist of…"},
		{name: "missing", args: []string{"label", "deployment", "nope", "a=b"}, wantErr: `deployments.apps "nope" not found in instance "t1"`},
		{name: "service", args: []string{"label", "svc/web", "a=b"}, wantOut: "service/web labeled\n"},
		{name: "namespace", args: []string{"label", "ns", "team", "a=b"}, wantOut: "namespace/team labeled\n",
			after: []string{"get", "ns", "-l", "a=b", "-o", "name"}, afterOut: "namespace/team\n"},
		{name: "configmap -n", args: []string{"label", "cm", "cfg", "a=b", "-n", "team"}, wantOut: "configmap/cfg labeled\n",
			after: []string{"get", "cm", "-A", "-l", "a=b", "-o", "name"}, afterOut: "configmap/cfg\n"},
		{name: "secret", args: []string{"label", "secret/sec", "a=b"}, wantOut: "secret/sec labeled\n"},
		{name: "pvc", args: []string{"label", "pvc", "data", "a=b"}, wantOut: "persistentvolumeclaim/data labeled\n"},
		{name: "not a stored kind", args: []string{"label", "pod", "web-0", "a=b"}, wantErr: "pods are not supported here: expected deployments, services…"},

		{name: "annotate", args: []string{"annotate", "deployment", "web", "owner=team-a", "note=a=b c"}, wantOut: "deployment.apps/web annotated\n"},
		{name: "annotate refused without --overwrite", before: [][]string{{"annotate", "cm", "cfg", "owner=a"}},
			args:    []string{"annotate", "cm", "cfg", "owner=b"},
			wantErr: "--overwrite is false but found the following declared annotation(s): 'owner' already has a value (a)"},
		{name: "annotate --overwrite", before: [][]string{{"annotate", "cm", "cfg", "owner=a"}},
			args: []string{"annotate", "cm", "cfg", "owner=b", "--overwrite"}, wantOut: "configmap/cfg annotated\n"},
		{name: "annotate remove", before: [][]string{{"annotate", "ns", "team", "owner=a"}},
			args: []string{"annotate", "ns", "team", "owner-"}, wantOut: "namespace/team annotated\n"},
		{name: "annotate modify and remove", args: []string{"annotate", "svc", "web", "a=b", "a-"},
			wantErr: "can not both modify and remove an annotation in the same command"},
		{name: "annotate bad key", args: []string{"annotate", "svc", "web", "a b=c"},
			wantErr: "the Service \"web\" is invalid: metadata.annotations[a b]: invalid annotation key \"a b\": name part must consist of…"},
		{name: "annotate a dockctl.io key on a deployment's metadata", args: []string{"annotate", "deploy", "web", "dockctl.io/network=host"},
			wantErr: "the Deployment \"web\" is invalid: metadata.annotations[dockctl.io/network]: misplaced: a pod template annotation, it belongs in spec.template.metadata.annotations"},
		{name: "annotate no pair", args: []string{"annotate", "svc", "web"}, wantErr: "at least one annotation update is required"},
	})

	// A label or annotation of a deployment's metadata is no rollout: the
	// template (its hash, its labels) and the generation stay.
	base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
	must := runner(t, base)
	must(mutateFixture, "apply", "-f", "-")
	before := must("", depLabels...)
	must("", "label", "deployment", "web", "team=a")
	must("", "annotate", "deployment", "web", "owner=b")
	after := must("", depLabels...)
	for _, want := range []string{"generation: 1\n", "    team: a\n", "    owner: b\n"} {
		if !strings.Contains(after, want) {
			t.Errorf("no %q in:\n%s", want, after)
		}
	}
	if tmpl := func(s string) string { return s[strings.Index(s, "\n  template:"):] }; tmpl(before) != tmpl(after) {
		t.Errorf("the template changed:\n%s\n---\n%s", tmpl(before), tmpl(after))
	}
	if out := must("", "rollout", "history", "deployment/web"); strings.Count(out, "\n") != 3 {
		t.Fatalf("history after label and annotate:\n%s", out)
	}
}

// `delete pod` waits by default, as kubectl does, and must not give up
// after a default timeout (5 minutes, exit 1, "timed out waiting for the
// condition") while a graceful stop may rightly take longer: the controller
// gives a pod up to terminationGracePeriodSeconds, bounded by its
// --max-grace-period (5m by default, more when raised), counted from when
// it begins the stop (after the drain and any preStop). kubectl's delete
// --timeout defaults to 0s, which waits up to a week.
func TestDeleteTimeoutDefaultsToZero(t *testing.T) {
	cmd := newRootCommand()
	del, _, err := cmd.Find([]string{"delete"})
	if err != nil {
		t.Fatal(err)
	}
	f := del.Flags().Lookup("timeout")
	if f == nil {
		t.Fatal("delete has no --timeout")
	}
	if f.DefValue != "0s" {
		t.Fatalf("delete --timeout defaults to %s: a default `delete pod` of a pod with a long grace period fails although it is carried out; kubectl's default is 0s (a week)", f.DefValue)
	}
}

// `delete -f` deletes every deployment its files name; one that is
// already gone is reported (exit 1), as kubectl does, but must not leave the
// others running.
func TestDeleteFileContinuesPastMissing(t *testing.T) {
	dir := t.TempDir()
	a := strings.ReplaceAll(hostPortYAML, "hp", "aa")
	b := strings.ReplaceAll(hostPortYAML, "hp", "bb")
	both := b + "---\n" + a
	for _, step := range []struct {
		stdin string
		args  []string
	}{
		{both, []string{"apply", "-f", "-"}},
		{"", []string{"delete", "deployment", "bb"}},
	} {
		if out, err := runCLI(t, dir, step.stdin, step.args...); err != nil {
			t.Fatalf("%v: %v\n%s", step.args, err, out)
		}
	}
	out, err := runCLI(t, dir, both, "delete", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), `"bb"`) {
		t.Fatalf("delete -f with bb already deleted: err = %v, want bb reported\n%s", err, out)
	}
	st, serr := store.OpenReadOnly(dir, "rev")
	if serr != nil {
		t.Fatal(serr)
	}
	if _, gerr := st.Get("", "aa"); !errors.Is(gerr, store.ErrNotFound) {
		t.Fatalf("aa after delete -f: %v, want deleted (output %q, err %v)", gerr, out, err)
	}
}

func TestDeleteCascade(t *testing.T) {
	for _, tc := range []struct {
		name, cascade, wantErr, wantOut string
	}{
		{"background deletes", "background", "", "deployment/web deleted\n"},
		{"foreground deletes", "foreground", "", "deployment/web deleted\n"},
		{"orphan deletes the deployment, leaving its pods", "orphan", "", "deployment/web deleted\n"},
		{"false is orphan", "false", "", "deployment/web deleted\n"},
		{"an unknown value is kubectl's error", "sideways", `invalid cascade value (sideways). Must be "background", "foreground", or "orphan".`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
			runner(t, base)(mutateFixture, "apply", "-f", "-")
			out, _, err := runArgs(t, base, "delete", "deployment", "web", "--cascade="+tc.cascade)
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err %v, want %q", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Errorf("err %v", err)
			case !strings.HasPrefix(out, tc.wantOut) || tc.wantOut == "" && out != "":
				t.Errorf("out %q, want %q", out, tc.wantOut)
			}
		})
	}
}

const orphanSetYAML = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: w, image: busybox}]
`

// delete statefulset --cascade=orphan deletes the object only: its pods
// run on without owner (OWNER <none>, no ownerReferences, no Controlled
// By), as kubectl shows pods the garbage collector orphaned, and delete
// pod removes one (nothing replaces it).
func TestDeleteCascadeOrphanLeavesThePodsWithoutOwner(t *testing.T) {
	api := startFakeDaemon(t)
	dir := t.TempDir()
	base := []string{"--state-dir", dir, "--instance", "t1"}
	run := runner(t, base)
	run(orphanSetYAML, "apply", "-f", "-")
	st, err := store.OpenReadOnly(dir, "t1")
	if err != nil {
		t.Fatal(err)
	}
	set, err := st.LookupObject(store.ObjectRef{Kind: store.KindStatefulSet, Namespace: "default", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, pod := range []string{"web-0", "web-1"} {
		ids[pod] = api.add(dockerx.PodContainerName("t1", "default", pod), "running", map[string]string{
			dockerx.LabelInstance: "t1", dockerx.LabelNamespace: "default", dockerx.LabelRole: dockerx.RoleReplica,
			dockerx.LabelOwnerKind: store.KindStatefulSet, dockerx.LabelOwner: "web", dockerx.LabelOwnerUID: set.UID(),
			dockerx.LabelTemplateHash: "abc", "app": "web"})
	}
	owners := func() []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(run("", "get", "pods", "-o", "wide")), "\n")[1:] {
			f := strings.Fields(l)
			out = append(out, f[0]+" "+f[len(f)-1])
		}
		return out
	}
	if got := owners(); !slices.Equal(got, []string{"web-0 StatefulSet/web", "web-1 StatefulSet/web"}) {
		t.Fatalf("owners before the delete %q", got)
	}
	if out, _, err := runArgs(t, base, "delete", "statefulset", "web", "--cascade=orphan"); err != nil || out != "statefulset/web deleted\n" {
		t.Fatalf("delete --cascade=orphan: %q %v", out, err)
	}
	if got := owners(); !slices.Equal(got, []string{"web-0 <none>", "web-1 <none>"}) {
		t.Errorf("owners after the orphaning delete %q, want <none>", got)
	}
	if y := run("", "get", "pod", "web-0", "-o", "yaml"); strings.Contains(y, "ownerReferences") {
		t.Errorf("an orphan's -o yaml names an owner:\n%s", y)
	}
	if d := run("", "describe", "pod", "web-0"); strings.Contains(d, "Controlled By") {
		t.Errorf("an orphan's describe names a controller:\n%s", d)
	}
	if out := run("", "delete", "pod", "web-0", "--grace-period=1"); out != "pod \"web-0\" deleted\n" {
		t.Errorf("delete pod: %q", out)
	}
	if api.exists(ids["web-0"]) || !api.exists(ids["web-1"]) {
		t.Errorf("after delete pod web-0: web-0 exists %v, web-1 exists %v; want web-0 gone, web-1 kept", api.exists(ids["web-0"]), api.exists(ids["web-1"]))
	}
}

// orphanDeploymentYAML is orphanSetYAML's pods under a Deployment.
var orphanDeploymentYAML = strings.Replace(orphanSetYAML, "kind: StatefulSet", "kind: Deployment", 1)

// delete deployment --cascade=orphan deletes the deployment only: its
// pods run on without owner (-o wide's DEPLOYMENT and OWNER <none>, no
// Deployment in describe, not Terminating), --wait does not wait for
// them, and get deployment no longer counts them; the deployment applied
// again adopts them (its owner again); delete pod removes an orphan for
// good.
func TestDeleteDeploymentCascadeOrphanLeavesItsPodsWithoutOwner(t *testing.T) {
	api := startFakeDaemon(t)
	dir := t.TempDir()
	base := []string{"--state-dir", dir, "--instance", "t1"}
	run := runner(t, base)
	run(orphanDeploymentYAML, "apply", "-f", "-")
	st, err := store.OpenReadOnly(dir, "t1")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.Get("default", "web")
	if err != nil {
		t.Fatal(err)
	}
	hash := manifests.TemplateHash(&rec.Deployment.Spec.Template)
	ids := map[string]string{}
	for ord := range 2 {
		name := dockerx.ContainerName("t1", "default", "web", hash, ord)
		ids[name] = api.add(name, "running", map[string]string{
			dockerx.LabelInstance: "t1", dockerx.LabelNamespace: "default", dockerx.LabelRole: dockerx.RoleReplica,
			dockerx.LabelDeployment: "web", dockerx.LabelOwnerUID: store.OwnerUID(rec.CreatedAt),
			dockerx.LabelTemplateHash: hash, "app": "web"})
	}
	// NAME, STATUS, DEPLOYMENT and OWNER of every pod.
	pods := func() []string {
		var out []string
		lines := strings.Split(strings.TrimSpace(run("", "get", "pods", "-o", "wide")), "\n")
		for _, l := range lines[1:] {
			f := strings.Fields(l)
			out = append(out, strings.Join([]string{f[0], f[2], f[len(f)-4], f[len(f)-1]}, " "))
		}
		return out
	}
	before := pods()
	if len(before) != 2 || !strings.HasSuffix(before[0], "Running web Deployment/web") {
		t.Fatalf("pods before the delete %q", before)
	}
	if out, _, err := runArgs(t, base, "delete", "deployment", "web", "--cascade=orphan", "--wait", "--timeout", "30s"); err != nil || !strings.HasPrefix(out, "deployment/web deleted\n") {
		t.Fatalf("delete --cascade=orphan --wait: %q %v", out, err)
	}
	pod := strings.Fields(before[0])[0]
	for _, p := range pods() {
		if !strings.HasSuffix(p, "Running <none> <none>") {
			t.Errorf("pods after the orphaning delete %q, want running without deployment or owner", pods())
			break
		}
	}
	if d := run("", "describe", "pod", pod); !strings.Contains(d, "Deployment:") || strings.Contains(d, "Deployment:    web") || strings.Contains(d, "(deleted)") {
		t.Errorf("an orphan's describe names its deployment:\n%s", d)
	}
	if _, _, err := runArgs(t, base, "get", "deployment", "web"); err == nil {
		t.Errorf("get deployment web after its deletion: no error, want not found")
	}
	run(orphanDeploymentYAML, "apply", "-f", "-")
	for _, p := range pods() {
		if !strings.HasSuffix(p, "Running web Deployment/web") {
			t.Errorf("pods after applying it again %q, want adopted", pods())
			break
		}
	}
	if out, _, err := runArgs(t, base, "get", "deployment", "web"); err != nil || !strings.Contains(out, "2/2") {
		t.Errorf("get deployment after adopting: %q %v, want its 2 adopted pods counted", out, err)
	}
	if out, _, err := runArgs(t, base, "delete", "deployment", "web", "--cascade=orphan"); err != nil || out != "deployment/web deleted\n" {
		t.Fatalf("second orphaning delete: %q %v", out, err)
	}
	if out := run("", "delete", "pod", pod, "--grace-period=1"); out != "pod \""+pod+"\" deleted\n" {
		t.Errorf("delete pod: %q", out)
	}
	gone := 0
	for _, id := range ids {
		if !api.exists(id) {
			gone++
		}
	}
	if gone != 1 {
		t.Errorf("after delete pod %s: %d of 2 containers gone, want that one", pod, gone)
	}
}
