package manifests

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The ignored fields (ignored.go) are dropped, but what dockctl accepts a
// cluster must accept too (docs/design.md §1): their values go through the
// rules Kubernetes' ValidatePodSpec and validateContainerCommon
// (pkg/apis/core/validation/validation.go) apply to them, as a Deployment
// is validated on create: nodeSelector (ValidateLabels), affinity
// (validateAffinity), tolerations (ValidateTolerations),
// topologySpreadConstraints (validateTopologySpreadConstraints),
// serviceAccountName, priorityClassName, preemptionPolicy and a
// container's terminationMessagePolicy. Kubernetes has no rule for
// schedulerName, priority, automountServiceAccountToken or
// terminationMessagePath beyond their types, which the walk checks. An empty value Kubernetes defaults
// (terminationMessagePolicy: File) is valid.

// validateIgnored reports, at their own paths, the errors Kubernetes'
// validation finds in the ignored fields of one mapping, decoded into obj
// (a *corev1.PodSpec or *corev1.Container holding only them). A path whose
// value could not be decoded already has its error.
func (w *walker) validateIgnored(obj any, path string) {
	var errs field.ErrorList
	switch o := obj.(type) {
	case *corev1.PodSpec:
		errs = ignoredPodSpecErrors(o, field.NewPath(path))
	case *corev1.Container:
		errs = ignoredContainerErrors(o, field.NewPath(path))
	}
	for _, e := range errs {
		if w.overlapsBad(e.Field) {
			continue
		}
		w.errorf(w.lineOf(e.Field), e.Field, "%s", e.ErrorBody())
	}
}

func ignoredPodSpecErrors(ps *corev1.PodSpec, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, metav1validation.ValidateLabels(ps.NodeSelector, fp.Child("nodeSelector"))...)
	errs = append(errs, affinityErrors(ps.Affinity, fp.Child("affinity"))...)
	errs = append(errs, topologySpreadErrors(ps.TopologySpreadConstraints, fp.Child("topologySpreadConstraints"))...)
	// serviceAccount is the deprecated alias: Kubernetes' conversion takes
	// it when serviceAccountName is empty, and validates the result.
	sa, saPath := ps.ServiceAccountName, fp.Child("serviceAccountName")
	if sa == "" {
		sa, saPath = ps.DeprecatedServiceAccount, fp.Child("serviceAccount")
	}
	if sa != "" {
		for _, msg := range apivalidation.ValidateServiceAccountName(sa, false) {
			errs = append(errs, field.Invalid(saPath, sa, msg))
		}
	}
	errs = append(errs, tolerationErrors(ps.Tolerations, fp.Child("tolerations"))...)
	if n := ps.PriorityClassName; n != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(n, false) {
			errs = append(errs, field.Invalid(fp.Child("priorityClassName"), n, msg))
		}
	}
	if pp := ps.PreemptionPolicy; pp != nil {
		switch *pp {
		case corev1.PreemptLowerPriority, corev1.PreemptNever:
		case "":
			errs = append(errs, field.Required(fp.Child("preemptionPolicy"), ""))
		default:
			errs = append(errs, field.NotSupported(fp.Child("preemptionPolicy"), *pp,
				[]corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}))
		}
	}
	return errs
}

func ignoredContainerErrors(c *corev1.Container, fp *field.Path) field.ErrorList {
	switch c.TerminationMessagePolicy {
	case "", corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
		return nil
	}
	return field.ErrorList{field.NotSupported(fp.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
		[]corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError})}
}

// tolerationErrors is ValidateTolerations.
func tolerationErrors(tolerations []corev1.Toleration, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		ip := fp.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, ip.Child("key"))...)
		}
		// An empty key with Exists matches every taint.
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(ip.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(ip.Child("effect"), t.Effect,
				"effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "": // empty is Equal
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(ip.Child("value"), t.Value, msg))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(ip.Child("value"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(ip.Child("operator"), t.Operator,
				[]corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		// An empty effect matches every effect.
		switch t.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, field.NotSupported(ip.Child("effect"), t.Effect,
				[]corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}))
		}
	}
	return errs
}

// topologySpreadErrors is validateTopologySpreadConstraints.
func topologySpreadErrors(constraints []corev1.TopologySpreadConstraint, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	actions := []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}
	policies := []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore}
	for i, c := range constraints {
		ip := fp.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(ip.Child("maxSkew"), c.MaxSkew, "must be greater than zero"))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(ip.Child("topologyKey"), "can not be empty"))
		}
		switch c.WhenUnsatisfiable {
		case corev1.DoNotSchedule, corev1.ScheduleAnyway:
		default:
			errs = append(errs, field.NotSupported(ip.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, actions))
		}
		for _, other := range constraints[i+1:] {
			if c.TopologyKey == other.TopologyKey && c.WhenUnsatisfiable == other.WhenUnsatisfiable {
				errs = append(errs, field.Duplicate(ip.Child("{topologyKey, whenUnsatisfiable}"),
					fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
		if md := c.MinDomains; md != nil {
			if *md <= 0 {
				errs = append(errs, field.Invalid(ip.Child("minDomains"), *md, "must be greater than zero"))
			}
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				errs = append(errs, field.Invalid(ip.Child("minDomains"), *md,
					fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", corev1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		for _, np := range []struct {
			name   string
			policy *corev1.NodeInclusionPolicy
		}{{"nodeAffinityPolicy", c.NodeAffinityPolicy}, {"nodeTaintsPolicy", c.NodeTaintsPolicy}} {
			if np.policy != nil && *np.policy != corev1.NodeInclusionPolicyHonor && *np.policy != corev1.NodeInclusionPolicyIgnore {
				errs = append(errs, field.NotSupported(ip.Child(np.name), *np.policy, policies))
			}
		}
		errs = append(errs, matchLabelKeysErrors(ip.Child("matchLabelKeys"), c.MatchLabelKeys, c.LabelSelector)...)
		errs = append(errs, metav1validation.ValidateLabelSelector(c.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, ip.Child("labelSelector"))...)
	}
	return errs
}

// matchLabelKeysErrors is validateMatchLabelKeysInTopologySpread.
func matchLabelKeysErrors(fp *field.Path, keys []string, sel *metav1.LabelSelector) field.ErrorList {
	if len(keys) == 0 {
		return nil
	}
	var errs field.ErrorList
	if sel == nil {
		return field.ErrorList{field.Forbidden(fp, "must not be specified when labelSelector is not set")}
	}
	inSelector := selectorKeys(sel)
	for i, k := range keys {
		errs = append(errs, metav1validation.ValidateLabelName(k, fp.Index(i))...)
		if inSelector.Has(k) {
			errs = append(errs, field.Invalid(fp.Index(i), k, "exists in both matchLabelKeys and labelSelector"))
		}
	}
	return errs
}

func selectorKeys(sel *metav1.LabelSelector) sets.Set[string] {
	out := sets.New[string]()
	for k := range sel.MatchLabels {
		out.Insert(k)
	}
	for _, e := range sel.MatchExpressions {
		out.Insert(e.Key)
	}
	return out
}

// affinityErrors is validateAffinity, with the options of a create: no
// invalid label value in a selector or a required node affinity.
func affinityErrors(a *corev1.Affinity, fp *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		np := fp.Child("nodeAffinity")
		if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			rp := np.Child("requiredDuringSchedulingIgnoredDuringExecution").Child("nodeSelectorTerms")
			if len(req.NodeSelectorTerms) == 0 {
				errs = append(errs, field.Required(rp, "must have at least one node selector term"))
			}
			for i, term := range req.NodeSelectorTerms {
				errs = append(errs, nodeSelectorTermErrors(term, false, rp.Index(i))...)
			}
		}
		pp := np.Child("preferredDuringSchedulingIgnoredDuringExecution")
		for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			if term.Weight <= 0 || term.Weight > 100 {
				errs = append(errs, field.Invalid(pp.Index(i).Child("weight"), term.Weight, "must be in the range 1-100"))
			}
			// A preferred term may name a label value no node has.
			errs = append(errs, nodeSelectorTermErrors(term.Preference, true, pp.Index(i).Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		errs = append(errs, podAffinityErrors(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, fp.Child("podAffinity"))...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		errs = append(errs, podAffinityErrors(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, fp.Child("podAntiAffinity"))...)
	}
	return errs
}

// nodeSelectorTermErrors is ValidateNodeSelectorTerm.
func nodeSelectorTermErrors(term corev1.NodeSelectorTerm, allowInvalidValue bool, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, rq := range term.MatchExpressions {
		ip := fp.Child("matchExpressions").Index(i)
		switch rq.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(rq.Values) == 0 {
				errs = append(errs, field.Required(ip.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
			}
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			if len(rq.Values) > 0 {
				errs = append(errs, field.Forbidden(ip.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
			}
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(rq.Values) != 1 {
				errs = append(errs, field.Required(ip.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
			}
		default:
			errs = append(errs, field.Invalid(ip.Child("operator"), rq.Operator, "not a valid selector operator"))
		}
		errs = append(errs, metav1validation.ValidateLabelName(rq.Key, ip.Child("key"))...)
		if !allowInvalidValue {
			for j, v := range rq.Values {
				for _, msg := range validation.IsValidLabelValue(v) {
					errs = append(errs, field.Invalid(ip.Child("values").Index(j), v, msg))
				}
			}
		}
	}
	for i, rq := range term.MatchFields {
		ip := fp.Child("matchFields").Index(i)
		switch rq.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(rq.Values) != 1 {
				errs = append(errs, field.Required(ip.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
			}
		default:
			errs = append(errs, field.Invalid(ip.Child("operator"), rq.Operator, "not a valid selector operator"))
		}
		// metadata.name is the one node field a selector may name.
		if rq.Key != metav1.ObjectNameField {
			errs = append(errs, field.Invalid(ip.Child("key"), rq.Key, "not a valid field selector key"))
			continue
		}
		for j, v := range rq.Values {
			for _, msg := range apivalidation.NameIsDNSSubdomain(v, false) {
				errs = append(errs, field.Invalid(ip.Child("values").Index(j), v, msg))
			}
		}
	}
	return errs
}

// podAffinityErrors is validatePodAffinity and validatePodAntiAffinity.
func podAffinityErrors(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range required {
		errs = append(errs, podAffinityTermErrors(t, fp.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))...)
	}
	for i, wt := range preferred {
		ip := fp.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		if wt.Weight <= 0 || wt.Weight > 100 {
			errs = append(errs, field.Invalid(ip.Child("weight"), wt.Weight, "must be in the range 1-100"))
		}
		errs = append(errs, podAffinityTermErrors(wt.PodAffinityTerm, ip.Child("podAffinityTerm"))...)
	}
	return errs
}

// podAffinityTermErrors is validatePodAffinityTerm.
func podAffinityTermErrors(t corev1.PodAffinityTerm, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	opts := metav1validation.LabelSelectorValidationOptions{}
	errs = append(errs, metav1validation.ValidateLabelSelector(t.LabelSelector, opts, fp.Child("labelSelector"))...)
	errs = append(errs, metav1validation.ValidateLabelSelector(t.NamespaceSelector, opts, fp.Child("namespaceSelector"))...)
	for i, ns := range t.Namespaces {
		for _, msg := range apivalidation.ValidateNamespaceName(ns, false) {
			errs = append(errs, field.Invalid(fp.Child("namespaces").Index(i), ns, msg))
		}
	}
	errs = append(errs, labelKeysErrors(fp.Child("matchLabelKeys"), t.MatchLabelKeys, t.LabelSelector)...)
	errs = append(errs, labelKeysErrors(fp.Child("mismatchLabelKeys"), t.MismatchLabelKeys, t.LabelSelector)...)
	if sel := t.LabelSelector; sel != nil && len(t.MatchLabelKeys) > 0 {
		// Kubernetes merges matchLabelKeys into the selector as In
		// expressions: a key of matchLabelKeys that an expression names
		// after matchLabels or another expression did is refused.
		matchKeys := map[string]int{}
		for i, k := range t.MatchLabelKeys {
			matchKeys[k] = i
		}
		seen := sets.New[string]()
		for k := range sel.MatchLabels {
			seen.Insert(k)
		}
		for _, e := range sel.MatchExpressions {
			if i, ok := matchKeys[e.Key]; ok && seen.Has(e.Key) {
				errs = append(errs, field.Invalid(fp.Child("matchLabelKeys").Index(i), e.Key, "exists in both matchLabelKeys and labelSelector"))
			}
			seen.Insert(e.Key)
		}
	}
	mismatch := sets.New(t.MismatchLabelKeys...)
	for i, k := range t.MatchLabelKeys {
		if mismatch.Has(k) {
			errs = append(errs, field.Invalid(fp.Child("matchLabelKeys").Index(i), k, "exists in both matchLabelKeys and mismatchLabelKeys"))
		}
	}
	if t.TopologyKey == "" {
		errs = append(errs, field.Required(fp.Child("topologyKey"), "can not be empty"))
	} else {
		errs = append(errs, metav1validation.ValidateLabelName(t.TopologyKey, fp.Child("topologyKey"))...)
	}
	return errs
}

// labelKeysErrors is validateLabelKeys: matchLabelKeys and
// mismatchLabelKeys are label names, and need a labelSelector.
func labelKeysErrors(fp *field.Path, keys []string, sel *metav1.LabelSelector) field.ErrorList {
	if len(keys) == 0 {
		return nil
	}
	if sel == nil {
		return field.ErrorList{field.Forbidden(fp, "must not be specified when labelSelector is not set")}
	}
	var errs field.ErrorList
	for i, k := range keys {
		errs = append(errs, metav1validation.ValidateLabelName(k, fp.Index(i))...)
	}
	return errs
}
