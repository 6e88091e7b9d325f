package manifests

import "k8s.io/apimachinery/pkg/util/validation"

// claimVolume validates a pod's persistentVolumeClaim volume source: as
// Kubernetes (validatePersistentClaimVolumeSource) a claimName is required;
// it must also be a name a claim can have (a DNS-1123 subdomain), since
// a claim of any other name can never be applied and the pod would wait
// for it forever.
func (v *validator) claimVolume(p string, src *PersistentVolumeClaimVolumeSource) {
	v.requiredName(child(p, "claimName"), src.ClaimName, validation.IsDNS1123Subdomain)
}
