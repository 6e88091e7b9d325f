package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A command run without its files says which flag gives them, naming only
// flags the command has: a message naming a flag the command lacks would
// send its user to "unknown shorthand flag".
func TestNoFilenameErrorNamesOnlyFlagsTheCommandHas(t *testing.T) {
	flagRE := regexp.MustCompile(`(?:^|[\s(])(--?[a-zA-Z][a-zA-Z-]*)`)
	for _, args := range [][]string{{"apply"}, {"diff"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
			_, _, err := run(t, "", append(base, args...)...)
			if err == nil {
				t.Fatal("no error without -f")
			}
			msg := err.Error()
			if !strings.Contains(msg, "must specify") || !strings.Contains(msg, "-f") {
				t.Fatalf("error %q does not ask for -f", msg)
			}
			cmd, _, ferr := newRootCommand().Find(args)
			if ferr != nil {
				t.Fatal(ferr)
			}
			for _, m := range flagRE.FindAllStringSubmatch(msg, -1) {
				name := m[1]
				var found bool
				if long, ok := strings.CutPrefix(name, "--"); ok {
					found = cmd.Flags().Lookup(long) != nil
				} else {
					found = cmd.Flags().ShorthandLookup(strings.TrimPrefix(name, "-")) != nil
				}
				if !found {
					t.Errorf("error %q names %s, which %q does not have", msg, name, cmd.CommandPath())
				}
			}
		})
	}
}

// The ignored-fields warning is per apply and names only what this apply
// applies: worded from every document of the files before `-l` filters
// them, `apply -l app=api` would name deployment/web, which it does not
// apply (kubectl apply -l acts on, and reports, the selected objects only).
func TestApplySelectorWarnsOnlyOfObjectsItApplies(t *testing.T) {
	web := strings.Replace(webYAML, "    spec:\n      containers:", "    spec:\n      nodeSelector: {disk: ssd}\n      containers:", 1)
	if web == webYAML {
		t.Fatal("precondition: could not add nodeSelector")
	}
	api := strings.ReplaceAll(webYAML, "web", "api")
	dir := t.TempDir()
	out, errOut, err := run(t, web+"---\n"+api, "--state-dir", dir, "apply", "-f", "-", "-l", "app=api")
	if err != nil {
		t.Fatalf("apply: %v stderr %q", err, errOut)
	}
	if strings.Contains(out, "deployment/web") {
		t.Fatalf("precondition: -l applied web: %q", out)
	}
	if strings.Contains(errOut, "deployment/web") {
		t.Errorf("apply -l app=api applied %q but warned about deployment/web, which it did not apply:\n%s", strings.TrimSpace(out), errOut)
	}
}

// A flag error is kubectl's templater FlagErrorFunc everywhere: "See
// 'kubectl CMD --help' for usage." (root.go's flagError, and every other
// dockctl command). diff keeps its exit status 2 (docs/design.md §15: errors of diff
// are >1), and words the hint as the others do, not as a usage error ("See
// 'dockctl diff -h' for help and examples"), which kubectl diff never
// prints for a flag.
func TestDiffFlagErrorHintAsKubectl(t *testing.T) {
	checkKubectlErrors(t, []kubectlErrorCase{
		{situation: "diff with an unknown flag", args: []string{"diff", "--frob"},
			stderr: "error: unknown flag: --frob\nSee 'dockctl diff --help' for usage.\n", code: 2},
	})
}

// `diff` previews `apply` (kubectl diff is a server-side dry run of it).
// A manifest without replicas keeps the live count, and when that count
// is invalid with the new manifest (a hostPort with several replicas)
// apply refuses it: diff must report that error (exit 2), not a
// difference apply would never make (exit 1).
func TestDiffReportsWhatApplyRefuses(t *testing.T) {
	dir := t.TempDir()
	noPort := strings.Replace(hostPortYAML, "\n        ports: [{containerPort: 80, hostPort: 18080, hostIP: 127.0.0.1}]", "", 1)
	for _, step := range []struct {
		stdin string
		args  []string
	}{
		{noPort, []string{"apply", "-f", "-"}},
		{"", []string{"scale", "deployment", "hp", "--replicas", "4"}},
	} {
		if out, err := runCLI(t, dir, step.stdin, step.args...); err != nil {
			t.Fatalf("%v: %v\n%s", step.args, err, out)
		}
	}
	if out, err := runCLI(t, dir, hostPortYAML, "apply", "--dry-run", "-f", "-"); err == nil {
		t.Fatalf("apply --dry-run accepted a hostPort with the 4 live replicas kept:\n%s", out)
	}
	out, err := runCLI(t, dir, hostPortYAML, "diff", "-f", "-")
	var ex *exitError
	if !errors.As(err, &ex) || ex.code != 2 || !strings.Contains(err.Error(), "hostPort") {
		t.Fatalf("diff: err = %v, want exit 2 naming hostPort\n%s", err, out)
	}
}

// diff shows each stored kind under its own header, the stored object
// against the file's: Namespaces and Services as kubectl names them,
// Deployments under the bare names of earlier releases, a new object
// whole.
func TestDiffShowsEveryStoredKind(t *testing.T) {
	dir := t.TempDir()
	cli := func(stdin string, args ...string) (string, error) {
		out, _, err := run(t, stdin, append([]string{"--state-dir", dir}, args...)...)
		return out, err
	}
	if _, err := cli(configBundle, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	changed := strings.NewReplacer("port: 80", "port: 81", "image: nginx", "image: httpd", "LOG_LEVEL: info", "LOG_LEVEL: debug",
		"metadata: {name: shop}", "metadata: {name: shop, labels: {team: a}}").Replace(configBundle) +
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: shop}\ndata: {k: v}\n"
	out, err := cli(changed, "diff", "-f", "-")
	var exit *exitError
	if !errors.As(err, &exit) || exit.code != 1 {
		t.Fatalf("diff: %v, want exit 1", err)
	}
	for _, want := range []string{
		"--- live/namespace/shop\n+++ merged/namespace/shop\n", "+  labels:\n+    team: a\n",
		"--- live/configmap/shop/web.config\n", "+  LOG_LEVEL: debug\n",
		"--- live/configmap/shop/extra\n+++ merged/configmap/shop/extra\n", "+  k: v\n",
		"--- live/service/shop/web\n+++ merged/service/shop/web\n", "-  - port: 80\n", "+  - port: 81\n",
		"--- live/shop/web\n+++ merged/shop/web\n", "-      - image: nginx\n", "+      - image: httpd\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "persistentvolumeclaim/") || strings.Contains(out, "secret/") {
		t.Errorf("diff shows unchanged objects:\n%s", out)
	}
}

// apply -f DIR reads DIR's subdirectories too, as dockctl always has;
// -R says so explicitly, and --recursive=false reads DIR's own files only
// (kubectl's default). diff and delete -f read the same files.
func TestApplyRecursiveFlag(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, name := range map[string]string{"a.yaml": "top", "sub/b.yaml": "nested"} {
		doc := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n"
		if err := os.WriteFile(filepath.Join(dir, p), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		flags []string
		want  string
	}{
		{nil, "configmap/top created (dry run)\nconfigmap/nested created (dry run)\n"},
		{[]string{"-R"}, "configmap/top created (dry run)\nconfigmap/nested created (dry run)\n"},
		{[]string{"--recursive=true"}, "configmap/top created (dry run)\nconfigmap/nested created (dry run)\n"},
		{[]string{"--recursive=false"}, "configmap/top created (dry run)\n"},
	} {
		t.Run(strings.Join(append([]string{"apply"}, tt.flags...), " "), func(t *testing.T) {
			out, errOut, err := run(t, "", append([]string{"--state-dir", t.TempDir(), "apply", "-f", dir, "--dry-run"}, tt.flags...)...)
			if err != nil || out != tt.want {
				t.Errorf("%q %v %s, want %q", out, err, errOut, tt.want)
			}
		})
	}
	state := t.TempDir()
	if _, errOut, err := run(t, "", "--state-dir", state, "apply", "-f", dir); err != nil {
		t.Fatalf("%v %s", err, errOut)
	}
	out, errOut, err := run(t, "", "--state-dir", state, "delete", "-f", dir, "--recursive=false")
	if err != nil || !strings.Contains(out, "top") || strings.Contains(out, "nested") {
		t.Errorf("delete -f --recursive=false: %q %v %s, want top deleted only", out, err, errOut)
	}
}

// apply warns about the gated settings of every workload kind's pod
// template as it does a Deployment's (docs/design.md §13), each under its
// path in the object: the controller runs none of them without its flag.
func TestApplyWarnsAboutHostPrivilegesOfEveryWorkloadKind(t *testing.T) {
	const pod = "      containers:\n      - name: t\n        image: busybox\n        securityContext: {privileged: true}\n"
	for _, tc := range []struct{ name, src, want string }{
		{"statefulset", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec:\n  serviceName: x\n  selector: {matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: x}}\n    spec:\n" + pod,
			"Warning: statefulset/x: spec.template.spec.containers[0].securityContext.privileged"},
		{"daemonset", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\nspec:\n  selector: {matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: x}}\n    spec:\n" + pod,
			"Warning: daemonset/x: spec.template.spec.containers[0].securityContext.privileged"},
		{"replicaset", "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: x}\nspec:\n  selector: {matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: x}}\n    spec:\n" + pod,
			"Warning: replicaset/x: spec.template.spec.containers[0].securityContext.privileged"},
		{"job", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n" + pod,
			"Warning: job/x: spec.template.spec.containers[0].securityContext.privileged"},
		{"cronjob", "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: x}\nspec:\n  schedule: '@hourly'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n" + strings.ReplaceAll(pod, "      ", "          "),
			"Warning: cronjob/x: spec.jobTemplate.spec.template.spec.containers[0].securityContext.privileged"},
		{"pod", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: t\n    image: busybox\n    securityContext: {privileged: true}\n",
			"Warning: pod/x: spec.containers[0].securityContext.privileged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, err := run(t, tc.src, "--state-dir", t.TempDir(), "apply", "-f", "-")
			if err != nil {
				t.Fatalf("apply: %v %q", err, errOut)
			}
			if !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "--allow-privileged") {
				t.Errorf("warnings %q lack %q naming --allow-privileged", errOut, tc.want)
			}
		})
	}
}
