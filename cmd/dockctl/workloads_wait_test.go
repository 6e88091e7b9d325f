package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/store"
)

const waitJobYAML = `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, labels: {app: db}}
spec:
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: busybox}]
`

// appliedJob applies job migrate in a fresh state directory of instance
// rev, with a fake Docker Engine, and returns the directory, the store
// and the job's reference and creation.
func appliedJob(t *testing.T) (string, *store.Store, store.ObjectRef, *store.StoredObject) {
	t.Helper()
	startFakeDaemon(t)
	dir := t.TempDir()
	if out, err := runCLI(t, dir, waitJobYAML, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	st, err := store.Open(dir, "rev")
	if err != nil {
		t.Fatal(err)
	}
	ref := store.ObjectRef{Kind: store.KindJob, Namespace: "default", Name: "migrate"}
	obj, err := st.LookupObject(ref)
	if err != nil {
		t.Fatal(err)
	}
	return dir, st, ref, obj
}

func jobStatusWith(conds ...batchv1.JobConditionType) *batchv1.JobStatus {
	st := &batchv1.JobStatus{}
	for _, c := range conds {
		st.Conditions = append(st.Conditions, batchv1.JobCondition{Type: c, Status: corev1.ConditionTrue})
		if c == batchv1.JobComplete {
			st.Succeeded = 2
		}
	}
	return st
}

// wait judges a Job by the status its controller wrote, as kubectl's
// wait judges the API object: condition=complete and =failed (any case),
// jsonpath on its status, -l on its labels; an unmet condition is exit 1
// with kubectl's words.
func TestWaitJobConditions(t *testing.T) {
	dir, st, ref, obj := appliedJob(t)
	tests := []struct {
		name     string
		status   *batchv1.JobStatus
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{name: "complete job meets condition=complete", status: jobStatusWith(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete),
			args: []string{"--for=condition=complete", "job/migrate"}, wantOut: "job.batch/migrate condition met\n"},
		{name: "condition type is compared case-insensitively", status: jobStatusWith(batchv1.JobComplete),
			args: []string{"--for=condition=Complete", "jobs", "migrate"}, wantOut: "job.batch/migrate condition met\n"},
		{name: "complete job does not meet condition=failed", status: jobStatusWith(batchv1.JobComplete),
			args: []string{"--for=condition=failed", "job/migrate", "--timeout=0"}, wantCode: 1, wantErr: "condition not met for jobs/migrate"},
		{name: "failed job meets condition=failed", status: jobStatusWith(batchv1.JobFailureTarget, batchv1.JobFailed),
			args: []string{"--for=condition=failed", "job/migrate"}, wantOut: "job.batch/migrate condition met\n"},
		{name: "running job times out on condition=complete", status: &batchv1.JobStatus{Active: 2},
			args: []string{"--for=condition=complete", "job/migrate", "--timeout=50ms"}, wantCode: 1, wantErr: "timed out waiting for the condition on jobs/migrate"},
		{name: "jsonpath reads the job's status", status: jobStatusWith(batchv1.JobComplete),
			args: []string{"--for=jsonpath={.status.succeeded}=2", "job/migrate"}, wantOut: "job.batch/migrate condition met\n"},
		{name: "a selector picks jobs by their labels", status: jobStatusWith(batchv1.JobComplete),
			args: []string{"--for=condition=complete", "jobs", "-l", "app=db"}, wantOut: "job.batch/migrate condition met\n"},
		{name: "a selector matching no job is kubectl's error", status: jobStatusWith(batchv1.JobComplete),
			args: []string{"--for=condition=complete", "jobs", "-l", "app=none"}, wantCode: 1, wantErr: "no matching resources found"},
		{name: "a job that does not exist is not found",
			args: []string{"--for=condition=complete", "job/nope"}, wantCode: 1, wantErr: `"nope" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.status != nil {
				if err := st.WriteWorkloadStatus(ref, obj.Created, 1, tt.status); err != nil {
					t.Fatal(err)
				}
			}
			code, out, errOut := runMain(t, "", append([]string{"--state-dir", dir, "--instance", "rev", "wait"}, tt.args...)...)
			if code != tt.wantCode || out != tt.wantOut || !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("exit %d, out %q, stderr %q; want exit %d, out %q, stderr with %q", code, out, errOut, tt.wantCode, tt.wantOut, tt.wantErr)
			}
		})
	}
}

// A wait started on a running Job wakes when its controller writes
// Complete, and --for=delete is met once the Job is deleted.
func TestWaitJobWakesOnStatusAndDelete(t *testing.T) {
	dir, st, ref, obj := appliedJob(t)
	if err := st.WriteWorkloadStatus(ref, obj.Created, 1, batchv1.JobStatus{Active: 1}); err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- cliCommand(nil, out, out, "--state-dir", dir, "--instance", "rev", "wait", "--for=condition=complete", "job/migrate", "--timeout=2m").ExecuteContext(context.Background())
	}()
	if err := st.WriteWorkloadStatus(ref, obj.Created, 1, jobStatusWith(batchv1.JobComplete)); err != nil {
		t.Fatal(err)
	}
	ends(t, out, done, "job.batch/migrate condition met\n")

	if out, err := runCLI(t, dir, "", "delete", "job", "migrate"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var b bytes.Buffer
	if err := cliCommand(nil, &b, &b, "--state-dir", dir, "--instance", "rev", "wait", "--for=delete", "job/migrate", "--timeout=2m").Execute(); err != nil || b.String() != "" {
		t.Fatalf("wait --for=delete of a deleted job: %v %q", err, b.String())
	}
}
