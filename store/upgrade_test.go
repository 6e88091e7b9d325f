package store

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

// TestStoredTemplateHashesAreReproducible reads record files exactly as an
// earlier release stored them (testdata/records, written by the release of
// commit 9ff41c1 from manifests/testdata/hash and manifests/examples, each
// with a second revision from a rollout restart) and checks that this
// release computes the same template hash for every stored template, and
// that the records pass today's validation. The controller refuses a
// record whose template does not hash to its recorded revision (DESIGN §8,
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
			rec, err := decodeRecord(head.Name, data)
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
