package store

import (
	"errors"
	"reflect"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

// LookupObject and ListObjects read every stored kind, Namespaces
// included, as the kind's own API reads it: the same object, generation,
// creation time, tombstone and manager.
func TestLookupObjectReadsEveryKindAsItsOwnAPI(t *testing.T) {
	s := openTemp(t)
	b := Bundle{
		Namespaces:  nss("team"),
		ConfigMaps:  []*manifests.ConfigMap{cmObj("team", "cfg", map[string]string{"k": "v"})},
		Secrets:     []*manifests.Secret{secretObj("", "db", "", map[string]string{"p": "q"})},
		Claims:      []*manifests.PersistentVolumeClaim{claimObj("team", "data", "1Gi")},
		Services:    svcs(svc("team", "web")),
		Deployments: []*manifests.Deployment{depIn("team", "web")},
	}
	if _, err := s.Apply(b, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSecret("", "db"); err != nil {
		t.Fatal(err)
	}
	type view struct {
		obj     any
		gen     int64
		deleted bool
		manager string
	}
	tests := []struct {
		ref  ObjectRef
		want func() (view, error)
	}{
		{ref(KindNamespace, "", "team"), func() (view, error) {
			r, err := s.LookupNamespace("team")
			return view{&r.Namespace, 0, r.Deleted, r.Manager()}, err
		}},
		{ref(KindConfigMap, "team", "cfg"), func() (view, error) {
			r, err := s.LookupConfigMapRecord("team", "cfg")
			return view{&r.Object, r.Generation, r.Deleted, r.Manager()}, err
		}},
		{ref(KindSecret, "", "db"), func() (view, error) {
			r, err := s.LookupSecretRecord("", "db")
			return view{&r.Object, r.Generation, r.Deleted, r.Manager()}, err
		}},
		{ref(KindPersistentVolumeClaim, "team", "data"), func() (view, error) {
			r, err := s.LookupClaimRecord("team", "data")
			return view{&r.Object, r.Generation, r.Deleted, r.Manager()}, err
		}},
		{ref(KindService, "team", "web"), func() (view, error) {
			r, err := s.LookupService("team", "web")
			return view{&r.Service, r.Generation, r.Deleted, r.Manager()}, err
		}},
		{ref(KindDeployment, "team", "web"), func() (view, error) {
			r, err := s.Lookup("team", "web")
			return view{&r.Deployment, r.Generation, r.Deleted, r.Manager()}, err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.ref.Kind, func(t *testing.T) {
			want, err := tt.want()
			if err != nil {
				t.Fatal(err)
			}
			o, err := s.LookupObject(tt.ref)
			if err != nil {
				t.Fatal(err)
			}
			got := view{o.Object, o.Generation, o.Deleted, o.Manager()}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("LookupObject = %+v, want %+v", got, want)
			}
			if o.Meta.Name != tt.ref.Name {
				t.Errorf("Meta names %q", o.Meta.Name)
			}
			all, errs := s.ListObjects(tt.ref.Kind)
			if len(errs) != 0 {
				t.Fatal(errs)
			}
			found := false
			for _, x := range all {
				found = found || (x.Meta.Name == tt.ref.Name && reflect.DeepEqual(x.Object, want.obj))
			}
			if !found {
				t.Errorf("ListObjects(%s) lacks %s", tt.ref.Kind, tt.ref.Name)
			}
		})
	}
	if _, err := s.LookupObject(ref(KindService, "team", "none")); !errors.Is(err, ErrNotFound) {
		t.Errorf("a Service never applied: %v, want ErrNotFound", err)
	}
	if _, err := s.LookupObject(ref("Widget", "", "x")); err == nil {
		t.Error("an unknown kind is no error")
	}
}

// A bundle's objects are named for a deletion what refers to others
// first and Namespaces last, and Filter keeps, of every kind, those it
// is told to.
func TestBundleRefsAndFilterCoverEveryKind(t *testing.T) {
	b := Bundle{
		Namespaces:  nss("team"),
		ConfigMaps:  []*manifests.ConfigMap{cmObj("team", "cfg", nil), cmObj("", "drop", nil)},
		Secrets:     []*manifests.Secret{secretObj("", "db", "", nil)},
		Claims:      []*manifests.PersistentVolumeClaim{claimObj("team", "data", "1Gi")},
		Services:    svcs(svc("team", "web")),
		Deployments: []*manifests.Deployment{depIn("team", "web")},
	}
	want := []ObjectRef{ref(KindDeployment, "team", "web"), ref(KindService, "team", "web"), ref(KindConfigMap, "team", "cfg"),
		ref(KindConfigMap, "", "drop"), ref(KindSecret, "", "db"), ref(KindPersistentVolumeClaim, "team", "data"), ref(KindNamespace, "", "team")}
	if got := b.Refs(); !reflect.DeepEqual(got, want) {
		t.Errorf("Refs = %v, want %v", got, want)
	}
	if b.Len() != len(want) {
		t.Errorf("Len = %d", b.Len())
	}
	b.Filter(func(kind string, m *manifests.ObjectMeta) bool { return m.Name != "drop" && kind != KindSecret })
	want = append(want[:3], want[5:]...)
	if got := b.Refs(); !reflect.DeepEqual(got, want) {
		t.Errorf("after Filter, Refs = %v, want %v", got, want)
	}
}
