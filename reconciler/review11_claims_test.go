package reconciler

import (
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// README: "A deployment naming a claim that does not exist creates nothing
// of that revision". In a pod with a holder, the pod's emptyDir volumes
// are created (runOp, the wave before runCreates) before ensureClaims
// refuses the holder, on every retry.
func TestReviewMissingClaimCreatesNothingOfTheRevision(t *testing.T) {
	claims := &fakeClaims{}
	h := newHarness(t, Options{ResyncPeriod: 50 * time.Millisecond, Config: claims})
	d := testDeployment("web", 1, "1")
	ps := &d.Spec.Template.Spec
	ps.Volumes = []manifests.Volume{
		{Name: "store", PersistentVolumeClaim: &manifests.PersistentVolumeClaimVolumeSource{ClaimName: "data"}},
		{Name: "scratch", EmptyDir: &manifests.EmptyDirVolumeSource{}},
	}
	mounts := []manifests.VolumeMount{{Name: "store", MountPath: "/data"}, {Name: "scratch", MountPath: "/tmp/s"}}
	ps.Containers = []manifests.Container{{Name: "app", Image: testImage, VolumeMounts: mounts}, {Name: "side", Image: testImage}}
	manifests.SetDefaults(d)
	h.apply(d)
	h.start()
	h.waitFor("ReplicaFailure naming the missing claim", func() bool {
		return strings.Contains(h.replicaFailure("web"), `persistentvolumeclaim "data" not found`)
	})
	time.Sleep(500 * time.Millisecond) // several retries
	if cs := h.ours("web"); len(cs) != 0 {
		t.Fatalf("containers created: %s", summary(cs))
	}
	var made []string
	for _, v := range h.engine.Volumes() {
		made = append(made, v.Name+"("+v.Role+")")
	}
	if n := h.engine.Calls()["volume:create"]; n > 0 || len(made) > 0 {
		t.Errorf("the revision is blocked on a missing claim, yet %d volume creates ran; volumes now %v", n, made)
	}
}

// racyClaims answers the sweep's ListClaims with the tombstone it holds,
// then — as `dockctl apply -f pvc.yaml` landing just after that read —
// makes the claim live again.
type racyClaims struct {
	*fakeClaims
	ns, name string
	flipped  bool
}

func (r *racyClaims) ListClaims() ([]*store.ClaimRecord, []error) {
	recs, errs := r.fakeClaims.ListClaims()
	if !r.flipped {
		r.flipped = true
		r.fakeClaims.set(r.ns, r.name, false)
	}
	return recs, errs
}

// README: "Applying the claim again before the volume is gone binds the
// same volume, data included." The sweep decides to release from a
// snapshot of the records and removes the volume without looking again,
// so a claim re-applied between the read and the remove loses its data
// (and is re-bound to a new, empty volume).
func TestReviewReappliedClaimKeepsItsVolume(t *testing.T) {
	fc := &fakeClaims{}
	fc.set("", "data", true) // `delete pvc data`: a tombstone, no user left
	claims := &racyClaims{fakeClaims: fc, ns: "", name: "data"}
	h := newHarness(t, Options{ResyncPeriod: 50 * time.Millisecond, Config: claims})
	const vol = "i_pvc_default.data"
	l := dockerx.ClaimVolumeLabels(dockerx.ClaimVolumeRequest{Instance: "i", Claim: "data"})
	l["test.original"] = "yes" // stands for the data: a re-made volume lacks it
	h.engine.AddVolume(vol, l)
	h.start()
	time.Sleep(400 * time.Millisecond) // several sweeps
	if _, deleted, _ := claims.LookupClaim("", "data"); deleted {
		t.Fatal("test setup: the claim was not re-applied")
	}
	v := h.volume(vol)
	switch {
	case v == nil:
		t.Errorf("the volume of live (re-applied) claim data was removed")
	case v.Labels["test.original"] != "yes":
		t.Errorf("the volume of re-applied claim data was removed and re-made empty (%d removes): data lost; labels %v",
			h.engine.Calls()["volume:remove"], v.Labels)
	}
}

// ClaimUsers and mountsClaims tell a claim volume by the prefix
// "{instance}_pvc.": the emptyDir volume of deployment "pvc" of any
// non-default namespace has it too, so its pods count as claim users.
func TestReviewClaimUsersIgnoresPodVolumes(t *testing.T) {
	holder := dockerx.ContainerName("i", "shop", "pvc", "5d8f9c7b6a", 0)
	member := dockerx.Container{Name: dockerx.MemberName(holder, "app"), Instance: "i", Namespace: "shop", Deployment: "pvc",
		Volumes: []string{dockerx.VolumeName(holder, "cache", "1a2b3c4d")}}
	if got := ClaimUsers("i", []dockerx.Container{member}); len(got) != 0 {
		t.Errorf("ClaimUsers = %v: an emptyDir volume taken for a claim's", got)
	}
	if mountsClaims("i", []dockerx.Container{member}) {
		t.Errorf("mountsClaims: a pod mounting only an emptyDir is said to mount a claim")
	}
}
