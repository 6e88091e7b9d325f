package statefulset

import (
	"maps"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/workload"
)

func TestClaimsCreatedBeforeTheirPod(t *testing.T) {
	s := newSet(2, parallel, claimTemplate("data"), claimTemplate("logs"))
	d := Sync(s, nil, Status{}, nil, []ObservedClaim{{Name: "logs-web-1"}}, t0)
	eq(t, "claims", claimNames(d.CreateClaims), []string{"data-web-0", "logs-web-0", "data-web-1"})
	eq(t, "pods", podNames(d.CreatePods), []string{"web-0", "web-1"})
	c := d.CreateClaims[0]
	if c.Claim.Metadata.Namespace != "shop" || c.Claim.Kind != "PersistentVolumeClaim" || c.Claim.APIVersion != "v1" {
		t.Errorf("claim = %+v, want a v1 PersistentVolumeClaim in namespace shop", c.Claim)
	}
	if want := map[string]string{"tier": "db", "app": "web"}; !maps.Equal(c.Claim.Metadata.Labels, want) {
		t.Errorf("claim labels = %v, want the template's and the selector's %v", c.Claim.Metadata.Labels, want)
	}
	if c.Owner.Kind != manifests.KindStatefulSet || c.Owner.Name != "web" {
		t.Errorf("claim owner = %+v, want StatefulSet web", c.Owner)
	}
	if s.Spec.VolumeClaimTemplates[0].Metadata.Labels["app"] != "" {
		t.Error("the set's claim template was changed")
	}
}

func TestPodWaitsForTerminatingClaim(t *testing.T) {
	s := newSet(2, claimTemplate("data"))
	r := rev(s)
	d := Sync(s, history(s), Status{CurrentRevision: r}, []workload.ObservedPod{ready("web-0", r)},
		[]ObservedClaim{{Name: "data-web-0"}, {Name: "data-web-1", Terminating: true}}, t0)
	if len(d.CreatePods)+len(d.CreateClaims) != 0 {
		t.Errorf("created pods %q, claims %q while data-web-1 is being deleted", podNames(d.CreatePods), claimNames(d.CreateClaims))
	}
	if d.Waiting == "" {
		t.Error("no reason given for the wait")
	}
}

func TestPendingPodGetsItsMissingClaimBack(t *testing.T) {
	s := newSet(1, claimTemplate("data"))
	r := rev(s)
	p := notReady("web-0", r)
	p.Status.Phase = "Pending"
	d := Sync(s, history(s), Status{CurrentRevision: r}, []workload.ObservedPod{p}, nil, t0)
	eq(t, "claims", claimNames(d.CreateClaims), []string{"data-web-0"})
}

func TestClaimsRetainedOnScaleDownByDefault(t *testing.T) {
	s := newSet(1, claimTemplate("data"))
	r := rev(s)
	claims := []ObservedClaim{{Name: "data-web-0"}, {Name: "data-web-1"}, {Name: "data-web-2"}}
	for _, pods := range [][]workload.ObservedPod{
		{ready("web-0", r), ready("web-1", r), ready("web-2", r)},
		{ready("web-0", r)},
	} {
		d := Sync(s, history(s), Status{CurrentRevision: r}, pods, claims, t0)
		eq(t, "claims deleted", d.DeleteClaims, nil)
	}
}

func TestClaimsDeletedOnScaleDownWhenScaledDelete(t *testing.T) {
	s := newSet(1, claimTemplate("data"), retention(manifests.ClaimRetain, manifests.ClaimDelete))
	r := rev(s)
	claims := []ObservedClaim{{Name: "data-web-0"}, {Name: "data-web-1"}, {Name: "data-web-2"}, {Name: "data-db-1"}, {Name: "other"}}
	// Pod web-2 is condemned: its claim goes with it (its volume stays
	// while the container mounts it); web-1 was gone before, no pod of
	// this scale-down, so its claim stays.
	d := Sync(s, history(s), Status{CurrentRevision: r}, []workload.ObservedPod{ready("web-0", r), ready("web-2", r)}, claims, t0)
	eq(t, "pods deleted", d.DeletePods, []string{"web-2"})
	eq(t, "claims deleted", d.DeleteClaims, []string{"data-web-2"})
	d = Sync(s, history(s), Status{CurrentRevision: r}, []workload.ObservedPod{ready("web-0", r)}, claims, t0)
	eq(t, "claims deleted once the pods are gone", d.DeleteClaims, nil)
}

// whenScaled Delete takes the claims of the pods a scale-down condemns
// (Kubernetes makes each such claim owned by its condemned pod), never a
// claim past the range whose pod was gone before: one retained by an
// earlier scale-down under Retain (KEP-1847: a policy changed to Delete
// owns only the claims of a scale-down in progress), or one made ahead of
// a scale-up.
func TestWhenScaledDeleteTakesOnlyTheClaimsOfCondemnedPods(t *testing.T) {
	s := newSet(1, claimTemplate("data"), retention(manifests.ClaimRetain, manifests.ClaimDelete))
	r := rev(s)
	for _, tc := range []struct {
		name       string
		pods       []workload.ObservedPod
		claims     []ObservedClaim
		wantClaims []string
	}{
		{"a claim whose pod was gone before", []workload.ObservedPod{ready("web-0", r)},
			[]ObservedClaim{{Name: "data-web-0"}, {Name: "data-web-1"}}, nil},
		{"a claim made ahead of a scale-up", []workload.ObservedPod{ready("web-0", r)},
			[]ObservedClaim{{Name: "data-web-0"}, {Name: "data-web-5"}}, nil},
		{"the claim of the pod condemned now", []workload.ObservedPod{ready("web-0", r), ready("web-1", r)},
			[]ObservedClaim{{Name: "data-web-0"}, {Name: "data-web-1"}}, []string{"data-web-1"}},
		{"the claim of a condemned pod terminating", []workload.ObservedPod{ready("web-0", r), terminating(ready("web-1", r))},
			[]ObservedClaim{{Name: "data-web-0"}, {Name: "data-web-1"}}, []string{"data-web-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Sync(s, history(s), Status{CurrentRevision: r}, tc.pods, tc.claims, t0)
			eq(t, "claims deleted", d.DeleteClaims, tc.wantClaims)
		})
	}
}

func TestClaimSurvivesPodReplacement(t *testing.T) {
	s := newSet(2, claimTemplate("data"), retention(manifests.ClaimDelete, manifests.ClaimDelete))
	r := rev(s)
	claims := []ObservedClaim{{Name: "data-web-0"}, {Name: "data-web-1"}}
	d := Sync(s, history(s), Status{CurrentRevision: r}, []workload.ObservedPod{ready("web-0", r)}, claims, t0)
	eq(t, "pods created", podNames(d.CreatePods), []string{"web-1"})
	eq(t, "claims created", claimNames(d.CreateClaims), nil)
	eq(t, "claims deleted", d.DeleteClaims, nil)
}

func TestTeardownFollowsWhenDeleted(t *testing.T) {
	pods := []string{"web-0", "web-1", "web-x", "db-0"}
	claims := []ObservedClaim{{Name: "data-web-0"}, {Name: "data-web-1"}, {Name: "data-web-3"}, {Name: "data-web-4", Terminating: true}, {Name: "data-db-0"}}
	tests := []struct {
		name                    string
		whenDeleted, whenScaled string
		wantClaims              []string
	}{
		{"retain both", manifests.ClaimRetain, manifests.ClaimRetain, nil},
		{"delete when deleted", manifests.ClaimDelete, manifests.ClaimRetain, []string{"data-web-0", "data-web-1", "data-web-3"}},
		// data-web-3's pod is gone: its claim was not a condemned pod's.
		{"delete when scaled only", manifests.ClaimRetain, manifests.ClaimDelete, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSet(2, claimTemplate("data"), retention(tt.whenDeleted, tt.whenScaled))
			dp, dc := Teardown(s, pods, claims)
			eq(t, "pods", dp, []string{"web-0", "web-1"})
			eq(t, "claims", dc, tt.wantClaims)
		})
	}
}

// TestStoredClaimFollowsTheRetentionPolicy: the claim a decision creates
// becomes the store's PersistentVolumeClaim as Kubernetes' StatefulSet
// controller creates it: named TEMPLATE-NAME-i in the set's namespace,
// labelled with its template's and the set's selector labels, valid as
// the store checks it, and owned by the set (its controller reference,
// so the garbage collector takes it with the set) only when whenDeleted
// is Delete (updateClaimOwnerRefForSetAndPod, for a pod in range); a
// claim the policy retains has no owner and outlives the set.
func TestStoredClaimFollowsTheRetentionPolicy(t *testing.T) {
	for _, tc := range []struct {
		name        string
		whenDeleted string
		whenScaled  string
		owned       bool
	}{
		{name: "retained by default: no owner"},
		{name: "whenDeleted Delete: owned by the set", whenDeleted: manifests.ClaimDelete, owned: true},
		{name: "whenScaled Delete alone: no owner while its pod is in range", whenScaled: manifests.ClaimDelete},
		{name: "both Delete: owned by the set", whenDeleted: manifests.ClaimDelete, whenScaled: manifests.ClaimDelete, owned: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []setOpt{claimTemplate("data")}
			if tc.whenDeleted != "" || tc.whenScaled != "" {
				opts = append(opts, retention(tc.whenDeleted, tc.whenScaled))
			}
			s := newSet(1, opts...)
			// As validation makes every claim template: with its size.
			s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = map[string]resource.Quantity{"storage": resource.MustParse("1Gi")}
			d := Sync(s, nil, Status{}, nil, nil, t0)
			if len(d.CreateClaims) != 1 {
				t.Fatalf("claims %q, want data-web-0", claimNames(d.CreateClaims))
			}
			pvc, owner := StoredClaim(s, "uid-1", d.CreateClaims[0])
			if pvc.Metadata.Name != "data-web-0" || pvc.Metadata.Namespace != "shop" || pvc.Kind != "PersistentVolumeClaim" {
				t.Errorf("claim %s/%s of kind %s, want shop/data-web-0 PersistentVolumeClaim", pvc.Metadata.Namespace, pvc.Metadata.Name, pvc.Kind)
			}
			if want := map[string]string{"tier": "db", "app": "web"}; !maps.Equal(pvc.Metadata.Labels, want) {
				t.Errorf("labels %v, want %v", pvc.Metadata.Labels, want)
			}
			if err := manifests.ValidatePVC(&pvc); err != nil {
				t.Errorf("the store refuses it: %v", err)
			}
			switch {
			case !tc.owned && owner != nil:
				t.Errorf("owner %+v, want none", *owner)
			case tc.owned && (owner == nil || *owner != podruntime.OwnerRef{Kind: manifests.KindStatefulSet, Name: "web", UID: "uid-1"}):
				t.Errorf("owner %v, want the set web (uid-1)", owner)
			}
		})
	}
}
