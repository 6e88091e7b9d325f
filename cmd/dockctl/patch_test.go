package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/store"
)

func TestPatch(t *testing.T) {
	cm := []string{"get", "cm", "cfg", "-o", "jsonpath={.data}"}
	runMutateCases(t, []mutateCase{
		{name: "merge: a deployment's label", args: []string{"patch", "deployment", "web", "-p", `{"metadata":{"labels":{"team":"a"}}}`},
			wantOut: "deployment.apps/web patched\n", after: []string{"get", "deploy", "-l", "team=a", "-o", "name"}, afterOut: "deployment.apps/web\n"},
		{name: "merge: no change", args: []string{"patch", "deploy/web", "-p", `{"metadata":{"labels":{"tier":"front"}}}`},
			wantOut: "deployment.apps/web patched (no change)\n"},
		{name: "merge, the default type, in YAML", args: []string{"patch", "deploy", "web", "-p", "spec: {replicas: 3}"},
			wantOut: "deployment.apps/web patched\n", after: []string{"get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"}, afterOut: "3"},
		{name: "merge: status and server-set fields are ignored", args: []string{"patch", "deploy", "web", "--type", "merge",
			"-p", `{"status":{"replicas":9},"metadata":{"generation":7,"creationTimestamp":"2001-01-01T00:00:00Z"}}`},
			wantOut: "deployment.apps/web patched (no change)\n"},
		{name: "json: a container's image", args: []string{"patch", "deploy", "web", "--type", "json",
			"-p", `[{"op":"replace","path":"/spec/template/spec/containers/1/image","value":"log:2"}]`},
			wantOut: "deployment.apps/web patched\n", after: []string{"get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[*].image}"},
			afterOut: "web:1 log:2"},
		{name: "json: test fails", args: []string{"patch", "deploy", "web", "--type", "json", "-p", `[{"op":"test","path":"/spec/replicas","value":5}]`},
			wantErr: "unable to apply the patch to deployment.apps/web: testing value /spec/replicas failed: test failed"},
		{name: "json: remove a missing key", args: []string{"patch", "cm", "cfg", "--type", "json", "-p", `[{"op":"remove","path":"/data/nope"}]`},
			wantErr: "unable to apply the patch to configmap/cfg: error in remove for path: '/data/nope'…"},
		{name: "json: not a list of operations", args: []string{"patch", "cm", "cfg", "--type", "json", "-p", `{"data":{}}`},
			wantErr: "unable to apply the patch to configmap/cfg: json: cannot unmarshal object…"},
		{name: "invalid result: refused, nothing changes", args: []string{"patch", "deploy", "web", "--type", "json",
			"-p", `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":""},{"op":"replace","path":"/spec/replicas","value":-1}]`},
			wantErr: "the Deployment \"web\" is invalid: spec.replicas: must be greater than or equal to 0\nthe Deployment \"web\" is invalid: spec.template.spec.containers[0].image: required",
			after:   []string{"get", "deploy", "web", "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image}"}, afterOut: "2 web:1"},
		{name: "unknown field", args: []string{"patch", "svc", "web", "-p", `{"spec":{"bogus":1}}`},
			wantErr: `the Service "web" is invalid: spec: unknown field "bogus"`},
		{name: "name cannot change", args: []string{"patch", "cm", "cfg", "-p", `{"metadata":{"name":"x"}}`},
			wantErr: `configmap/cfg: metadata.name cannot be changed (to "x")`},
		{name: "namespace cannot change", args: []string{"patch", "cm", "cfg", "-p", `{"metadata":{"namespace":"team"}}`},
			wantErr: `configmap/cfg: metadata.namespace cannot be changed (to "team")`},
		{name: "service", args: []string{"patch", "svc", "web", "-p", `{"spec":{"ports":[{"port":81,"targetPort":8080}]}}`},
			wantOut: "service/web patched\n", after: []string{"get", "svc", "web", "-o", "jsonpath={.spec.ports[0].port}"}, afterOut: "81"},
		{name: "service: no change", args: []string{"patch", "svc/web", "-p", `{"spec":{"selector":{"app":"web"}}}`},
			wantOut: "service/web patched (no change)\n"},
		{name: "namespace", args: []string{"patch", "ns", "team", "-p", `{"metadata":{"labels":{"x":"y"}}}`},
			wantOut: "namespace/team patched\n", after: []string{"get", "ns", "-l", "x=y", "-o", "name"}, afterOut: "namespace/team\n"},
		{name: "namespace: status ignored", args: []string{"patch", "ns", "team", "-p", `{"status":{"phase":"Terminating"}}`},
			wantOut: "namespace/team patched (no change)\n"},
		{name: "configmap", args: []string{"patch", "cm", "cfg", "-p", `{"data":{"k2":"v2"}}`},
			wantOut: "configmap/cfg patched\n", after: cm, afterOut: `{"k":"v","k2":"v2"}`},
		{name: "configmap -n: merge null removes", args: []string{"patch", "configmap", "cfg", "-n", "team", "-p", `{"data":{"k":null,"j":"w"}}`},
			wantOut: "configmap/cfg patched\n", after: []string{"get", "cm", "cfg", "-n", "team", "-o", "jsonpath={.data}"}, afterOut: `{"j":"w"}`},
		{name: "secret: base64 data", args: []string{"patch", "secret", "sec", "-p", `{"data":{"k":"eHl6"}}`},
			wantOut: "secret/sec patched\n", after: []string{"get", "secret", "sec", "-o", "jsonpath={.data.k}"}, afterOut: "eHl6"},
		{name: "secret: not base64", args: []string{"patch", "secret", "sec", "-p", `{"data":{"k":"!!"}}`}, wantErr: "the Secret \"sec\" is invalid: …"},
		{name: "pvc", args: []string{"patch", "pvc", "data", "-p", `{"metadata":{"annotations":{"x":"y"}}}`},
			wantOut: "persistentvolumeclaim/data patched\n"},
		{name: "another namespace's deployment", args: []string{"patch", "deploy", "api", "-n", "team", "-p", `{"spec":{"replicas":2}}`},
			wantOut: "deployment.apps/api patched\n"},
		{name: "missing", args: []string{"patch", "deploy", "api", "-p", `{}`}, wantErr: `deployments.apps "api" not found in instance "t1"`},
		{name: "missing configmap", args: []string{"patch", "cm", "nope", "-p", `{}`}, wantErr: `configmaps "nope" not found in instance "t1"`},
		{name: "deleted", before: [][]string{{"delete", "svc", "web"}}, args: []string{"patch", "svc", "web", "-p", `{}`},
			wantErr: `services "web" not found in instance "t1"`},
		{name: "unknown --type", args: []string{"patch", "deploy", "web", "--type", "x", "-p", `{}`},
			wantErr: `--type must be one of [json merge strategic], not "x"`},
		{name: "strategic refused", args: []string{"patch", "deploy", "web", "--type", "strategic", "-p", `{}`},
			wantErr: "--type strategic is not supported: dockctl has no strategic merge metadata; use --type merge (lists replaced whole) or --type json"},
		{name: "no patch", args: []string{"patch", "deploy", "web"}, wantErr: "must specify --patch or --patch-file containing the contents of the patch"},
		{name: "bad patch", args: []string{"patch", "deploy", "web", "-p", "{bad"}, wantErr: `unable to parse "{bad": …`},
		{name: "not a stored kind", args: []string{"patch", "pod", "web-0", "-p", "{}"}, wantErr: "pods are not supported here: expected deployments, services…"},
	})
}

func TestPatchFile(t *testing.T) {
	base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
	must := runner(t, base)
	must(mutateFixture, "apply", "-f", "-")
	file := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(file, []byte("data:\n  k: from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := must("", "patch", "cm", "cfg", "--patch-file", file); out != "configmap/cfg patched\n" {
		t.Fatalf("patch --patch-file: %q", out)
	}
	if out := must("", "get", "cm", "cfg", "-o", "jsonpath={.data.k}"); out != "from-file" {
		t.Fatalf("after patch --patch-file: %q", out)
	}
	if _, _, err := run(t, "", append(base, "patch", "cm", "cfg", "--patch-file", file, "-p", "{}")...); err == nil {
		t.Fatal("--patch and --patch-file together: no error")
	}
}

// A changed template is a new revision (a rollout) and a bumped
// generation; a label of the deployment's metadata is neither.
func TestPatchRevision(t *testing.T) {
	base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
	must := runner(t, base)
	must(mutateFixture, "apply", "-f", "-")
	hist := func() int { return strings.Count(must("", "rollout", "history", "deployment/web"), "\n") - 2 }
	gen := func() string { return must("", "get", "deploy", "web", "-o", "jsonpath={.metadata.generation}") }
	must("", "patch", "deploy", "web", "-p", `{"metadata":{"labels":{"team":"a"}}}`)
	if n, g := hist(), gen(); n != 1 || g != "1" {
		t.Fatalf("after a label patch: %d revisions, generation %s", n, g)
	}
	must("", "patch", "deploy", "web", "--type", "json", "-p", `[{"op":"add","path":"/spec/template/metadata/labels/v","value":"2"}]`)
	if n, g := hist(), gen(); n != 2 || g != "2" {
		t.Fatalf("after a template patch: %d revisions, generation %s", n, g)
	}
}

// A Secret's patch holds values: an error never echoes it.
func TestPatchSecretErrorsHoldNoValue(t *testing.T) {
	dir := t.TempDir()
	must := runner(t, []string{"--state-dir", dir, "--instance", "t1"})
	must(mutateFixture, "apply", "-f", "-")
	g := &globalOptions{stateDir: dir, instance: "t1", namespace: "default"}
	ref := store.ObjectRef{Kind: store.KindSecret, Namespace: "default", Name: "sec"}
	for _, tt := range []struct{ typ, patch string }{
		{"merge", `{"stringData":{"k":"topsecret"}`},
		{"json", `[{"op":"test","path":"/data/k","value":"topsecret"}]`},
	} {
		var out, errOut bytes.Buffer
		err := runPatch(&out, &errOut, g, ref, tt.typ, []byte(tt.patch))
		if err == nil {
			t.Fatalf("%s %s: no error", tt.typ, tt.patch)
		}
		if all := err.Error() + out.String() + errOut.String(); strings.Contains(all, "topsecret") {
			t.Errorf("%s: the value is in the output: %s", tt.typ, all)
		}
	}
}

// Removing spec.paused from a paused deployment — a merge patch's null, a
// JSON patch's remove, or deleting the line in `edit` — means paused false,
// as the API server defaults it (kubectl unpauses). storeEdited stores the
// result as `apply -f` of it would, and apply keeps the live paused when
// the manifest leaves it unset (KeepPaused): a patch removing it must not
// be taken for that, report "patched (no change)" and leave the deployment
// paused.
func TestPatchRemovingPausedUnpauses(t *testing.T) {
	for _, tc := range []struct{ typ, patch string }{
		{"merge", `{"spec":{"paused":null}}`},
		{"json", `[{"op":"remove","path":"/spec/paused"}]`},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			dir := t.TempDir()
			base := []string{"--state-dir", dir, "--instance", "t1"}
			for _, args := range [][]string{
				{"apply", "-f", "-"},
				{"rollout", "pause", "deployment/web"},
				{"patch", "deployment", "web", "--type", tc.typ, "-p", tc.patch},
			} {
				out, errOut, err := run(t, webYAML, append(base, args...)...)
				if err != nil {
					t.Fatalf("%v: %v %s", args, err, errOut)
				}
				t.Logf("%v: %s", args, out)
			}
			st, err := store.OpenReadOnly(dir, "t1")
			if err != nil {
				t.Fatal(err)
			}
			r, err := st.Get("", "web")
			if err != nil {
				t.Fatal(err)
			}
			if r.Deployment.Spec.Paused {
				t.Errorf("patch --type %s %s left deployment web paused (kubectl's leaves it unpaused)", tc.typ, tc.patch)
			}
		})
	}
}

// patch (and edit) warn about a gated setting they give any workload
// kind's pod template, as apply does.
func TestPatchWarnsAboutHostPrivilegesOfAWorkload(t *testing.T) {
	dir := t.TempDir()
	ds := "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\nspec:\n  selector: {matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: x}}\n    spec:\n      containers:\n      - {name: t, image: busybox}\n"
	if _, errOut, err := run(t, ds, "--state-dir", dir, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply: %v %q", err, errOut)
	}
	_, errOut, err := run(t, "", "--state-dir", dir, "patch", "daemonset", "x", "--type", "json", "-p",
		`[{"op":"add","path":"/spec/template/spec/hostNetwork","value":true}]`)
	if err != nil {
		t.Fatalf("patch: %v %q", err, errOut)
	}
	if want := "Warning: daemonset/x: spec.template.spec.hostNetwork"; !strings.Contains(errOut, want) || !strings.Contains(errOut, "--allow-host-namespaces") {
		t.Errorf("warnings %q lack %q naming --allow-host-namespaces", errOut, want)
	}
}
