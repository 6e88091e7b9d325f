package manifests

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// Each kind is defaulted as Kubernetes' SetDefaults_* defaults it: the
// defaulted object, as JSON, holds these fields with these values.
func TestWorkloadDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want map[string]any // JSON path (dots) → value
	}{
		{"statefulset", stsBase, map[string]any{
			"spec.replicas": 1, "spec.podManagementPolicy": "OrderedReady", "spec.revisionHistoryLimit": 10,
			"spec.updateStrategy.type": "RollingUpdate", "spec.updateStrategy.rollingUpdate.partition": 0,
			"spec.persistentVolumeClaimRetentionPolicy.whenDeleted": "Retain",
			"spec.persistentVolumeClaimRetentionPolicy.whenScaled":  "Retain",
			"spec.template.spec.restartPolicy":                      "Always",
			"spec.template.spec.terminationGracePeriodSeconds":      30,
			"spec.template.spec.containers.0.imagePullPolicy":       "IfNotPresent",
			"spec.volumeClaimTemplates.0.spec.volumeMode":           "Filesystem",
		}},
		{"statefulset on delete has no rollingUpdate", with(stsBase, "  serviceName: db\n", "  serviceName: db\n  updateStrategy: {type: OnDelete}\n"), map[string]any{
			"spec.updateStrategy.type": "OnDelete", "spec.updateStrategy.rollingUpdate": absent,
		}},
		{"statefulset retention half set", with(stsBase, "  serviceName: db\n", "  serviceName: db\n  persistentVolumeClaimRetentionPolicy: {whenScaled: Delete}\n"), map[string]any{
			"spec.persistentVolumeClaimRetentionPolicy.whenDeleted": "Retain",
			"spec.persistentVolumeClaimRetentionPolicy.whenScaled":  "Delete",
		}},
		{"daemonset", dsBase, map[string]any{
			"spec.updateStrategy.type": "RollingUpdate", "spec.updateStrategy.rollingUpdate.maxUnavailable": 1,
			"spec.updateStrategy.rollingUpdate.maxSurge": 0, "spec.revisionHistoryLimit": 10,
			"spec.template.spec.containers.0.imagePullPolicy": "IfNotPresent",
		}},
		{"replicaset", with(rsBase, "  replicas: 2\n", ""), map[string]any{"spec.replicas": 1, "spec.template.spec.restartPolicy": "Always"}},
		{"job", jobBase, map[string]any{
			"spec.completions": 1, "spec.parallelism": 1, "spec.backoffLimit": 6, "spec.completionMode": "NonIndexed",
			"spec.suspend": false, "spec.template.spec.restartPolicy": "Never", "spec.template.spec.terminationGracePeriodSeconds": 30,
		}},
		{"job parallelism alone leaves completions unset", with(jobBase, "spec:\n  template:", "spec:\n  parallelism: 4\n  template:"), map[string]any{
			"spec.completions": absent, "spec.parallelism": 4,
		}},
		{"job backoffLimitPerIndex lifts backoffLimit", with(jobBase, "spec:\n  template:", "spec:\n  completions: 3\n  completionMode: Indexed\n  backoffLimitPerIndex: 1\n  template:"), map[string]any{
			"spec.backoffLimit": math.MaxInt32, "spec.parallelism": 1, "spec.completions": 3,
		}},
		{"job takes its template's labels", with(jobBase, "    spec:\n      restartPolicy", "    metadata: {labels: {app: once}}\n    spec:\n      restartPolicy"), map[string]any{
			"metadata.labels.app": "once",
		}},
		{"job keeps its own labels", with(with(jobBase, "metadata: {name: once}", "metadata: {name: once, labels: {team: a}}"), "    spec:\n      restartPolicy", "    metadata: {labels: {app: once}}\n    spec:\n      restartPolicy"), map[string]any{
			"metadata.labels.team": "a", "metadata.labels.app": absent,
		}},
		{"job pod condition status", with(jobBase, "spec:\n  template:", "spec:\n  podFailurePolicy: {rules: [{action: Ignore, onPodConditions: [{type: DisruptionTarget}]}]}\n  template:"), map[string]any{
			"spec.podFailurePolicy.rules.0.onPodConditions.0.status": "True",
		}},
		{"cronjob", cronBase, map[string]any{
			"spec.concurrencyPolicy": "Allow", "spec.suspend": false, "spec.successfulJobsHistoryLimit": 3, "spec.failedJobsHistoryLimit": 1,
			"spec.startingDeadlineSeconds": absent, "spec.timeZone": absent,
			// The job template's own fields are the Job's, defaulted when
			// a Job is made of it, as on a cluster.
			"spec.jobTemplate.spec.backoffLimit":                               absent,
			"spec.jobTemplate.spec.template.spec.restartPolicy":                "OnFailure",
			"spec.jobTemplate.spec.template.spec.containers.0.imagePullPolicy": "IfNotPresent",
		}},
		{"pod", standalonePodBase, map[string]any{
			"spec.restartPolicy": "Always", "spec.terminationGracePeriodSeconds": 30, "spec.containers.0.imagePullPolicy": "IfNotPresent",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs := decodeWorkloadsOK(t, "t.yaml", tc.in)
			b, err := json.Marshal(docs[0].workload())
			if err != nil {
				t.Fatal(err)
			}
			var obj any
			if err := json.Unmarshal(b, &obj); err != nil {
				t.Fatal(err)
			}
			for path, want := range tc.want {
				got, ok := jsonAt(obj, path)
				switch {
				case want == absent:
					if ok {
						t.Errorf("%s = %v, want it unset", path, got)
					}
				case !ok:
					t.Errorf("%s unset, want %v", path, want)
				default:
					if w, isInt := want.(int); isInt {
						want = float64(w)
					}
					if got != want {
						t.Errorf("%s = %v, want %v", path, got, want)
					}
				}
			}
		})
	}
}

// absent marks a field the defaulted object must not have.
var absent = &struct{}{}

func jsonAt(v any, path string) (any, bool) {
	for _, p := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[p]; !ok {
				return nil, false
			}
		case []any:
			i := 0
			for _, c := range p {
				i = i*10 + int(c-'0')
			}
			if i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// Defaulting twice changes nothing.
func TestWorkloadDefaultsAreIdempotent(t *testing.T) {
	for f, b := range workloadFiles(t) {
		for _, d := range decodeWorkloadsOK(t, f, string(b)) {
			w := d.workload()
			if w == nil {
				continue
			}
			before, _ := json.Marshal(w)
			switch o := w.(type) {
			case *StatefulSet:
				SetStatefulSetDefaults(o)
			case *DaemonSet:
				SetDaemonSetDefaults(o)
			case *ReplicaSet:
				SetReplicaSetDefaults(o)
			case *Job:
				SetJobDefaults(o)
			case *CronJob:
				SetCronJobDefaults(o)
			case *Pod:
				SetPodDefaults(o)
			}
			if after, _ := json.Marshal(w); string(after) != string(before) {
				t.Errorf("%s: defaulting again changed\n%s\ninto\n%s", f, before, after)
			}
		}
	}
}
