package manifests

import (
	"reflect"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

var (
	statefulSetType = reflect.TypeOf(StatefulSet{})
	daemonSetType   = reflect.TypeOf(DaemonSet{})
	replicaSetType  = reflect.TypeOf(ReplicaSet{})
	jobType         = reflect.TypeOf(Job{})
	cronJobType     = reflect.TypeOf(CronJob{})
	podType         = reflect.TypeOf(Pod{})
)

// workloadKinds returns the decoders of the workload kinds beyond
// Deployment. The kinds whose controllers run (servedWorkloadKinds) are
// also in kinds, which apply reads; the others only DecodeWorkloads
// decodes, and apply refuses them (otherkinds.go).
func workloadKinds() map[string]kindDecoder {
	type decodeFunc func(file string, n *yaml.Node, base string, k8s reflect.Type) (*Document, ErrorList)
	out := map[string]kindDecoder{}
	for _, w := range []struct {
		kind, apiVersion string
		typ, k8s         reflect.Type
		decode           decodeFunc
	}{
		{KindStatefulSet, APIVersion, statefulSetType, reflect.TypeOf(appsv1.StatefulSet{}), decodeStatefulSet},
		{KindDaemonSet, APIVersion, daemonSetType, reflect.TypeOf(appsv1.DaemonSet{}), decodeDaemonSet},
		{KindReplicaSet, APIVersion, replicaSetType, reflect.TypeOf(appsv1.ReplicaSet{}), decodeReplicaSet},
		{KindJob, BatchAPIVersion, jobType, reflect.TypeOf(batchv1.Job{}), decodeJob},
		{KindCronJob, BatchAPIVersion, cronJobType, reflect.TypeOf(batchv1.CronJob{}), decodeCronJob},
		{KindPod, CoreAPIVersion, podType, reflect.TypeOf(corev1.Pod{}), decodePod},
	} {
		decode, k8s := w.decode, w.k8s
		out[w.kind] = kindDecoder{apiVersion: w.apiVersion, typ: w.typ, k8s: k8s,
			decode: func(file string, n *yaml.Node, base string) (*Document, ErrorList) { return decode(file, n, base, k8s) }}
	}
	return out
}

// servedWorkloadKinds are the workload kinds whose controllers run
// (reconciler/workloads): apply accepts them. A kind decoded whose
// controller is not wired would be refused with notServedWhy.
var servedWorkloadKinds = []string{KindStatefulSet, KindDaemonSet, KindReplicaSet, KindJob, KindCronJob, KindPod}

// notServedWhy says why apply refuses a workload kind it decodes (none
// now: every workload kind runs).
var notServedWhy = map[string]string{}

func init() {
	w := workloadKinds()
	for _, k := range servedWorkloadKinds {
		kinds[k] = w[k]
	}
}

// DecodeWorkloads is Decode with every workload kind (StatefulSet,
// DaemonSet, ReplicaSet, Job, CronJob, Pod) decoded, strictly against
// k8s.io/api's types, validated as the API server validates them and
// defaulted as it defaults them; each in the Document field of its kind.
// Decode and LoadAll, which apply reads, decode the served ones
// (servedWorkloadKinds) and refuse the others.
func DecodeWorkloads(file string, data []byte) ([]*Document, error) {
	return decodeOrdered(file, data, &decodeState{extra: workloadKinds()})
}

// decodeWorkload decodes one object of a workload kind into a new T:
// strictly against Kubernetes' type k8s, validated as written, then
// defaulted, and put in its Document field.
func decodeWorkload[T any](file string, n *yaml.Node, base string, k8s reflect.Type,
	validate func(*T, string, map[string]int) ErrorList, setDefaults func(*T), put func(*Document, *T)) (*Document, ErrorList) {
	obj := new(T)
	w, errs := decodeInto(file, n, base, obj, k8s, func(lines map[string]int) ErrorList {
		return validate(obj, base, lines)
	})
	if len(errs) > 0 {
		return nil, errs
	}
	setDefaults(obj)
	d := &Document{File: file, Line: n.Line, Ignored: w.ignored, Zeros: w.explicitZeros(base), nameLine: w.lineOf(child(base, "metadata.name"))}
	put(d, obj)
	return d, nil
}

func decodeStatefulSet(file string, n *yaml.Node, base string, k8s reflect.Type) (*Document, ErrorList) {
	return decodeWorkload(file, n, base, k8s, validateStatefulSet, func(s *StatefulSet) {
		// A claim template's status (kubectl prints one) is the API
		// server's, as a claim's is.
		for i := range s.Spec.VolumeClaimTemplates {
			s.Spec.VolumeClaimTemplates[i].Status = nil
		}
		SetStatefulSetDefaults(s)
	}, func(d *Document, s *StatefulSet) { d.StatefulSet = s })
}

func decodeDaemonSet(file string, n *yaml.Node, base string, k8s reflect.Type) (*Document, ErrorList) {
	return decodeWorkload(file, n, base, k8s, validateDaemonSet, SetDaemonSetDefaults,
		func(d *Document, ds *DaemonSet) { d.DaemonSet = ds })
}

func decodeReplicaSet(file string, n *yaml.Node, base string, k8s reflect.Type) (*Document, ErrorList) {
	return decodeWorkload(file, n, base, k8s, validateReplicaSet, SetReplicaSetDefaults,
		func(d *Document, r *ReplicaSet) { d.ReplicaSet = r })
}

func decodeJob(file string, n *yaml.Node, base string, k8s reflect.Type) (*Document, ErrorList) {
	return decodeWorkload(file, n, base, k8s, validateJob, SetJobDefaults,
		func(d *Document, j *Job) { d.Job = j })
}

func decodeCronJob(file string, n *yaml.Node, base string, k8s reflect.Type) (*Document, ErrorList) {
	return decodeWorkload(file, n, base, k8s, validateCronJob, SetCronJobDefaults,
		func(d *Document, c *CronJob) { d.CronJob = c })
}

func decodePod(file string, n *yaml.Node, base string, k8s reflect.Type) (*Document, ErrorList) {
	return decodeWorkload(file, n, base, k8s, validatePod, SetPodDefaults,
		func(d *Document, p *Pod) { d.Pod = p })
}

// workload returns the document's object of a workload kind other than
// Deployment, or nil.
func (d *Document) workload() Workload {
	switch {
	case d.StatefulSet != nil:
		return d.StatefulSet
	case d.DaemonSet != nil:
		return d.DaemonSet
	case d.ReplicaSet != nil:
		return d.ReplicaSet
	case d.Job != nil:
		return d.Job
	case d.CronJob != nil:
		return d.CronJob
	case d.Pod != nil:
		return d.Pod
	}
	return nil
}
