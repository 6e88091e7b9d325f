package main

import (
	"bytes"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// claimFixture: claims of every binding — bound, pending (no volume, and a
// volume of its name that is not its own), terminating (deleted, volume
// kept), released (deleted, volume gone: not shown), in another namespace.
func claimFixture() ([]*store.ClaimRecord, []dockerx.Volume) {
	class := "local"
	claim := func(ns, name string, deleted bool, modes ...string) *store.ClaimRecord {
		return &store.ClaimRecord{Deleted: deleted, Created: fixtureTime.Add(-90 * 60e9), Object: manifests.PersistentVolumeClaim{
			APIVersion: "v1", Kind: manifests.KindPersistentVolumeClaim,
			Metadata: manifests.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "db"}},
			Spec: manifests.PersistentVolumeClaimSpec{AccessModes: modes, StorageClassName: &class,
				Resources: manifests.VolumeResourceRequirements{Requests: map[string]resource.Quantity{"storage": resource.MustParse("1Gi")}}},
		}}
	}
	recs := []*store.ClaimRecord{
		claim("", "data", false, "ReadWriteOnce"),
		claim("", "pending", false, "ReadWriteOnce", "ReadOnlyMany"),
		claim("", "taken", false, "ReadWriteOncePod"),
		claim("", "going", true, "ReadWriteOnce"),
		claim("", "gone", true, "ReadWriteOnce"),
		claim("team", "data", false, "ReadWriteMany"),
	}
	vol := func(ns, name string) dockerx.Volume {
		r := dockerx.ClaimVolumeRequest{Instance: "default", Namespace: ns, Claim: name}
		return dockerx.Volume{Name: r.Name(), Labels: dockerx.ClaimVolumeLabels(r), Role: dockerx.RoleClaim}
	}
	vols := []dockerx.Volume{vol("default", "data"), vol("default", "going"), vol("team", "data"),
		{Name: "default_pvc_default.taken", Labels: map[string]string{"someone": "else"}}}
	return recs, vols
}

func TestRenderClaimsGolden(t *testing.T) {
	recs, vols := claimFixture()
	all := bindRows("default", recs, vols, func(*manifests.ObjectMeta) bool { return true })
	defaultNS := bindRows("default", recs, vols, func(m *manifests.ObjectMeta) bool { return m.NamespaceOrDefault() == "default" })
	one := bindRows("default", recs, vols, func(m *manifests.ObjectMeta) bool { return m.NamespaceOrDefault() == "default" && m.Name == "data" })
	for _, tt := range []struct {
		name   string
		rows   []claimRow
		output string
		single bool
		all    bool
	}{
		{"get-pvc-table", defaultNS, "table", false, false},
		{"get-pvc-all-namespaces", all, "table", false, true},
		{"get-pvc-name", defaultNS, "name", false, false},
		{"get-pvc-yaml", one, "yaml", true, false},
		{"get-pvc-json", defaultNS, "json", false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := renderClaims(&b, fixtureTime, tt.rows, pr(t, tt.output), tt.single, tt.all); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, b.Bytes())
		})
	}
}

func TestDescribeClaimGolden(t *testing.T) {
	recs, vols := claimFixture()
	rows := bindRows("default", recs, vols, func(m *manifests.ObjectMeta) bool { return m.NamespaceOrDefault() == "default" })
	byName := map[string]claimRow{}
	for _, r := range rows {
		byName[r.rec.Object.Metadata.Name] = r
	}
	if _, shown := byName["gone"]; shown {
		t.Fatal("a deleted claim whose volume is gone is shown")
	}
	for _, tt := range []struct {
		claim, golden string
		users, deps   []string
	}{
		{"data", "describe-pvc-bound", []string{"default_db-5d8f7c9b6-0"}, []string{"deployment/db"}},
		{"taken", "describe-pvc-pending", nil, []string{"deployment/squat"}},
		{"going", "describe-pvc-terminating", []string{"default_db-5d8f7c9b6-0", "hand-made"}, nil},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			var b bytes.Buffer
			describeClaimRow(&b, "default", byName[tt.claim], tt.users, tt.deps)
			golden(t, tt.golden, b.Bytes())
		})
	}
}

func TestClaimDeployments(t *testing.T) {
	d := func(ns, name, claim string) *store.Record {
		r := &store.Record{Namespace: ns, Name: name}
		r.Deployment.Spec.Template.Spec.Volumes = []manifests.Volume{{Name: "v", PersistentVolumeClaim: &manifests.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
		return r
	}
	got := claimDeployments([]*store.Record{d("", "a", "data"), d("", "b", "other"), d("team", "c", "data"), d("default", "e", "data")}, "default", "data")
	if len(got) != 2 || got[0] != "deployment/a" || got[1] != "deployment/e" {
		t.Errorf("claimDeployments = %v", got)
	}
}
