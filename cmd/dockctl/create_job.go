package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// AnnotationInstantiate marks a Job created by hand from a CronJob, as
// kubectl's create job --from sets it (the CronJob controller's own Jobs
// carry its scheduled time instead).
const annotationInstantiate = "cronjob.kubernetes.io/instantiate"

// newCreateJobCommand is kubectl's create job: a Job of one image, or
// one from a CronJob's jobTemplate (--from=cronjob/NAME), named as a
// CronJob's controller names its Jobs' owner (ownerReferences batch/v1
// CronJob, controller, without blockOwnerDeletion as kubectl leaves it
// out), so that deleting the CronJob deletes it and its controller counts
// it among its active Jobs (docs/design.md §17.1).
func newCreateJobCommand(g *globalOptions) *cobra.Command {
	var (
		out   createOutput
		image string
		from  string
	)
	cmd := &cobra.Command{
		Use:   "job NAME --image=image [--from=cronjob/name] -- [COMMAND] [args...]",
		Short: "Create a job of an image, or from a cronjob's job template",
		Example: `  # Run a job of busybox that prints the date
  dockctl create job date --image=busybox -- date

  # Run cronjob backup now, as a job named backup-manual
  dockctl create job backup-manual --from=cronjob/backup

  # Print the job it would create
  dockctl create job backup-manual --from=cronjob/backup --dry-run=client -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf(cmd, "NAME is required")
			}
			name, command := args[0], args[1:]
			// kubectl's validation words.
			if (image == "") == (from == "") {
				return errors.New("either --image or --from must be specified")
			}
			if len(command) > 0 && from != "" {
				return errors.New("cannot specify --from and command")
			}
			var (
				j   *manifests.Job
				err error
			)
			if from != "" {
				j, err = jobFromCronJob(g, name, from)
			} else {
				j = &manifests.Job{Metadata: manifests.ObjectMeta{Name: name}, Spec: manifests.JobSpec{
					Template: manifests.PodTemplateSpec{Spec: manifests.PodSpec{
						Containers:    []manifests.Container{{Name: name, Image: image, Command: command}},
						RestartPolicy: "Never",
					}},
				}}
			}
			if err != nil {
				return err
			}
			j.APIVersion, j.Kind = manifests.BatchAPIVersion, manifests.KindJob
			if g.nsExplicit() {
				j.Metadata.Namespace = g.namespace // kubectl's EnforceNamespace
			}
			return createJob(cmd, g, &out, j)
		},
	}
	cmd.Flags().StringVar(&image, "image", "", "image of the job's one container (named as the job)")
	cmd.Flags().StringVar(&from, "from", "", "the resource to create the job from: cronjob/NAME")
	out.addFlags(cmd)
	return cmd
}

// jobFromCronJob is kubectl's createJobFromCronJob: the jobTemplate's
// spec, its labels, its annotations with cronjob.kubernetes.io/instantiate:
// manual, and the CronJob as controller owner.
func jobFromCronJob(g *globalOptions, name, from string) (*manifests.Job, error) {
	word, cjName, ok := strings.Cut(from, "/")
	if !ok || cjName == "" {
		return nil, fmt.Errorf("from must be an existing cronjob: there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'dockctl get resource/<resource_name>' instead of 'dockctl get resource resource/<resource_name>'")
	}
	kind, known := kindAlias(word)
	if !known {
		return nil, fmt.Errorf("from must be an existing cronjob: %w", unknownResourceType(word))
	}
	if kind != kindCronJob {
		return nil, fmt.Errorf("unknown object type %s", apiResourceOf(kind).kind)
	}
	st, err := g.readStore()
	if err != nil {
		return nil, err
	}
	o, err := st.LookupObject(store.ObjectRef{Kind: store.KindCronJob, Namespace: g.namespace, Name: cjName})
	if err == nil && o.Deleted {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, notFoundIn(g, kindCronJob, g.namespace, cjName, err)
	}
	cj := o.Object.(*manifests.CronJob)
	// A copy of the template's spec, so that the job owns its own.
	var spec manifests.JobSpec
	b, err := json.Marshal(cj.Spec.JobTemplate.Spec)
	if err == nil {
		err = json.Unmarshal(b, &spec)
	}
	if err != nil {
		return nil, fmt.Errorf("job template of cronjob %q: %w", cjName, err)
	}
	ann := map[string]string{annotationInstantiate: "manual"}
	maps.Copy(ann, cj.Spec.JobTemplate.Metadata.Annotations)
	yes := true
	return &manifests.Job{
		Metadata: manifests.ObjectMeta{Name: name, Labels: maps.Clone(cj.Spec.JobTemplate.Metadata.Labels), Annotations: ann,
			OwnerReferences: []manifests.OwnerReference{{APIVersion: manifests.BatchAPIVersion, Kind: manifests.KindCronJob,
				Name: cjName, Controller: &yes}}},
		Spec: spec,
	}, nil
}

// createJob stores j and prints it as createObject does. The Job is
// stored as built, not decoded from YAML as createObject's objects are:
// the decoder drops ownerReferences, which the controllers set and which
// create job --from sets as kubectl does.
func createJob(cmd *cobra.Command, g *globalOptions, o *createOutput, j *manifests.Job) error {
	dry, p, err := o.parse()
	if err != nil {
		return err
	}
	name := j.Metadata.Name
	stored := *j
	stored.Metadata.Namespace = g.namespace
	if err := manifests.ValidateWorkload(&stored); err != nil {
		return fmt.Errorf("%s/%s: %w", kindJob, name, err)
	}
	if !dry {
		b := &bundle{Bundle: store.Bundle{Jobs: []*manifests.Job{&stored}}}
		if err := storeCreated(g, kindJob, b); err != nil {
			return err
		}
	}
	if p != nil {
		return p.print(cmd.OutOrStdout(), &table{kind: apiResourceOf(kindJob).qualified(), rows: []row{{name: name, object: func() (any, error) { return j, nil }}}}, true, false)
	}
	suffix := ""
	if dry {
		suffix = " (dry run)"
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s/%s created%s\n", kindJob, name, suffix)
	return err
}
