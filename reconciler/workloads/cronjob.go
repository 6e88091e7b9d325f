package workloads

import (
	"fmt"
	"time"

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
			jobs, stale, err := ownedJobs(env.Store, cj, env.OwnerUID)
			if err != nil {
				return Outcome{}, err
			}
			// Jobs of an earlier CronJob of this name: their owner is
			// gone, and the garbage collector deletes them.
			if err := deleteJobs(env.Store, cj.Metadata.Namespace, stale); err != nil {
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
					Name: d.Owner.Name, UID: env.OwnerUID, Controller: &yes, BlockOwnerDeletion: &yes}}
				if _, err := env.Store.Apply(store.Bundle{Jobs: []*manifests.Job{j}}, store.ApplyOptions{Manager: ManagerCronJob}); err != nil {
					return Outcome{}, fmt.Errorf("creating job %s: %w", j.Metadata.Name, err)
				}
			}
			return Outcome{Status: d.Status, Events: d.Events, RequeueAt: d.RequeueAt}, nil
		})
	k.teardown = func(env Env, obj any, _ []string) error {
		cj := obj.(*manifests.CronJob)
		jobs, stale, err := ownedJobs(env.Store, cj, env.OwnerUID)
		if err != nil {
			return err
		}
		names := stale
		for _, j := range jobs {
			names = append(names, j.Name)
		}
		return deleteJobs(env.Store, cj.Metadata.Namespace, names)
	}
	return k
}

// ownedJobs are the live Jobs of cj's namespace that name cj, of uid,
// their controller, with their stored status; stale are those naming an
// earlier CronJob of cj's name (another uid), which cj must not adopt, as
// Kubernetes' controllers match an owner by uid. A reference without a
// uid (stored by an earlier release) is cj's unless the Job is older than
// cj.
func ownedJobs(st Store, cj *manifests.CronJob, uid string) (jobs []cronjob.ObservedJob, stale []string, err error) {
	objs, errs := st.ListObjects(store.KindJob)
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("listing jobs: %w", errs[0])
	}
	ns := cj.Metadata.NamespaceOrDefault()
	var created time.Time
	if o, err := st.LookupObject(store.ObjectRef{Kind: store.KindCronJob, Namespace: ns, Name: cj.Metadata.Name}); err == nil {
		created = o.Created
	}
	for _, o := range objs {
		if o.Deleted || o.Meta.NamespaceOrDefault() != ns {
			continue
		}
		ref := controllerRef(o.Meta, manifests.KindCronJob, cj.Metadata.Name)
		if ref == nil {
			continue
		}
		if ref.UID != uid && (ref.UID != "" || o.Created.Before(created)) {
			stale = append(stale, o.Meta.Name)
			continue
		}
		j := cronjob.ObservedJob{Name: o.Meta.Name, Annotations: o.Meta.Annotations}
		jref := store.ObjectRef{Kind: store.KindJob, Namespace: ns, Name: o.Meta.Name}
		if _, err := st.ReadWorkloadStatus(jref, o.Created, &j.Status); err != nil {
			return nil, nil, fmt.Errorf("reading status of job %s: %w", o.Meta.Name, err)
		}
		jobs = append(jobs, j)
	}
	return jobs, stale, nil
}

// controllerRef is the reference of meta naming kind/name its
// controller (nil: none).
func controllerRef(meta *manifests.ObjectMeta, kind, name string) *manifests.OwnerReference {
	for i, r := range meta.OwnerReferences {
		if r.Kind == kind && r.Name == name && r.Controller != nil && *r.Controller {
			return &meta.OwnerReferences[i]
		}
	}
	return nil
}

// ownedBy reports whether meta names kind/name its controller.
func ownedBy(meta *manifests.ObjectMeta, kind, name string) bool {
	return controllerRef(meta, kind, name) != nil
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
