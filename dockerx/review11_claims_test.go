package dockerx

import (
	"github.com/dockctl/dockctl/manifests"
	"strings"
	"testing"
)

// A claim volume name must identify one claim (README: "cut to 255 bytes,
// ending in a hash of the full name, when longer"). A name that is cut is
// exactly 255 bytes; a name of exactly 255 bytes is never cut. So a claim
// whose full name happens to equal another claim's cut name collides.
func TestReviewClaimVolumeNameTruncationCollides(t *testing.T) {
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
// which is a claim volume name of namespace "{ns}-{hash}-{ord}".
func TestReviewClaimVolumeNameCollidesWithNamespacedPodVolume(t *testing.T) {
	holder := ContainerName("i", "shop", "pvc", "5d8f9c7b6a", 0) // i_pvc.shop-5d8f9c7b6a-0
	pod := VolumeName(holder, "cache", "1a2b3c4d")
	claim := ClaimVolumeName("i", "shop-5d8f9c7b6a-0", "cache.1a2b3c4d")
	if pod == claim {
		t.Errorf("emptyDir volume of deployment shop/pvc and claim volume of claim shop-5d8f9c7b6a-0/cache.1a2b3c4d share the name %q", pod)
	}
}

// README: "subPath on a claim's mount is refused at create for now", and
// claimMount has the message for it; setMounts hands every subPath to
// setSubPathMount first, so claimMount's check is dead and the user reads
// that "only a pod with a holder has a named volume for it" — which a pod
// with a holder does not help.
func TestReviewClaimSubPathRefusalNamesTheClaim(t *testing.T) {
	d := claimDeployment(func(d *manifests.Deployment) { d.Spec.Template.Spec.Containers[0].VolumeMounts[0].SubPath = "pg" })
	_, _, _, err := BuildConfig(request(d))
	if err == nil || !strings.Contains(err.Error(), "persistentVolumeClaim") {
		t.Errorf("err = %v, want the refusal of a claim's subPath", err)
	}
}
