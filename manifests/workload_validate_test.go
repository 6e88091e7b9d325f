package manifests

import (
	"fmt"
	"strings"
	"testing"
)

const (
	stsBase = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: db
        image: postgres:17.2
        volumeMounts: [{name: data, mountPath: /var/lib/postgresql/data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`
	dsBase = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: agent:1}]
`
	rsBase = `apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.27}]
`
	jobBase = `apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox:1.36}]
`
	cronBase = `apiVersion: batch/v1
kind: CronJob
metadata: {name: backup}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: c, image: busybox:1.36}]
`
	standalonePodBase = `apiVersion: v1
kind: Pod
metadata: {name: test}
spec:
  containers: [{name: c, image: busybox:1.36}]
`
)

// with returns base with its first occurrence of old replaced.
func with(base, old, new string) string {
	if !strings.Contains(base, old) {
		panic("test manifest lacks " + old)
	}
	return strings.Replace(base, old, new, 1)
}

// workloadValidationCases are decoded by DecodeWorkloads: those without
// errs must be accepted (and then decode strictly into Kubernetes' types:
// TestWorkloadsDecodeStrictlyIntoKubernetesTypes), the others refused with
// exactly those errors.
var workloadValidationCases = []struct {
	name string
	in   string
	errs []string
}{
	// StatefulSet.
	{name: "statefulset", in: stsBase},
	{name: "statefulset without serviceName", in: with(stsBase, "  serviceName: db\n", "")},
	{name: "statefulset parallel, on delete, retention delete", in: with(stsBase, "  serviceName: db\n",
		"  serviceName: db\n  podManagementPolicy: Parallel\n  updateStrategy: {type: OnDelete}\n  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete, whenScaled: Delete}\n  ordinals: {start: 1}\n")},
	{name: "statefulset partition and maxUnavailable", in: with(stsBase, "  serviceName: db\n",
		"  serviceName: db\n  updateStrategy: {rollingUpdate: {partition: 2, maxUnavailable: 50%}}\n")},
	{name: "statefulset claim template replaces a template volume of its name", in: with(stsBase, "      containers:\n",
		"      volumes: [{name: data, emptyDir: {}}]\n      containers:\n")},
	{name: "statefulset mounting a volume that is neither", in: with(stsBase, "{name: data, mountPath", "{name: date, mountPath"),
		errs: []string{`t.yaml:13: spec.template.spec.containers[0].volumeMounts[0].name: no volume named "date" in spec.template.spec.volumes`}},
	{name: "statefulset serviceName not a Service name", in: with(stsBase, "serviceName: db", "serviceName: DB_1"),
		errs: []string{`t.yaml:5: spec.serviceName: invalid value "DB_1": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`}},
	{name: "statefulset bad policies", in: with(stsBase, "  serviceName: db\n",
		"  serviceName: db\n  podManagementPolicy: Random\n  updateStrategy: {type: OnDelete, rollingUpdate: {partition: 1}}\n  persistentVolumeClaimRetentionPolicy: {whenDeleted: Keep}\n"),
		errs: []string{
			`t.yaml:6: spec.podManagementPolicy: unsupported value "Random": must be "OrderedReady" or "Parallel"`,
			`t.yaml:7: spec.updateStrategy.rollingUpdate: may not be specified when strategy type is "OnDelete"`,
			`t.yaml:8: spec.persistentVolumeClaimRetentionPolicy.whenDeleted: unsupported value "Keep": must be "Retain" or "Delete"`,
		}},
	{name: "statefulset negative partition, zero maxUnavailable", in: with(stsBase, "  serviceName: db\n",
		"  serviceName: db\n  updateStrategy:\n    rollingUpdate: {partition: -1, maxUnavailable: 0}\n"),
		errs: []string{
			`t.yaml:7: spec.updateStrategy.rollingUpdate.partition: must be greater than or equal to 0`,
			`t.yaml:7: spec.updateStrategy.rollingUpdate.maxUnavailable: must be greater than 0`,
		}},
	{name: "statefulset selector not matching", in: with(stsBase, "metadata: {labels: {app: db}}", "metadata: {labels: {app: web}}"),
		errs: []string{`t.yaml:8: spec.template.metadata.labels: does not match spec.selector.matchLabels (missing app=db)`}},
	{name: "statefulset claim templates checked as claims", in: stsBase + "  - metadata: {name: data}\n    spec: {resources: {requests: {storage: 1Gi}}}\n",
		errs: []string{
			`t.yaml:17: spec.volumeClaimTemplates[1].metadata.name: duplicate claim template name "data"`,
			`t.yaml:18: spec.volumeClaimTemplates[1].spec.accessModes: at least 1 access mode is required`,
		}},
	{name: "statefulset restartPolicy", in: with(stsBase, "      containers:\n", "      restartPolicy: Never\n      containers:\n"),
		errs: []string{`t.yaml:10: spec.template.spec.restartPolicy: unsupported value "Never": only "Always" is supported`}},
	{name: "statefulset host port with replicas", in: with(with(stsBase, "  serviceName: db\n", "  serviceName: db\n  replicas: 3\n"), "        image: postgres:17.2\n", "        image: postgres:17.2\n        ports: [{containerPort: 5432, hostPort: 5432}]\n"),
		errs: []string{`t.yaml:14: spec.template.spec.containers[0].ports[0].hostPort: may not be used with more than one replica (replicas: 3)`}},
	{name: "statefulset refuses what a deployment refuses", in: with(stsBase, "    metadata: {labels: {app: db}}\n    spec:\n", "    metadata: {labels: {app: db}}\n    spec:\n      hostIPC: false\n"),
		errs: []string{`t.yaml:10: spec.template.spec.hostIPC: unsupported by dockctl`}},

	// DaemonSet.
	{name: "daemonset", in: dsBase},
	{name: "daemonset surge", in: with(dsBase, "  template:", "  updateStrategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}\n  template:")},
	{name: "daemonset zero and zero", in: with(dsBase, "  template:", "  updateStrategy: {rollingUpdate: {maxUnavailable: 0}}\n  template:"),
		errs: []string{`t.yaml:6: spec.updateStrategy.rollingUpdate.maxUnavailable: may not be 0 when maxSurge is 0`}},
	{name: "daemonset bad strategy", in: with(dsBase, "  template:", "  updateStrategy: {type: Recreate}\n  template:"),
		errs: []string{`t.yaml:6: spec.updateStrategy.type: unsupported value "Recreate": must be "RollingUpdate" or "OnDelete"`}},
	{name: "daemonset without selector", in: with(dsBase, "  selector: {matchLabels: {app: agent}}\n", ""),
		errs: []string{`t.yaml:4: spec.selector: required`}},

	// ReplicaSet.
	{name: "replicaset", in: rsBase},
	{name: "replicaset negative replicas", in: with(rsBase, "replicas: 2", "replicas: -1"),
		errs: []string{`t.yaml:5: spec.replicas: must be greater than or equal to 0`}},

	// Job.
	{name: "job", in: jobBase},
	{name: "job on failure, indexed", in: with(with(jobBase, "restartPolicy: Never", "restartPolicy: OnFailure"), "spec:\n  template:", "spec:\n  completions: 5\n  parallelism: 2\n  completionMode: Indexed\n  backoffLimitPerIndex: 1\n  template:")},
	{name: "job restartPolicy Always", in: with(jobBase, "restartPolicy: Never", "restartPolicy: Always"),
		errs: []string{`t.yaml:7: spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`}},
	{name: "job restartPolicy unset", in: with(jobBase, "      restartPolicy: Never\n", ""),
		errs: []string{`t.yaml:6: spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`}},
	{name: "job restartPolicy unknown", in: with(jobBase, "restartPolicy: Never", "restartPolicy: Sometimes"),
		errs: []string{`t.yaml:7: spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: "OnFailure", "Never"`}},
	{name: "job indexed without completions", in: with(jobBase, "spec:\n  template:", "spec:\n  completionMode: Indexed\n  template:"),
		errs: []string{`t.yaml:4: spec.completions: Required value: when completion mode is Indexed`}},
	{name: "job backoffLimitPerIndex without Indexed", in: with(jobBase, "spec:\n  template:", "spec:\n  backoffLimitPerIndex: 1\n  maxFailedIndexes: 1\n  template:"),
		errs: []string{
			`t.yaml:5: spec.backoffLimitPerIndex: requires indexed completion mode`,
			`t.yaml:6: spec.maxFailedIndexes: requires indexed completion mode`,
		}},
	{name: "job maxFailedIndexes without backoffLimitPerIndex", in: with(jobBase, "spec:\n  template:", "spec:\n  completions: 3\n  completionMode: Indexed\n  maxFailedIndexes: 4\n  template:"),
		errs: []string{
			`t.yaml:4: spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified`,
			`t.yaml:7: spec.maxFailedIndexes: must be less than or equal to completions`,
		}},
	{name: "job negative counts", in: with(jobBase, "spec:\n  template:", "spec:\n  parallelism: -1\n  backoffLimit: -2\n  activeDeadlineSeconds: -3\n  template:"),
		errs: []string{
			`t.yaml:5: spec.parallelism: must be greater than or equal to 0`,
			`t.yaml:6: spec.backoffLimit: must be greater than or equal to 0`,
			`t.yaml:7: spec.activeDeadlineSeconds: must be greater than or equal to 0`,
		}},
	{name: "job indexed hostname not a label", in: with(with(jobBase, "name: once", "name: "+strings.Repeat("a", 61)), "spec:\n  template:", "spec:\n  completions: 100\n  completionMode: Indexed\n  template:"),
		errs: []string{`t.yaml:3: metadata.name: invalid value "` + strings.Repeat("a", 61) + `": will not able to create pod with invalid DNS label: ` + strings.Repeat("a", 61) + `-99`}},
	{name: "job podFailurePolicy needs Never", in: with(with(jobBase, "restartPolicy: Never", "restartPolicy: OnFailure"), "spec:\n  template:", "spec:\n  podFailurePolicy: {rules: [{action: FailJob, onExitCodes: {operator: In, values: [1]}}]}\n  template:"),
		errs: []string{`t.yaml:8: spec.template.spec.restartPolicy: invalid value "OnFailure": only "Never" is supported when podFailurePolicy is specified`}},
	{name: "job podFailurePolicy rules", in: with(jobBase, "spec:\n  template:", `spec:
  podFailurePolicy:
    rules:
    - action: FailIndex
      onExitCodes: {containerName: other, operator: In, values: [0, 3, 2, 2]}
    - action: Retry
      onPodConditions: [{type: DisruptionTarget, status: Maybe}]
    - action: Count
  template:`),
		errs: []string{
			`t.yaml:7: spec.podFailurePolicy.rules[0].action: invalid value "FailIndex": requires the backoffLimitPerIndex to be set`,
			`t.yaml:8: spec.podFailurePolicy.rules[0].onExitCodes.containerName: invalid value "other": must be one of the container or initContainer names in the pod template`,
			`t.yaml:8: spec.podFailurePolicy.rules[0].onExitCodes.values[0]: must not be 0 for the In operator`,
			`t.yaml:8: spec.podFailurePolicy.rules[0].onExitCodes.values[2]: must be ordered`,
			`t.yaml:8: spec.podFailurePolicy.rules[0].onExitCodes.values[3]: duplicate value 2`,
			`t.yaml:9: spec.podFailurePolicy.rules[1].action: unsupported value "Retry": must be "Count", "FailIndex", "FailJob" or "Ignore"`,
			`t.yaml:10: spec.podFailurePolicy.rules[1].onPodConditions[0].status: unsupported value "Maybe": must be "True", "False" or "Unknown"`,
			`t.yaml:11: spec.podFailurePolicy.rules[2]: specifying one of OnExitCodes and OnPodConditions is required`,
		}},
	{name: "job selector is generated", in: with(jobBase, "spec:\n  template:", "spec:\n  selector: {matchLabels: {app: x}}\n  template:"),
		errs: []string{`t.yaml:5: spec.selector: unsupported by dockctl`}},

	// CronJob.
	{name: "cronjob", in: cronBase},
	{name: "cronjob macro, time zone, policies", in: with(cronBase, `  schedule: "0 3 * * *"`,
		"  schedule: \"@daily\"\n  timeZone: America/New_York\n  concurrencyPolicy: Replace\n  suspend: true\n  startingDeadlineSeconds: 200\n  successfulJobsHistoryLimit: 0\n  failedJobsHistoryLimit: 0")},
	{name: "cronjob @every, as Kubernetes accepts it", in: with(cronBase, `"0 3 * * *"`, `"@every 2h"`)},
	{name: "cronjob schedule out of range", in: with(cronBase, `"0 3 * * *"`, `"61 * * * *"`),
		errs: []string{`t.yaml:5: spec.schedule: invalid value "61 * * * *": end of range (61) above maximum (59): 61`}},
	{name: "cronjob schedule of six fields", in: with(cronBase, `"0 3 * * *"`, `"0 0 3 * * *"`),
		errs: []string{`t.yaml:5: spec.schedule: invalid value "0 0 3 * * *": expected exactly 5 fields, found 6: [0 0 3 * * *]`}},
	{name: "cronjob schedule missing", in: with(cronBase, "  schedule: \"0 3 * * *\"\n", ""),
		errs: []string{`t.yaml:4: spec.schedule: required`}},
	{name: "cronjob CRON_TZ in schedule", in: with(cronBase, `"0 3 * * *"`, `"CRON_TZ=Europe/Paris 0 3 * * *"`),
		errs: []string{`t.yaml:5: spec.schedule: invalid value "CRON_TZ=Europe/Paris 0 3 * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead`}},
	{name: "cronjob TZ without fields does not panic", in: with(cronBase, `"0 3 * * *"`, `"TZ=UTC"`),
		errs: []string{
			`t.yaml:5: spec.schedule: invalid value "TZ=UTC": invalid schedule: runtime error: slice bounds out of range [:-1]`,
			`t.yaml:5: spec.schedule: invalid value "TZ=UTC": cannot use TZ or CRON_TZ in schedule, use timeZone field instead`,
		}},
	{name: "cronjob unknown time zone", in: with(cronBase, "  jobTemplate:", "  timeZone: Europe/Pariss\n  jobTemplate:"),
		errs: []string{`t.yaml:6: spec.timeZone: invalid value "Europe/Pariss": unknown time zone Europe/Pariss`}},
	{name: "cronjob Local time zone", in: with(cronBase, "  jobTemplate:", "  timeZone: Local\n  jobTemplate:"),
		errs: []string{`t.yaml:6: spec.timeZone: invalid value "Local": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones`}},
	{name: "cronjob bad policy and limits", in: with(cronBase, "  jobTemplate:", "  concurrencyPolicy: Queue\n  startingDeadlineSeconds: -1\n  failedJobsHistoryLimit: -1\n  jobTemplate:"),
		errs: []string{
			`t.yaml:6: spec.concurrencyPolicy: unsupported value "Queue": must be "Allow", "Forbid" or "Replace"`,
			`t.yaml:7: spec.startingDeadlineSeconds: must be greater than or equal to 0`,
			`t.yaml:8: spec.failedJobsHistoryLimit: must be greater than or equal to 0`,
		}},
	{name: "cronjob name too long for its jobs", in: with(cronBase, "name: backup", "name: "+strings.Repeat("b", 53)),
		errs: []string{`t.yaml:3: metadata.name: must be no more than 52 characters`}},
	{name: "cronjob job template checked as a job", in: with(cronBase, "restartPolicy: OnFailure", "restartPolicy: Always"),
		errs: []string{`t.yaml:10: spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`}},

	// Pod.
	{name: "pod", in: standalonePodBase},
	{name: "pod restartPolicy Never", in: with(standalonePodBase, "spec:\n", "spec:\n  restartPolicy: Never\n")},
	{name: "pod network annotation on its own metadata", in: with(standalonePodBase, "metadata: {name: test}", "metadata: {name: test, annotations: {dockctl.io/network: frontend}}")},
	{name: "pod bad restartPolicy", in: with(standalonePodBase, "spec:\n", "spec:\n  restartPolicy: Sometimes\n"),
		errs: []string{`t.yaml:5: spec.restartPolicy: unsupported value "Sometimes": must be "Always", "OnFailure" or "Never"`}},
	{name: "pod reserved label", in: with(standalonePodBase, "metadata: {name: test}", "metadata: {name: test, labels: {io.dockctl.pod: x}}"),
		errs: []string{`t.yaml:3: metadata.labels[io.dockctl.pod]: label key io.dockctl.pod is reserved for dockctl`}},
	{name: "pod network annotation host", in: with(standalonePodBase, "metadata: {name: test}", "metadata: {name: test, annotations: {dockctl.io/network: host}}"),
		errs: []string{`t.yaml:3: metadata.annotations[dockctl.io/network]: "host" is not a network to join: use spec.template.spec.hostNetwork: true (which the controller allows only with --allow-host-namespaces)`}},
}

func TestWorkloadValidation(t *testing.T) {
	for _, tc := range workloadValidationCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeWorkloads("t.yaml", []byte(tc.in))
			var got []string
			if err != nil {
				for _, fe := range err.(ErrorList) {
					got = append(got, fe.Error())
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.errs, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.errs, "\n"))
			}
		})
	}
}

// A workload changed in code is checked by the rules of the files: a
// StatefulSet scaled below zero, a Job made to restart Always.
func TestValidateWorkloadChangedInCode(t *testing.T) {
	ss := decodeWorkloadsOK(t, "s.yaml", stsBase)[0].StatefulSet
	if err := ValidateWorkload(ss); err != nil {
		t.Fatalf("decoded StatefulSet: %v", err)
	}
	*ss.Spec.Replicas = -1
	if err := ValidateWorkload(ss); err == nil || err.Error() != "spec.replicas: must be greater than or equal to 0" {
		t.Errorf("scaled to -1: %v", err)
	}
	job := decodeWorkloadsOK(t, "j.yaml", jobBase)[0].Job
	job.Spec.Template.Spec.RestartPolicy = RestartAlways
	if err := ValidateWorkload(job); err == nil || err.Error() != `spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"` {
		t.Errorf("Job restarting Always: %v", err)
	}
}

const stsForbidden = `spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', ` +
	`'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden (changed: %s; ` +
	`to change them, delete the StatefulSet with --cascade=orphan and apply it again: its pods and claims keep running and are adopted)`

// defaulted decodes the one workload of in with the defaults the store
// gives it, as an update is validated.
func defaulted(t *testing.T, in string) Workload {
	t.Helper()
	d := decodeWorkloadsOK(t, "w.yaml", in)[0]
	switch {
	case d.StatefulSet != nil:
		SetStatefulSetDefaults(d.StatefulSet)
		return d.StatefulSet
	case d.DaemonSet != nil:
		SetDaemonSetDefaults(d.DaemonSet)
		return d.DaemonSet
	case d.ReplicaSet != nil:
		SetReplicaSetDefaults(d.ReplicaSet)
		return d.ReplicaSet
	case d.Job != nil:
		SetJobDefaults(d.Job)
		return d.Job
	case d.CronJob != nil:
		SetCronJobDefaults(d.CronJob)
		return d.CronJob
	}
	t.Fatalf("no workload in %q", in)
	return nil
}

// The changes of a live workload the API server refuses are refused with
// its words; the others, defaults left out or written, pass.
func TestValidateWorkloadUpdate(t *testing.T) {
	indexedJob := with(jobBase, "spec:\n", "spec:\n  completionMode: Indexed\n  completions: 3\n  parallelism: 3\n")
	suspendedJob := with(jobBase, "spec:\n", "spec:\n  suspend: true\n")
	for _, tc := range []struct {
		name      string
		live, new string
		started   bool
		err       string
	}{
		{name: "statefulset unchanged", live: stsBase, new: stsBase},
		{name: "statefulset defaults written out", live: stsBase, new: with(stsBase, "  serviceName: db\n",
			"  serviceName: db\n  replicas: 1\n  podManagementPolicy: OrderedReady\n  revisionHistoryLimit: 10\n  updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 0}}\n")},
		{name: "statefulset scaled, new image, strategy, minReadySeconds, history, retention, ordinals", live: stsBase,
			new: with(with(stsBase, "image: postgres:17.2", "image: postgres:17.3"), "  serviceName: db\n",
				"  serviceName: db\n  replicas: 3\n  minReadySeconds: 5\n  revisionHistoryLimit: 2\n  updateStrategy: {type: OnDelete}\n"+
					"  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete}\n  ordinals: {start: 1}\n")},
		{name: "statefulset restarted", live: stsBase,
			new: with(stsBase, "    metadata: {labels: {app: db}}\n", "    metadata: {labels: {app: db}, annotations: {kubectl.kubernetes.io/restartedAt: '2026-12-07T08:00:00Z'}}\n")},
		{name: "statefulset serviceName", live: stsBase, new: with(stsBase, "serviceName: db", "serviceName: pg"),
			err: fmt.Sprintf(stsForbidden, "spec.serviceName")},
		{name: "statefulset claim size and pod management", live: stsBase,
			new: with(with(stsBase, "storage: 1Gi", "storage: 2Gi"), "  serviceName: db\n", "  serviceName: db\n  podManagementPolicy: Parallel\n"),
			err: fmt.Sprintf(stsForbidden, "spec.podManagementPolicy, spec.volumeClaimTemplates")},
		{name: "statefulset selector", live: stsBase,
			new: with(with(stsBase, "matchLabels: {app: db}", "matchLabels: {app: db, v: '2'}"), "labels: {app: db}", "labels: {app: db, v: '2'}"),
			err: fmt.Sprintf(stsForbidden, "spec.selector.matchLabels")},
		{name: "daemonset new template", live: dsBase, new: with(dsBase, "agent:1", "agent:2")},
		{name: "daemonset selector", live: dsBase,
			new: with(with(dsBase, "matchLabels: {app: agent}", "matchLabels: {app: agent2}"), "labels: {app: agent}", "labels: {app: agent2}"),
			err: `spec.selector: Invalid value: {"matchLabels":{"app":"agent2"}}: field is immutable`},
		{name: "replicaset scaled and new template", live: rsBase, new: with(with(rsBase, "replicas: 2", "replicas: 4"), "nginx:1.27", "nginx:1.28")},
		{name: "replicaset selector", live: rsBase,
			new: with(with(rsBase, "matchLabels: {app: web}", "matchLabels: {app: web2}"), "labels: {app: web}", "labels: {app: web2}"),
			err: `spec.selector: Invalid value: {"matchLabels":{"app":"web2"}}: field is immutable`},

		{name: "job defaults written out", live: jobBase,
			new: with(jobBase, "spec:\n", "spec:\n  completions: 1\n  parallelism: 1\n  backoffLimit: 6\n  completionMode: NonIndexed\n  suspend: false\n"), started: true},
		{name: "job suspended, deadline, ttl, backoffLimit", live: jobBase,
			new: with(jobBase, "spec:\n", "spec:\n  suspend: true\n  activeDeadlineSeconds: 60\n  ttlSecondsAfterFinished: 10\n  backoffLimit: 2\n"), started: true},
		{name: "job parallelism", live: jobBase, new: with(jobBase, "spec:\n", "spec:\n  parallelism: 1\n  completions: 1\n"), started: true},
		{name: "job template image", live: jobBase, new: with(jobBase, "busybox:1.36", "busybox:1.37"), started: true,
			err: `spec.template: Invalid value: {"spec":{"restartPolicy":"Never","terminationGracePeriodSeconds":30,"containers":[{"name":"c","image":"busybox:1.37","imagePullPolicy":"IfNotPresent"}]}}: field is immutable ` +
				`(changed: spec.template.spec.containers; a Job runs one template: delete it and create it again to change it)`},
		{name: "job template labels of a started job", live: suspendedJob, started: true,
			new: with(suspendedJob, "    spec:\n      restartPolicy", "    metadata: {labels: {team: a}}\n    spec:\n      restartPolicy"),
			err: `spec.template: Invalid value: {"metadata":{"labels":{"team":"a"}},"spec":{"restartPolicy":"Never","terminationGracePeriodSeconds":30,"containers":[{"name":"c","image":"busybox:1.36","imagePullPolicy":"IfNotPresent"}]}}: field is immutable ` +
				`(changed: spec.template.metadata; a Job runs one template: delete it and create it again to change it)`},
		{name: "job template labels of a suspended job never started", live: suspendedJob,
			new: with(suspendedJob, "    spec:\n      restartPolicy", "    metadata: {labels: {team: a}, annotations: {a: b}}\n    spec:\n      restartPolicy")},
		{name: "job template image of a suspended job never started", live: suspendedJob, new: with(suspendedJob, "busybox:1.36", "busybox:1.37"),
			err: `spec.template: Invalid value: {"spec":{"restartPolicy":"Never","terminationGracePeriodSeconds":30,"containers":[{"name":"c","image":"busybox:1.37","imagePullPolicy":"IfNotPresent"}]}}: field is immutable ` +
				`(changed: spec.template.spec.containers; a Job runs one template: delete it and create it again to change it)`},
		{name: "job completions", live: jobBase, new: with(jobBase, "spec:\n", "spec:\n  completions: 2\n"), started: true,
			err: `spec.completions: Invalid value: 2: field is immutable`},
		{name: "indexed job completions with parallelism", live: indexedJob,
			new: with(indexedJob, "completions: 3\n  parallelism: 3", "completions: 5\n  parallelism: 5"), started: true},
		{name: "indexed job completions alone", live: indexedJob, new: with(indexedJob, "completions: 3", "completions: 5"), started: true,
			err: `spec.completions: Invalid value: 5: can only be modified in tandem with spec.parallelism`},
		{name: "job completion mode", live: indexedJob, new: with(indexedJob, "completionMode: Indexed", "completionMode: NonIndexed"), started: true,
			err: `spec.completionMode: Invalid value: "NonIndexed": field is immutable`},
		{name: "indexed job backoffLimitPerIndex", live: indexedJob, new: with(indexedJob, "parallelism: 3\n", "parallelism: 3\n  backoffLimitPerIndex: 1\n"), started: true,
			err: "spec.backoffLimitPerIndex: Invalid value: 1: field is immutable"},
		{name: "job podFailurePolicy", live: jobBase, started: true,
			new: with(jobBase, "spec:\n", "spec:\n  podFailurePolicy: {rules: [{action: FailJob, onExitCodes: {operator: In, values: [42]}}]}\n"),
			err: `spec.podFailurePolicy: Invalid value: {"rules":[{"action":"FailJob","onExitCodes":{"operator":"In","values":[42]}}]}: field is immutable`},

		{name: "cronjob new job template", live: cronBase, new: with(with(cronBase, "busybox:1.36", "busybox:1.37"), `"0 3 * * *"`, `"0 4 * * *"`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			switch live := defaulted(t, tc.live).(type) {
			case *StatefulSet:
				err = ValidateStatefulSetUpdate(defaulted(t, tc.new).(*StatefulSet), live)
			case *DaemonSet:
				err = ValidateDaemonSetUpdate(defaulted(t, tc.new).(*DaemonSet), live)
			case *ReplicaSet:
				err = ValidateReplicaSetUpdate(defaulted(t, tc.new).(*ReplicaSet), live)
			case *Job:
				err = ValidateJobUpdate(defaulted(t, tc.new).(*Job), live, tc.started)
			case *CronJob:
				err = ValidateWorkload(defaulted(t, tc.new))
			}
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.err {
				t.Errorf("error:\n%s\nwant:\n%s", got, tc.err)
			}
		})
	}
}
