package workloads

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

func cronYAML(extra string) string {
	return `apiVersion: batch/v1
kind: CronJob
metadata:
  name: tick
spec:
  schedule: "* * * * *"
` + extra + `
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: work
            image: busybox
`
}

// jobs are the names of the live Jobs the CronJob tick controls, sorted.
func (f *frame) cronJobs() []string {
	objs, errs := f.st.ListObjects(store.KindJob)
	if len(errs) > 0 {
		f.t.Fatal(errs)
	}
	var out []string
	for _, o := range objs {
		if !o.Deleted && ownedBy(o.Meta, manifests.KindCronJob, "tick") {
			out = append(out, o.Meta.Name)
		}
	}
	slices.Sort(out)
	return out
}

// toNextMinute sets the fake clock 1 s past the first minute after the
// CronJob's creation (the store stamps it with the real time).
func (f *frame) toNextMinute() {
	obj, err := f.st.LookupObject(store.ObjectRef{Kind: store.KindCronJob, Namespace: "default", Name: "tick"})
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.now = obj.Created.Truncate(time.Minute).Add(time.Minute + time.Second)
	f.mu.Unlock()
}

// dueJob applies CronJob tick with the extra spec lines and syncs it at
// its first due minute; it returns the CronJob's key and the one Job
// that sync created.
func (f *frame) dueJob(extra string) (key, job string) {
	f.t.Helper()
	f.apply(cronYAML(extra))
	f.toNextMinute()
	key = Key(store.KindCronJob, "default", "tick")
	f.sync(key)
	jobs := f.cronJobs()
	if len(jobs) != 1 {
		f.t.Fatalf("jobs %v, want one at the due minute", jobs)
	}
	return key, jobs[0]
}

func TestCronJobCreatesAnOwnedJobAtTheDueMinuteAndForbidSkipsWhileActive(t *testing.T) {
	f := newFrame(t)
	key, job := f.dueJob("  concurrencyPolicy: Forbid")
	jobs := []string{job}
	// The frame runs the Job's pod; it is still active a minute later.
	f.sync(Key(store.KindJob, "default", jobs[0]))
	if n := len(f.running(store.KindJob, jobs[0])); n != 1 {
		t.Fatalf("job %s runs %d pods, want 1", jobs[0], n)
	}
	f.sync(Key(store.KindJob, "default", jobs[0]))
	f.advance(time.Minute)
	f.sync(key)
	if got := f.cronJobs(); !slices.Equal(got, jobs) {
		t.Errorf("jobs %v under Forbid while %s is active, want it alone", got, jobs[0])
	}
}

func TestCronJobDeletesFinishedJobsBeyondItsHistoryLimit(t *testing.T) {
	f := newFrame(t)
	f.apply(cronYAML("  successfulJobsHistoryLimit: 1"))
	f.toNextMinute()
	key := Key(store.KindCronJob, "default", "tick")
	for range 3 {
		f.sync(key)
		for _, j := range f.cronJobs() {
			jk := Key(store.KindJob, "default", j)
			f.sync(jk)
			f.exitAll(store.KindJob, j, 0)
			f.sync(jk)
			f.sync(jk) // Complete once no pod is terminating
		}
		f.advance(time.Minute)
	}
	f.sync(key)
	got := f.cronJobs()
	// The newest finished Job is kept (limit 1), plus the one the last
	// sync created.
	if len(got) != 2 {
		t.Errorf("jobs %v, want the newest finished one and the new one", got)
	}
	for _, j := range got {
		if !strings.HasPrefix(j, "tick-") {
			t.Errorf("job %s not named for its schedule time", j)
		}
	}
}

func TestDeletingACronJobDeletesItsJobs(t *testing.T) {
	f := newFrame(t)
	key, _ := f.dueJob("")
	if _, err := f.st.DeleteObjects([]store.ObjectRef{{Kind: store.KindCronJob, Namespace: "default", Name: "tick"}}); err != nil {
		t.Fatal(err)
	}
	f.sync(key)
	if got := f.cronJobs(); len(got) != 0 {
		t.Errorf("jobs %v after the CronJob's delete, want none", got)
	}
}

func TestCronJobAppliedAgainAfterDeleteAdoptsNoJobOfTheOldOne(t *testing.T) {
	f := newFrame(t)
	key, oldJob := f.dueJob("  concurrencyPolicy: Forbid")
	old := []string{oldJob}
	f.sync(Key(store.KindJob, "default", old[0]))
	// Deleted and applied again before any sync saw the delete: the new
	// CronJob (another uid) owns none of the old one's Jobs, which the
	// garbage collector deletes as their owner is gone.
	if _, err := f.st.DeleteObjects([]store.ObjectRef{{Kind: store.KindCronJob, Namespace: "default", Name: "tick"}}); err != nil {
		t.Fatal(err)
	}
	f.apply(cronYAML("  concurrencyPolicy: Forbid"))
	f.toNextMinute()
	f.advance(time.Minute)
	f.sync(key)
	got := f.cronJobs()
	if slices.Contains(got, old[0]) {
		t.Errorf("jobs %v: the old CronJob's job %s is still there, adopted by the new one", got, old[0])
	}
	if len(got) != 1 {
		t.Errorf("jobs %v, want the new CronJob's own one (Forbid counts no Job of the old one)", got)
	}
	obj, err := f.st.LookupObject(store.ObjectRef{Kind: store.KindCronJob, Namespace: "default", Name: "tick"})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range got {
		jo, err := f.st.LookupObject(store.ObjectRef{Kind: store.KindJob, Namespace: "default", Name: j})
		if err != nil {
			t.Fatal(err)
		}
		if refs := jo.Meta.OwnerReferences; len(refs) != 1 || refs[0].UID != obj.UID() {
			t.Errorf("job %s ownerReferences %+v, want the CronJob's uid %s", j, refs, obj.UID())
		}
	}
}

// delete --cascade=orphan of a CronJob leaves its Jobs, without the
// ownerReference naming it, and their pods running; the CronJob's
// teardown deletes none of them.
func TestOrphaningACronJobLeavesItsJobsAndTheirPods(t *testing.T) {
	f := newFrame(t)
	_, job := f.dueJob("")
	jobs := []string{job}
	pods := f.runPods(store.KindJob, jobs[0], 1)
	f.settle(f.orphanDelete(store.KindCronJob, "tick"))
	f.settle(Key(store.KindJob, "default", jobs[0]))
	jo, err := f.st.LookupObject(store.ObjectRef{Kind: store.KindJob, Namespace: "default", Name: jobs[0]})
	if err != nil {
		t.Fatal(err)
	}
	if jo.Deleted || len(jo.Meta.OwnerReferences) != 0 {
		t.Errorf("job %s: deleted %v, ownerReferences %+v; want it kept without owner", jobs[0], jo.Deleted, jo.Meta.OwnerReferences)
	}
	f.untouched(store.KindJob, jobs[0], pods, "after the CronJob's orphaning delete")
}
