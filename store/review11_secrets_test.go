package store

import (
	"encoding/base64"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/manifests"
)

// Review 11: a deleted Secret must not stay on disk with its values. In
// Kubernetes a deleted Secret is gone from etcd; here every way of deleting
// one (delete, prune, deleting its namespace) writes a tombstone that still
// holds the whole Secret — data included — in the state directory, for
// ever (tombstones are never collected). `dockctl delete secret leaked`
// does not remove the leaked credential from the host.
func TestReview11DeletedSecretKeepsItsValuesOnDisk(t *testing.T) {
	tests := []struct {
		name   string
		ns     string
		delete func(t *testing.T, s *Store)
	}{
		{"delete secret", "", func(t *testing.T, s *Store) {
			if err := s.DeleteSecret("", "db"); err != nil {
				t.Fatal(err)
			}
		}},
		{"apply --prune --all", "", func(t *testing.T, s *Store) {
			if _, err := s.Apply(Bundle{ConfigMaps: []*manifests.ConfigMap{cmObj("", "other", nil)}},
				ApplyOptions{Prune: true, PruneSelector: labels.Everything()}); err != nil {
				t.Fatal(err)
			}
		}},
		{"delete namespace", "team", func(t *testing.T, s *Store) {
			if _, err := s.DeleteObjects([]ObjectRef{ref(KindNamespace, "", "team")}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			b := Bundle{Secrets: []*manifests.Secret{secretObj(tt.ns, "db", "", map[string]string{"password": secretValue})}}
			if tt.ns != "" {
				b.Namespaces = nss(tt.ns)
			}
			mustApplyBundle(t, s, b)
			tt.delete(t, s)
			if _, err := s.LookupSecret(tt.ns, "db"); err == nil {
				t.Fatalf("the secret is still live")
			}
			b64 := base64.StdEncoding.EncodeToString([]byte(secretValue))
			err := filepath.WalkDir(s.Dir(), func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				if strings.Contains(string(data), b64) || strings.Contains(string(data), secretValue) {
					t.Errorf("after %s, %s still holds the deleted Secret's value", tt.name, strings.TrimPrefix(path, s.Dir()))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
