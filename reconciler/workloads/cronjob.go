package workloads

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/cronjob"
	"github.com/dockctl/dockctl/reconciler/workload"
	"github.com/dockctl/dockctl/store"
)

// ManagerCronJob is the store manager of the Jobs a CronJob creates
// (kube-controller-manager's field manager).
const ManagerCronJob = "cronjob-controller"

// CronJobKind runs a CronJob with the CronJob controller's decision
// (package cronjob). A CronJob has no pods of its own: its Jobs are stored
// objects owned by it (ownerReferences batch/v1 CronJob, controller), read
// back from the store with the status the frame wrote for them, and run by
// the frame as any Job. Deleting it deletes its Jobs (the garbage
// collector's cascade), which takes their pods.
func CronJobKind() Kind {
	k := For(manifests.KindCronJob, func(cj *manifests.CronJob) *manifests.PodTemplateSpec { return &cj.Spec.JobTemplate.Spec.Template },
		func(env Env, cj *manifests.CronJob, prev batchv1.CronJobStatus, _ []workload.ObservedPod) (Outcome, error) {
			jobs, err := ownedJobs(env.Store, cj)
			if err != nil {
				return Outcome{}, err
			}
			d := cronjob.Sync(cj, prev, jobs, env.Now)
			if err := deleteJobs(env.Store, cj.Metadata.Namespace, d.Delete); err != nil {
				return Outcome{}, err
			}
			if d.Create != nil {
				j := d.Create
				j.Metadata.Namespace = cj.Metadata.Namespace
				yes := true
				j.Metadata.OwnerReferences = []manifests.OwnerReference{{APIVersion: manifests.BatchAPIVersion, Kind: d.Owner.Kind,
					Name: d.Owner.Name, Controller: &yes, BlockOwnerDeletion: &yes}}
				if _, err := env.Store.Apply(store.Bundle{Jobs: []*manifests.Job{j}}, store.ApplyOptions{Manager: ManagerCronJob}); err != nil {
					return Outcome{}, fmt.Errorf("creating job %s: %w", j.Metadata.Name, err)
				}
			}
			return Outcome{Status: d.Status, Events: d.Events, RequeueAt: d.RequeueAt}, nil
		})
	k.teardown = func(env Env, obj any, _ []string) error {
		cj := obj.(*manifests.CronJob)
		jobs, err := ownedJobs(env.Store, cj)
		if err != nil {
			return err
		}
		names := make([]string, len(jobs))
		for i, j := range jobs {
			names[i] = j.Name
		}
		return deleteJobs(env.Store, cj.Metadata.Namespace, names)
	}
	return k
}

// ownedJobs are the live Jobs of cj's namespace that name cj their
// controller, with their stored status.
func ownedJobs(st Store, cj *manifests.CronJob) ([]cronjob.ObservedJob, error) {
	objs, errs := st.ListObjects(store.KindJob)
	if len(errs) > 0 {
		return nil, fmt.Errorf("listing jobs: %w", errs[0])
	}
	ns := cj.Metadata.NamespaceOrDefault()
	var out []cronjob.ObservedJob
	for _, o := range objs {
		if o.Deleted || o.Meta.NamespaceOrDefault() != ns || !ownedBy(o.Meta, manifests.KindCronJob, cj.Metadata.Name) {
			continue
		}
		j := cronjob.ObservedJob{Name: o.Meta.Name, Annotations: o.Meta.Annotations}
		ref := store.ObjectRef{Kind: store.KindJob, Namespace: ns, Name: o.Meta.Name}
		if _, err := st.ReadWorkloadStatus(ref, o.Created, &j.Status); err != nil {
			return nil, fmt.Errorf("reading status of job %s: %w", o.Meta.Name, err)
		}
		out = append(out, j)
	}
	return out, nil
}

// ownedBy reports whether meta names kind/name its controller.
func ownedBy(meta *manifests.ObjectMeta, kind, name string) bool {
	for _, r := range meta.OwnerReferences {
		if r.Kind == kind && r.Name == name && r.Controller != nil && *r.Controller {
			return true
		}
	}
	return false
}

func deleteJobs(st Store, ns string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	refs := make([]store.ObjectRef, len(names))
	for i, n := range names {
		refs[i] = store.ObjectRef{Kind: store.KindJob, Namespace: ns, Name: n}
	}
	if _, err := st.DeleteObjects(refs); err != nil {
		return fmt.Errorf("deleting jobs: %w", err)
	}
	return nil
}
