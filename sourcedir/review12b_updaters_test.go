package sourcedir

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// withReplicas is deployment() with spec.replicas set.
func withReplicas(y string, n int) string {
	return strings.Replace(y, "spec:\n  selector", fmt.Sprintf("spec:\n  replicas: %d\n  selector", n), 1)
}

// `dockctl rollout restart` of a deployment a directory manages sets the
// template's kubectl.kubernetes.io/restartedAt annotation (a new
// revision). The directory does not set that annotation, so — as kubectl
// apply's three-way merge and Flux's server-side apply keep it — the next
// sync of the unchanged directory must keep it. dockctl's sync stores the
// file's template whole instead: the restart is undone by a second
// rollout back to the previous template, unprompted, within one resync.
func TestReview12bSyncUndoesRolloutRestart(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:1"))
	f := newFixture(t, Options{Paths: []string{dir}})
	f.sync()
	restarted, err := f.st.UpdateRecordAs("rollout", "", "web", func(_ *store.Record, d *manifests.Deployment) error {
		if d.Spec.Template.Metadata.Annotations == nil {
			d.Spec.Template.Metadata.Annotations = map[string]string{}
		}
		d.Spec.Template.Metadata.Annotations[manifests.AnnotationRestartedAt] = time.Now().UTC().Format(time.RFC3339Nano)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	before := restarted.CurrentRevision().Number
	for _, r := range f.sync() {
		if r.Name == "web" && r.Action != store.Unchanged {
			t.Errorf("the sync of an unchanged directory %s deployment web after rollout restart", r.Action)
		}
	}
	after, err := f.st.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	if after.CurrentRevision().Number != before || after.Deployment.Spec.Template.Metadata.Annotations[manifests.AnnotationRestartedAt] == "" {
		t.Errorf("rollout restart undone by the sync: revision %d -> %d, template annotations %v",
			before, after.CurrentRevision().Number, after.Deployment.Spec.Template.Metadata.Annotations)
	}
}

// `dockctl label` on a deployment a directory manages adds a label the
// directory does not set. The README says updaters' changes are
// superseded "as kubectl apply would" — and kubectl apply (three-way
// merge) and Flux keep a label the manifest never set. The sync of the
// unchanged directory drops it.
func TestReview12bSyncDropsLabelItDoesNotSet(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "web.yaml"), withReplicas(deployment("web", "web:1"), 2))
	f := newFixture(t, Options{Paths: []string{dir}})
	f.sync()
	ref := store.ObjectRef{Kind: store.KindDeployment, Namespace: "default", Name: "web"}
	if _, err := f.st.UpdateMetadataAs("label", ref, func(m *manifests.ObjectMeta) error {
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels["tier"] = "front"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	f.sync()
	r, err := f.st.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	if r.Deployment.Metadata.Labels["tier"] != "front" {
		t.Errorf("label tier=front (set by `dockctl label`, not by the directory) dropped by the next sync: labels %v", r.Deployment.Metadata.Labels)
	}
}
