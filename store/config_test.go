package store

import (
	"context"
	"encoding/base64"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/manifests"
)

// secretValue must never appear in an error.
const secretValue = "hunter2-s3cr3t"

func cmObj(ns, name string, data map[string]string, muts ...func(*manifests.ConfigMap)) *manifests.ConfigMap {
	c := &manifests.ConfigMap{APIVersion: "v1", Kind: manifests.KindConfigMap,
		Metadata: manifests.ObjectMeta{Name: name, Namespace: ns}, Data: data}
	for _, m := range muts {
		m(c)
	}
	return c
}

func secretObj(ns, name, typ string, data map[string]string, muts ...func(*manifests.Secret)) *manifests.Secret {
	s := &manifests.Secret{APIVersion: "v1", Kind: manifests.KindSecret,
		Metadata: manifests.ObjectMeta{Name: name, Namespace: ns}, Type: typ, StringData: data}
	for _, m := range muts {
		m(s)
	}
	return s
}

func claimObj(ns, name, storage string, muts ...func(*manifests.PersistentVolumeClaim)) *manifests.PersistentVolumeClaim {
	p := &manifests.PersistentVolumeClaim{APIVersion: "v1", Kind: manifests.KindPersistentVolumeClaim,
		Metadata: manifests.ObjectMeta{Name: name, Namespace: ns},
		Spec: manifests.PersistentVolumeClaimSpec{AccessModes: []string{manifests.ReadWriteOnce},
			Resources: manifests.VolumeResourceRequirements{Requests: map[string]resource.Quantity{"storage": resource.MustParse(storage)}}}}
	for _, m := range muts {
		m(p)
	}
	return p
}

func immutable(c *manifests.ConfigMap)    { t := true; c.Immutable = &t }
func immutableSecret(s *manifests.Secret) { t := true; s.Immutable = &t }
func cmLabel(c *manifests.ConfigMap)      { c.Metadata.Labels = map[string]string{"tier": "front"} }

func TestApplyConfigKinds(t *testing.T) {
	tests := []struct {
		name  string
		steps []Bundle
		want  [][]ApplyResult
	}{
		{
			name: "namespace, then configmaps, secrets and claims, then services, then deployments",
			steps: []Bundle{{
				Deployments: []*manifests.Deployment{depIn("team", "web")},
				Services:    svcs(svc("team", "web")),
				Claims:      []*manifests.PersistentVolumeClaim{claimObj("team", "data", "1Gi")},
				Secrets:     []*manifests.Secret{secretObj("team", "db", "", map[string]string{"password": secretValue})},
				ConfigMaps:  []*manifests.ConfigMap{cmObj("team", "web.config", map[string]string{"a": "1"}), cmObj("", "web.config", nil)},
				Namespaces:  nss("team"),
			}},
			want: [][]ApplyResult{{
				res(KindNamespace, "", "team", Created, 0),
				res(KindConfigMap, "team", "web.config", Created, 1), res(KindConfigMap, "default", "web.config", Created, 1),
				res(KindSecret, "team", "db", Created, 1),
				res(KindPersistentVolumeClaim, "team", "data", Created, 1),
				res(KindService, "team", "web", Created, 1),
				res(KindDeployment, "team", "web", Created, 1),
			}},
		},
		{
			name: "generations: data changes count, metadata does not",
			steps: []Bundle{
				{ConfigMaps: []*manifests.ConfigMap{cmObj("", "c", map[string]string{"a": "1"})}},
				{ConfigMaps: []*manifests.ConfigMap{cmObj("default", "c", map[string]string{"a": "1"})}},
				{ConfigMaps: []*manifests.ConfigMap{cmObj("", "c", map[string]string{"a": "1"}, cmLabel)}},
				{ConfigMaps: []*manifests.ConfigMap{cmObj("", "c", map[string]string{"a": "2"}, cmLabel)}},
			},
			want: [][]ApplyResult{
				{res(KindConfigMap, "default", "c", Created, 1)},
				{res(KindConfigMap, "default", "c", Unchanged, 1)},
				{res(KindConfigMap, "default", "c", Configured, 1)},
				{res(KindConfigMap, "default", "c", Configured, 2)},
			},
		},
		{
			// stringData written in code is merged into data as the
			// API server does: the same secret given as data is
			// unchanged.
			name: "secret: stringData and data are one",
			steps: []Bundle{
				{Secrets: []*manifests.Secret{secretObj("", "s", "", map[string]string{"k": "v"})}},
				{Secrets: []*manifests.Secret{{APIVersion: "v1", Kind: "Secret", Metadata: manifests.ObjectMeta{Name: "s"}, Type: "Opaque", Data: map[string][]byte{"k": []byte("v")}}}},
				{Secrets: []*manifests.Secret{secretObj("", "s", "", map[string]string{"k": "w"})}},
			},
			want: [][]ApplyResult{
				{res(KindSecret, "default", "s", Created, 1)},
				{res(KindSecret, "default", "s", Unchanged, 1)},
				{res(KindSecret, "default", "s", Configured, 2)},
			},
		},
		{
			name: "immutable: metadata may change, and a mutable one may become immutable",
			steps: []Bundle{
				{ConfigMaps: []*manifests.ConfigMap{cmObj("", "c", map[string]string{"a": "1"})}},
				{ConfigMaps: []*manifests.ConfigMap{cmObj("", "c", map[string]string{"a": "1"}, immutable)}},
				{ConfigMaps: []*manifests.ConfigMap{cmObj("", "c", map[string]string{"a": "1"}, immutable, cmLabel)}},
			},
			want: [][]ApplyResult{
				{res(KindConfigMap, "default", "c", Created, 1)},
				{res(KindConfigMap, "default", "c", Configured, 2)},
				{res(KindConfigMap, "default", "c", Configured, 2)},
			},
		},
		{
			name: "claim storage may grow",
			steps: []Bundle{
				{Claims: []*manifests.PersistentVolumeClaim{claimObj("", "data", "1Gi")}},
				{Claims: []*manifests.PersistentVolumeClaim{claimObj("", "data", "2Gi")}},
			},
			want: [][]ApplyResult{
				{res(KindPersistentVolumeClaim, "default", "data", Created, 1)},
				{res(KindPersistentVolumeClaim, "default", "data", Configured, 2)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			for i, b := range tt.steps {
				got, err := s.Apply(b, ApplyOptions{})
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if !reflect.DeepEqual(got, tt.want[i]) {
					t.Fatalf("step %d:\n got %v\nwant %v", i, got, tt.want[i])
				}
			}
		})
	}
}

// What Kubernetes refuses on an update is refused, dry run or not, and
// nothing is written; no error holds a secret value.
func TestApplyConfigRefusals(t *testing.T) {
	tests := []struct {
		name   string
		before Bundle
		b      Bundle
		want   string
	}{
		{"immutable configmap data",
			Bundle{ConfigMaps: []*manifests.ConfigMap{cmObj("", "c", map[string]string{"a": "1"}, immutable)}},
			Bundle{ConfigMaps: []*manifests.ConfigMap{cmObj("", "c", map[string]string{"a": "2"}, immutable)}},
			"the ConfigMap \"c\" is invalid: data: field is immutable when `immutable` is set"},
		{"immutable configmap made mutable",
			Bundle{ConfigMaps: []*manifests.ConfigMap{cmObj("", "c", map[string]string{"a": "1"}, immutable)}},
			Bundle{ConfigMaps: []*manifests.ConfigMap{cmObj("", "c", map[string]string{"a": "1"})}},
			"the ConfigMap \"c\" is invalid: immutable: field is immutable when `immutable` is set"},
		{"immutable secret data",
			Bundle{Secrets: []*manifests.Secret{secretObj("", "s", "", map[string]string{"k": "old"}, immutableSecret)}},
			Bundle{Secrets: []*manifests.Secret{secretObj("", "s", "", map[string]string{"k": secretValue}, immutableSecret)}},
			"the Secret \"s\" is invalid: data: field is immutable when `immutable` is set"},
		{"secret type",
			Bundle{Secrets: []*manifests.Secret{secretObj("", "s", "", map[string]string{"username": "u"})}},
			Bundle{Secrets: []*manifests.Secret{secretObj("", "s", manifests.SecretTypeBasicAuth, map[string]string{"username": "u"})}},
			`the Secret "s" is invalid: type: field is immutable (it is "Opaque")`},
		{"claim spec",
			Bundle{Claims: []*manifests.PersistentVolumeClaim{claimObj("", "data", "1Gi")}},
			Bundle{Claims: []*manifests.PersistentVolumeClaim{claimObj("", "data", "1Gi", func(p *manifests.PersistentVolumeClaim) {
				p.Spec.AccessModes = []string{manifests.ReadWriteMany}
			})}},
			`the PersistentVolumeClaim "data" is invalid: spec: spec is immutable after creation except resources.requests`},
		{"claim shrinks",
			Bundle{Claims: []*manifests.PersistentVolumeClaim{claimObj("", "data", "2Gi")}},
			Bundle{Claims: []*manifests.PersistentVolumeClaim{claimObj("", "data", "1Gi")}},
			`spec.resources.requests[storage]: field can not be less than previous value (2Gi)`},
		{"missing namespace",
			Bundle{},
			Bundle{Secrets: []*manifests.Secret{secretObj("nope", "s", "", nil)}},
			`secret/s: namespaces "nope" not found`},
		{"name that is a path",
			Bundle{},
			Bundle{ConfigMaps: []*manifests.ConfigMap{cmObj("", "../x", nil)}},
			`invalid configmap name "../x": must be a DNS-1123 subdomain`},
		{"twice in one bundle",
			Bundle{},
			Bundle{Claims: []*manifests.PersistentVolumeClaim{claimObj("", "d", "1Gi"), claimObj("default", "d", "1Gi")}},
			`persistentvolumeclaim "d" appears more than once`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			mustApplyBundle(t, s, tt.before)
			before := tree(t, s.Dir())
			for _, dry := range []bool{true, false} {
				_, err := s.Apply(Bundle{Namespaces: nil, ConfigMaps: tt.b.ConfigMaps, Secrets: tt.b.Secrets, Claims: tt.b.Claims}, ApplyOptions{DryRun: dry})
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("dry %v: error %v, want one containing %q", dry, err, tt.want)
				}
				if strings.Contains(err.Error(), secretValue) {
					t.Fatalf("the error holds a secret value: %v", err)
				}
				if after := tree(t, s.Dir()); !reflect.DeepEqual(before, after) {
					t.Fatalf("a refused apply changed the state")
				}
			}
		})
	}
}

// The ConfigStore lookups: live objects validated, tombstones and never
// known objects told apart for claims, ErrNotFound otherwise.
func TestConfigLookups(t *testing.T) {
	s := openTemp(t)
	mustApplyBundle(t, s, Bundle{Namespaces: nss("team"),
		ConfigMaps: []*manifests.ConfigMap{cmObj("team", "c", map[string]string{"a": "1"})},
		Secrets:    []*manifests.Secret{secretObj("team", "s", "", map[string]string{"password": secretValue})},
		Claims:     []*manifests.PersistentVolumeClaim{claimObj("team", "data", "1Gi")}})

	cm, err := s.LookupConfigMap("team", "c")
	if err != nil || cm.Data["a"] != "1" || cm.Metadata.CreationTimestamp == nil || cm.Metadata.Namespace != "team" {
		t.Fatalf("LookupConfigMap: %+v, %v", cm, err)
	}
	sec, err := s.LookupSecret("team", "s")
	if err != nil || string(sec.Data["password"]) != secretValue || sec.StringData != nil || sec.Type != manifests.SecretTypeOpaque {
		t.Fatalf("LookupSecret: type %q stringData %v err %v", sec.Type, sec.StringData != nil, err)
	}
	claim, deleted, err := s.LookupClaim("team", "data")
	if err != nil || deleted || claim.Spec.VolumeMode == nil || *claim.Spec.VolumeMode != "Filesystem" {
		t.Fatalf("LookupClaim: %+v %v %v", claim, deleted, err)
	}

	for _, miss := range []error{
		func() error { _, err := s.LookupConfigMap("team", "other"); return err }(),
		func() error { _, err := s.LookupSecret("default", "s"); return err }(),
		func() error { _, _, err := s.LookupClaim("team", "never"); return err }(),
	} {
		if !errors.Is(miss, ErrNotFound) {
			t.Errorf("a miss: %v, want ErrNotFound", miss)
		}
	}

	if err := s.DeleteConfigMap("team", "c"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSecret("team", "s"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteClaim("team", "data"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LookupConfigMap("team", "c"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted configmap: %v", err)
	}
	if _, err := s.LookupSecret("team", "s"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted secret: %v", err)
	}
	claim, deleted, err = s.LookupClaim("team", "data")
	if err != nil || !deleted || claim == nil || claim.Metadata.Name != "data" {
		t.Errorf("deleted claim: %+v %v %v, want the tombstone", claim, deleted, err)
	}
	if err := s.DeleteClaim("team", "data"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting it again: %v", err)
	}
	rec, err := s.LookupSecretRecord("team", "s")
	if err != nil || !rec.Deleted || rec.Generation != 2 {
		t.Errorf("secret record %+v %v", rec, err)
	}
	// Revived: a new object, its generation going on.
	mustApplyBundle(t, s, Bundle{Secrets: []*manifests.Secret{secretObj("team", "s", manifests.SecretTypeBasicAuth, map[string]string{"username": "u"})}})
	if rec, err := s.LookupSecretRecord("team", "s"); err != nil || rec.Deleted || rec.Generation != 3 || rec.Object.Type != manifests.SecretTypeBasicAuth {
		t.Errorf("revived secret %+v %v", rec, err)
	}
}

// A record is not trusted: one that fails validation is an error naming
// its file, never its values.
func TestConfigLookupValidates(t *testing.T) {
	s := openTemp(t)
	mustApplyBundle(t, s, Bundle{
		ConfigMaps: []*manifests.ConfigMap{cmObj("", "c", map[string]string{"a": "1"})},
		Secrets:    []*manifests.Secret{secretObj("", "s", manifests.SecretTypeTLS, map[string]string{"tls.crt": secretValue, "tls.key": secretValue})}})
	edit := func(rel, old, new string) {
		p := filepath.Join(s.Dir(), rel)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), old) {
			t.Fatalf("%s has no %q:\n%s", rel, old, b)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	edit("configmaps/c.json", `"a": "1"`, `"a/b": "1"`)
	edit("secrets/s.json", `"tls.key"`, `"tls.other"`)
	_, err := s.LookupConfigMap("", "c")
	if err == nil || !strings.Contains(err.Error(), `state file configmaps/c.json: invalid configmap: data[a/b]: invalid key "a/b"`) {
		t.Errorf("LookupConfigMap: %v", err)
	}
	_, err = s.LookupSecret("", "s")
	if err == nil || !strings.Contains(err.Error(), `state file secrets/s.json: invalid secret: data[tls.key]: required`) || strings.Contains(err.Error(), secretValue) {
		t.Errorf("LookupSecret: %v", err)
	}
	// A record of the wrong name is corrupt; the list reports it and
	// keeps the others.
	mustApplyBundle(t, s, Bundle{ConfigMaps: []*manifests.ConfigMap{cmObj("", "d", nil)}})
	edit("configmaps/d.json", `"name": "d"`, `"name": "e"`)
	recs, errs := s.ListConfigMaps()
	if len(recs) != 1 || len(errs) != 1 || !errors.Is(errs[0], ErrCorrupt) {
		t.Errorf("ListConfigMaps: %d records, errors %v", len(recs), errs)
	}
}

func TestSecretFileIsPrivate(t *testing.T) {
	s := openTemp(t)
	mustApplyBundle(t, s, Bundle{Namespaces: nss("team"), Secrets: []*manifests.Secret{secretObj("team", "s", "", map[string]string{"k": secretValue})}})
	for _, rel := range []string{"namespaces/team/secrets", "namespaces/team/secrets/s.json", "secrets"} {
		fi, err := os.Stat(filepath.Join(s.Dir(), rel))
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", rel, fi.Mode().Perm(), want)
		}
	}
}

// Prune covers ConfigMaps, Secrets and claims of the namespaces the
// bundle visits, as kubectl's default prune list does.
func TestPruneConfigKinds(t *testing.T) {
	s := openTemp(t)
	mustApplyBundle(t, s, Bundle{Namespaces: nss("team"),
		ConfigMaps: []*manifests.ConfigMap{cmObj("", "keep", nil), cmObj("", "old", nil), cmObj("team", "other", nil)},
		Secrets:    []*manifests.Secret{secretObj("", "old", "", nil, func(s *manifests.Secret) { s.Metadata.Labels = map[string]string{"app": "x"} })},
		Claims:     []*manifests.PersistentVolumeClaim{claimObj("", "old", "1Gi")}})
	got, err := s.Apply(Bundle{ConfigMaps: []*manifests.ConfigMap{cmObj("", "keep", nil)}}, ApplyOptions{Prune: true, PruneSelector: labels.Everything()})
	if err != nil {
		t.Fatal(err)
	}
	want := []ApplyResult{
		res(KindConfigMap, "default", "keep", Unchanged, 1),
		res(KindConfigMap, "default", "old", Pruned, 2),
		res(KindSecret, "default", "old", Pruned, 2),
		res(KindPersistentVolumeClaim, "default", "old", Pruned, 2),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("prune:\n got %v\nwant %v", got, want)
	}
	if _, err := s.LookupConfigMap("team", "other"); err != nil {
		t.Errorf("a configmap of a namespace the bundle did not visit was pruned: %v", err)
	}
}

// Deleting a namespace deletes its ConfigMaps, Secrets and claims with it;
// DeleteObjects names each kind.
func TestDeleteConfigKinds(t *testing.T) {
	s := openTemp(t)
	mustApplyBundle(t, s, Bundle{Namespaces: nss("team"),
		ConfigMaps: []*manifests.ConfigMap{cmObj("team", "c", nil), cmObj("", "c", nil)},
		Secrets:    []*manifests.Secret{secretObj("team", "s", "", nil)},
		Claims:     []*manifests.PersistentVolumeClaim{claimObj("team", "data", "1Gi")}})
	results, err := s.DeleteObjects([]ObjectRef{ref(KindConfigMap, "", "c"), ref(KindSecret, "", "nope"), ref(KindNamespace, "", "team"), ref(KindSecret, "team", "s")})
	if err != nil {
		t.Fatal(err)
	}
	if results[0].Err != nil || !errors.Is(results[1].Err, ErrNotFound) || results[2].Err != nil || results[3].Err != nil {
		t.Fatalf("results %+v", results)
	}
	for _, k := range []struct{ kind, ns, name string }{{KindConfigMap, "team", "c"}, {KindSecret, "team", "s"}, {KindConfigMap, "", "c"}} {
		var err error
		switch k.kind {
		case KindConfigMap:
			_, err = s.LookupConfigMap(k.ns, k.name)
		case KindSecret:
			_, err = s.LookupSecret(k.ns, k.name)
		}
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s %s/%s: %v, want deleted", k.kind, k.ns, k.name, err)
		}
	}
	if _, deleted, err := s.LookupClaim("team", "data"); err != nil || !deleted {
		t.Errorf("claim of the deleted namespace: deleted %v err %v", deleted, err)
	}
	if _, err := s.DeleteObjects([]ObjectRef{ref(KindConfigMap, "", "../x")}); err == nil {
		t.Errorf("DeleteObjects took a path for a name")
	}
}

func TestConfigWatchKeys(t *testing.T) {
	s := openTemp(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	expect := func(want ...string) {
		t.Helper()
		missing := map[string]bool{}
		for _, k := range want {
			missing[k] = true
		}
		deadline := time.After(5 * time.Second)
		for len(missing) > 0 {
			select {
			case k := <-ch:
				if !slices.Contains(want, k) {
					t.Fatalf("watch sent %q, want only %v", k, want)
				}
				delete(missing, k)
			case <-deadline:
				t.Fatalf("no watch event for %v", slices.Collect(maps.Keys(missing)))
			}
		}
		for _, extra := range drain(ch) {
			if !slices.Contains(want, extra) {
				t.Errorf("unexpected extra event %q", extra)
			}
		}
	}
	mustApplyBundle(t, s, Bundle{ConfigMaps: []*manifests.ConfigMap{cmObj("", "app.conf", nil)},
		Secrets: []*manifests.Secret{secretObj("", "s", "", nil)}, Claims: []*manifests.PersistentVolumeClaim{claimObj("", "data", "1Gi")}})
	expect("configmap:default/app.conf", "secret:default/s", "pvc:default/data")
	mustApplyBundle(t, s, Bundle{Namespaces: nss("team"), ConfigMaps: []*manifests.ConfigMap{cmObj("team", "c", nil)}})
	expect("namespace:team", "configmap:team/c")
	mustApplyBundle(t, s, Bundle{Secrets: []*manifests.Secret{secretObj("team", "s", "", nil)}, Claims: []*manifests.PersistentVolumeClaim{claimObj("team", "d", "1Gi")}})
	expect("secret:team/s", "pvc:team/d")
	if err := s.DeleteSecret("team", "s"); err != nil {
		t.Fatal(err)
	}
	expect("secret:team/s")
}

func TestParseConfigWatchKeys(t *testing.T) {
	for _, tt := range []struct{ key, kind, ns, name string }{
		{ConfigMapKey("", "app.conf"), KindConfigMap, "default", "app.conf"},
		{SecretKey("team", "s"), KindSecret, "team", "s"},
		{ClaimKey("team", "data"), KindPersistentVolumeClaim, "team", "data"},
		{"pvc:team", "", "", ""},
		{"secret:/x", "", "", ""},
	} {
		kind, ns, name := ParseWatchKey(tt.key)
		if kind != tt.kind || ns != tt.ns || name != tt.name {
			t.Errorf("ParseWatchKey(%q) = %q %q %q, want %q %q %q", tt.key, kind, ns, name, tt.kind, tt.ns, tt.name)
		}
	}
	if got := ClaimKey("", "data"); got != "pvc:default/data" {
		t.Errorf("ClaimKey = %q", got)
	}
}

// A state directory of an earlier release gains the new directories on
// Open and keeps everything else; a read-only store of it lists none.
func TestConfigKindsOnEarlierState(t *testing.T) {
	s := openTemp(t)
	mustApplyBundle(t, s, Deployments(dep("web")))
	for _, d := range []string{"configmaps", "secrets", "claims"} {
		if err := os.Remove(filepath.Join(s.Dir(), d)); err != nil {
			t.Fatal(err)
		}
	}
	ro, err := OpenReadOnly(s.Dir(), "default")
	if err != nil {
		t.Fatal(err)
	}
	if recs, errs := ro.ListSecrets(); len(recs) != 0 || len(errs) != 0 {
		t.Errorf("ListSecrets on an earlier state: %v %v", recs, errs)
	}
	if _, err := ro.LookupConfigMap("", "c"); !errors.Is(err, ErrNotFound) {
		t.Errorf("LookupConfigMap on an earlier state: %v", err)
	}
	s2, err := Open(s.Dir(), "default")
	if err != nil {
		t.Fatal(err)
	}
	mustApplyBundle(t, s2, Bundle{ConfigMaps: []*manifests.ConfigMap{cmObj("", "c", nil)}})
	if _, err := s2.Get("", "web"); err != nil {
		t.Errorf("the earlier deployment: %v", err)
	}
}

// A deleted Secret must not stay on disk with its values. In Kubernetes a
// deleted Secret is gone from etcd; here every way of deleting one (delete,
// prune, deleting its namespace) writes a tombstone, which stays in the
// state directory for ever (tombstones are never collected): it must not
// hold the Secret's data, or `dockctl delete secret leaked` would not
// remove the leaked credential from the host.
func TestDeletedSecretLeavesNoValuesOnDisk(t *testing.T) {
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
