package main

import (
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

const backupCronJobYAML = `apiVersion: batch/v1
kind: CronJob
metadata: {name: backup}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    metadata: {labels: {app: backup}, annotations: {team: ops}}
    spec:
      backoffLimit: 2
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: b, image: busybox, command: [date]}]
`

// create job prints, with --dry-run=client -o yaml, the Job kubectl
// builds (golden files): of an image, or from a CronJob's jobTemplate
// with cronjob.kubernetes.io/instantiate: manual and the CronJob as its
// controller owner; and stores nothing.
func TestCreateJobDryRunPrintsKubectlsJob(t *testing.T) {
	for _, tt := range []struct {
		golden string
		args   []string
	}{
		{"create-job-image", []string{"create", "job", "date", "--image=busybox", "--", "date", "-u"}},
		{"create-job-from-cronjob", []string{"create", "job", "backup-manual", "--from=cronjob/backup"}},
		{"create-job-from-cronjob-namespaced", []string{"create", "job", "backup-manual", "--from=cj/backup", "-n", "default"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			dir := t.TempDir()
			runner(t, []string{"--state-dir", dir})(backupCronJobYAML, "apply", "-f", "-")
			out, errOut, err := run(t, "", append([]string{"--state-dir", dir}, withFlags(tt.args, "--dry-run=client", "-o", "yaml")...)...)
			if err != nil {
				t.Fatalf("%v stderr %q", err, errOut)
			}
			golden(t, tt.golden, []byte(out))
			if got, _, _ := run(t, "", "--state-dir", dir, "get", "jobs", "-o", "name"); strings.TrimSpace(got) != "" {
				t.Fatalf("a dry run stored %q", got)
			}
		})
	}
}

// create job --from=cronjob/NAME stores the Job with its owner reference
// (so the CronJob's controller counts it and deleting the CronJob deletes
// it), and refuses what kubectl refuses, in its words.
func TestCreateJobFromCronJobStoresOwnedJob(t *testing.T) {
	dir := t.TempDir()
	runner(t, []string{"--state-dir", dir})(backupCronJobYAML, "apply", "-f", "-")
	out, errOut, err := run(t, "", "--state-dir", dir, "create", "job", "backup-manual", "--from=cronjob/backup")
	if err != nil || out != "job/backup-manual created\n" {
		t.Fatalf("%q %v stderr %q", out, err, errOut)
	}
	st, err := store.Open(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	o, err := st.LookupObject(store.ObjectRef{Kind: store.KindJob, Namespace: "default", Name: "backup-manual"})
	if err != nil {
		t.Fatal(err)
	}
	j := o.Object.(*manifests.Job)
	if refs := j.Metadata.OwnerReferences; len(refs) != 1 || refs[0].Kind != "CronJob" || refs[0].Name != "backup" ||
		refs[0].APIVersion != "batch/v1" || refs[0].Controller == nil || !*refs[0].Controller || refs[0].BlockOwnerDeletion != nil {
		t.Errorf("ownerReferences %+v, want kubectl's controller reference to cronjob backup", refs)
	}
	if j.Metadata.Annotations[annotationInstantiate] != "manual" || j.Metadata.Labels["app"] != "backup" ||
		j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit != 2 || j.Spec.Template.Spec.Containers[0].Image != "busybox" {
		t.Errorf("stored job %+v, want the cronjob's job template", j)
	}

	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"an existing name is AlreadyExists", []string{"backup-manual", "--from=cronjob/backup"}, `jobs.batch "backup-manual" already exists`},
		{"a missing cronjob is NotFound", []string{"x", "--from=cronjob/nope"}, `cronjobs.batch "nope" not found`},
		{"from another kind is refused", []string{"x", "--from=deployment/web"}, "unknown object type Deployment"},
		{"neither image nor from", []string{"x"}, "either --image or --from must be specified"},
		{"both image and from", []string{"x", "--image=busybox", "--from=cronjob/backup"}, "either --image or --from must be specified"},
		{"from with a command", []string{"x", "--from=cronjob/backup", "--", "date"}, "cannot specify --from and command"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, err := run(t, "", append([]string{"--state-dir", dir, "create", "job"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v stderr %q, want %q", err, errOut, tt.want)
			}
		})
	}
}
