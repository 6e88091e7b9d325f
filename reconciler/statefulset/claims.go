package statefulset

import (
	"maps"
	"slices"
	"strings"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// ObservedClaim is a PersistentVolumeClaim of the set's namespace as the
// controller sees it.
type ObservedClaim struct {
	Name string
	// Terminating: being deleted (a claim stays while a container
	// mounts it, docs/design.md §12), so a pod needing it waits.
	Terminating bool
}

// Claim is a claim to create: the object, from its volumeClaimTemplate,
// and its owner (the set: docs/design.md §13, every claim names its owner;
// the retention policy, not the owner, decides when it goes).
type Claim struct {
	Claim manifests.PersistentVolumeClaim
	Owner podruntime.OwnerRef
}

// ClaimName is TEMPLATE-NAME-i (getPersistentVolumeClaimName).
func ClaimName(set *manifests.StatefulSet, template string, ordinal int) string {
	return template + "-" + PodName(set, ordinal)
}

// newClaim is the claim of template ct for pod ordinal
// (getPersistentVolumeClaims): the template in the set's namespace, its
// labels with the set's selector labels over them.
func newClaim(set *manifests.StatefulSet, ct *manifests.PersistentVolumeClaim, ordinal int) Claim {
	c := *ct
	c.APIVersion, c.Kind = "v1", "PersistentVolumeClaim"
	c.Metadata = manifests.ObjectMeta{
		Name:        ClaimName(set, ct.Metadata.Name, ordinal),
		Namespace:   set.Metadata.Namespace,
		Labels:      maps.Clone(ct.Metadata.Labels),
		Annotations: maps.Clone(ct.Metadata.Annotations),
	}
	if sel := set.Spec.Selector; sel != nil && len(sel.MatchLabels) > 0 {
		if c.Metadata.Labels == nil {
			c.Metadata.Labels = map[string]string{}
		}
		maps.Copy(c.Metadata.Labels, sel.MatchLabels)
	}
	c.Status = nil
	return Claim{Claim: c, Owner: Owner(set)}
}

// StoredClaim is claim c, which a decision creates, as the store keeps
// it, and the owner it names: the set (with the set's uid) as its
// controller only when whenDeleted is Delete, as Kubernetes' StatefulSet
// controller makes it (updateClaimOwnerRefForSetAndPod: a controller
// reference to the set for a pod in range, where every created claim's
// pod is), so that the garbage collector takes it with the set; nil
// otherwise, a retained claim outliving the set. The caller writes the
// owner as the claim's ownerReferences entry (apps/v1, controller and
// blockOwnerDeletion true). whenScaled Delete owns no claim of a pod in
// range: the decision deletes it once its pod is gone past the range
// (scaledClaims). The pod mounts it as its template's volume of the claim
// template's name (newPod), by the runtime's claim path (docs/design.md
// §12).
func StoredClaim(set *manifests.StatefulSet, uid string, c Claim) (manifests.PersistentVolumeClaim, *podruntime.OwnerRef) {
	if policy(set).WhenDeleted != manifests.ClaimDelete {
		return c.Claim, nil
	}
	owner := c.Owner
	owner.UID = uid
	return c.Claim, &owner
}

// claimOrdinal is the ordinal of a claim TEMPLATE-NAME-i of the set.
func claimOrdinal(set *manifests.StatefulSet, name string) (int, bool) {
	for _, ct := range set.Spec.VolumeClaimTemplates {
		if rest, ok := strings.CutPrefix(name, ct.Metadata.Name+"-"); ok {
			if i, ok := Ordinal(set, rest); ok {
				return i, true
			}
		}
	}
	return 0, false
}

// claimsFor decides the claims pod ordinal needs before it can be
// created: the missing ones to create, and whether one is being deleted
// (then the pod waits for it to be gone: a new pod never mounts a claim on
// its way out).
func (s *syncer) claimsFor(ordinal int, podName string) (create []Claim, blocked bool) {
	for i := range s.set.Spec.VolumeClaimTemplates {
		ct := &s.set.Spec.VolumeClaimTemplates[i]
		name := ClaimName(s.set, ct.Metadata.Name, ordinal)
		if c, ok := s.claims[name]; ok {
			if c.Terminating {
				blocked = true
			}
			continue
		}
		if s.creatingClaim[name] {
			continue
		}
		create = append(create, newClaim(s.set, ct, ordinal))
	}
	return create, blocked
}

// createClaims records the claims as to be created, with the
// StatefulSet controller's claim events.
func (s *syncer) createClaims(cs []Claim, podName string) {
	for _, c := range cs {
		s.creatingClaim[c.Claim.Metadata.Name] = true
		s.d.CreateClaims = append(s.d.CreateClaims, c)
		s.event("SuccessfulCreate", "create Claim %s Pod %s in StatefulSet %s success", c.Claim.Metadata.Name, podName, s.set.Metadata.Name)
	}
}

// scaledClaims deletes, under whenScaled Delete, the claims of the pods
// past the end of the range that this decision deletes or that are on
// their way out: Kubernetes makes such a claim owned by its condemned pod,
// so it goes with the pod (here at once: its volume stays while a
// container mounts it, docs/design.md §12). A claim past the range whose
// pod is gone already is no condemned pod's — retained by a scale-down
// under Retain (KEP-1847: a policy changed to Delete owns only the claims
// of a scale-down in progress), or made ahead of a scale-up — and stays.
func (s *syncer) scaledClaims() {
	if policy(s.set).WhenScaled != manifests.ClaimDelete {
		return
	}
	end := startOrdinal(s.set) + int(s.set.Replicas())
	for _, name := range s.claimNames {
		c := s.claims[name]
		i, ok := claimOrdinal(s.set, name)
		if !ok || c.Terminating || (i >= startOrdinal(s.set) && i < end) {
			continue
		}
		if p := s.observed[i]; p != nil && (p.Terminating() || slices.Contains(s.d.DeletePods, p.Name)) {
			s.d.DeleteClaims = append(s.d.DeleteClaims, name)
		}
	}
}

func policy(set *manifests.StatefulSet) manifests.StatefulSetPersistentVolumeClaimRetentionPolicy {
	p := manifests.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: manifests.ClaimRetain, WhenScaled: manifests.ClaimRetain}
	if rp := set.Spec.PersistentVolumeClaimRetentionPolicy; rp != nil {
		if rp.WhenDeleted != "" {
			p.WhenDeleted = rp.WhenDeleted
		}
		if rp.WhenScaled != "" {
			p.WhenScaled = rp.WhenScaled
		}
	}
	return p
}

// Teardown decides what deleting the set removes, as the garbage
// collector does for a cascading delete: every pod of the set, and under
// whenDeleted Delete every claim from its templates (whenScaled Delete
// also takes the claims of its pods past the end of the range, which a
// scale-down condemned: scaledClaims). An orphaning delete removes
// nothing: the executor does not call Teardown.
func Teardown(set *manifests.StatefulSet, pods []string, claims []ObservedClaim) (deletePods, deleteClaims []string) {
	has := map[int]bool{}
	for _, p := range pods {
		if i, ok := Ordinal(set, p); ok {
			deletePods = append(deletePods, p)
			has[i] = true
		}
	}
	pol := policy(set)
	end := startOrdinal(set) + int(set.Replicas())
	for _, c := range claims {
		i, ok := claimOrdinal(set, c.Name)
		if !ok || c.Terminating {
			continue
		}
		past := i < startOrdinal(set) || i >= end
		if pol.WhenDeleted == manifests.ClaimDelete || (pol.WhenScaled == manifests.ClaimDelete && past && has[i]) {
			deleteClaims = append(deleteClaims, c.Name)
		}
	}
	return deletePods, deleteClaims
}
