package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/store"
)

// fakeEditor is an editor for runEdit: each save in turn rewrites the
// file's text with its function; what it was shown is kept.
type fakeEditor struct {
	saves []func(string) string
	shown []string
}

func (f *fakeEditor) edit(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f.shown = append(f.shown, string(b))
	if len(f.shown) > len(f.saves) {
		return os.ErrInvalid // opened more often than the test expects
	}
	return os.WriteFile(path, []byte(f.saves[len(f.shown)-1](string(b))), 0o600)
}

func replace(old, new string) func(string) string {
	return func(s string) string { return strings.Replace(s, old, new, 1) }
}

func TestEdit(t *testing.T) {
	same := func(s string) string { return s }
	tests := []struct {
		name      string
		ref       store.ObjectRef
		saves     []func(string) string
		wantOut   string
		wantErr   string
		wantShown []string // what must be in each file shown, in turn
		after     []string
		afterOut  string
	}{
		{name: "edit a deployment's image", ref: store.ObjectRef{Kind: store.KindDeployment, Name: "web"},
			saves: []func(string) string{replace("image: web:1", "image: web:2")}, wantOut: "deployment.apps/web edited\n",
			wantShown: []string{"# Please edit the object below. Lines beginning with a '#' will be ignored,\n"},
			after:     []string{"get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}"}, afterOut: "web:2"},
		{name: "unchanged: cancelled", ref: store.ObjectRef{Kind: store.KindConfigMap, Name: "cfg"},
			saves: []func(string) string{same}, wantOut: "Edit cancelled, no changes made.\n"},
		{name: "only a comment changed: cancelled", ref: store.ObjectRef{Kind: store.KindService, Name: "web"},
			saves: []func(string) string{func(s string) string { return "# mine\n" + s }}, wantOut: "Edit cancelled, no changes made.\n"},
		{name: "status changed: no change", ref: store.ObjectRef{Kind: store.KindNamespace, Name: "team"},
			saves: []func(string) string{func(s string) string { return s + "status: {phase: Terminating}\n" }}, wantOut: "Edit cancelled, no changes made.\n"},
		{name: "emptied: cancelled", ref: store.ObjectRef{Kind: store.KindConfigMap, Name: "cfg"},
			saves: []func(string) string{func(string) string { return "# all gone\n" }}, wantOut: "Edit cancelled, saved file was empty.\n"},
		{name: "invalid, then fixed", ref: store.ObjectRef{Kind: store.KindDeployment, Name: "web"},
			saves:     []func(string) string{replace("image: web:1", `image: ""`), replace(`image: ""`, "image: web:3")},
			wantShown: []string{"  - image: web:1\n", "# deployment.apps/web was not valid:\n# * the Deployment \"web\" is invalid: spec.template.spec.containers[0].image: required\n#\n"},
			wantOut:   "deployment.apps/web edited\n",
			after:     []string{"get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}"}, afterOut: "web:3"},
		{name: "syntax error, then fixed", ref: store.ObjectRef{Kind: store.KindConfigMap, Name: "cfg", Namespace: "team"},
			saves:     []func(string) string{replace("k: v", "k: [v"), replace("k: [v", "k: w")},
			wantShown: []string{"", "# The edited file had a syntax error: "},
			wantOut:   "configmap/cfg edited\n",
			after:     []string{"get", "cm", "cfg", "-n", "team", "-o", "jsonpath={.data.k}"}, afterOut: "w"},
		{name: "invalid, saved again unchanged: given up", ref: store.ObjectRef{Kind: store.KindService, Name: "web"},
			saves:   []func(string) string{replace("port: 80", "port: 0"), same},
			wantErr: "Edit cancelled, no valid changes were saved.\nservice/web was not valid:\n* the Service \"web\" is invalid: spec.ports[0].port: …",
			after:   []string{"get", "svc", "web", "-o", "jsonpath={.spec.ports[0].port}"}, afterOut: "80"},
		{name: "a secret is shown base64 and so saved", ref: store.ObjectRef{Kind: store.KindSecret, Name: "sec"},
			saves: []func(string) string{replace("k: dg==", "k: eHl6")}, wantShown: []string{"  k: dg==\n"},
			wantOut: "secret/sec edited\n", after: []string{"get", "secret", "sec", "-o", "jsonpath={.data.k}"}, afterOut: "eHl6"},
		{name: "the name cannot change", ref: store.ObjectRef{Kind: store.KindPersistentVolumeClaim, Name: "data"},
			saves:   []func(string) string{replace("name: data", "name: other"), same},
			wantErr: "Edit cancelled, no valid changes were saved.\npersistentvolumeclaim/data was not valid:\n* persistentvolumeclaim/data: metadata.name cannot be changed (to \"other\")"},
		{name: "missing", ref: store.ObjectRef{Kind: store.KindDeployment, Name: "nope"}, wantErr: `deployments.apps "nope" not found in instance "t1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("TMPDIR", t.TempDir()) // where a given-up edit's copy is kept
			dir := t.TempDir()
			base := []string{"--state-dir", dir, "--instance", "t1"}
			must := runner(t, base)
			must(mutateFixture, "apply", "-f", "-")
			g := &globalOptions{stateDir: dir, instance: "t1", namespace: "default"}
			if tt.ref.Namespace == "" && tt.ref.Kind != store.KindNamespace {
				tt.ref.Namespace = "default"
			}
			ed := &fakeEditor{saves: tt.saves}
			var out, errOut bytes.Buffer
			err := runEdit(&out, &errOut, g, tt.ref, ed.edit)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if p, ok := strings.CutSuffix(tt.wantErr, "…"); ok && strings.HasPrefix(gotErr, p) {
				gotErr = tt.wantErr
			}
			if out.String() != tt.wantOut || gotErr != tt.wantErr {
				t.Fatalf("stdout %q err %q stderr %q; want %q, %q", out.String(), gotErr, errOut.String(), tt.wantOut, tt.wantErr)
			}
			if len(ed.shown) != len(tt.saves) {
				t.Fatalf("the editor was opened %d times, want %d", len(ed.shown), len(tt.saves))
			}
			for i, want := range tt.wantShown {
				if !strings.Contains(ed.shown[i], want) {
					t.Errorf("file %d shown has no %q:\n%s", i, want, ed.shown[i])
				}
			}
			if tt.after != nil {
				if got := must("", tt.after...); got != tt.afterOut {
					t.Fatalf("%v: %q, want %q", tt.after, got, tt.afterOut)
				}
			}
		})
	}
}

// A change made by someone else while the editor is open is a conflict:
// the edit stores nothing (its copy is kept), the other change stands.
func TestEditConflict(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir := t.TempDir()
	base := []string{"--state-dir", dir, "--instance", "t1"}
	must := runner(t, base)
	must(mutateFixture, "apply", "-f", "-")
	g := &globalOptions{stateDir: dir, instance: "t1", namespace: "default"}
	ref := store.ObjectRef{Kind: store.KindDeployment, Namespace: "default", Name: "web"}
	edit := func(path string) error {
		must("", "set", "image", "deployment/web", "*=web:9") // meanwhile
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(path, []byte(strings.Replace(string(b), "image: web:1", "image: web:2", 1)), 0o600)
	}
	var out, errOut bytes.Buffer
	err := runEdit(&out, &errOut, g, ref, edit)
	if err == nil || !strings.Contains(err.Error(), "the object has been modified") {
		t.Fatalf("err %v, stdout %q: want a conflict", err, out.String())
	}
	if !strings.Contains(errOut.String(), "A copy of your changes has been stored to") {
		t.Errorf("stderr %q: no copy kept", errOut.String())
	}
	if got := must("", "get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); got != "web:9" {
		t.Errorf("image %q, want the other change's web:9", got)
	}
}

// The edit command runs $KUBE_EDITOR (here a script, given an argument as
// kubectl splits it) on a file it removes afterwards.
func TestEditCommand(t *testing.T) {
	base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
	must := runner(t, base)
	must(mutateFixture, "apply", "-f", "-")
	script := filepath.Join(t.TempDir(), "ed.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nsed -i \"s/k: v/k: $1/\" \"$2\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBE_EDITOR", script+" edited")
	t.Setenv("EDITOR", "false")
	if out := must("", "edit", "cm/cfg"); out != "configmap/cfg edited\n" {
		t.Fatalf("edit: %q", out)
	}
	if out := must("", "get", "cm", "cfg", "-o", "jsonpath={.data.k}"); out != "edited" {
		t.Fatalf("after edit: %q", out)
	}
	// $EDITOR when $KUBE_EDITOR is unset: false fails, and so does edit.
	t.Setenv("KUBE_EDITOR", "")
	if _, _, err := run(t, "", append(base, "edit", "cm", "cfg")...); err == nil || !strings.HasPrefix(err.Error(), "there was a problem with the editor: false exited with") {
		t.Fatalf("edit with a failing editor: %v", err)
	}
}

func TestEditorArgs(t *testing.T) {
	for _, tt := range []struct {
		kube, editor, shell string
		want                []string
	}{
		{"", "", "", []string{"vi", "/f"}},
		{"", "nano", "", []string{"nano", "/f"}},
		{"code --wait", "nano", "", []string{"code", "--wait", "/f"}},
		{`emacs -nw "a b"`, "", "", []string{"/bin/bash", "-c", `emacs -nw "a b" "/f"`}},
		{`vim '+set ft=yaml'`, "", "/bin/zsh", []string{"/bin/zsh", "-c", `vim '+set ft=yaml' "/f"`}},
	} {
		if got := editorArgs(tt.kube, tt.editor, tt.shell, "/f"); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("editorArgs(%q, %q, %q) = %q, want %q", tt.kube, tt.editor, tt.shell, got, tt.want)
		}
	}
}
