package job

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/workload"
)

// A new pod of the Job, as Kubernetes' Job controller makes it from the
// template: labelled with the Job's name, and for an Indexed Job with its
// index (annotation and label, the JOB_COMPLETION_INDEX variable read
// from the label, hostname NAME-INDEX).

// podNamer hands out names of new pods: JOB-<suffix>, for an Indexed Job
// JOB-<index>-<suffix> (docs/design.md §17: pod names are unique per namespace). Kubernetes' suffix is random; this
// one is derived from the Job's name, the index and an attempt number,
// and the first not taken by an observed or already named pod is used, so
// that one state always gives one name. It shares the suffix's spelling
// and the generateName bound with workload.GenerateNames, not its
// derivation (why: the package doc).
type podNamer struct {
	job   string
	taken map[string]bool
}

func newPodNamer(job string, pods []workload.ObservedPod) *podNamer {
	n := &podNamer{job: job, taken: make(map[string]bool, len(pods))}
	for i := range pods {
		n.taken[pods[i].Name] = true
	}
	return n
}

func (n *podNamer) name(index int) string {
	prefix := n.job + "-"
	if len(prefix) > workload.MaxGenerateNameLen {
		prefix = prefix[:workload.MaxGenerateNameLen]
	}
	if index >= 0 {
		ix := "-" + strconv.Itoa(index) + "-"
		if prefix = n.job + ix; len(prefix) > workload.MaxGenerateNameLen {
			prefix = prefix[:workload.MaxGenerateNameLen-len(ix)] + ix
		}
	}
	for attempt := 0; ; attempt++ {
		name := prefix + suffix(n.job, index, attempt)
		if !n.taken[name] {
			n.taken[name] = true
			return name
		}
	}
}

func suffix(job string, index, attempt int) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%d\x00%d", job, index, attempt)
	return workload.Suffix(h.Sum64())
}

// podSpec is the pod named name of index (-1: NonIndexed); failures and
// ignored are the index's failures so far, recorded under
// backoffLimitPerIndex as Kubernetes' annotations record them.
func podSpec(j *manifests.Job, name string, index int, failures, ignored int) podruntime.PodSpec {
	t := copyTemplate(&j.Spec.Template)
	t.Metadata.Labels = maps.Clone(t.Metadata.Labels)
	if t.Metadata.Labels == nil {
		t.Metadata.Labels = map[string]string{}
	}
	t.Metadata.Labels[batchv1.JobNameLabel] = j.Metadata.Name
	t.Metadata.Labels[LegacyJobNameLabel] = j.Metadata.Name
	spec := podruntime.PodSpec{
		Namespace:     j.Metadata.Namespace,
		Name:          name,
		Owner:         podruntime.OwnerRef{Kind: manifests.KindJob, Name: j.Metadata.Name},
		RestartPolicy: j.Spec.Template.Spec.RestartPolicy,
	}
	if index >= 0 {
		ix := strconv.Itoa(index)
		t.Metadata.Annotations = maps.Clone(t.Metadata.Annotations)
		if t.Metadata.Annotations == nil {
			t.Metadata.Annotations = map[string]string{}
		}
		t.Metadata.Annotations[batchv1.JobCompletionIndexAnnotation] = ix
		t.Metadata.Labels[batchv1.JobCompletionIndexAnnotation] = ix
		if j.Spec.BackoffLimitPerIndex != nil {
			t.Metadata.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(failures)
			if ignored > 0 {
				t.Metadata.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(ignored)
			}
		}
		addIndexEnv(t.Spec.InitContainers)
		addIndexEnv(t.Spec.Containers)
		spec.Identity = podruntime.Identity{Ordinal: index, HasOrdinal: true, Hostname: j.Metadata.Name + "-" + ix}
	}
	spec.Template = t
	spec.TemplateHash = manifests.TemplateHash(t)
	return spec
}

// KeptPod is the spec of the Job's existing pod name, labelled labels,
// as podSpec made it: an Indexed Job's pod keeps its index (label,
// JOB_COMPLETION_INDEX, hostname NAME-INDEX), read from its index label,
// so that what the runtime creates of it later (a holder pod's app
// containers, after its init containers) is the pod's, not the bare
// template's. The failure-count annotations of backoffLimitPerIndex,
// which no container records, are not restored.
func KeptPod(j *manifests.Job, name string, labels map[string]string) podruntime.PodSpec {
	ix := -1
	if isIndexed(j) {
		ix = podIndex(&workload.ObservedPod{Labels: labels})
	}
	return podSpec(j, name, ix, 0, 0)
}

// addIndexEnv gives each container JOB_COMPLETION_INDEX from the pod's
// index label, unless it sets the variable itself (Kubernetes'
// addCompletionIndexEnvVariable).
func addIndexEnv(cs []manifests.Container) {
	for i := range cs {
		c := &cs[i]
		set := false
		for _, e := range c.Env {
			set = set || e.Name == CompletionIndexEnv
		}
		if set {
			continue
		}
		c.Env = append(c.Env, manifests.EnvVar{Name: CompletionIndexEnv, ValueFrom: &manifests.EnvVarSource{
			FieldRef: &manifests.ObjectFieldSelector{FieldPath: fmt.Sprintf("%s['%s']", manifests.FieldMetadataLabels, batchv1.JobCompletionIndexAnnotation)},
		}})
	}
}

// copyTemplate deep-copies a pod template: every field of the manifests
// types is exported and tagged, so the JSON round trip is exact (as
// manifests' own DeepCopy relies on).
func copyTemplate(t *manifests.PodTemplateSpec) *manifests.PodTemplateSpec {
	b, err := json.Marshal(t)
	if err != nil {
		panic(fmt.Sprintf("job: copying a pod template: %v", err))
	}
	out := &manifests.PodTemplateSpec{}
	if err := json.Unmarshal(b, out); err != nil {
		panic(fmt.Sprintf("job: copying a pod template: %v", err))
	}
	return out
}

// podIndex is the pod's completion index, -1 when it has none that reads
// as one (Kubernetes' getCompletionIndex, annotation first).
func podIndex(p *workload.ObservedPod) int {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		v, ok = p.Labels[batchv1.JobCompletionIndexAnnotation]
	}
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 {
		return -1
	}
	return i
}
