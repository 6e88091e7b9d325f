package store

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

func setLabel(k, v string) func(*manifests.ObjectMeta) error {
	return func(m *manifests.ObjectMeta) error {
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels[k] = v
		return nil
	}
}

// UpdateMetadata (label, annotate) changes an object's metadata only:
// generation and a deployment's revisions stay, nothing is written when
// nothing changed, and the kind's validation applies.
func TestUpdateMetadata(t *testing.T) {
	bundle := Bundle{
		Namespaces:  nss("team"),
		ConfigMaps:  []*manifests.ConfigMap{cmObj("team", "cfg", map[string]string{"k": "v"}, immutable)},
		Secrets:     []*manifests.Secret{secretObj("team", "sec", "", map[string]string{"k": secretValue}, immutableSecret)},
		Claims:      []*manifests.PersistentVolumeClaim{claimObj("team", "data", "1Gi")},
		Services:    svcs(svc("team", "web")),
		Deployments: []*manifests.Deployment{depIn("team", "web")},
	}
	tests := []struct {
		name     string
		ref      ObjectRef
		fn       func(*manifests.ObjectMeta) error
		want     Action
		wantErr  string
		notFound bool
	}{
		{"deployment label", ref(KindDeployment, "team", "web"), setLabel("tier", "front"), Configured, "", false},
		{"deployment annotation", ref(KindDeployment, "team", "web"), func(m *manifests.ObjectMeta) error {
			m.Annotations = map[string]string{"note": "x"}
			return nil
		}, Configured, "", false},
		{"service", ref(KindService, "team", "web"), setLabel("tier", "front"), Configured, "", false},
		{"namespace", ref(KindNamespace, "", "team"), setLabel("tier", "front"), Configured, "", false},
		{"default namespace", ref(KindNamespace, "", "default"), setLabel("tier", "front"), Configured, "", false},
		{"immutable configmap", ref(KindConfigMap, "team", "cfg"), setLabel("tier", "front"), Configured, "", false},
		{"immutable secret", ref(KindSecret, "team", "sec"), setLabel("tier", "front"), Configured, "", false},
		{"claim", ref(KindPersistentVolumeClaim, "team", "data"), setLabel("tier", "front"), Configured, "", false},
		{"no change", ref(KindDeployment, "team", "web"), func(*manifests.ObjectMeta) error { return nil }, Unchanged, "", false},
		{"invalid key", ref(KindDeployment, "team", "web"), setLabel("bad key", "v"), "", `the Deployment "team/web" is invalid: metadata.labels[bad key]: invalid label key`, false},
		{"invalid value", ref(KindConfigMap, "team", "cfg"), setLabel("k", "a b"), "", `invalid label value "a b"`, false},
		{"fn error", ref(KindService, "team", "web"), func(*manifests.ObjectMeta) error { return errors.New("refused") }, "", "refused", false},
		{"rename", ref(KindService, "team", "web"), func(m *manifests.ObjectMeta) error { m.Name = "x"; return nil }, "", "renamed", false},
		{"missing", ref(KindDeployment, "team", "nope"), setLabel("a", "b"), "", "", true},
		{"missing secret", ref(KindSecret, "team", "nope"), setLabel("a", "b"), "", "", true},
		{"missing namespace", ref(KindNamespace, "", "nope"), setLabel("a", "b"), "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			mustApplyBundle(t, s, bundle)
			before := tree(t, s.Dir())
			recBefore, _ := s.Get("team", "web")
			act, err := s.UpdateMetadata(tt.ref, tt.fn)
			switch {
			case tt.notFound:
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("err = %v, want ErrNotFound", err)
				}
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case act != tt.want:
				t.Fatalf("action = %s, want %s", act, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), secretValue) {
				t.Fatalf("a secret value in an error: %v", err)
			}
			written := !reflect.DeepEqual(before, tree(t, s.Dir()))
			if written != (act == Configured) {
				t.Fatalf("written = %v with action %q", written, act)
			}
			rec, _ := s.Get("team", "web")
			if rec.Generation != recBefore.Generation || !reflect.DeepEqual(rec.Revisions, recBefore.Revisions) {
				t.Fatalf("deployment generation %d → %d, revisions %v → %v", recBefore.Generation, rec.Generation, recBefore.Revisions, rec.Revisions)
			}
			if act != Configured {
				return
			}
			var got map[string]string
			switch tt.ref.Kind {
			case KindDeployment:
				got = rec.Deployment.Metadata.Labels
			case KindService:
				r, _ := s.LookupService("team", "web")
				got = r.Service.Metadata.Labels
			case KindNamespace:
				r, _ := s.LookupNamespace(tt.ref.Name)
				got = r.Namespace.Metadata.Labels
			case KindConfigMap:
				r, _ := s.LookupConfigMapRecord("team", "cfg")
				got = r.Object.Metadata.Labels
				if r.Generation != 1 || r.Object.Data["k"] != "v" {
					t.Fatalf("configmap: generation %d data %v", r.Generation, r.Object.Data)
				}
			case KindSecret:
				r, _ := s.LookupSecretRecord("team", "sec")
				got = r.Object.Metadata.Labels
				if r.Generation != 1 || string(r.Object.Data["k"]) != secretValue {
					t.Fatalf("secret: generation %d", r.Generation)
				}
			case KindPersistentVolumeClaim:
				r, _ := s.LookupClaimRecord("team", "data")
				got = r.Object.Metadata.Labels
			}
			if tt.name != "deployment annotation" && got["tier"] != "front" {
				t.Fatalf("labels = %v", got)
			}
		})
	}
}
