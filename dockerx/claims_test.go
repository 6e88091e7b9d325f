package dockerx

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/dockctl/dockctl/manifests"
)

func TestClaimVolumeName(t *testing.T) {
	tests := []struct {
		instance, ns, claim, want string
	}{
		{"default", "", "data", "default_pvc_default.data"},
		{"default", "default", "data", "default_pvc_default.data"},
		{"my_inst", "shop", "db.main", "my_inst_pvc_shop.db.main"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got := ClaimVolumeName(tt.instance, tt.ns, tt.claim)
		if got != tt.want {
			t.Errorf("ClaimVolumeName(%q, %q, %q) = %q, want %q", tt.instance, tt.ns, tt.claim, got, tt.want)
		}
		seen[got] = tt.instance + "/" + tt.ns + "/" + tt.claim
	}
	// Neither a deployment's emptyDir volume of the same instance nor a
	// claim of another instance or namespace can have a claim's name.
	pairs := [][2]string{
		{ClaimVolumeName("a", "x", "y"), ClaimVolumeName("a_pvc_x", "y", "z")},
		{ClaimVolumeName("a", "pvc", "b"), VolumeName(ContainerName("a", "", "pvc", "h", 0), "b", "u")},
		{ClaimVolumeName("a", "x", "y.z"), ClaimVolumeName("a", "x-y", "z")}, // namespaces hold no "."
	}
	for _, p := range pairs {
		if p[0] == p[1] {
			t.Errorf("names collide: %q", p[0])
		}
	}
}

func TestClaimVolumeNameLong(t *testing.T) {
	ns := strings.Repeat("n", 63)
	a := ClaimVolumeName("default", ns, strings.Repeat("c", 230))
	b := ClaimVolumeName("default", ns, strings.Repeat("c", 229)+"d")
	if len(a) != 255 || len(b) != 255 || a == b {
		t.Errorf("long names %d %q, %d %q: want 255 bytes each, distinct", len(a), a, len(b), b)
	}
	if !strings.HasPrefix(a, "default_pvc_"+ns+".ccc") {
		t.Errorf("long name %q does not start with the claim's", a)
	}
	if short := ClaimVolumeName("default", ns, "data"); short != "default_pvc_"+ns+".data" {
		t.Errorf("a short name was cut: %q", short)
	}
}

func TestIsClaimVolumeOf(t *testing.T) {
	r := ClaimVolumeRequest{Instance: "i", Namespace: "", Claim: "data"}
	own := ClaimVolumeLabels(r)
	if own[LabelNamespace] != "default" || own[LabelRole] != RoleClaim || own[LabelClaim] != "data" || own[LabelInstance] != "i" {
		t.Fatalf("labels %v", own)
	}
	if !IsClaimVolumeOf(own, r) {
		t.Error("its own labels are not the claim's")
	}
	for name, l := range map[string]map[string]string{
		"unlabelled":        nil,
		"other instance":    {LabelInstance: "j", LabelRole: RoleClaim, LabelNamespace: "default", LabelClaim: "data"},
		"an emptyDir":       {LabelInstance: "i", LabelRole: RoleEmptyDir, LabelNamespace: "default", LabelClaim: "data"},
		"other claim":       {LabelInstance: "i", LabelRole: RoleClaim, LabelNamespace: "default", LabelClaim: "logs"},
		"other namespace":   {LabelInstance: "i", LabelRole: RoleClaim, LabelNamespace: "shop", LabelClaim: "data"},
		"user's own labels": {"com.example": "x"},
	} {
		if IsClaimVolumeOf(l, r) {
			t.Errorf("%s: %v taken for the claim's", name, l)
		}
	}
	err := ClaimAdoptionError("i_pvc_default.data", nil)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "never adopts") {
		t.Errorf("adoption error %v", err)
	}
}

// claimDeployment mounts claim "data" at /data (read-only at /ro) in its
// only container.
func claimDeployment(mutate func(d *manifests.Deployment)) *manifests.Deployment {
	return deployment("db", func(d *manifests.Deployment) {
		ps := &d.Spec.Template.Spec
		ps.Volumes = []manifests.Volume{{Name: "store", PersistentVolumeClaim: &manifests.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}
		ps.Containers[0].VolumeMounts = []manifests.VolumeMount{{Name: "store", MountPath: "/data"}, {Name: "store", MountPath: "/ro", ReadOnly: true}}
		if mutate != nil {
			mutate(d)
		}
	})
}

func TestBuildConfigClaimMounts(t *testing.T) {
	labels := map[string]string{LabelInstance: "default", LabelNamespace: "default", LabelRole: RoleClaim, LabelClaim: "data"}
	want := []mount.Mount{
		{Type: mount.TypeVolume, Source: "default_pvc_default.data", Target: "/data", VolumeOptions: &mount.VolumeOptions{Labels: labels}},
		{Type: mount.TypeVolume, Source: "default_pvc_default.data", Target: "/ro", ReadOnly: true, VolumeOptions: &mount.VolumeOptions{Labels: labels}},
	}
	mounts := func(t *testing.T, req CreateRequest) []mount.Mount {
		t.Helper()
		_, hc, _, err := BuildConfig(req)
		if err != nil {
			t.Fatal(err)
		}
		return hc.Mounts
	}
	t.Run("replica without holder", func(t *testing.T) {
		if got := mounts(t, request(claimDeployment(nil))); !reflect.DeepEqual(got, want) {
			t.Errorf("mounts %+v, want %+v", got, want)
		}
	})
	t.Run("readOnly claim source makes every mount read-only", func(t *testing.T) {
		d := claimDeployment(func(d *manifests.Deployment) { d.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ReadOnly = true })
		for _, m := range mounts(t, request(d)) {
			if !m.ReadOnly {
				t.Errorf("mount %+v is writable", m)
			}
		}
	})
	t.Run("namespaced deployment: the claim of its namespace", func(t *testing.T) {
		d := claimDeployment(func(d *manifests.Deployment) { d.Metadata.Namespace = "shop" })
		got := mounts(t, request(d))
		if got[0].Source != "default_pvc_shop.data" || got[0].VolumeOptions.Labels[LabelNamespace] != "shop" {
			t.Errorf("mount %+v", got[0])
		}
	})
	t.Run("pod with a holder: the member mounts it, the holder does not", func(t *testing.T) {
		d := podDeployment("web", func(d *manifests.Deployment) {
			ps := &d.Spec.Template.Spec
			ps.Volumes = append(ps.Volumes, manifests.Volume{Name: "store", PersistentVolumeClaim: &manifests.PersistentVolumeClaimVolumeSource{ClaimName: "data"}})
			ps.Containers[0].VolumeMounts = append(ps.Containers[0].VolumeMounts, manifests.VolumeMount{Name: "store", MountPath: "/data"})
		})
		var found bool
		for _, m := range mounts(t, podRequest(d, RoleReplica, "app")) {
			if m.Source == "default_pvc_default.data" {
				found = m.Target == "/data" && reflect.DeepEqual(m.VolumeOptions.Labels, labels)
			}
		}
		if !found {
			t.Error("member does not mount the claim's volume")
		}
		for _, m := range mounts(t, podRequest(d, RoleHolder, "")) {
			if m.Source == "default_pvc_default.data" {
				t.Errorf("holder mounts the claim: %+v", m)
			}
		}
	})
	t.Run("subPath is refused, never mounted at the volume's root", func(t *testing.T) {
		d := claimDeployment(func(d *manifests.Deployment) { d.Spec.Template.Spec.Containers[0].VolumeMounts[0].SubPath = "pg" })
		if _, _, _, err := BuildConfig(request(d)); err == nil || !strings.Contains(err.Error(), "subPath") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestMountedVolumes(t *testing.T) {
	s := container.Summary{Mounts: []container.MountPoint{
		{Type: mount.TypeVolume, Name: "i_pvc_default.data"},
		{Type: mount.TypeBind, Source: "/srv"},
		{Type: mount.TypeVolume, Name: "a-anon"},
		{Type: mount.TypeTmpfs},
	}}
	if got := mountedVolumes(s); !reflect.DeepEqual(got, []string{"a-anon", "i_pvc_default.data"}) {
		t.Errorf("mountedVolumes = %v", got)
	}
}

// A claim volume name must identify one claim (README: "cut to 255 bytes,
// ending in a hash of the full name, when longer"). A name that is cut is
// exactly 255 bytes; a name of exactly 255 bytes is never cut. So a claim
// whose full name happens to equal another claim's cut name must still get
// a volume of its own.
func TestClaimVolumeNameOfACutNameIsNotAnotherClaims(t *testing.T) {
	long := strings.Repeat("c", 250) // 14 + 250 = 264 bytes: cut
	a := ClaimVolumeName("i", "default", long)
	// The cut name minus "i_pvc_default." is a valid DNS-1123 subdomain
	// of 241 bytes: lower-case letters, digits and '-'.
	crafted := strings.TrimPrefix(a, "i_pvc_default.")
	if len(crafted) > 253 {
		t.Fatalf("crafted claim name %d bytes", len(crafted))
	}
	b := ClaimVolumeName("i", "default", crafted)
	if a == b {
		t.Errorf("claims %q… and %q… of one namespace get the same volume %q", long[:10], crafted[:10], a)
	}
}

// The doc comment of ClaimVolumeName says no deployment's volume of the
// same instance has a claim volume's form. A deployment named "pvc" in a
// non-default namespace has pod volumes named "{instance}_pvc.{ns}-…",
// which reads like a claim volume name of namespace "{ns}-{hash}-{ord}":
// the two names must differ.
func TestClaimVolumeNameDiffersFromANamespacedPodVolume(t *testing.T) {
	holder := ContainerName("i", "shop", "pvc", "5d8f9c7b6a", 0) // i_pvc.shop-5d8f9c7b6a-0
	pod := VolumeName(holder, "cache", "1a2b3c4d")
	claim := ClaimVolumeName("i", "shop-5d8f9c7b6a-0", "cache.1a2b3c4d")
	if pod == claim {
		t.Errorf("emptyDir volume of deployment shop/pvc and claim volume of claim shop-5d8f9c7b6a-0/cache.1a2b3c4d share the name %q", pod)
	}
}

// README: "subPath on a claim's mount is refused at create for now", and
// claimMount has the message for it. setMounts hands every subPath to
// setSubPathMount first: the refusal the user reads must still name the
// claim, not say that "only a pod with a holder has a named volume for
// it" — which a pod with a holder does not help.
func TestClaimSubPathRefusalNamesTheClaim(t *testing.T) {
	d := claimDeployment(func(d *manifests.Deployment) { d.Spec.Template.Spec.Containers[0].VolumeMounts[0].SubPath = "pg" })
	_, _, _, err := BuildConfig(request(d))
	if err == nil || !strings.Contains(err.Error(), "persistentVolumeClaim") {
		t.Errorf("err = %v, want the refusal of a claim's subPath", err)
	}
}
