package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/manifests"
)

func TestApplyActions(t *testing.T) {
	type step struct {
		deps []*manifests.Deployment
		opts ApplyOptions
		want []ApplyResult
	}
	tests := []struct {
		name  string
		steps []step
		// live and gone: the state expected after the last step.
		live map[string]int64 // name → generation
		gone map[string]int64 // tombstones
	}{
		{
			name: "create then unchanged",
			steps: []step{
				{deps: []*manifests.Deployment{dep("web"), dep("api")}, want: []ApplyResult{dres("web", Created, 1), dres("api", Created, 1)}},
				{deps: []*manifests.Deployment{dep("web"), dep("api")}, want: []ApplyResult{dres("web", Unchanged, 1), dres("api", Unchanged, 1)}},
			},
			live: map[string]int64{"web": 1, "api": 1},
		},
		{
			name: "spec change bumps generation",
			steps: []step{
				{deps: []*manifests.Deployment{dep("web")}, want: []ApplyResult{dres("web", Created, 1)}},
				{deps: []*manifests.Deployment{dep("web", image("nginx:1.28"))}, want: []ApplyResult{dres("web", Configured, 2)}},
				{deps: []*manifests.Deployment{dep("web", image("nginx:1.28"), replicas(3))}, want: []ApplyResult{dres("web", Configured, 3)}},
				{deps: []*manifests.Deployment{dep("web", image("nginx:1.28"), replicas(3))}, want: []ApplyResult{dres("web", Unchanged, 3)}},
			},
			live: map[string]int64{"web": 3},
		},
		{
			name: "metadata-only change keeps generation",
			steps: []step{
				{deps: []*manifests.Deployment{dep("web")}, want: []ApplyResult{dres("web", Created, 1)}},
				{deps: []*manifests.Deployment{dep("web", label("tier", "front"))}, want: []ApplyResult{dres("web", Configured, 1)}},
				{deps: []*manifests.Deployment{dep("web", label("tier", "front"), func(d *manifests.Deployment) {
					d.Metadata.Annotations = map[string]string{"note": "x"}
				})}, want: []ApplyResult{dres("web", Configured, 1)}},
			},
			live: map[string]int64{"web": 1},
		},
		{
			name: "template annotation is a spec change",
			steps: []step{
				{deps: []*manifests.Deployment{dep("web")}, want: []ApplyResult{dres("web", Created, 1)}},
				{deps: []*manifests.Deployment{dep("web", func(d *manifests.Deployment) {
					d.Spec.Template.Metadata.Annotations = map[string]string{manifests.AnnotationNetwork: "front"}
				})}, want: []ApplyResult{dres("web", Configured, 2)}},
			},
			live: map[string]int64{"web": 2},
		},
		{
			name: "status and server-set metadata in input are ignored",
			steps: []step{
				{deps: []*manifests.Deployment{dep("web")}, want: []ApplyResult{dres("web", Created, 1)}},
				{deps: []*manifests.Deployment{dep("web", func(d *manifests.Deployment) {
					ts := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
					d.Metadata.Generation = 42
					d.Metadata.CreationTimestamp = &ts
					d.Status = &manifests.DeploymentStatus{ReadyReplicas: 1, ObservedGeneration: 42}
				})}, want: []ApplyResult{dres("web", Unchanged, 1)}},
			},
			live: map[string]int64{"web": 1},
		},
		{
			name: "prune tombstones the absent ones",
			steps: []step{
				{deps: []*manifests.Deployment{dep("a"), dep("b"), dep("c")}, want: []ApplyResult{dres("a", Created, 1), dres("b", Created, 1), dres("c", Created, 1)}},
				{deps: []*manifests.Deployment{dep("b"), dep("d")}, opts: ApplyOptions{Prune: true},
					want: []ApplyResult{dres("b", Unchanged, 1), dres("d", Created, 1), dres("a", Pruned, 2), dres("c", Pruned, 2)}},
				// Already tombstoned: not pruned again.
				{deps: []*manifests.Deployment{dep("b"), dep("d")}, opts: ApplyOptions{Prune: true},
					want: []ApplyResult{dres("b", Unchanged, 1), dres("d", Unchanged, 1)}},
			},
			live: map[string]int64{"b": 1, "d": 1},
			gone: map[string]int64{"a": 2, "c": 2},
		},
		{
			name: "prune only what matches the selector",
			steps: []step{
				{deps: []*manifests.Deployment{dep("a", label("tier", "back")), dep("b", label("tier", "back")), dep("c", label("tier", "front")), dep("d")},
					want: []ApplyResult{dres("a", Created, 1), dres("b", Created, 1), dres("c", Created, 1), dres("d", Created, 1)}},
				{deps: []*manifests.Deployment{dep("b", label("tier", "back"))}, opts: ApplyOptions{Prune: true, PruneSelector: mustSelector(t, "tier=back")},
					want: []ApplyResult{dres("b", Unchanged, 1), dres("a", Pruned, 2)}},
			},
			live: map[string]int64{"b": 1, "c": 1, "d": 1},
			gone: map[string]int64{"a": 2},
		},
		{
			// As kubectl apply: an unset replicas keeps the live count,
			// and is the default on create and on revival.
			name: "unset replicas keeps the live count",
			steps: []step{
				{deps: []*manifests.Deployment{dep("a", replicas(3)), dep("b", unsetReplicas)}, want: []ApplyResult{dres("a", Created, 1), dres("b", Created, 1)}},
				{deps: []*manifests.Deployment{dep("a", unsetReplicas), dep("b", unsetReplicas)}, want: []ApplyResult{dres("a", Unchanged, 1), dres("b", Unchanged, 1)}},
				{deps: []*manifests.Deployment{dep("a", unsetReplicas, image("nginx:1.28"))}, want: []ApplyResult{dres("a", Configured, 2)}},
				{deps: []*manifests.Deployment{dep("a", replicas(2), image("nginx:1.28"))}, want: []ApplyResult{dres("a", Configured, 3)}},
			},
			live: map[string]int64{"a": 3, "b": 1},
		},
		{
			name: "without prune absent ones stay",
			steps: []step{
				{deps: []*manifests.Deployment{dep("a"), dep("b")}, want: []ApplyResult{dres("a", Created, 1), dres("b", Created, 1)}},
				{deps: []*manifests.Deployment{dep("b")}, want: []ApplyResult{dres("b", Unchanged, 1)}},
			},
			live: map[string]int64{"a": 1, "b": 1},
		},
		{
			name: "dry run writes nothing",
			steps: []step{
				{deps: []*manifests.Deployment{dep("a"), dep("b")}, want: []ApplyResult{dres("a", Created, 1), dres("b", Created, 1)}},
				{deps: []*manifests.Deployment{dep("a", replicas(5)), dep("c")}, opts: ApplyOptions{DryRun: true, Prune: true},
					want: []ApplyResult{dres("a", Configured, 2), dres("c", Created, 1), dres("b", Pruned, 2)}},
			},
			live: map[string]int64{"a": 1, "b": 1},
		},
		{
			name: "revive a tombstone",
			steps: []step{
				{deps: []*manifests.Deployment{dep("a"), dep("b")}, want: []ApplyResult{dres("a", Created, 1), dres("b", Created, 1)}},
				{deps: []*manifests.Deployment{dep("b")}, opts: ApplyOptions{Prune: true}, want: []ApplyResult{dres("b", Unchanged, 1), dres("a", Pruned, 2)}},
				{deps: []*manifests.Deployment{dep("a")}, want: []ApplyResult{dres("a", Created, 3)}},
			},
			live: map[string]int64{"a": 3, "b": 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			for i, st := range tt.steps {
				got := mustApply(t, s, st.opts, st.deps...)
				if !reflect.DeepEqual(got, st.want) {
					t.Fatalf("step %d: results\n got %v\nwant %v", i+1, got, st.want)
				}
			}
			if tt.name == "unset replicas keeps the live count" {
				for name, want := range map[string]int32{"a": 2, "b": 1} {
					if rec, err := s.Get("", name); err != nil || rec.Deployment.Spec.Replicas == nil || *rec.Deployment.Spec.Replicas != want {
						t.Fatalf("%s: stored replicas %v (%v), want %d", name, rec.Deployment.Spec.Replicas, err, want)
					}
				}
			}
			all, errs := s.ListAll()
			if len(errs) > 0 {
				t.Fatalf("ListAll errors: %v", errs)
			}
			live, gone := map[string]int64{}, map[string]int64{}
			for _, r := range all {
				if r.Deleted {
					gone[r.Name] = r.Generation
				} else {
					live[r.Name] = r.Generation
				}
			}
			if tt.gone == nil {
				tt.gone = map[string]int64{}
			}
			if !reflect.DeepEqual(live, tt.live) || !reflect.DeepEqual(gone, tt.gone) {
				t.Errorf("state: live %v gone %v; want live %v gone %v", live, gone, tt.live, tt.gone)
			}
			if tf := tempFiles(t, s.Dir()); len(tf) > 0 {
				t.Errorf("temporary files left: %v", tf)
			}
		})
	}
}

func TestApplyRejectsBadInputAtomically(t *testing.T) {
	tests := []struct {
		name    string
		deps    []*manifests.Deployment
		wantErr string
	}{
		{"duplicate names", []*manifests.Deployment{dep("web", replicas(2)), dep("api"), dep("web")}, `deployment "web" appears more than once`},
		{"nil deployment", []*manifests.Deployment{dep("api"), nil}, "deployment #2 is nil"},
		{"path traversal", []*manifests.Deployment{dep("api"), dep("../etc")}, `invalid deployment name "../etc"`},
		{"upper case", []*manifests.Deployment{dep("api"), dep("Web")}, `invalid deployment name "Web"`},
		{"empty name", []*manifests.Deployment{dep("api"), dep("")}, `invalid deployment name ""`},
		{"too long", []*manifests.Deployment{dep("api"), dep(strings.Repeat("a", 64))}, "invalid deployment name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			mustApply(t, s, ApplyOptions{}, dep("web"))
			before := snapshot(t, s.Dir())
			_, err := s.Apply(Deployments(tt.deps...), ApplyOptions{Prune: true})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
			if after := snapshot(t, s.Dir()); !reflect.DeepEqual(before, after) {
				t.Errorf("state changed by a rejected apply:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// snapshot maps every record file to its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "deployments"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, "deployments", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = string(b)
	}
	return m
}

func TestApplyFailsOnCorruptRecord(t *testing.T) {
	s := openTemp(t)
	mustApply(t, s, ApplyOptions{}, dep("web"), dep("api"))
	if err := os.WriteFile(filepath.Join(s.Dir(), "deployments", "api.json"), []byte(`{"version":1,"na`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		deps []*manifests.Deployment
		opts ApplyOptions
	}{
		// Overwriting a corrupt record would lose its generation.
		{"applying the corrupt name", []*manifests.Deployment{dep("api", replicas(2))}, ApplyOptions{}},
		// Pruning past an unreadable record might leave a deleted one running.
		{"prune with a corrupt record", []*manifests.Deployment{dep("web", replicas(2))}, ApplyOptions{Prune: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(t, s.Dir())
			_, err := s.Apply(Deployments(tt.deps...), tt.opts)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "state file deployments/api.json: corrupt: ") {
				t.Fatalf("error = %v, want a corrupt-file error naming deployments/api.json", err)
			}
			if after := snapshot(t, s.Dir()); !reflect.DeepEqual(before, after) {
				t.Error("state changed by a failed apply")
			}
		})
	}
	// Other names still apply.
	if res := mustApply(t, s, ApplyOptions{}, dep("web", replicas(2))); res[0].Action != Configured {
		t.Errorf("apply of a healthy name: %v", res)
	}
}

func TestStoredRecord(t *testing.T) {
	s := openTemp(t)
	in := dep("web", func(d *manifests.Deployment) {
		d.Status = &manifests.DeploymentStatus{ReadyReplicas: 3}
	})
	mustApply(t, s, ApplyOptions{}, in)
	rec, err := s.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Deployment.Status != nil {
		t.Error("stored copy has a status")
	}
	if in.Status == nil {
		t.Error("Apply modified its input")
	}
	if rec.Deployment.Metadata.Generation != 1 || rec.Deployment.Metadata.CreationTimestamp == nil ||
		!rec.Deployment.Metadata.CreationTimestamp.Equal(rec.CreatedAt) {
		t.Errorf("server-set metadata not filled: %+v", rec.Deployment.Metadata)
	}
	if rec.CreatedAt.IsZero() || rec.UpdatedAt.Before(rec.CreatedAt) || rec.Deleted || rec.DeletedAt != nil {
		t.Errorf("record bookkeeping: %+v", rec)
	}
	// Round trip: what get prints applies unchanged.
	printed := rec.Deployment
	printed.Status = &manifests.DeploymentStatus{ObservedGeneration: 1}
	if res := mustApply(t, s, ApplyOptions{}, &printed); res[0].Action != Unchanged {
		t.Errorf("re-applying the stored object: %v, want unchanged", res)
	}
	// The spec stored is the spec applied.
	want, _ := json.Marshal(dep("web").Spec)
	got, _ := json.Marshal(rec.Deployment.Spec)
	if string(got) != string(want) {
		t.Errorf("stored spec\n got %s\nwant %s", got, want)
	}
}

func TestDeleteAndRevive(t *testing.T) {
	s := openTemp(t)
	mustApply(t, s, ApplyOptions{}, dep("web"), dep("api"))
	mustApply(t, s, ApplyOptions{}, dep("web", replicas(2))) // generation 2

	if err := s.Delete("", "web"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("", "web"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
	rec, err := s.Lookup("", "web")
	if err != nil {
		t.Fatalf("Lookup of a tombstone: %v", err)
	}
	if !rec.Deleted || rec.DeletedAt == nil || rec.Generation != 3 {
		t.Errorf("tombstone = deleted %v at %v generation %d; want deleted, generation 3", rec.Deleted, rec.DeletedAt, rec.Generation)
	}
	if err := s.Delete("", "web"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete: %v, want ErrNotFound", err)
	}
	if err := s.Delete("", "never"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Delete of unknown: %v, want ErrNotFound", err)
	}
	if _, err := s.Lookup("", "never"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Lookup of unknown: %v, want ErrNotFound", err)
	}
	live, err := s.List()
	if err != nil || len(live) != 1 || live[0].Name != "api" {
		t.Errorf("List = %v, %v; want [api]", live, err)
	}

	res := mustApply(t, s, ApplyOptions{}, dep("web"))
	if want := (dres("web", Created, 4)); res[0] != want {
		t.Errorf("revive = %v, want %v", res[0], want)
	}
	rec, err = s.Get("", "web")
	if err != nil || rec.Deleted || rec.DeletedAt != nil || rec.Generation != 4 {
		t.Errorf("revived record = %+v, %v", rec, err)
	}
}

func TestUpdate(t *testing.T) {
	tests := []struct {
		name    string
		fn      func(*manifests.Deployment) error
		wantGen int64
		wantErr string
		written bool
	}{
		{"scale bumps generation", func(d *manifests.Deployment) error { n := int32(4); d.Spec.Replicas = &n; return nil }, 2, "", true},
		{"pause bumps generation", func(d *manifests.Deployment) error { d.Spec.Paused = true; return nil }, 2, "", true},
		{"annotation keeps generation", func(d *manifests.Deployment) error {
			d.Metadata.Annotations = map[string]string{manifests.AnnotationChangeCause: "x"}
			return nil
		}, 1, "", true},
		{"no change writes nothing", func(*manifests.Deployment) error { return nil }, 1, "", false},
		{"status change is ignored", func(d *manifests.Deployment) error {
			d.Status = &manifests.DeploymentStatus{Replicas: 9}
			return nil
		}, 1, "", false},
		{"fn error", func(*manifests.Deployment) error { return errors.New("no previous revision") }, 0, `deployment "web": no previous revision`, false},
		{"rename refused", func(d *manifests.Deployment) error { d.Metadata.Name = "other"; return nil }, 0, `renamed it to "other"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			mustApply(t, s, ApplyOptions{}, dep("web"))
			before := snapshot(t, s.Dir())
			rec, err := s.Update("", "web", tt.fn)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if rec.Generation != tt.wantGen || rec.Deployment.Metadata.Generation != tt.wantGen {
					t.Errorf("generation = %d (metadata %d), want %d", rec.Generation, rec.Deployment.Metadata.Generation, tt.wantGen)
				}
				stored, err := s.Get("", "web")
				if err != nil || stored.Generation != tt.wantGen {
					t.Errorf("stored generation = %v, %v", stored, err)
				}
			}
			changed := !reflect.DeepEqual(before, snapshot(t, s.Dir()))
			if changed != tt.written {
				t.Errorf("file written = %v, want %v", changed, tt.written)
			}
		})
	}

	s := openTemp(t)
	if _, err := s.Update("", "web", func(*manifests.Deployment) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Errorf("Update of unknown: %v, want ErrNotFound", err)
	}
}

func TestListAllIsolatesBadFiles(t *testing.T) {
	valid, err := encodeRecord(&Record{Name: "x", Generation: 1, Deployment: *dep("x")})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		file    string // under deployments/
		content string
		wantErr string
	}{
		{"truncated", "x.json", string(valid[:len(valid)/2]), "state file deployments/x.json: corrupt: "},
		{"garbage", "x.json", "\x00\x01garbage", "state file deployments/x.json: corrupt: "},
		{"empty", "x.json", "", "state file deployments/x.json: corrupt: "},
		{"no version", "x.json", `{"name":"x","generation":1,"deployment":{"metadata":{"name":"x"}}}`, "state file deployments/x.json: corrupt: no format version"},
		{"newer format", "x.json", strings.Replace(string(valid), `"version": 1`, `"version": 99`, 1), "state file deployments/x.json: written in format 99 by a newer dockctl"},
		{"wrong name", "x.json", strings.ReplaceAll(string(valid), `"x"`, `"y"`), `state file deployments/x.json: corrupt: records deployment "y", expected "x"`},
		{"invalid file name", "X_Y.json", string(valid), `state file deployments/X_Y.json: invalid deployment name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			mustApply(t, s, ApplyOptions{}, dep("a"), dep("z"), dep("gone"))
			if err := s.Delete("", "gone"); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(s.Dir(), "deployments", tt.file), []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			// Files that are not records are ignored, not reported.
			for _, ignored := range []string{"README", "a.json~", ".a.json.tmp-1"} {
				if err := os.WriteFile(filepath.Join(s.Dir(), "deployments", ignored), []byte("?"), 0o600); err != nil {
					t.Fatal(err)
				}
			}

			all, errs := s.ListAll()
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.wantErr) {
				t.Fatalf("errors = %v, want one containing %q", errs, tt.wantErr)
			}
			if got := names(all); !reflect.DeepEqual(got, []string{"a", "gone", "z"}) {
				t.Errorf("ListAll names = %v", got)
			}
			live, err := s.List()
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("List error = %v", err)
			}
			if got := names(live); !reflect.DeepEqual(got, []string{"a", "z"}) {
				t.Errorf("List names = %v", got)
			}
			if _, err := s.Get("", "a"); err != nil {
				t.Errorf("Get of a healthy record: %v", err)
			}
		})
	}
}

func names(recs []*Record) []string {
	out := []string{}
	for _, r := range recs {
		out = append(out, r.Name)
	}
	return out
}

func deps(d ...*manifests.Deployment) Bundle { return Deployments(d...) }

// dres is the result of one deployment of the default namespace.
func dres(name string, act Action, gen int64) ApplyResult {
	return ApplyResult{ObjectRef: ObjectRef{Kind: KindDeployment, Namespace: "default", Name: name}, Action: act, Generation: gen}
}

func TestRevisions(t *testing.T) {
	s := openTemp(t)
	withImage := func(img string) *manifests.Deployment { return dep("web", image(img)) }
	steps := []struct {
		apply *manifests.Deployment
		want  []string // "number:image" oldest first
	}{
		{withImage("a:1"), []string{"1:a:1"}},
		{withImage("a:1"), []string{"1:a:1"}},          // unchanged
		{withImage("a:2"), []string{"1:a:1", "2:a:2"}}, // new template
		{withImage("a:1"), []string{"2:a:2", "3:a:1"}}, // undo-like: the old template moves to the end
		{withImage("a:3"), []string{"2:a:2", "3:a:1", "4:a:3"}},
	}
	for i, st := range steps {
		if _, err := s.Apply(Deployments([]*manifests.Deployment{st.apply}...), ApplyOptions{}); err != nil {
			t.Fatal(err)
		}
		rec, err := s.Get("", "web")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rec.Revisions {
			got = append(got, fmt.Sprintf("%d:%s", r.Number, r.Template.Spec.Containers[0].Image))
			if r.Hash != manifests.TemplateHash(&r.Template) {
				t.Fatalf("step %d: revision %d hash %s does not match its template", i, r.Number, r.Hash)
			}
		}
		if strings.Join(got, " ") != strings.Join(st.want, " ") {
			t.Fatalf("step %d: revisions %v, want %v", i, got, st.want)
		}
	}
	// Scaling is not a new revision.
	if _, err := s.Update("", "web", func(d *manifests.Deployment) error { r := int32(4); d.Spec.Replicas = &r; return nil }); err != nil {
		t.Fatal(err)
	}
	rec, _ := s.Get("", "web")
	if n := rec.CurrentRevision().Number; n != 4 || len(rec.Revisions) != 3 {
		t.Fatalf("scale changed revisions: current %d, %d revisions", n, len(rec.Revisions))
	}
	// The history is trimmed to revisionHistoryLimit old revisions.
	limited := withImage("b:1")
	one := int32(1)
	limited.Spec.RevisionHistoryLimit = &one
	if _, err := s.Apply(Deployments([]*manifests.Deployment{limited}...), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	rec, _ = s.Get("", "web")
	if len(rec.Revisions) != 2 || rec.Revisions[0].Number != 4 || rec.Revisions[1].Number != 5 {
		t.Fatalf("trimmed history: %+v", rec.Revisions)
	}
}

func mustSelector(t *testing.T, s string) labels.Selector {
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func unsetReplicas(d *manifests.Deployment) { d.Spec.Replicas = nil }

// selector sets a deployment's selector and its template's labels (which
// the selector must match) to labels k=v and app=NAME.
func selector(k, v string) func(*manifests.Deployment) {
	return func(d *manifests.Deployment) {
		l := map[string]string{"app": d.Metadata.Name, k: v}
		d.Spec.Selector = &manifests.LabelSelector{MatchLabels: l}
		d.Spec.Template.Metadata.Labels = map[string]string{"app": d.Metadata.Name, k: v}
	}
}

// apps/v1 refuses a change of a live Deployment's spec.selector
// (ValidateDeploymentUpdate: ValidateImmutableField, "field is
// immutable"), by apply, patch or edit alike; a history dockctl accepted
// would fail on a cluster. A deleted Deployment applied again is a new
// object, free to select other pods, and a selector written again as it is
// is no change.
func TestDeploymentSelectorIsImmutable(t *testing.T) {
	const refused = `the Deployment "web" is invalid: spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"front"}}: field is immutable`
	tests := []struct {
		name string
		// change acts on a store holding live deployment web (selector
		// app=web), or its tombstone with deleted.
		deleted bool
		change  func(*Store) error
		wantErr string
	}{
		{name: "apply of a new selector", wantErr: refused, change: func(s *Store) error {
			_, err := s.Apply(Deployments(dep("web", selector("tier", "front"))), ApplyOptions{})
			return err
		}},
		{name: "apply of a new selector, dry run", wantErr: refused, change: func(s *Store) error {
			_, err := s.Apply(Deployments(dep("web", selector("tier", "front"))), ApplyOptions{DryRun: true})
			return err
		}},
		{name: "apply of a new selector, with its last-applied configuration", wantErr: refused, change: func(s *Store) error {
			_, err := s.Apply(Deployments(dep("web", selector("tier", "front"))), ApplyOptions{SaveConfig: true, Manager: ManagerApply})
			return err
		}},
		{name: "patch or edit of the selector", wantErr: refused, change: func(s *Store) error {
			_, err := s.Update("", "web", func(d *manifests.Deployment) error {
				selector("tier", "front")(d)
				return nil
			})
			return err
		}},
		{name: "apply of the same selector", change: func(s *Store) error {
			_, err := s.Apply(Deployments(dep("web", replicas(3))), ApplyOptions{})
			return err
		}},
		{name: "apply of new template labels the selector still matches", change: func(s *Store) error {
			_, err := s.Apply(Deployments(dep("web", func(d *manifests.Deployment) { d.Spec.Template.Metadata.Labels["tier"] = "front" })), ApplyOptions{})
			return err
		}},
		{name: "apply of a deleted deployment with a new selector", deleted: true, change: func(s *Store) error {
			_, err := s.Apply(Deployments(dep("web", selector("tier", "front"))), ApplyOptions{})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			mustApply(t, s, ApplyOptions{SaveConfig: true, Manager: ManagerApply}, dep("web"))
			if tt.deleted {
				if err := s.Delete("", "web"); err != nil {
					t.Fatal(err)
				}
			}
			before := snapshot(t, s.Dir())
			err := tt.change(s)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
			if after := snapshot(t, s.Dir()); !reflect.DeepEqual(before, after) {
				t.Errorf("a refused change wrote the record:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}
