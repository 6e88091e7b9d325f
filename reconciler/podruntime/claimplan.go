package podruntime

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// Claims' volumes (docs/design.md §12): a PersistentVolumeClaim is bound at
// once to a named volume of the instance (Kubernetes' Immediate binding: the
// claim is Bound before any pod uses it), and its volume goes when the claim
// is deleted and no container uses it any more (Kubernetes' pvc-protection).
// A volume whose claim this state directory never knew is never removed, not
// even with --prune-orphans: it is data. This file is the pure planner;
// package reconciler's claims.go observes and executes.

// ClaimInput is one claim record as the state directory holds it.
type ClaimInput struct {
	Namespace, Name string
	// Deleted marks a tombstone: the claim was deleted.
	Deleted bool
}

// ClaimPlanInput is what the claims' plan is computed from.
type ClaimPlanInput struct {
	Instance string
	// Claims are every claim record read, live and tombstoned. A claim
	// whose record could not be read is absent, so its volume can only
	// be reported, never removed: removal needs a tombstone read.
	Claims []ClaimInput
	// Volumes are the instance's volumes (any role: only claim volumes
	// are looked at).
	Volumes []dockerx.Volume
	// Users maps a volume name onto the instance's containers that mount
	// it (Docker refuses to remove a volume any container mounts; this
	// keeps the plan from trying, and tells why a volume stays).
	Users map[string][]string
}

// ClaimOpKind is what a claim op does.
type ClaimOpKind string

const (
	// OpBindClaim creates the volume of a live claim that has none.
	OpBindClaim ClaimOpKind = "bind-claim"
	// OpReleaseClaim removes the volume of a deleted claim that no
	// container uses.
	OpReleaseClaim ClaimOpKind = "release-claim"
)

// ClaimOp is one operation on a claim's volume, with its cause.
type ClaimOp struct {
	Kind   ClaimOpKind
	Volume dockerx.ClaimVolumeRequest
	Cause  string
}

// ClaimNote says why a claim volume is left in place.
type ClaimNote struct {
	Volume string
	Why    string
}

// ClaimPlan is the claims' plan.
type ClaimPlan struct {
	Ops []ClaimOp
	// Protected are the volumes of deleted claims kept because containers
	// still use them (pvc-protection): released once they are gone.
	Protected []ClaimNote
	// Unknown are claim volumes whose claim this state directory holds no
	// record of: never removed.
	Unknown []ClaimNote
}

// PlanClaims computes the claims' plan. It is pure: same input, same plan,
// ops sorted by volume name.
func PlanClaims(in ClaimPlanInput) ClaimPlan {
	var plan ClaimPlan
	observed := map[string]dockerx.Volume{}
	for _, v := range in.Volumes {
		if v.Role == dockerx.RoleClaim && v.Instance == in.Instance {
			observed[v.Name] = v
		}
	}
	known := map[string]bool{}
	for _, cl := range in.Claims {
		r := dockerx.ClaimVolumeRequest{Instance: in.Instance, Namespace: OrDefaultNamespace(cl.Namespace), Claim: cl.Name}
		name := r.Name()
		known[name] = true
		v, exists := observed[name]
		switch {
		case exists && !dockerx.IsClaimVolumeOf(v.Labels, r):
			// Labelled with the instance and the role but not this
			// claim's: never adopted, never removed.
			plan.Unknown = append(plan.Unknown, ClaimNote{name, fmt.Sprintf("labelled claim %q of namespace %q, not %s", v.Claim, v.Namespace, claimRef(cl))})
		case !cl.Deleted && !exists:
			plan.Ops = append(plan.Ops, ClaimOp{Kind: OpBindClaim, Volume: r, Cause: claimRef(cl) + " has no volume"})
		case cl.Deleted && exists && len(in.Users[name]) > 0:
			users := slices.Clone(in.Users[name])
			sort.Strings(users)
			plan.Protected = append(plan.Protected, ClaimNote{name, claimRef(cl) + " is deleted but its volume is used by " + strings.Join(users, ", ")})
		case cl.Deleted && exists:
			plan.Ops = append(plan.Ops, ClaimOp{Kind: OpReleaseClaim, Volume: r, Cause: claimRef(cl) + " is deleted and no container uses its volume"})
		}
	}
	for name, v := range observed {
		if known[name] {
			continue
		}
		why := "its claim is unknown to this state directory"
		if v.Claim != "" {
			why = fmt.Sprintf("claim %q of namespace %q is unknown to this state directory", v.Claim, v.Namespace)
		}
		plan.Unknown = append(plan.Unknown, ClaimNote{name, why})
	}
	sort.Slice(plan.Ops, func(i, j int) bool { return plan.Ops[i].Volume.Name() < plan.Ops[j].Volume.Name() })
	sort.Slice(plan.Protected, func(i, j int) bool { return plan.Protected[i].Volume < plan.Protected[j].Volume })
	sort.Slice(plan.Unknown, func(i, j int) bool { return plan.Unknown[i].Volume < plan.Unknown[j].Volume })
	return plan
}

// claimRef names a claim as Kubernetes' messages do.
func claimRef(cl ClaimInput) string {
	return fmt.Sprintf("persistentvolumeclaim %q of namespace %q", cl.Name, OrDefaultNamespace(cl.Namespace))
}

// OrDefaultNamespace reads "" as the default namespace.
func OrDefaultNamespace(ns string) string {
	if ns == "" {
		return manifests.DefaultNamespace
	}
	return ns
}

// ClaimUsers maps each claim volume of the instance onto the names of the
// containers in cs that mount it.
func ClaimUsers(instance string, cs []dockerx.Container) map[string][]string {
	prefix := dockerx.ClaimVolumePrefix(instance)
	out := map[string][]string{}
	for _, ct := range cs {
		for _, v := range ct.Volumes {
			if strings.HasPrefix(v, prefix) {
				out[v] = append(out[v], ct.Name)
			}
		}
	}
	return out
}

// TemplateClaims returns the claims a pod template mounts, in volume order,
// each once.
func TemplateClaims(ps *manifests.PodSpec) []string {
	var out []string
	for _, v := range ps.Volumes {
		if src := v.PersistentVolumeClaim; src != nil && !slices.Contains(out, src.ClaimName) {
			out = append(out, src.ClaimName)
		}
	}
	return out
}

// MountsClaims reports whether any of cs mounts a claim's volume: once
// such containers are removed, the sweep may release a deleted claim's
// volume.
func MountsClaims(instance string, cs []dockerx.Container) bool {
	prefix := dockerx.ClaimVolumePrefix(instance)
	for _, ct := range cs {
		for _, v := range ct.Volumes {
			if strings.HasPrefix(v, prefix) {
				return true
			}
		}
	}
	return false
}
