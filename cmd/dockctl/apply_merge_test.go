package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/sourcedir"
	"github.com/dockctl/dockctl/store"
)

// What `label` and `rollout restart` set and the file does not is kept by
// apply -f and by a manifests directory's sync, and diff -f and diff
// --manifests, which preview exactly what they store, show no difference
// for it; `set image` changes a field the file sets: the file's image wins
// again, as with kubectl apply and Flux.
func TestApplyKeepsWhatTheFileDoesNotSet(t *testing.T) {
	for _, viaDir := range []bool{false, true} {
		name := map[bool]string{false: "apply -f", true: "manifests directory"}[viaDir]
		t.Run(name, func(t *testing.T) {
			state := t.TempDir()
			dir := filepath.Join(t.TempDir(), "k8s")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(webYAML), 0o644); err != nil {
				t.Fatal(err)
			}
			base := []string{"--state-dir", state, "--instance", "t1"}
			must := func(stdin string, args ...string) string {
				t.Helper()
				out, errOut, err := run(t, stdin, append(base, args...)...)
				if err != nil {
					t.Fatalf("%v: %v %s", args, err, errOut)
				}
				return out
			}
			apply := func() string {
				t.Helper()
				if !viaDir {
					return must(webYAML, "apply", "-f", "-")
				}
				st, err := store.Open(state, "t1")
				if err != nil {
					t.Fatal(err)
				}
				res, err := sourcedir.New(st, sourcedir.Options{Paths: []string{dir}}).Sync()
				if err != nil {
					t.Fatal(err)
				}
				return string(res[0].Action)
			}
			diff := func() (string, int) {
				t.Helper()
				args := []string{"diff", "-f", "-"}
				if viaDir {
					args = []string{"diff", "--manifests", dir}
				}
				out, _, err := run(t, webYAML, append(base, args...)...)
				return out, exitCode(err)
			}
			stored := func() *store.Record {
				t.Helper()
				return storedDeployment(t, state, "web")
			}

			apply()
			must("", "label", "deployment", "web", "tier=front")
			must("", "rollout", "restart", "deployment/web")
			restarted := stored()
			if out, code := diff(); code != 0 || out != "" {
				t.Fatalf("diff after label and rollout restart: exit %d\n%s", code, out)
			}
			if got := apply(); !strings.Contains(got, "unchanged") {
				t.Fatalf("re-apply after label and rollout restart: %s", got)
			}
			r := stored()
			if r.Deployment.Metadata.Labels["tier"] != "front" || r.Deployment.Spec.Template.Metadata.Annotations[manifests.AnnotationRestartedAt] == "" ||
				r.CurrentRevision().Number != restarted.CurrentRevision().Number || r.Generation != restarted.Generation {
				t.Fatalf("re-apply undid label or restart: labels %v, template annotations %v, revision %d -> %d",
					r.Deployment.Metadata.Labels, r.Deployment.Spec.Template.Metadata.Annotations, restarted.CurrentRevision().Number, r.CurrentRevision().Number)
			}

			must("", "set", "image", "deployment/web", "web=nginx:1.27")
			if out, code := diff(); code != 1 || !strings.Contains(out, "-        image: nginx:1.27") || !strings.Contains(out, "+        image: dockctl-workload:dev") || strings.Contains(out, "tier") || strings.Contains(out, "restartedAt") {
				t.Fatalf("diff after set image: exit %d, want 1 and the image alone\n%s", code, out)
			}
			if got := apply(); !strings.Contains(got, "configured") {
				t.Fatalf("re-apply after set image: %s", got)
			}
			r = stored()
			if img := r.Deployment.Spec.Template.Spec.Containers[0].Image; img != "dockctl-workload:dev" || r.Deployment.Spec.Template.Metadata.Annotations[manifests.AnnotationRestartedAt] == "" {
				t.Fatalf("after re-apply: image %s (want the file's), template annotations %v", img, r.Deployment.Spec.Template.Metadata.Annotations)
			}
		})
	}
}

// patch and edit store a whole object (the live one as changed): a field
// removed from it is removed — replicas back to the default, paused off —
// as the API server takes a patched or edited object; nothing of the live
// object is kept as apply keeps what a file leaves out.
func TestPatchAndEditRemoveFields(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, g *globalOptions, base []string)
		check  func(d *manifests.Deployment) bool
	}{
		{"patch replicas null", func(t *testing.T, _ *globalOptions, base []string) {
			if _, errOut, err := run(t, "", append(base, "patch", "deployment", "web", "-p", `{"spec":{"replicas":null}}`)...); err != nil {
				t.Fatal(err, errOut)
			}
		}, func(d *manifests.Deployment) bool { return d.Replicas() == manifests.DefaultReplicas }},
		{"edit deletes paused", func(t *testing.T, g *globalOptions, _ []string) {
			ed := &fakeEditor{saves: []func(string) string{replace("  paused: true\n", "")}}
			var out, errOut strings.Builder
			ref := store.ObjectRef{Kind: store.KindDeployment, Namespace: "default", Name: "web"}
			if err := runEdit(&out, &errOut, g, ref, ed.edit); err != nil || out.String() != "deployment.apps/web edited\n" {
				t.Fatalf("edit: %v %q %q", err, out.String(), errOut.String())
			}
		}, func(d *manifests.Deployment) bool { return !d.Spec.Paused }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			base := []string{"--state-dir", dir, "--instance", "t1"}
			must := runner(t, base)
			must(webYAML, "apply", "-f", "-")
			must("", "rollout", "pause", "deployment/web")
			tt.change(t, &globalOptions{stateDir: dir, instance: "t1", namespace: "default"}, base)
			if d := storedDeployment(t, dir, "web").Deployment; !tt.check(&d) {
				t.Errorf("replicas %d, paused %v", d.Replicas(), d.Spec.Paused)
			}
		})
	}
}
