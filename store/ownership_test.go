package store

import (
	"errors"
	"reflect"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

const (
	dirA = "manifests:/srv/a"
	dirB = "manifests:/srv/b"
)

// dirOpts are the options of a manifests directory controller watching
// /srv/a and /srv/b, every object named after dirA.
func dirOpts(manager string) ApplyOptions {
	return ApplyOptions{Manager: manager, PruneOwned: true, Owns: func(m string) bool { return m == dirA || m == dirB }}
}

func managerOf(t *testing.T, s *Store, ref ObjectRef) string {
	t.Helper()
	switch ref.Kind {
	case KindDeployment:
		r, err := s.Lookup(ref.Namespace, ref.Name)
		if err != nil {
			t.Fatal(err)
		}
		return r.Manager()
	case KindService:
		r, err := s.LookupService(ref.Namespace, ref.Name)
		if err != nil {
			t.Fatal(err)
		}
		return r.Manager()
	case KindConfigMap:
		r, err := s.LookupConfigMapRecord(ref.Namespace, ref.Name)
		if err != nil {
			t.Fatal(err)
		}
		return r.Manager()
	case KindNamespace:
		r, err := s.LookupNamespace(ref.Name)
		if err != nil {
			t.Fatal(err)
		}
		return r.Manager()
	}
	t.Fatalf("kind %s", ref.Kind)
	return ""
}

func actions(res []ApplyResult) map[string]Action {
	out := map[string]Action{}
	for _, r := range res {
		out[r.Namespace+"/"+r.ObjectRef.String()] = r.Action
	}
	return out
}

func TestOwnershipRules(t *testing.T) {
	web := ObjectRef{Kind: KindDeployment, Namespace: "default", Name: "web"}
	tests := []struct {
		name string
		// first is applied with firstOpts, then second with opts.
		first     Bundle
		firstOpts ApplyOptions
		second    Bundle
		opts      ApplyOptions
		wantErr   []Conflict // a ConflictError with these
		want      map[string]Action
		managers  map[ObjectRef]string // after second
	}{
		{
			name:  "apply over a directory's object is a conflict",
			first: deps(dep("web")), firstOpts: dirOpts(dirA),
			second: deps(dep("web", image("nginx:2"))), opts: ApplyOptions{Manager: ManagerApply},
			wantErr:  []Conflict{{ObjectRef: web, Manager: dirA}},
			managers: map[ObjectRef]string{web: dirA},
		},
		{
			name:  "force-conflicts takes it over",
			first: deps(dep("web")), firstOpts: dirOpts(dirA),
			second: deps(dep("web", image("nginx:2"))), opts: ApplyOptions{ForceConflicts: true},
			want:     map[string]Action{"default/deployment/web": Configured},
			managers: map[ObjectRef]string{web: ManagerApply},
		},
		{
			name:   "a directory over apply's object is a conflict too",
			first:  deps(dep("web")),
			second: deps(dep("web")), opts: dirOpts(dirA),
			wantErr:  []Conflict{{ObjectRef: web, Manager: ManagerApply}},
			managers: map[ObjectRef]string{web: ManagerApply},
		},
		{
			name:  "a file moved to the controller's other directory changes manager only",
			first: deps(dep("web")), firstOpts: dirOpts(dirA),
			second: deps(dep("web")), opts: dirOpts(dirB),
			want:     map[string]Action{"default/deployment/web": Unchanged},
			managers: map[ObjectRef]string{web: dirB},
		},
		{
			name:  "apply --prune never deletes a directory's object",
			first: deps(dep("web")), firstOpts: dirOpts(dirA),
			second: deps(dep("api")), opts: ApplyOptions{Prune: true},
			want:     map[string]Action{"default/deployment/api": Created},
			managers: map[ObjectRef]string{web: dirA},
		},
		{
			name:   "a directory never deletes apply's object",
			first:  deps(dep("web")),
			second: deps(dep("api")), opts: dirOpts(dirA),
			want:     map[string]Action{"default/deployment/api": Created},
			managers: map[ObjectRef]string{web: ManagerApply},
		},
		{
			name:  "a directory deletes its object that left it",
			first: deps(dep("web"), dep("api")), firstOpts: dirOpts(dirA),
			second: deps(dep("api")), opts: dirOpts(dirA),
			want: map[string]Action{"default/deployment/api": Unchanged, "default/deployment/web": Pruned},
		},
		{
			name:      "a directory's namespace goes with its content",
			first:     Bundle{Namespaces: []*manifests.Namespace{nsObj("shop")}, Deployments: []*manifests.Deployment{dep("web", inNS("shop"))}},
			firstOpts: dirOpts(dirA),
			second:    deps(dep("api")), opts: dirOpts(dirA),
			want: map[string]Action{"default/deployment/api": Created, "shop/deployment/web": Pruned, "/namespace/shop": Pruned},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			if _, err := s.Apply(tt.first, tt.firstOpts); err != nil {
				t.Fatal(err)
			}
			res, err := s.Apply(tt.second, tt.opts)
			if tt.wantErr != nil {
				var ce *ConflictError
				if !errors.As(err, &ce) || !reflect.DeepEqual(ce.Conflicts, tt.wantErr) {
					t.Fatalf("error %v, want conflicts %v", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if got := actions(res); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("results %v, want %v", got, tt.want)
			}
			for ref, want := range tt.managers {
				if got := managerOf(t, s, ref); got != want {
					t.Errorf("%s managed by %q, want %q", ref, got, want)
				}
			}
		})
	}
}

func inNS(ns string) func(*manifests.Deployment) {
	return func(d *manifests.Deployment) { d.Metadata.Namespace = ns }
}

// A namespace the directory manages but that still holds apply's object
// stays: deleting it would delete that object.
func TestDirectoryKeepsNamespaceWithOthersObjects(t *testing.T) {
	s := openTemp(t)
	if _, err := s.Apply(Bundle{Namespaces: []*manifests.Namespace{nsObj("shop")}}, dirOpts(dirA)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(deps(dep("web", inNS("shop"))), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Apply(deps(dep("api")), dirOpts(dirA))
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(res); !reflect.DeepEqual(got, map[string]Action{"default/deployment/api": Created}) {
		t.Errorf("results %v", got)
	}
	if n, err := s.LookupNamespace("shop"); err != nil || n.Deleted {
		t.Errorf("namespace shop: %v, %v", n, err)
	}
}

// The commands that change a live object are recorded as updates; the
// manager stays, and its next change supersedes them.
func TestUpdatersKeepTheManager(t *testing.T) {
	s := openTemp(t)
	if _, err := s.Apply(deps(dep("web")), dirOpts(dirA)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateRecordAs("scale", "", "web", func(_ *Record, d *manifests.Deployment) error {
		r := int32(3)
		d.Spec.Replicas = &r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ref := ObjectRef{Kind: KindDeployment, Name: "web"}
	if _, err := s.UpdateMetadataAs("label", ref, setLabel("tier", "front")); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range rec.ManagedFields {
		got = append(got, e.Manager+"/"+e.Operation)
	}
	if want := []string{dirA + "/Apply", "scale/Update", "label/Update"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("managedFields %v, want %v", got, want)
	}
	// The directory's next apply puts its declaration back.
	if _, err := s.Apply(deps(dep("web")), dirOpts(dirA)); err != nil {
		t.Fatal(err)
	}
	if rec, err = s.Get("", "web"); err != nil {
		t.Fatal(err)
	}
	if len(rec.ManagedFields) != 1 || rec.Manager() != dirA || rec.Deployment.Replicas() != 1 {
		t.Errorf("after the directory's apply: %+v, replicas %d", rec.ManagedFields, rec.Deployment.Replicas())
	}
}

// A record of an earlier release has no managedFields: apply manages it.
func TestEarlierRecordsAreApplys(t *testing.T) {
	if got := (Ownership{}).Manager(); got != ManagerApply {
		t.Errorf("manager %q", got)
	}
	s := openTemp(t)
	if _, err := s.Apply(deps(dep("web")), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	// What an earlier release wrote: the same record without the field.
	rec, err := s.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	rec.ManagedFields = nil
	if err := writeRecords(s, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(deps(dep("api")), ApplyOptions{Prune: true}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Lookup("", "web"); err != nil || !r.Deleted {
		t.Errorf("apply --prune left the earlier record: %v, %v", r, err)
	}
}
