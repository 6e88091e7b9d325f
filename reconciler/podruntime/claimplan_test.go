package podruntime

import (
	"reflect"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
)

// claimVol is the volume the instance "i" made for claim of namespace ns.
func claimVol(ns, claim string) dockerx.Volume {
	r := dockerx.ClaimVolumeRequest{Instance: "i", Namespace: ns, Claim: claim}
	l := dockerx.ClaimVolumeLabels(r)
	return dockerx.Volume{Name: r.Name(), Labels: l, Instance: "i", Role: dockerx.RoleClaim, Namespace: ns, Claim: claim}
}

func claimReq(ns, claim string) dockerx.ClaimVolumeRequest {
	return dockerx.ClaimVolumeRequest{Instance: "i", Namespace: ns, Claim: claim}
}

func TestPlanClaims(t *testing.T) {
	foreign := claimVol("default", "data")
	foreign.Labels = map[string]string{dockerx.LabelInstance: "i", dockerx.LabelRole: dockerx.RoleClaim, dockerx.LabelNamespace: "default", dockerx.LabelClaim: "other"}
	foreign.Claim = "other"
	emptyDir := dockerx.Volume{Name: "i_web-abc-0.shared.u1", Instance: "i", Role: dockerx.RoleEmptyDir, Deployment: "web", Namespace: "default",
		Labels: map[string]string{dockerx.LabelInstance: "i", dockerx.LabelRole: dockerx.RoleEmptyDir}}
	otherInstance := claimVol("default", "data")
	otherInstance.Instance = "j"

	tests := []struct {
		name string
		in   ClaimPlanInput
		want ClaimPlan
	}{
		{
			name: "nothing: no claims, no volumes",
			in:   ClaimPlanInput{Instance: "i"},
		},
		{
			name: "a live claim without a volume is bound at once",
			in:   ClaimPlanInput{Instance: "i", Claims: []ClaimInput{{Namespace: "default", Name: "data"}, {Namespace: "shop", Name: "db.main"}}},
			want: ClaimPlan{Ops: []ClaimOp{
				{Kind: OpBindClaim, Volume: claimReq("default", "data"), Cause: `persistentvolumeclaim "data" of namespace "default" has no volume`},
				{Kind: OpBindClaim, Volume: claimReq("shop", "db.main"), Cause: `persistentvolumeclaim "db.main" of namespace "shop" has no volume`},
			}},
		},
		{
			name: "a live bound claim: nothing to do (idempotent)",
			in: ClaimPlanInput{Instance: "i", Claims: []ClaimInput{{Namespace: "default", Name: "data"}},
				Volumes: []dockerx.Volume{claimVol("default", "data")}, Users: map[string][]string{"i_pvc_default.data": {"i_web-abc-0"}}},
		},
		{
			name: "an empty namespace reads as default",
			in: ClaimPlanInput{Instance: "i", Claims: []ClaimInput{{Name: "data"}},
				Volumes: []dockerx.Volume{claimVol("default", "data")}},
		},
		{
			name: "a deleted claim whose volume no container uses is released",
			in: ClaimPlanInput{Instance: "i", Claims: []ClaimInput{{Namespace: "default", Name: "data", Deleted: true}},
				Volumes: []dockerx.Volume{claimVol("default", "data"), emptyDir}},
			want: ClaimPlan{Ops: []ClaimOp{{Kind: OpReleaseClaim, Volume: claimReq("default", "data"),
				Cause: `persistentvolumeclaim "data" of namespace "default" is deleted and no container uses its volume`}}},
		},
		{
			name: "pvc-protection: a deleted claim's volume in use stays",
			in: ClaimPlanInput{Instance: "i", Claims: []ClaimInput{{Namespace: "default", Name: "data", Deleted: true}},
				Volumes: []dockerx.Volume{claimVol("default", "data")},
				Users:   map[string][]string{"i_pvc_default.data": {"i_web-abc-1", "i_web-abc-0"}}},
			want: ClaimPlan{Protected: []ClaimNote{{"i_pvc_default.data", `persistentvolumeclaim "data" of namespace "default" is deleted but its volume is used by i_web-abc-0, i_web-abc-1`}}},
		},
		{
			name: "a deleted claim whose volume is gone: nothing",
			in:   ClaimPlanInput{Instance: "i", Claims: []ClaimInput{{Namespace: "default", Name: "data", Deleted: true}}},
		},
		{
			name: "a claim volume of a claim never known is never removed, only reported",
			in: ClaimPlanInput{Instance: "i", Volumes: []dockerx.Volume{claimVol("shop", "cache")},
				Users: map[string][]string{}},
			want: ClaimPlan{Unknown: []ClaimNote{{"i_pvc_shop.cache", `claim "cache" of namespace "shop" is unknown to this state directory`}}},
		},
		{
			name: "a volume of the claim's name labelled for another claim is neither adopted nor removed",
			in: ClaimPlanInput{Instance: "i", Claims: []ClaimInput{{Namespace: "default", Name: "data", Deleted: true}},
				Volumes: []dockerx.Volume{foreign}},
			want: ClaimPlan{Unknown: []ClaimNote{{"i_pvc_default.data", `labelled claim "other" of namespace "default", not persistentvolumeclaim "data" of namespace "default"`}}},
		},
		{
			name: "another instance's volumes and emptyDirs are not looked at",
			in:   ClaimPlanInput{Instance: "i", Volumes: []dockerx.Volume{otherInstance, emptyDir}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanClaims(tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PlanClaims:\n got  %+v\n want %+v", got, tt.want)
			}
			if again := PlanClaims(tt.in); !reflect.DeepEqual(again, got) {
				t.Errorf("not deterministic: %+v then %+v", got, again)
			}
		})
	}
}

func TestClaimUsers(t *testing.T) {
	cs := []dockerx.Container{
		{Name: "i_web-abc-0", Volumes: []string{"i_pvc_default.data", "i_web-abc-0.x.u"}},
		{Name: "i_web-abc-1", Volumes: []string{"i_pvc_default.data"}},
		{Name: "i_db-def-0", Volumes: []string{"i_pvc_shop.db"}},
		{Name: "i_plain-0"},
	}
	want := map[string][]string{
		"i_pvc_default.data": {"i_web-abc-0", "i_web-abc-1"},
		"i_pvc_shop.db":      {"i_db-def-0"},
	}
	if got := ClaimUsers("i", cs); !reflect.DeepEqual(got, want) {
		t.Errorf("ClaimUsers = %v, want %v", got, want)
	}
	if !MountsClaims("i", cs[:1]) || MountsClaims("i", cs[3:]) {
		t.Error("mountsClaims: wrong answer")
	}
}

// TestClaimUsersIgnoresPodVolumes: a claim volume is not told by the
// prefix "{instance}_pvc." alone: the emptyDir volume of deployment "pvc"
// of any non-default namespace has it too, and its pods are no claim
// users.
func TestClaimUsersIgnoresPodVolumes(t *testing.T) {
	holder := dockerx.ContainerName("i", "shop", "pvc", "5d8f9c7b6a", 0)
	member := dockerx.Container{Name: dockerx.MemberName(holder, "app"), Instance: "i", Namespace: "shop", Deployment: "pvc",
		Volumes: []string{dockerx.VolumeName(holder, "cache", "1a2b3c4d")}}
	if got := ClaimUsers("i", []dockerx.Container{member}); len(got) != 0 {
		t.Errorf("ClaimUsers = %v: an emptyDir volume taken for a claim's", got)
	}
	if MountsClaims("i", []dockerx.Container{member}) {
		t.Errorf("mountsClaims: a pod mounting only an emptyDir is said to mount a claim")
	}
}
