package manifests

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Review 11: Kubernetes' ValidatePersistentVolumeClaimUpdate lets a claim
// created without spec.storageClassName gain one later
// (validateStorageClassUpgradeFromNil, RetroactiveDefaultStorageClass, GA
// in 1.28): "kubectl apply" of the same claim with storageClassName added
// succeeds on a cluster. dockctl refuses it as "spec is immutable", for a
// field it ignores anyway (every claim is a local Docker volume).
func TestReview11ClaimMayGainAStorageClass(t *testing.T) {
	claim := func(sc *string) *PersistentVolumeClaim {
		p := &PersistentVolumeClaim{APIVersion: "v1", Kind: KindPersistentVolumeClaim,
			Metadata: ObjectMeta{Name: "data"},
			Spec: PersistentVolumeClaimSpec{AccessModes: []string{ReadWriteOnce}, StorageClassName: sc,
				Resources: VolumeResourceRequirements{Requests: map[string]resource.Quantity{ResourceStorage: resource.MustParse("1Gi")}}}}
		SetPVCDefaults(p)
		return p
	}
	sc := "local-path"
	live, next := claim(nil), claim(&sc)
	if err := ValidatePVC(next); err != nil {
		t.Fatalf("precondition: %v", err)
	}
	if err := ValidatePVCUpdate(next, live); err != nil {
		t.Errorf("adding storageClassName to a claim that had none: %v (Kubernetes allows it)", err)
	}
}
