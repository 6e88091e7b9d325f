package store

import (
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

const workloadsYAML = `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  namespace: default
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: m
        image: busybox
---
apiVersion: v1
kind: Pod
metadata:
  name: probe
spec:
  containers:
  - name: p
    image: busybox
`

func decodeBundle(t *testing.T, in string) Bundle {
	t.Helper()
	docs, err := manifests.Decode("w.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var b Bundle
	for _, d := range docs {
		switch {
		case d.Job != nil:
			// As the CronJob controller stores a Job it creates.
			yes := true
			d.Job.Metadata.OwnerReferences = []manifests.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: "nightly", Controller: &yes}}
			b.Jobs = append(b.Jobs, d.Job)
		case d.Pod != nil:
			b.Pods = append(b.Pods, d.Pod)
		}
	}
	return b
}

// A workload kind is stored as a Service is (generation on metadata,
// ownerReferences kept), and its status is the controller's: written
// beside the record, read back only for the object it was written for.
func TestWorkloadKindsAreStoredWithTheirControllersStatus(t *testing.T) {
	s := openTemp(t)
	res, err := s.Apply(decodeBundle(t, workloadsYAML), ApplyOptions{})
	if err != nil || len(res) != 2 {
		t.Fatalf("apply = %v, %v", res, err)
	}
	obj, err := s.LookupObject(ObjectRef{Kind: KindJob, Namespace: "default", Name: "migrate"})
	if err != nil {
		t.Fatal(err)
	}
	j := obj.Object.(*manifests.Job)
	if obj.Generation != 1 || j.Metadata.Generation != 1 {
		t.Errorf("generation = %d/%d, want 1", obj.Generation, j.Metadata.Generation)
	}
	if len(j.Metadata.OwnerReferences) != 1 || j.Metadata.OwnerReferences[0].Name != "nightly" {
		t.Errorf("ownerReferences = %+v, want the CronJob's", j.Metadata.OwnerReferences)
	}
	if j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit != 6 {
		t.Errorf("backoffLimit = %v, want the default 6", j.Spec.BackoffLimit)
	}
	ref := ObjectRef{Kind: KindJob, Namespace: "default", Name: "migrate"}
	type st struct{ Succeeded int }
	if err := s.WriteWorkloadStatus(ref, obj.Created, 1, st{Succeeded: 2}); err != nil {
		t.Fatal(err)
	}
	var got st
	if gen, err := s.ReadWorkloadStatus(ref, obj.Created, &got); err != nil || gen != 1 || got.Succeeded != 2 {
		t.Errorf("status = %+v of %d, %v; want 2 succeeded of generation 1", got, gen, err)
	}
	var other st
	if _, err := s.ReadWorkloadStatus(ref, obj.Created.Add(time.Second), &other); err != nil || other.Succeeded != 0 {
		t.Errorf("status of another object of the name = %+v, %v; want none", other, err)
	}
	if res, err := s.Apply(decodeBundle(t, workloadsYAML), ApplyOptions{}); err != nil || res[0].Action != Unchanged {
		t.Errorf("re-apply = %v, %v; want unchanged", res, err)
	}
	if _, err := s.DeleteObjects([]ObjectRef{{Kind: KindPod, Namespace: "default", Name: "probe"}}); err != nil {
		t.Fatal(err)
	}
	if p, err := s.LookupObject(ObjectRef{Kind: KindPod, Namespace: "default", Name: "probe"}); err != nil || !p.Deleted {
		t.Errorf("pod after delete = %+v, %v; want a tombstone", p, err)
	}
}
