package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	goldenfile "github.com/dockctl/dockctl/internal/golden"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testGlobal is the global options of a command run in the default
// namespace of instance "default".
var testGlobal = &globalOptions{instance: "default", namespace: "default"}

const webYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: dockctl-workload:dev
        env: [{name: GREETING, value: hi}]
        ports: [{containerPort: 8080, hostPort: 0}]
`

func mustDecode(t testing.TB, src string) *manifests.Deployment {
	t.Helper()
	docs, err := manifests.Decode("web.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return docs[0].Deployment
}

// fixture is a snapshot of three replicas in various states, one orphan
// and a controller status.
func fixture(t *testing.T) (*snapshot, []*store.Record) {
	d := mustDecode(t, webYAML)
	hash := manifests.TemplateHash(&d.Spec.Template)
	rec := &store.Record{Name: "web", Generation: 3, CreatedAt: now.Add(-3 * time.Hour), Deployment: *d}
	c := func(ord int, state, health string, age time.Duration, hash string) dockerx.Container {
		name := dockerx.ContainerName("default", "", "web", hash, ord)
		return dockerx.Container{
			ID: strings.Repeat("a", 60) + name[len(name)-4:], Name: name, Image: "dockctl-workload:dev",
			Instance: "default", Deployment: "web", TemplateHash: hash, State: state, Health: health,
			Created: now.Add(-age), Ports: []dockerx.Port{{ContainerPort: 8080, Protocol: "tcp"}},
			Labels: map[string]string{dockerx.LabelInstance: "default", dockerx.LabelDeployment: "web", dockerx.LabelTemplateHash: hash},
		}
	}
	orphan := c(0, dockerx.StateRunning, "", 40*time.Hour, "0123456789")
	orphan.Name, orphan.Deployment = "default_api-0123456789-0", "api"
	orphan.Labels = map[string]string{dockerx.LabelInstance: "default", dockerx.LabelDeployment: "api"}
	ids := func(ord int) string {
		n := dockerx.ContainerName("default", "", "web", hash, ord)
		return strings.Repeat("a", 60) + n[len(n)-4:]
	}
	restarts := json.RawMessage(`{"rollout":{},"containers":{"` + ids(2) + `":{"restarts":4},"` + ids(0) + `":{"readySince":"2026-03-01T09:00:00Z"}}}`)
	snap := &snapshot{
		instance:          "default",
		controllerRunning: true,
		records:           []*store.Record{rec},
		statuses: map[string]*store.Status{"default/web": {
			ObservedGeneration: 3,
			Extra:              map[string]json.RawMessage{"controller": restarts},
		}},
		tombstones: map[string]bool{},
		containers: []dockerx.Container{
			c(0, dockerx.StateRunning, "", 3*time.Hour, hash),
			c(1, dockerx.StateRunning, dockerx.HealthUnhealthy, 90*time.Second, hash),
			c(2, dockerx.StateExited, "", 50*time.Minute, hash),
			orphan,
		},
		now: now,
	}
	// On the instance network: the running replicas have Docker's
	// addresses, the exited one none; the orphan, made before the
	// network, is on the default bridge.
	for i, ip := range []string{"10.222.0.2", "10.222.0.3", ""} {
		snap.containers[i].Networks = map[string]string{dockerx.NetworkName("default"): ip}
	}
	snap.containers[3].Networks = map[string]string{"bridge": "172.17.0.5"}
	withDetails(snap)
	return snap, []*store.Record{rec}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name+".golden"), got)
}

func TestRenderDeployments(t *testing.T) {
	for _, format := range []string{"table", "wide", "json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			snap, recs := fixture(t)
			var buf bytes.Buffer
			if err := renderDeployments(&buf, snap, recs, pr(t, format), format == "json", false); err != nil {
				t.Fatal(err)
			}
			golden(t, "get-deployments-"+format, buf.Bytes())
		})
	}
}

func TestRenderContainers(t *testing.T) {
	for _, format := range []string{"table", "wide", "json"} {
		t.Run(format, func(t *testing.T) {
			snap, _ := fixture(t)
			var objs []containerObject
			for _, c := range snap.containers {
				objs = append(objs, snap.containerObject(c))
			}
			var buf bytes.Buffer
			if err := renderContainers(&buf, snap, objs, pr(t, format), false); err != nil {
				t.Fatal(err)
			}
			golden(t, "get-containers-"+format, buf.Bytes())
		})
	}
}

func TestDescribe(t *testing.T) {
	snap := serviceFixture(t) // Services lb and web select its pods
	recs := snap.records
	var buf bytes.Buffer
	describe(&buf, snap, snap.deploymentObject(recs[0]), true)
	golden(t, "describe-deployment", buf.Bytes())

	// Without a running controller, its records are flagged as possibly stale.
	snap.controllerRunning = false
	buf.Reset()
	describe(&buf, snap, snap.deploymentObject(recs[0]), true)
	if !strings.Contains(buf.String(), "(observed: 3, recorded by a controller that is not running now") {
		t.Fatalf("describe without a controller:\n%s", buf.String())
	}
}

func TestApplyLifecycle(t *testing.T) {
	dir := t.TempDir()
	base := []string{"--state-dir", dir, "--instance", "t1"}
	steps := []struct {
		stdin string
		args  []string
		want  string
	}{
		{webYAML, []string{"apply", "-f", "-", "--dry-run"}, "deployment/web created (dry run)\n"},
		{webYAML, []string{"apply", "-f", "-"}, "deployment/web created\n"},
		{webYAML, []string{"apply", "-f", "-"}, "deployment/web unchanged\n"},
		{strings.Replace(webYAML, "value: hi", "value: ho", 1), []string{"apply", "-f", "-"}, "deployment/web configured\n"},
		{"", []string{"scale", "deployment/web", "--replicas", "5"}, "deployment/web scaled\n"},
		{"", []string{"delete", "deployment", "web"}, "deployment/web deleted\n"},
		{webYAML, []string{"apply", "-f", "-"}, "deployment/web created\n"},
	}
	for _, s := range steps {
		out, errOut, err := run(t, s.stdin, append(base, s.args...)...)
		if err != nil || out != s.want {
			t.Fatalf("%v: out %q err %v stderr %q, want %q", s.args, out, err, errOut, s.want)
		}
	}
}

func TestDiffExitCodes(t *testing.T) {
	dir := t.TempDir()
	base := []string{"--state-dir", dir, "--instance", "t1"}
	out, _, err := run(t, webYAML, append(base, "diff", "-f", "-")...)
	if code := exitCode(err); code != 1 || !strings.Contains(out, "+++ merged/web") {
		t.Fatalf("diff before apply: code %d out %q", code, out)
	}
	if _, _, err := run(t, webYAML, append(base, "apply", "-f", "-")...); err != nil {
		t.Fatal(err)
	}
	if out, _, err := run(t, webYAML, append(base, "diff", "-f", "-")...); exitCode(err) != 0 || out != "" {
		t.Fatalf("diff after apply: %v %q", err, out)
	}
	changed := strings.Replace(webYAML, "replicas: 3", "replicas: 4", 1)
	out, _, err = run(t, changed, append(base, "diff", "-f", "-")...)
	if exitCode(err) != 1 || !strings.Contains(out, "-  replicas: 3") || !strings.Contains(out, "+  replicas: 4") {
		t.Fatalf("diff of a change: %v\n%s", err, out)
	}
	if _, _, err := run(t, "kind: Nope", append(base, "diff", "-f", "-")...); exitCode(err) != 2 {
		t.Fatalf("diff of invalid input: exit %d, want 2", exitCode(err))
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ex, ok := err.(*exitError); ok {
		return ex.code
	}
	return 1
}

// Every error is one line that says what is wrong.
func TestErrors(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := run(t, webYAML, "--state-dir", dir, "--instance", "a", "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	notWritable := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notWritable, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"other instance", webYAML, []string{"--state-dir", dir, "--instance", "b", "apply", "-f", "-"}, `belongs to instance "a"`},
		{"unknown name", "", []string{"--state-dir", dir, "--instance", "a", "scale", "deployment", "nope", "--replicas", "2"}, `nope`},
		{"state dir not writable", webYAML, []string{"--state-dir", filepath.Join(notWritable, "sub"), "apply", "-f", "-"}, "not writable"},
		{"invalid manifest", strings.Replace(webYAML, "image: dockctl-workload:dev", "image: \"\"", 1),
			[]string{"--state-dir", dir, "--instance", "a", "apply", "-f", "-"}, "<stdin>:16: spec.template.spec.containers[0].image"},
		{"bad instance", webYAML, []string{"--state-dir", dir, "--instance", "Bad_Name", "apply", "-f", "-"}, "invalid instance"},
		{"bad resource", "", []string{"--state-dir", dir, "scale", "pods/x", "--replicas", "1"}, `pods "x" cannot be scaled`},
		{"negative replicas", "", []string{"--state-dir", dir, "--instance", "a", "scale", "deployment/web", "--replicas", "-1"}, "greater than or equal to 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := run(t, tt.stdin, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestDockerUnreachable(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	_, _, err := run(t, "", "--state-dir", t.TempDir(), "get", "deployments")
	if err == nil || strings.Count(err.Error(), "\n") != 0 || !strings.Contains(err.Error(), "/nonexistent/docker.sock") {
		t.Fatalf("want one line naming the socket, got %v", err)
	}
}

func TestDeploymentArg(t *testing.T) {
	tests := []struct {
		args []string
		want string
		ok   bool
	}{
		{[]string{"deployment", "web"}, "web", true},
		{[]string{"deployment/web"}, "web", true},
		{[]string{"deploy/web"}, "web", true},
		{[]string{"deployments", "web"}, "web", true},
		{[]string{"web"}, "", false},
		{[]string{"pod/web"}, "", false},
		{[]string{"deployment/"}, "", false},
	}
	for _, tt := range tests {
		got, err := deploymentArg(tt.args)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("%v: got %q, %v", tt.args, got, err)
		}
	}
}

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 45 * time.Second: "45s", 119 * time.Second: "119s", 5 * time.Minute: "5m",
		3 * time.Hour: "3h", 47 * time.Hour: "47h", 72 * time.Hour: "3d",
	} {
		if got := age(d); got != want {
			t.Errorf("age(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestRolloutCommands(t *testing.T) {
	dir := t.TempDir()
	base := []string{"--state-dir", dir, "--instance", "t1"}
	mustRun := runner(t, base)
	v1 := strings.Replace(webYAML, "  labels: {app: web}\nspec", "  labels: {app: web}\n  annotations: {kubernetes.io/change-cause: first}\nspec", 1)
	v2 := strings.Replace(strings.Replace(v1, "value: hi", "value: ho", 1), "cause: first", "cause: second", 1)
	mustRun(v1, "apply", "-f", "-")
	mustRun(v2, "apply", "-f", "-")
	hist := mustRun("", "rollout", "history", "deployment/web")
	if !regexp.MustCompile(`(?m)^1\s+\w{10}\s+\S+\s+first$`).MatchString(hist) || !regexp.MustCompile(`(?m)^2\s+\w{10}\s+\S+\s+second$`).MatchString(hist) {
		t.Fatalf("history:\n%s", hist)
	}
	if out := mustRun("", "rollout", "history", "deployment", "web", "--revision", "1"); !strings.Contains(out, "value: hi") {
		t.Fatalf("revision 1 template:\n%s", out)
	}
	if out := mustRun("", "rollout", "undo", "deployment/web"); out != "deployment/web rolled back (to revision 1)\n" {
		t.Fatalf("undo: %q", out)
	}
	rec := storedDeployment(t, dir, "web")
	if rec.Deployment.Container().Env[0].Value != "hi" || rec.CurrentRevision().Number != 3 {
		t.Fatalf("after undo: env %v revision %d", rec.Deployment.Container().Env, rec.CurrentRevision().Number)
	}
	if out := mustRun("", "rollout", "undo", "deployment/web", "--to-revision", "2"); !strings.Contains(out, "revision 2") {
		t.Fatalf("undo --to-revision: %q", out)
	}
	if _, _, err := run(t, "", append(base, "rollout", "undo", "deployment/web", "--to-revision", "9")...); err == nil || err.Error() != "unable to find specified revision 9 in history" {
		t.Fatalf("undo to a missing revision: %v", err)
	}
	before := storedDeployment(t, dir, "web").CurrentRevision().Number
	mustRun("", "rollout", "restart", "deployment/web")
	after := storedDeployment(t, dir, "web")
	if after.CurrentRevision().Number != before+1 || after.Deployment.Spec.Template.Metadata.Annotations[manifests.AnnotationRestartedAt] == "" {
		t.Fatalf("restart did not make a new revision: %+v", after.Revisions)
	}
	if out := mustRun("", "rollout", "pause", "deployment/web"); out != "deployment/web paused\n" {
		t.Fatalf("pause: %q", out)
	}
	if _, _, err := run(t, "", append(base, "rollout", "restart", "deployment/web")...); err == nil || !strings.Contains(err.Error(), "paused") {
		t.Fatalf("restart of a paused deployment: %v", err)
	}
	if out := mustRun("", "rollout", "resume", "deployment/web"); out != "deployment/web resumed\n" {
		t.Fatalf("resume: %q", out)
	}
	if _, _, err := run(t, "", append(base, "rollout", "history", "deployment/nope")...); err == nil || err.Error() != `deployments.apps "nope" not found in instance "t1"` {
		t.Fatalf("history of an unknown deployment: %v", err)
	}
}

func storedDeployment(t *testing.T, dir, name string) *store.Record {
	t.Helper()
	st, err := store.OpenReadOnly(dir, "t1")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.Get("", name)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestProgressMessages(t *testing.T) {
	tests := []struct {
		p    progress
		want string
	}{
		{progress{name: "web", desired: 3}, `Waiting for deployment "web" spec update to be observed...`},
		{progress{name: "web", observed: true, desired: 3, updated: 1, total: 4}, `Waiting for deployment "web" rollout to finish: 1 out of 3 new replicas have been updated...`},
		{progress{name: "web", observed: true, desired: 3, updated: 3, total: 4}, `Waiting for deployment "web" rollout to finish: 1 old replicas are pending termination...`},
		{progress{name: "web", observed: true, desired: 3, updated: 3, total: 3, available: 2}, `Waiting for deployment "web" rollout to finish: 2 of 3 updated replicas are available...`},
		{progress{name: "web", observed: true, desired: 3, updated: 3, total: 3, available: 3, complete: true}, `deployment "web" successfully rolled out`},
		{progress{name: "web", observed: true, deadlineExceeded: true}, `deployment "web" exceeded its progress deadline`},
		// Why, when the controller recorded it: a pod's waiting reason
		// first, else the ReplicaFailure condition.
		{progress{name: "web", observed: true, desired: 2, total: 0, waiting: "ImagePullBackOff: image absent:1: not found", failure: "ErrImagePull: image absent:1: not found"},
			`Waiting for deployment "web" rollout to finish: 0 out of 2 new replicas have been updated... (ImagePullBackOff: image absent:1: not found)`},
		{progress{name: "web", observed: true, desired: 2, updated: 2, total: 2, available: 1, failure: "FailedCreate: revision 5d8f: ConfigMap default/app not found"},
			`Waiting for deployment "web" rollout to finish: 1 of 2 updated replicas are available... (FailedCreate: revision 5d8f: ConfigMap default/app not found)`},
		{progress{name: "web", observed: true, desired: 3, updated: 3, total: 3, available: 3, complete: true, failure: "FailedCreate: x"}, `deployment "web" successfully rolled out`},
	}
	for _, tt := range tests {
		if got := tt.p.message(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
	if b := bar(progress{name: "web", observed: true, desired: 4, updated: 2, available: 2, total: 5}); !strings.Contains(b, "[##########----------] 2/4 updated, 2 available, 5 total") {
		t.Errorf("bar: %q", b)
	}
}

// apply warns about settings the controller refuses without an allow flag.
func TestApplyWarnsAboutPrivileges(t *testing.T) {
	src := strings.Replace(webYAML, "    spec:\n      containers:", "    spec:\n      hostNetwork: true\n      containers:", 1)
	out, errOut, err := run(t, src, "--state-dir", t.TempDir(), "apply", "-f", "-")
	if err != nil || out != "deployment/web created\n" {
		t.Fatalf("apply: %v %q", err, out)
	}
	if !strings.Contains(errOut, "Warning: deployment/web: spec.template.spec.hostNetwork") || !strings.Contains(errOut, "--allow-host-namespaces") {
		t.Fatalf("warning: %q", errOut)
	}
}

// `diff` exits 1 only for differences: a usage error (no -f, an unknown
// flag, an argument) is an error like any other, exit 2, as the README and
// the help say, so that a script never takes it for "differences found".
func TestDiffUsageErrorsExit2(t *testing.T) {
	base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
	for _, args := range [][]string{
		{"diff"},
		{"diff", "-f", "-", "--bogus"},
		{"diff", "-f", "-", "extra"},
	} {
		if _, _, err := run(t, webYAML, append(base, args...)...); exitCode(err) != 2 {
			t.Errorf("%v: exit %d (%v), want 2", args, exitCode(err), err)
		}
	}
}

// `apply --dry-run` stores nothing: it needs no write access and leaves no
// state directory behind (the store's Apply needs neither for a dry run).
func TestApplyDryRunStoresNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	base := []string{"--state-dir", dir, "--instance", "t1"}
	out, errOut, err := run(t, webYAML, append(base, "apply", "-f", "-", "--dry-run")...)
	if err != nil || out != "deployment/web created (dry run)\n" {
		t.Fatalf("dry run: %v %q\n%s", err, errOut, out)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a dry run created the state directory (stat: %v)", err)
	}
}
