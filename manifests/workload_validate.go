package manifests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/dockctl/dockctl/internal/cronschedule"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Validation of the workload kinds, on the object as written (before
// defaults), following the API server's rules (k8s.io/kubernetes
// pkg/apis/apps/validation and pkg/apis/batch/validation) for the fields
// dockctl supports. Every pod template goes through the Deployment's
// template checks (validator.template), with the kind's restartPolicy rule.

// maxCronJobNameLength is Kubernetes' bound: a CronJob's Jobs are named
// NAME-<minutes since the epoch> (11 more characters), which must stay a
// 63-character label.
const maxCronJobNameLength = 52

// maxPodFailurePolicyRules and the bounds after it are batch/v1's.
const (
	maxPodFailurePolicyRules      = 20
	maxPodFailurePolicyExitCodes  = 255
	maxParallelismForIndexedJob   = 100000
	maxFailedIndexesForIndexedJob = 100000
)

func validateStatefulSet(s *StatefulSet, base string, lines map[string]int) ErrorList {
	v := &validator{lines: lines}
	v.meta(child(base, "metadata"), &s.Metadata, KindStatefulSet)
	sp := child(base, "spec")
	v.replicas(child(sp, "replicas"), s.Spec.Replicas)
	v.nonNegative(child(sp, "minReadySeconds"), int64(s.Spec.MinReadySeconds))
	if r := s.Spec.RevisionHistoryLimit; r != nil {
		v.nonNegative(child(sp, "revisionHistoryLimit"), int64(*r))
	}
	if s.Spec.ServiceName != "" {
		// The name of a Service: a DNS-1035 label, part of every pod's
		// DNS name.
		v.dns1035Label(child(sp, "serviceName"), s.Spec.ServiceName)
	}
	switch s.Spec.PodManagementPolicy {
	case "", PodManagementOrderedReady, PodManagementParallel:
	default:
		v.add(child(sp, "podManagementPolicy"), `unsupported value %q: must be "OrderedReady" or "Parallel"`, s.Spec.PodManagementPolicy)
	}
	v.statefulSetStrategy(child(sp, "updateStrategy"), &s.Spec.UpdateStrategy)
	if rp := s.Spec.PersistentVolumeClaimRetentionPolicy; rp != nil {
		rpp := child(sp, "persistentVolumeClaimRetentionPolicy")
		for _, f := range []struct{ name, value string }{{"whenDeleted", rp.WhenDeleted}, {"whenScaled", rp.WhenScaled}} {
			switch f.value {
			case "", ClaimRetain, ClaimDelete:
			default:
				v.add(child(rpp, f.name), `unsupported value %q: must be "Retain" or "Delete"`, f.value)
			}
		}
	}
	if o := s.Spec.Ordinals; o != nil {
		v.nonNegative(child(sp, "ordinals.start"), int64(o.Start))
	}
	v.selector(sp, s.Spec.Selector, s.Spec.Template.Metadata.Labels)
	// Each claim template is a claim as a PersistentVolumeClaim object
	// is one (the controller makes TEMPLATE-NAME-i of it).
	claims := map[string]bool{}
	for i := range s.Spec.VolumeClaimTemplates {
		c := &s.Spec.VolumeClaimTemplates[i]
		cp := index(child(sp, "volumeClaimTemplates"), i)
		v.errs = append(v.errs, validatePVC(c, cp, lines)...)
		if claims[c.Metadata.Name] {
			v.add(child(cp, "metadata.name"), "duplicate claim template name %q", c.Metadata.Name)
		}
		claims[c.Metadata.Name] = true
	}
	// The pod is checked as the controller creates it: each claim
	// template a volume of its own name, in place of a template volume
	// of that name (as the StatefulSet controller's updateStorage does),
	// so that containers may mount the claims.
	t := s.Spec.Template
	t.Spec.Volumes = withClaimVolumes(t.Spec.Volumes, s.Spec.VolumeClaimTemplates)
	v.template(child(sp, "template"), &t, s.Replicas(), restartAlways)
	return v.errs
}

// withClaimVolumes returns volumes with a claim volume for each claim
// template: replacing the volume of the same name in place (so that the
// paths of the others do not move), appended otherwise. volumes is not
// changed.
func withClaimVolumes(volumes []Volume, claims []PersistentVolumeClaim) []Volume {
	out := slices.Clone(volumes)
	for _, c := range claims {
		vol := Volume{Name: c.Metadata.Name, PersistentVolumeClaim: &PersistentVolumeClaimVolumeSource{ClaimName: c.Metadata.Name}}
		if i := slices.IndexFunc(out, func(v Volume) bool { return v.Name == c.Metadata.Name }); i >= 0 {
			out[i] = vol
		} else {
			out = append(out, vol)
		}
	}
	return out
}

func (v *validator) statefulSetStrategy(p string, st *StatefulSetUpdateStrategy) {
	ru := st.RollingUpdate
	if !v.strategyType(p, st.Type, StrategyOnDelete, ru != nil) {
		return
	}
	rp := child(p, "rollingUpdate")
	if ru.Partition != nil {
		v.nonNegative(child(rp, "partition"), int64(*ru.Partition))
	}
	if mu := ru.MaxUnavailable; mu != nil && v.intOrPercent(child(rp, "maxUnavailable"), mu, true) && isZeroIntOrPercent(*mu) {
		v.add(child(rp, "maxUnavailable"), "must be greater than 0")
	}
}

func validateDaemonSet(d *DaemonSet, base string, lines map[string]int) ErrorList {
	v := &validator{lines: lines}
	v.meta(child(base, "metadata"), &d.Metadata, KindDaemonSet)
	sp := child(base, "spec")
	v.nonNegative(child(sp, "minReadySeconds"), int64(d.Spec.MinReadySeconds))
	if r := d.Spec.RevisionHistoryLimit; r != nil {
		v.nonNegative(child(sp, "revisionHistoryLimit"), int64(*r))
	}
	v.selector(sp, d.Spec.Selector, d.Spec.Template.Metadata.Labels)
	st := &d.Spec.UpdateStrategy
	p := child(sp, "updateStrategy")
	if ru := st.RollingUpdate; v.strategyType(p, st.Type, StrategyOnDelete, ru != nil) {
		rp := child(p, "rollingUpdate")
		surgeOK := v.intOrPercent(child(rp, "maxSurge"), ru.MaxSurge, true)
		unavailOK := v.intOrPercent(child(rp, "maxUnavailable"), ru.MaxUnavailable, true)
		// Unset, maxUnavailable is 1: only an explicit zero with no
		// surge is an error.
		if surgeOK && unavailOK && ru.MaxUnavailable != nil && isZeroIntOrPercent(*ru.MaxUnavailable) &&
			(ru.MaxSurge == nil || isZeroIntOrPercent(*ru.MaxSurge)) {
			v.add(child(rp, "maxUnavailable"), "may not be 0 when maxSurge is 0")
		}
	}
	// One host, one node: a DaemonSet runs one pod.
	v.template(child(sp, "template"), &d.Spec.Template, 1, restartAlways)
	return v.errs
}

func validateReplicaSet(r *ReplicaSet, base string, lines map[string]int) ErrorList {
	v := &validator{lines: lines}
	v.meta(child(base, "metadata"), &r.Metadata, KindReplicaSet)
	sp := child(base, "spec")
	v.replicas(child(sp, "replicas"), r.Spec.Replicas)
	v.nonNegative(child(sp, "minReadySeconds"), int64(r.Spec.MinReadySeconds))
	v.selector(sp, r.Spec.Selector, r.Spec.Template.Metadata.Labels)
	v.template(child(sp, "template"), &r.Spec.Template, r.Replicas(), restartAlways)
	return v.errs
}

// replicas checks spec.replicas as the Deployment's.
func (v *validator) replicas(p string, r *int32) {
	switch {
	case r == nil:
	case *r < 0:
		v.add(p, "must be greater than or equal to 0")
	case *r > MaxReplicasLimit:
		v.add(p, "must be less than or equal to %d", MaxReplicasLimit)
	}
}

func validateJob(j *Job, base string, lines map[string]int) ErrorList {
	v := &validator{lines: lines}
	v.meta(child(base, "metadata"), &j.Metadata, KindJob)
	sp := &j.Spec
	// The Indexed Job controller names each pod's hostname NAME-INDEX:
	// the highest must be a DNS label.
	if isIndexed(sp) && sp.Completions != nil && *sp.Completions > 0 {
		if host := fmt.Sprintf("%s-%d", j.Metadata.Name, *sp.Completions-1); len(validation.IsDNS1123Label(host)) > 0 {
			v.add(child(base, "metadata.name"), "invalid value %q: will not able to create pod with invalid DNS label: %s", j.Metadata.Name, host)
		}
	}
	v.jobSpec(child(base, "spec"), sp)
	return v.errs
}

func isIndexed(sp *JobSpec) bool {
	return sp.CompletionMode != nil && *sp.CompletionMode == CompletionIndexed
}

// jobSpec checks a Job's spec at path s (a Job's, or a CronJob's
// jobTemplate), as batch/v1's validateJobSpec.
func (v *validator) jobSpec(s string, sp *JobSpec) {
	for _, f := range []struct {
		name string
		val  *int32
	}{
		{"parallelism", sp.Parallelism}, {"completions", sp.Completions}, {"backoffLimit", sp.BackoffLimit},
		{"ttlSecondsAfterFinished", sp.TTLSecondsAfterFinished}, {"backoffLimitPerIndex", sp.BackoffLimitPerIndex},
		{"maxFailedIndexes", sp.MaxFailedIndexes},
	} {
		if f.val != nil {
			v.nonNegative(child(s, f.name), int64(*f.val))
		}
	}
	if ads := sp.ActiveDeadlineSeconds; ads != nil {
		v.nonNegative(child(s, "activeDeadlineSeconds"), *ads)
	}
	if sp.MaxFailedIndexes != nil && sp.BackoffLimitPerIndex == nil {
		v.add(child(s, "backoffLimitPerIndex"), "Required value: when maxFailedIndexes is specified")
	}
	if cm := sp.CompletionMode; cm != nil && *cm != CompletionNonIndexed && *cm != CompletionIndexed {
		v.add(child(s, "completionMode"), `unsupported value %q: must be "NonIndexed" or "Indexed"`, *cm)
	}
	if isIndexed(sp) {
		if sp.Completions == nil {
			v.add(child(s, "completions"), "Required value: when completion mode is Indexed")
		}
		if sp.Parallelism != nil && *sp.Parallelism > maxParallelismForIndexedJob {
			v.add(child(s, "parallelism"), "must be less than or equal to %d when completion mode is Indexed", maxParallelismForIndexedJob)
		}
		if sp.Completions != nil && sp.MaxFailedIndexes != nil && *sp.MaxFailedIndexes > *sp.Completions {
			v.add(child(s, "maxFailedIndexes"), "must be less than or equal to completions")
		}
		if sp.MaxFailedIndexes != nil && *sp.MaxFailedIndexes > maxFailedIndexesForIndexedJob {
			v.add(child(s, "maxFailedIndexes"), "must be less than or equal to %d", maxFailedIndexesForIndexedJob)
		}
	} else {
		if sp.BackoffLimitPerIndex != nil {
			v.add(child(s, "backoffLimitPerIndex"), "requires indexed completion mode")
		}
		if sp.MaxFailedIndexes != nil {
			v.add(child(s, "maxFailedIndexes"), "requires indexed completion mode")
		}
	}
	if pfp := sp.PodFailurePolicy; pfp != nil {
		v.podFailurePolicy(child(s, "podFailurePolicy"), pfp, sp)
	}
	tp := child(s, "template")
	parallel := int32(1)
	if sp.Parallelism != nil && *sp.Parallelism > 1 {
		parallel = *sp.Parallelism
	}
	v.template(tp, &sp.Template, parallel, restartJob)
	if rp := sp.Template.Spec.RestartPolicy; sp.PodFailurePolicy != nil && rp == RestartOnFailure {
		v.add(child(tp, "spec.restartPolicy"), `invalid value %q: only "Never" is supported when podFailurePolicy is specified`, rp)
	}
}

// restartJob is batch/v1's rule: a Job's pods run to completion, so
// restartPolicy is OnFailure or Never; unset, it would be defaulted to
// Always, and both are refused with the API server's words.
func restartJob(v *validator, p, rp string) {
	switch rp {
	case RestartOnFailure, RestartNever:
	case "", RestartAlways:
		v.add(p, `Required value: valid values: "OnFailure", "Never"`)
	default:
		v.add(p, `Unsupported value: %q: supported values: "OnFailure", "Never"`, rp)
	}
}

// restartAny is a standalone Pod's rule: any of the three.
func restartAny(v *validator, p, rp string) {
	switch rp {
	case "", RestartAlways, RestartOnFailure, RestartNever:
	default:
		v.add(p, `unsupported value %q: must be "Always", "OnFailure" or "Never"`, rp)
	}
}

func (v *validator) podFailurePolicy(p string, pfp *PodFailurePolicy, sp *JobSpec) {
	rulesPath := child(p, "rules")
	if len(pfp.Rules) > maxPodFailurePolicyRules {
		v.add(rulesPath, "must have at most %d items", maxPodFailurePolicyRules)
	}
	containers := map[string]bool{}
	for _, c := range sp.Template.Spec.AllContainers() {
		containers[c.Name] = true
	}
	for i, r := range pfp.Rules {
		rp := index(rulesPath, i)
		switch r.Action {
		case PodFailureFailJob, PodFailureIgnore, PodFailureCount:
		case PodFailureFailIndex:
			if sp.BackoffLimitPerIndex == nil {
				v.add(child(rp, "action"), "invalid value %q: requires the backoffLimitPerIndex to be set", r.Action)
			}
		case "":
			v.add(child(rp, "action"), `Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]`)
		default:
			v.add(child(rp, "action"), `unsupported value %q: must be "Count", "FailIndex", "FailJob" or "Ignore"`, r.Action)
		}
		switch {
		case r.OnExitCodes != nil && len(r.OnPodConditions) > 0:
			v.add(rp, "specifying both OnExitCodes and OnPodConditions is not supported")
		case r.OnExitCodes == nil && len(r.OnPodConditions) == 0:
			v.add(rp, "specifying one of OnExitCodes and OnPodConditions is required")
		}
		if ec := r.OnExitCodes; ec != nil {
			v.onExitCodes(child(rp, "onExitCodes"), ec, containers)
		}
		for j, c := range r.OnPodConditions {
			cp := index(child(rp, "onPodConditions"), j)
			if msgs := validation.IsQualifiedName(c.Type); len(msgs) > 0 {
				v.add(child(cp, "type"), "invalid value %q: %s", c.Type, msgs[0])
			}
			switch c.Status {
			case "", "True", "False", "Unknown":
			default:
				v.add(child(cp, "status"), `unsupported value %q: must be "True", "False" or "Unknown"`, c.Status)
			}
		}
	}
}

// onExitCodes follows batch/v1's validatePodFailurePolicyRuleOnExitCodes.
func (v *validator) onExitCodes(p string, ec *PodFailurePolicyOnExitCodesRequirement, containers map[string]bool) {
	if n := ec.ContainerName; n != nil && !containers[*n] {
		v.add(child(p, "containerName"), "invalid value %q: must be one of the container or initContainer names in the pod template", *n)
	}
	switch ec.Operator {
	case ExitCodesIn, ExitCodesNotIn:
	case "":
		v.add(child(p, "operator"), `Required value: valid values: ["In" "NotIn"]`)
	default:
		v.add(child(p, "operator"), `unsupported value %q: must be "In" or "NotIn"`, ec.Operator)
	}
	vp := child(p, "values")
	switch {
	case len(ec.Values) == 0:
		v.add(vp, "at least one value is required")
	case len(ec.Values) > maxPodFailurePolicyExitCodes:
		v.add(vp, "must have at most %d items", maxPodFailurePolicyExitCodes)
	}
	for i, c := range ec.Values {
		switch {
		case ec.Operator == ExitCodesIn && c == 0:
			v.add(index(vp, i), "must not be 0 for the In operator")
		case i > 0 && c == ec.Values[i-1]:
			v.add(index(vp, i), "duplicate value %d", c)
		case i > 0 && c < ec.Values[i-1]:
			v.add(index(vp, i), "must be ordered")
		}
	}
}

func validateCronJob(c *CronJob, base string, lines map[string]int) ErrorList {
	v := &validator{lines: lines}
	mp := child(base, "metadata")
	v.meta(mp, &c.Metadata, KindCronJob)
	if len(c.Metadata.Name) > maxCronJobNameLength {
		v.add(child(mp, "name"), "must be no more than %d characters", maxCronJobNameLength)
	}
	sp := child(base, "spec")
	switch sched := c.Spec.Schedule; {
	case sched == "":
		v.add(child(sp, "schedule"), "required")
	default:
		if err := cronschedule.Check(sched); err != nil {
			v.add(child(sp, "schedule"), "invalid value %q: %v", sched, err)
		}
		// Kubernetes refuses a zone in the schedule on create (it runs
		// one stored by an earlier release, warning): timeZone says it.
		if strings.Contains(sched, "TZ") {
			v.add(child(sp, "schedule"), "invalid value %q: cannot use TZ or CRON_TZ in schedule, use timeZone field instead", sched)
		}
	}
	if tz := c.Spec.TimeZone; tz != nil {
		if _, err := cronschedule.LoadTimeZone(*tz); err != nil {
			v.add(child(sp, "timeZone"), "invalid value %q: %v", *tz, err)
		}
	}
	if sds := c.Spec.StartingDeadlineSeconds; sds != nil {
		v.nonNegative(child(sp, "startingDeadlineSeconds"), *sds)
	}
	switch c.Spec.ConcurrencyPolicy {
	case "", ConcurrencyAllow, ConcurrencyForbid, ConcurrencyReplace:
	default:
		v.add(child(sp, "concurrencyPolicy"), `unsupported value %q: must be "Allow", "Forbid" or "Replace"`, c.Spec.ConcurrencyPolicy)
	}
	for _, f := range []struct {
		name string
		val  *int32
	}{{"successfulJobsHistoryLimit", c.Spec.SuccessfulJobsHistoryLimit}, {"failedJobsHistoryLimit", c.Spec.FailedJobsHistoryLimit}} {
		if f.val != nil {
			v.nonNegative(child(sp, f.name), int64(*f.val))
		}
	}
	jt := child(sp, "jobTemplate")
	v.labels(child(jt, "metadata.labels"), c.Spec.JobTemplate.Metadata.Labels)
	v.annotations(child(jt, "metadata.annotations"), c.Spec.JobTemplate.Metadata.Annotations, KindJob)
	v.jobSpec(child(jt, "spec"), &c.Spec.JobTemplate.Spec)
	return v.errs
}

func validatePod(p *Pod, base string, lines map[string]int) ErrorList {
	v := &validator{lines: lines}
	// A standalone Pod's own metadata is its template's: its labels go
	// on its containers, and dockctl.io/ annotations belong there.
	mp := child(base, "metadata")
	v.meta(mp, &p.Metadata, onTemplate)
	v.reservedLabels(child(mp, "labels"), p.Metadata.Labels)
	v.network(child(mp, "annotations"), p.Metadata.Annotations)
	v.podSpec(child(base, "spec"), &p.Spec, 1, restartAny)
	return v.errs
}

// ValidateWorkload checks a workload built or changed in code (scale,
// rollout undo, a Job made from a CronJob) with the rules DecodeWorkloads
// applies to files, as Validate does for a Deployment. Errors carry field
// paths but no file or line. The result is nil or an ErrorList.
func ValidateWorkload(w Workload) error {
	var errs ErrorList
	switch o := w.(type) {
	case *StatefulSet:
		errs = validateStatefulSet(o, "", nil)
	case *DaemonSet:
		errs = validateDaemonSet(o, "", nil)
	case *ReplicaSet:
		errs = validateReplicaSet(o, "", nil)
	case *Job:
		errs = validateJob(o, "", nil)
	case *CronJob:
		errs = validateCronJob(o, "", nil)
	case *Pod:
		errs = validatePod(o, "", nil)
	default:
		return fmt.Errorf("manifests: no validation for %T", w)
	}
	return errs.Err()
}

// Updates of a live workload. A stored object is replaced by a valid one
// only when the API server would accept the change too: apps/v1 and
// batch/v1 refuse some changes of a live object (pkg/apis/apps/validation
// ValidateStatefulSetUpdate, the DaemonSet's and ReplicaSet's strategies'
// ValidateUpdate, pkg/apis/batch/validation ValidateJobSpecUpdate), since
// their controllers act on pods made from the old spec. Both objects are
// as the store keeps them (defaulted), so a default never reads as a
// change. The messages are kubectl's.

// fieldImmutable is apimachinery's FieldImmutableErrorMsg.
const fieldImmutable = "field is immutable"

// statefulSetForbidden is ValidateStatefulSetUpdate's message (Kubernetes
// 1.34): revisionHistoryLimit became mutable with 1.31.
const statefulSetForbidden = "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', " +
	"'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"

// ValidateStatefulSetUpdate checks that storing next over live is allowed:
// next is valid, and its spec differs from live's only in the fields
// ValidateStatefulSetUpdate lets change. The message names the fields that
// did change, and the way to change them anyway (docs/design.md §17.1): a
// deletion with --cascade=orphan leaves the pods and claims running, and
// the StatefulSet applied again adopts them.
func ValidateStatefulSetUpdate(next, live *StatefulSet) error {
	if err := ValidateWorkload(next); err != nil {
		return err
	}
	a := next.Spec
	a.Replicas, a.Ordinals, a.Template = live.Spec.Replicas, live.Spec.Ordinals, live.Spec.Template
	a.UpdateStrategy, a.RevisionHistoryLimit = live.Spec.UpdateStrategy, live.Spec.RevisionHistoryLimit
	a.PersistentVolumeClaimRetentionPolicy, a.MinReadySeconds = live.Spec.PersistentVolumeClaimRetentionPolicy, live.Spec.MinReadySeconds
	if sameJSON(a, live.Spec) {
		return nil
	}
	v := &validator{}
	v.add("spec", "%s (changed: %s; to change them, delete the StatefulSet with --cascade=orphan and apply it again: "+
		"its pods and claims keep running and are adopted)", statefulSetForbidden, strings.Join(changedFields("spec", a, live.Spec), ", "))
	return v.errs.Err()
}

// ValidateDaemonSetUpdate checks that storing next over live is allowed:
// next is valid and keeps its selector, as the DaemonSet strategy's
// ValidateUpdate requires of apps/v1.
func ValidateDaemonSetUpdate(next, live *DaemonSet) error {
	return validateSelectorUpdate(next, next.Spec.Selector, live.Spec.Selector)
}

// ValidateReplicaSetUpdate is ValidateDaemonSetUpdate for a ReplicaSet
// (the ReplicaSet strategy's ValidateUpdate).
func ValidateReplicaSetUpdate(next, live *ReplicaSet) error {
	return validateSelectorUpdate(next, next.Spec.Selector, live.Spec.Selector)
}

// validateSelectorUpdate checks that next is valid and that its selector
// (nextSel) is live's (liveSel).
func validateSelectorUpdate(next Workload, nextSel, liveSel *LabelSelector) error {
	if err := ValidateWorkload(next); err != nil {
		return err
	}
	v := &validator{}
	v.immutable("spec.selector", nextSel, liveSel)
	return v.errs.Err()
}

// ValidateJobUpdate checks that storing next over live is allowed, as
// ValidateJobSpecUpdate: the template, completionMode, podFailurePolicy
// and backoffLimitPerIndex are immutable; completions too, except for an
// Indexed Job whose completions change with its parallelism (an elastic
// Indexed Job). started tells whether the Job controller has started live
// (its status.startTime): the template's labels and annotations may change
// while live is suspended and was never started (the Job strategy's
// AllowMutableSchedulingDirectives; the scheduling directives it lets
// change too, nodeSelector, affinity, tolerations, are ignored by dockctl).
// A Job's selector is generated (dockctl has no manualSelector), so it
// never changes.
func ValidateJobUpdate(next, live *Job, started bool) error {
	if err := ValidateWorkload(next); err != nil {
		return err
	}
	a, b := &next.Spec, &live.Spec
	v := &validator{}
	if !isIndexed(a) {
		v.immutable("spec.completions", a.Completions, b.Completions)
	} else if a.Completions != nil && !equalPtr(a.Completions, b.Completions) && !equalPtr(a.Completions, a.Parallelism) {
		v.add("spec.completions", "Invalid value: %d: can only be modified in tandem with spec.parallelism", *a.Completions)
	}
	old := b.Template
	if b.Suspend != nil && *b.Suspend && !started {
		old.Metadata = a.Template.Metadata
	}
	if !sameJSON(a.Template, old) {
		v.add("spec.template", "Invalid value: %s: %s (changed: %s; a Job runs one template: delete it and create it again to change it)",
			jsonValue(a.Template), fieldImmutable, strings.Join(changedFields("spec.template", a.Template, old), ", "))
	}
	v.immutable("spec.completionMode", a.CompletionMode, b.CompletionMode)
	v.immutable("spec.podFailurePolicy", a.PodFailurePolicy, b.PodFailurePolicy)
	v.immutable("spec.backoffLimitPerIndex", a.BackoffLimitPerIndex, b.BackoffLimitPerIndex)
	return v.errs.Err()
}

// immutable refuses next at path p unless it is live's, with
// ValidateImmutableField's words (the value as JSON).
func (v *validator) immutable(p string, next, live any) {
	if !sameJSON(next, live) {
		v.add(p, "Invalid value: %s: %s", jsonValue(next), fieldImmutable)
	}
}

func equalPtr[T comparable](a, b *T) bool {
	return a == b || (a != nil && b != nil && *a == *b)
}

// sameJSON compares two values by their JSON encoding, which, as the API
// server's semantic equality, makes nil and empty lists and maps alike
// (omitempty) and a quantity equal to its canonical form.
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

func jsonValue(x any) string {
	b, err := json.Marshal(x)
	if err != nil {
		return fmt.Sprintf("%v", x)
	}
	return string(b)
}

// changedFields names the fields whose encodings differ between a and b,
// two values of one type at path p, descending into objects (not lists):
// what an error says changed, in order.
func changedFields(p string, a, b any) []string {
	var out []string
	diffJSON(p, []byte(jsonValue(a)), []byte(jsonValue(b)), &out)
	slices.Sort(out)
	return out
}

// mapFields are the fields whose objects are maps: a change in one is the
// field's, not a key's.
var mapFields = map[string]bool{"labels": true, "annotations": true, "matchLabels": true, "requests": true, "limits": true}

func diffJSON(p string, a, b []byte, out *[]string) {
	if bytes.Equal(a, b) {
		return
	}
	var ma, mb map[string]json.RawMessage
	if mapFields[p[strings.LastIndexByte(p, '.')+1:]] || json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil || ma == nil || mb == nil {
		*out = append(*out, p)
		return
	}
	for k, va := range ma {
		diffJSON(child(p, k), va, mb[k], out)
	}
	for k, vb := range mb {
		if _, ok := ma[k]; !ok {
			diffJSON(child(p, k), nil, vb, out)
		}
	}
}
