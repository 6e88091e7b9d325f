package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dockctl/dockctl/store"
)

const workloadsFixtureYAML = `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, labels: {app: db}}
spec:
  completions: 3
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: busybox}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: backup}
spec:
  schedule: "*/5 * * * *"
  timeZone: Europe/Paris
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: b, image: busybox}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: w, image: nginx}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: a, image: busybox}]
`

// apply, get (kubectl's columns, -o name, -o yaml with status), describe
// and delete of the workload kinds, and get all listing them.
func TestWorkloadKindsApplyGetDescribeDelete(t *testing.T) {
	dir := t.TempDir()
	out, errOut, err := run(t, workloadsFixtureYAML, "--state-dir", dir, "apply", "-f", "-")
	if err != nil {
		t.Fatalf("apply: %v %s", err, errOut)
	}
	for _, want := range []string{"job/migrate created", "cronjob/backup created", "replicaset/web created", "daemonset/agent created"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply said %q, want %q", out, want)
		}
	}
	st, err := store.Open(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	ref := store.ObjectRef{Kind: store.KindJob, Namespace: "default", Name: "migrate"}
	obj, err := st.LookupObject(ref)
	if err != nil {
		t.Fatal(err)
	}
	start := metav1.NewTime(time.Now().Add(-time.Minute))
	js := batchv1.JobStatus{Succeeded: 2, StartTime: &start,
		Conditions: []batchv1.JobCondition{{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}
	if err := st.WriteWorkloadStatus(ref, obj.Created, 1, js); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"get", "jobs"}, []string{"NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE", "migrate", "Complete", "2/3"}},
		{[]string{"get", "job", "migrate", "-o", "name"}, []string{"job.batch/migrate"}},
		{[]string{"get", "cj"}, []string{"SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "backup", "*/5 * * * *", "Europe/Paris", "false", "<none>"}},
		{[]string{"get", "rs"}, []string{"DESIRED", "CURRENT", "READY", "web", "2"}},
		{[]string{"get", "ds"}, []string{"DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "agent"}},
		{[]string{"get", "jobs", "-o", "yaml"}, []string{"kind: Job", "succeeded: 2", "namespace: default"}},
		{[]string{"describe", "job", "migrate"}, []string{"Name:", "migrate", "Spec:", "completions: 3", "Status:", "succeeded: 2"}},
		{[]string{"get", "all"}, []string{"daemonset.apps/agent", "replicaset.apps/web", "cronjob.batch/backup", "job.batch/migrate"}},
	} {
		out, errOut, err := run(t, "", append([]string{"--state-dir", dir}, tc.args...)...)
		if err != nil {
			t.Errorf("%v: %v %s", tc.args, err, errOut)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v printed\n%s\nwant %q in it", tc.args, out, w)
			}
		}
	}
	if _, errOut, err := run(t, "", "--state-dir", dir, "delete", "job", "migrate"); err != nil {
		t.Fatalf("delete: %v %s", err, errOut)
	}
	out, _, _ = run(t, "", "--state-dir", dir, "get", "jobs")
	if bytes.Contains([]byte(out), []byte("migrate")) {
		t.Errorf("get jobs after delete printed %q", out)
	}
}
