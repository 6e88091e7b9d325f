package store

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/internal/testfs"
	"github.com/dockctl/dockctl/manifests"
)

// TestStoredTemplateHashesAreReproducible reads record files exactly as an
// earlier release stored them (testdata/records, written by the release of
// commit 9ff41c1 from manifests/testdata/hash and manifests/examples, each
// with a second revision from a rollout restart) and checks that this
// release computes the same template hash for every stored template, and
// that the records pass today's validation. The controller refuses a
// record whose template does not hash to its recorded revision (docs/design.md §16,
// Upgrades), so a change of the hash, or of how a stored template decodes,
// would freeze every deployment on upgrade. Never regenerate these files:
// add new ones next to them.
func TestStoredTemplateHashesAreReproducible(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "records", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no stored records in testdata/records")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var head struct{ Name string }
			if err := json.Unmarshal(data, &head); err != nil {
				t.Fatal(err)
			}
			rec, err := decodeRecord("", head.Name, data)
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Revisions) < 2 {
				t.Fatalf("%d revisions, want the 2 stored", len(rec.Revisions))
			}
			for _, r := range rec.Revisions {
				if got := manifests.TemplateHash(&r.Template); got != r.Hash {
					t.Errorf("revision %d: stored hash %s, this release computes %s", r.Number, r.Hash, got)
				}
			}
			if got, want := manifests.TemplateHash(&rec.Deployment.Spec.Template), rec.CurrentRevision().Hash; got != want {
				t.Errorf("current template: stored hash %s, this release computes %s", want, got)
			}
		})
	}
}

// mainState is a state directory exactly as `main` (commit 877d2b5, the
// release before namespaces) wrote it: testdata/main-manifests applied,
// the controller run against Docker until both rolled out, `rollout
// restart deployment web`, the controller stopped. The containers it made
// are in reconciler/testdata/main-docker.json. Never regenerate it.
const mainState = "testdata/main-state"

const mainInstance = "upgrade-7c1d"

// Upgrade (docs/design.md §16): a state directory of main keeps working in place —
// no file moves, none is rewritten by opening it or by re-applying its
// manifests, every record and status reads as main wrote it, in the
// default namespace — and takes objects of other namespaces alongside.
func TestUpgradeMainStateDirectory(t *testing.T) {
	dir := testfs.CopyState(t, mainState)
	before := tree(t, dir)
	ro, err := OpenReadOnly(dir, mainInstance)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, mainInstance)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []*Store{ro, s} {
		recs, errs := st.ListAll()
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		var keys []string
		for _, r := range recs {
			keys = append(keys, r.Key())
			if r.Namespace != "" || r.NamespaceOrDefault() != "default" {
				t.Errorf("%s: namespace %q", r.Name, r.Namespace)
			}
			for _, rev := range r.Revisions {
				if got := manifests.TemplateHash(&rev.Template); got != rev.Hash {
					t.Errorf("%s revision %d: hash %s, this release computes %s", r.Name, rev.Number, rev.Hash, got)
				}
			}
			status, err := st.ReadStatus(r.Namespace, r.Name)
			if err != nil || status.ObservedGeneration != r.Generation || status.Extra["controller"] == nil {
				t.Errorf("%s: status %+v, %v; want main's, observed at generation %d", r.Key(), status, err, r.Generation)
			}
		}
		if got := strings.Join(keys, " "); got != "default/web default/web-sidecar" {
			t.Errorf("records %s", got)
		}
		if web, err := st.Get("default", "web"); err != nil || len(web.Revisions) != 2 || web.Generation != 2 {
			t.Errorf("default/web = %+v, %v; want main's two revisions at generation 2", web, err)
		}
	}
	// Re-applying main's manifest of web-sidecar changes nothing, nor does
	// applying web as `get -o yaml` shows it (its file lacks the
	// restartedAt annotation of the rollout restart: applying the file
	// would be a change, in main as here).
	docs, err := manifests.Load([]string{"testdata/main-manifests/web-sidecar.yaml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	web, err := s.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	b := Bundle{Deployments: []*manifests.Deployment{web.Deployment.DeepCopy()}}
	keep := map[string]bool{}
	for _, d := range docs {
		if !d.PausedSet {
			keep[Key(d.Deployment.Metadata.Namespace, d.Deployment.Metadata.Name)] = true
		}
		b.Deployments = append(b.Deployments, d.Deployment)
	}
	res, err := s.Apply(b, ApplyOptions{KeepPaused: keep})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Action != Unchanged {
			t.Errorf("re-applying main's manifest: %s %s", r.ObjectRef, r.Action)
		}
	}
	after := tree(t, dir)
	for path, content := range before {
		if after[path] != content {
			t.Errorf("%s changed by opening and re-applying", path)
		}
	}
	// Other namespaces go next to it, and leave it alone.
	team := depIn("team", "web")
	mustApplyBundle(t, s, Bundle{Namespaces: nss("team"), Deployments: []*manifests.Deployment{team}})
	after = tree(t, dir)
	for path, content := range before {
		if after[path] != content {
			t.Errorf("%s changed by applying to another namespace", path)
		}
	}
	if _, ok := after["/namespaces/team/deployments/web.json"]; !ok {
		t.Errorf("team/web not at namespaces/team/deployments/web.json: %v", slices.Collect(maps.Keys(after)))
	}
}

// Upgrade: an object main stored has no last-applied configuration. The
// first apply of its manifest replaces it with the file, as main's apply
// did (a label of `dockctl label` goes), and records the configuration;
// from then on a label the file does not set is kept. No apply starts a
// rollout, and the record rewritten still reads.
func TestUpgradeRecordsLastApplied(t *testing.T) {
	dir := testfs.CopyState(t, mainState)
	s, err := Open(dir, mainInstance)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := manifests.Load([]string{"testdata/main-manifests/web-sidecar.yaml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := docs[0].Deployment
	opts := ApplyOptions{Manager: ManagerApply, SaveConfig: true, KeepPaused: map[string]bool{Key("", "web-sidecar"): !docs[0].PausedSet}}
	before, err := s.Get("", "web-sidecar")
	if err != nil {
		t.Fatal(err)
	}
	if len(before.LastApplied) != 0 {
		t.Fatal("main's record has a last-applied configuration")
	}
	ref := ObjectRef{Kind: KindDeployment, Namespace: "default", Name: "web-sidecar"}
	for i, want := range []Action{Configured, Unchanged} {
		if _, err := s.UpdateMetadataAs("label", ref, setLabel("tier", "front")); err != nil {
			t.Fatal(err)
		}
		res, err := s.Apply(Deployments(d.DeepCopy()), opts)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := s.Get("", "web-sidecar")
		if err != nil {
			t.Fatal(err)
		}
		kept := rec.Deployment.Metadata.Labels["tier"] == "front"
		if res[0].Action != want || kept != (i == 1) || len(rec.LastApplied) == 0 {
			t.Errorf("apply %d: %s, label kept %v, last applied %q; want %s, kept %v, recorded", i+1, res[0].Action, kept, rec.LastApplied, want, i == 1)
		}
		if rec.Generation != before.Generation || rec.CurrentRevision().Number != before.CurrentRevision().Number {
			t.Errorf("apply %d: generation %d, revision %d; want main's %d, %d", i+1, rec.Generation, rec.CurrentRevision().Number, before.Generation, before.CurrentRevision().Number)
		}
	}
}
