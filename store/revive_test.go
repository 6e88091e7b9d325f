package store

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

// controllerStatus is a status as the controller writes it, with the given
// revision sizes in its rollout state.
func controllerStatus(gen int64, sizes map[string]int32) *Status {
	b, _ := json.Marshal(map[string]any{"rollout": map[string]any{"sizes": sizes}})
	return &Status{
		ObservedGeneration: gen,
		Conditions:         []manifests.DeploymentCondition{{Type: manifests.ConditionAvailable, Status: "True"}},
		Extra:              map[string]json.RawMessage{"controller": b},
	}
}

func hashOf(d *manifests.Deployment) string { return manifests.TemplateHash(&d.Spec.Template) }

func history(rec *Record) string {
	var out []string
	for _, r := range rec.Revisions {
		out = append(out, fmt.Sprintf("%d:%s", r.Number, r.Template.Spec.Containers[0].Image))
	}
	return strings.Join(out, " ")
}

// A deployment applied after a delete starts clean: a fresh revision history
// (the deleted one's templates can no longer be recreated) and a fresh
// status (no old revision sizes, conditions or observed generation), while
// its generation keeps increasing.
func TestReviveStartsClean(t *testing.T) {
	for _, dry := range []bool{false, true} {
		t.Run(fmt.Sprintf("dry run %v", dry), func(t *testing.T) {
			s := openTemp(t)
			v1, v2, v3 := dep("web", image("a:1")), dep("web", image("a:2")), dep("web", image("a:3"))
			mustApply(t, s, ApplyOptions{}, v1)
			mustApply(t, s, ApplyOptions{}, v2) // generation 2, revisions 1 and 2
			if err := s.WriteStatus("", "web", controllerStatus(2, map[string]int32{hashOf(v1): 1, hashOf(v2): 2})); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete("", "web"); err != nil { // generation 3
				t.Fatal(err)
			}
			res := mustApply(t, s, ApplyOptions{DryRun: dry}, v3)
			if want := (dres("web", Created, 4)); res[0] != want {
				t.Fatalf("revive = %v, want %v", res[0], want)
			}
			st, err := s.ReadStatus("", "web")
			if err != nil {
				t.Fatal(err)
			}
			if dry {
				if st.ObservedGeneration != 2 || st.Extra["controller"] == nil {
					t.Fatalf("a dry run changed the status: %+v", st)
				}
				return
			}
			if st.ObservedGeneration != 0 || len(st.Conditions) != 0 || len(st.Extra) != 0 {
				t.Fatalf("revived status not reset: %+v", st)
			}
			rec, err := s.Get("", "web")
			if err != nil {
				t.Fatal(err)
			}
			if got := history(rec); got != "1:a:3" || rec.Generation != 4 {
				t.Fatalf("revived history %q generation %d, want \"1:a:3\" generation 4", got, rec.Generation)
			}
			// Reviving with the deleted template itself starts clean too.
			if err := s.Delete("", "web"); err != nil {
				t.Fatal(err)
			}
			mustApply(t, s, ApplyOptions{}, v1)
			if rec, _ = s.Get("", "web"); history(rec) != "1:a:1" || rec.Generation != 6 {
				t.Fatalf("second revival: history %q generation %d", history(rec), rec.Generation)
			}
		})
	}
}

// The history is trimmed to revisionHistoryLimit old revisions, but never a
// revision that still has containers or a target size in the controller's
// rollout state (Kubernetes never deletes a ReplicaSet with replicas): the
// controller needs its template to recreate or judge its replicas mid-rollout.
func TestTrimKeepsRevisionsInUse(t *testing.T) {
	s := openTemp(t)
	one := int32(1)
	v := func(img string) *manifests.Deployment {
		return dep("web", image(img), func(d *manifests.Deployment) { d.Spec.RevisionHistoryLimit = &one })
	}
	steps := []struct {
		sizes map[string]int32 // controller's sizes before the apply; nil: no status change
		apply *manifests.Deployment
		want  string
	}{
		{nil, v("a:1"), "1:a:1"},
		{nil, v("a:2"), "1:a:1 2:a:2"},
		// a:1 and a:2 still have containers: both stay beyond the limit.
		{map[string]int32{hashOf(v("a:1")): 2, hashOf(v("a:2")): 1}, v("a:3"), "1:a:1 2:a:2 3:a:3"},
		// A size of 0 with containers still being removed counts as in use.
		{map[string]int32{hashOf(v("a:1")): 0, hashOf(v("a:3")): 3}, v("a:4"), "1:a:1 3:a:3 4:a:4"},
		// Once gone from the rollout state, the oldest go first.
		{map[string]int32{hashOf(v("a:4")): 3}, v("a:5"), "4:a:4 5:a:5"},
	}
	for i, st := range steps {
		if st.sizes != nil {
			if err := s.WriteStatus("", "web", controllerStatus(1, st.sizes)); err != nil {
				t.Fatal(err)
			}
		}
		mustApply(t, s, ApplyOptions{}, st.apply)
		rec, err := s.Get("", "web")
		if err != nil {
			t.Fatal(err)
		}
		if got := history(rec); got != st.want {
			t.Fatalf("step %d: history %q, want %q", i+1, got, st.want)
		}
	}
	// Update (rollout undo/restart) trims the same way.
	if err := s.WriteStatus("", "web", controllerStatus(1, map[string]int32{hashOf(v("a:4")): 1, hashOf(v("a:5")): 2})); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update("", "web", func(d *manifests.Deployment) error { d.Spec.Template.Spec.Containers[0].Image = "a:6"; return nil }); err != nil {
		t.Fatal(err)
	}
	if rec, _ := s.Get("", "web"); history(rec) != "4:a:4 5:a:5 6:a:6" {
		t.Fatalf("after update: %q", history(rec))
	}
	// An unreadable status keeps everything: better a long history than a
	// template the controller still needs.
	if err := os.WriteFile(filepath.Join(s.Dir(), "status", "web.json"), []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, ApplyOptions{}, v("a:7"))
	if rec, _ := s.Get("", "web"); history(rec) != "4:a:4 5:a:5 6:a:6 7:a:7" {
		t.Fatalf("with a corrupt status: %q", history(rec))
	}
}
