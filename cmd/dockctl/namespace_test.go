package main

import (
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// withDocs makes the commands of the test read the documents docs makes
// (afresh for each command: loading assigns namespaces) instead of their
// files.
func withDocs(t *testing.T, docs func() []*manifests.Document) {
	t.Helper()
	old := loadManifests
	loadManifests = func([]string, io.Reader, manifests.LoadOptions) ([]*manifests.Document, []manifests.Skipped, error) {
		return docs(), nil, nil
	}
	t.Cleanup(func() { loadManifests = old })
}

func nsDoc(name string) *manifests.Document {
	return &manifests.Document{File: "b.yaml", Line: 1, Namespace: &manifests.Namespace{APIVersion: "v1", Kind: "Namespace", Metadata: manifests.ObjectMeta{Name: name}}}
}

func svcDoc(ns, name string) *manifests.Document {
	return &manifests.Document{File: "b.yaml", Line: 5, Service: &manifests.Service{APIVersion: "v1", Kind: "Service",
		Metadata: manifests.ObjectMeta{Name: name, Namespace: ns},
		Spec: manifests.ServiceSpec{Selector: map[string]string{"app": name},
			Ports: []manifests.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}}
}

func depDoc(t *testing.T, ns, name string) *manifests.Document {
	d := mustDecode(t, strings.ReplaceAll(webYAML, "web", name))
	d.Metadata.Namespace = ns
	return &manifests.Document{File: "b.yaml", Line: 12, Deployment: d, ReplicasSet: true}
}

// The commands that read files take bundles of Namespaces, Services and
// Deployments, one line per object, in the order they are stored.
func TestBundleCommands(t *testing.T) {
	base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
	full := func() []*manifests.Document {
		return []*manifests.Document{depDoc(t, "team", "web"), svcDoc("team", "web"), nsDoc("team"), depDoc(t, "", "web")}
	}
	steps := []struct {
		name    string
		docs    func() []*manifests.Document
		args    []string
		want    string
		wantErr string
	}{
		{"dry run", full, []string{"apply", "-f", "b.yaml", "--dry-run"},
			"namespace/team created (dry run)\nservice/web created (dry run)\ndeployment/web created (dry run)\ndeployment/web created (dry run)\n", ""},
		{"apply", full, []string{"apply", "-f", "b.yaml"},
			"namespace/team created\nservice/web created\ndeployment/web created\ndeployment/web created\n", ""},
		{"again", full, []string{"apply", "-f", "b.yaml"},
			"namespace/team unchanged\nservice/web unchanged\ndeployment/web unchanged\ndeployment/web unchanged\n", ""},
		{"diff: nothing", full, []string{"diff", "-f", "b.yaml"}, "", ""},
		{"-n places what names no namespace", func() []*manifests.Document { return []*manifests.Document{depDoc(t, "", "api")} },
			[]string{"apply", "-n", "team", "-f", "b.yaml"}, "deployment/api created\n", ""},
		{"-n given and another namespace in the file", full, []string{"apply", "-n", "other", "-f", "b.yaml"}, "",
			`b.yaml:12: the namespace from the provided object "team" does not match the namespace "other". You must pass '--namespace=team' to perform this operation.`},
		{"-n default given explicitly", full, []string{"apply", "-n", "default", "-f", "b.yaml"}, "",
			`the namespace from the provided object "team" does not match the namespace "default"`},
		{"a namespace that does not exist", func() []*manifests.Document { return []*manifests.Document{depDoc(t, "nope", "web")} },
			[]string{"apply", "-f", "b.yaml"}, "", `deployment/web: namespaces "nope" not found`},
		{"-n of a namespace that does not exist", func() []*manifests.Document { return []*manifests.Document{depDoc(t, "", "web")} },
			[]string{"apply", "-n", "nope", "-f", "b.yaml"}, "", `namespaces "nope" not found`},
		{"invalid -n", full, []string{"apply", "-n", "Bad_NS", "-f", "b.yaml"}, "", `invalid namespace "Bad_NS"`},
		{"prune looks in the namespaces of the files", func() []*manifests.Document {
			return []*manifests.Document{svcDoc("team", "web"), depDoc(t, "team", "web")}
		}, []string{"apply", "-f", "b.yaml", "--prune", "--all"}, "service/web unchanged\ndeployment/web unchanged\ndeployment/api pruned\n", ""},
		{"diff of a change", func() []*manifests.Document {
			d := depDoc(t, "team", "web")
			*d.Deployment.Spec.Replicas = 4
			s := svcDoc("team", "web")
			s.Service.Spec.Ports[0].Port = 81
			return []*manifests.Document{s, d, depDoc(t, "", "web")}
		}, []string{"diff", "-f", "b.yaml"}, "", "exit status 1"},
		{"delete -f", full, []string{"delete", "-f", "b.yaml"},
			"deployment/web deleted\ndeployment/web deleted\nservice/web deleted\nnamespace/team deleted\n", ""},
		{"delete -f again: each reported missing", full, []string{"delete", "-f", "b.yaml"}, "",
			`deployments.apps "web" not found in namespace "team" of instance "t1"`},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			withDocs(t, st.docs)
			out, errOut, err := run(t, "", append(base, st.args...)...)
			var ee *exitError
			if errors.As(err, &ee) && ee.err == nil {
				err = errors.New("exit status " + string(rune('0'+ee.code)))
			}
			switch {
			case st.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), st.wantErr) {
					t.Fatalf("err %v, want one containing %q (out %q)", err, st.wantErr, out)
				}
			case err != nil || out != st.want:
				t.Fatalf("out %q err %v stderr %q, want %q", out, err, errOut, st.want)
			}
		})
	}
	st := openForTest(t, base)
	if r, err := st.LookupNamespace("team"); err != nil || !r.Deleted {
		t.Errorf("namespace team after delete -f: %+v %v", r, err)
	}
	if _, err := st.Get("team", "api"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("team/api after its namespace's deletion: %v", err)
	}
}

// Every command that takes a name takes -n, and finds the object in that
// namespace only.
func TestNamespaceFlag(t *testing.T) {
	base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
	mustRun := runner(t, base)
	if out := mustRun("", "create", "namespace", "team"); out != "namespace/team created\n" {
		t.Fatalf("create namespace: %q", out)
	}
	if _, _, err := run(t, "", append(base, "create", "namespace", "team")...); err == nil || err.Error() != `namespaces "team" already exists` {
		t.Fatalf("create namespace twice: %v", err)
	}
	if out := mustRun(webYAML, "apply", "-n", "team", "-f", "-"); out != "deployment/web created\n" {
		t.Fatalf("apply -n team: %q", out)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"scale", "deployment/web", "--replicas", "2"}, "deployment/web scaled\n"},
		{[]string{"rollout", "pause", "deployment", "web"}, "deployment/web paused\n"},
		{[]string{"rollout", "resume", "deploy/web"}, "deployment/web resumed\n"},
		{[]string{"rollout", "restart", "deployment/web"}, "deployment/web restarted\n"},
		{[]string{"rollout", "history", "deployment/web"}, "deployment/web\n"},
		{[]string{"rollout", "undo", "deployment/web"}, "deployment/web rolled back (to revision 1)\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[:2], " "), func(t *testing.T) {
			// Without -n: default, where there is no web.
			_, _, err := run(t, "", append(base, tt.args...)...)
			if err == nil || err.Error() != `deployments.apps "web" not found in instance "t1"` {
				t.Fatalf("%v without -n: %v", tt.args, err)
			}
			out := mustRun("", append([]string{"-n", "team"}, tt.args...)...)
			if !strings.HasPrefix(out, tt.want) {
				t.Fatalf("%v -n team: %q, want it to start with %q", tt.args, out, tt.want)
			}
		})
	}
	st := openForTest(t, base)
	rec, err := st.Get("team", "web")
	if err != nil || *rec.Deployment.Spec.Replicas != 2 || rec.CurrentRevision().Number != 3 {
		t.Fatalf("team/web = %+v, %v; want 2 replicas at revision 3 (restart, undo)", rec, err)
	}
	// delete takes -n, and namespaces and services by name.
	if _, _, err := run(t, "", append(base, "delete", "deployment", "web")...); err == nil {
		t.Fatal("delete without -n found team's web")
	}
	if out := mustRun("", "delete", "-n", "team", "deployment", "web"); out != "deployment/web deleted\n" {
		t.Fatalf("delete -n team: %q", out)
	}
	if _, _, err := run(t, "", append(base, "delete", "svc", "web", "-n", "team")...); err == nil || err.Error() != `services "web" not found in namespace "team" of instance "t1"` {
		t.Fatalf("delete svc of a missing one: %v", err)
	}
	if _, _, err := run(t, "", append(base, "delete", "namespace", "default")...); err == nil || !strings.Contains(err.Error(), `namespaces "default" is forbidden`) {
		t.Fatalf("delete namespace default: %v", err)
	}
	if out := mustRun("", "delete", "ns/team"); out != "namespace/team deleted\n" {
		t.Fatalf("delete ns/team: %q", out)
	}
	if _, _, err := run(t, "", append(base, "delete", "namespace", "team")...); err == nil || err.Error() != `namespaces "team" not found in instance "t1"` {
		t.Fatalf("delete of a deleted namespace: %v", err)
	}
}

// The listing commands show -n's namespace, or every one with -A (a
// NAMESPACE column first, as kubectl's).
func TestListingNamespaces(t *testing.T) {
	api, base, st := fakeInstance(t)
	web := mustDecode(t, webYAML)
	team := mustDecode(t, webYAML)
	team.Metadata.Namespace = "team"
	if _, err := st.Apply(store.Bundle{Namespaces: []*manifests.Namespace{{Metadata: manifests.ObjectMeta{Name: "team"}}},
		Deployments: []*manifests.Deployment{web, team}}, store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	// default's container as an earlier release made it (no namespace
	// label); team's as this one does.
	api.addContainer("t1_web-abc-0", "t1", "web", map[string]string{"app": "web"})
	api.addContainer("t1_web.team-abc-0", "t1", "web", map[string]string{"app": "web", "io.dockctl.namespace": "team"})

	tests := []cliCase{
		{[]string{"get", "deployments"}, `^NAME +READY +UP-TO-DATE +AVAILABLE +AGE\nweb +1/3 +0 +1 +\d+s\n$`, ""},
		{[]string{"get", "deployments", "-n", "team"}, `^NAME +READY.*\nweb +1/3 .*\n$`, ""},
		{[]string{"get", "deployments", "-A"}, `^NAMESPACE +NAME +READY +UP-TO-DATE +AVAILABLE +AGE\ndefault +web +1/3 .*\nteam +web +1/3 .*\n$`, ""},
		{[]string{"get", "deployments", "web", "-A"}, "", "cannot be retrieved by name across all namespaces"},
		{[]string{"get", "deployments", "web", "-n", "nope"}, "", `deployments.apps "web" not found in namespace "nope" of instance "t1"`},
		{[]string{"get", "pods"}, `^NAME +READY +STATUS +RESTARTS +AGE\nweb-abc-0 .*\n$`, ""},
		{[]string{"get", "pods", "--all-namespaces"}, `^NAMESPACE +NAME .*\ndefault +web-abc-0 .*\nteam +web-abc-0 .*\n$`, ""},
		{[]string{"get", "containers", "-n", "team"}, `^NAME .*\nt1_web\.team-abc-0 .*\n$`, ""},
		{[]string{"get", "containers", "-A", "-o", "wide"}, `^NAMESPACE +NAME .*\ndefault +t1_web-abc-0 .*\nteam +t1_web\.team-abc-0 .*\n$`, ""},
		{[]string{"get", "containers", "-n", "team", "-o", "json"}, `(?s)"namespace": "team"`, ""},
		{[]string{"get", "deployments", "-n", "team", "-o", "yaml"}, `(?s)namespace: team`, ""},
		{[]string{"get", "namespaces"}, `^NAME +STATUS +AGE\ndefault +Active +\d+s\nteam +Active +\d+s\n$`, ""},
		{[]string{"get", "ns", "team", "-o", "name"}, `^namespace/team\n$`, ""},
		{[]string{"get", "ns/default", "-o", "json"}, `(?s)"kind": "Namespace".*"phase": "Active"`, ""},
		{[]string{"get", "ns", "nope"}, "", `namespaces "nope" not found`},
		{[]string{"describe", "deployment", "web", "-n", "team"}, `(?s)Name: +web\nNamespace: +team\n`, ""},
		{[]string{"describe", "pod", "web-abc-0", "-n", "team"}, `(?s)Namespace: +team\n.*t1_web\.team-abc-0`, ""},
		{[]string{"delete", "namespace", "team"}, `^namespace/team deleted\n$`, ""},
		// Deleted, with a container of it left: Terminating, as Kubernetes
		// shows a namespace until its content is gone.
		{[]string{"get", "namespaces"}, `^NAME +STATUS +AGE\ndefault +Active +\d+s\nteam +Terminating +\d+s\n$`, ""},
		{[]string{"get", "pods", "-n", "team"}, `^NAME .*\nweb-abc-0 .*Terminating.*\n$`, ""},
	}
	runCases(t, base, tests)
}

// fakeInstance is instance t1 in a fresh state directory (base: the flags
// naming it), opened for writing, with the fake Docker daemon.
func fakeInstance(t *testing.T) (*dockerAPI, []string, *store.Store) {
	t.Helper()
	api := startFakeDaemon(t)
	dir := t.TempDir()
	controllerBeating(t, dir, "t1")
	st, err := store.Open(dir, "t1")
	if err != nil {
		t.Fatal(err)
	}
	return api, []string{"--state-dir", dir, "--instance", "t1"}, st
}

// cliCase is a command and what it must print, or fail with.
type cliCase struct {
	args    []string
	want    string // a regular expression the whole output must match
	wantErr string // a part of the error
}

// runCases runs each case with the base flags, as a subtest named by its
// arguments.
func runCases(t *testing.T, base []string, tests []cliCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, err := run(t, "", append(base, tt.args...)...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !regexp.MustCompile(tt.want).MatchString(out) {
				t.Fatalf("err %v stderr %q, output:\n%s\nwant it to match %s", err, errOut, out, tt.want)
			}
		})
	}
}

// placeObject: the namespace an object of a file goes to.
func TestPlaceObject(t *testing.T) {
	tests := []struct {
		obj, flag string
		explicit  bool
		want      string // "" is default, as stored
		wantErr   bool
	}{
		{"", "default", false, "", false},
		{"", "team", true, "team", false},
		{"team", "default", false, "team", false},
		{"team", "team", true, "team", false},
		{"default", "default", true, "", false},
		{"team", "other", true, "", true},
		{"default", "team", true, "", true},
	}
	for _, tt := range tests {
		g := &globalOptions{namespace: tt.flag, nsGiven: func() bool { return tt.explicit }}
		m := manifests.ObjectMeta{Name: "web", Namespace: tt.obj}
		err := g.placeObject(&manifests.Document{File: "f", Line: 1}, &m)
		if (err != nil) != tt.wantErr || err == nil && m.Namespace != tt.want {
			t.Errorf("object %q, -n %q (given %v): namespace %q, err %v; want %q, error %v", tt.obj, tt.flag, tt.explicit, m.Namespace, err, tt.want, tt.wantErr)
		}
	}
}
