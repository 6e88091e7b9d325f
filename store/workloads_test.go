package store

import (
	"fmt"
	"slices"
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

// stsWith is StatefulSet web of image, with annotations ann and a
// revisionHistoryLimit (nil: the default).
func stsWith(image string, ann map[string]string, limit *int32) *manifests.StatefulSet {
	return &manifests.StatefulSet{APIVersion: "apps/v1", Kind: manifests.KindStatefulSet,
		Metadata: manifests.ObjectMeta{Name: "web", Annotations: ann},
		Spec: manifests.StatefulSetSpec{
			Selector:             &manifests.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			RevisionHistoryLimit: limit,
			Template: manifests.PodTemplateSpec{Metadata: manifests.TemplateMeta{Labels: map[string]string{"app": "web"}},
				Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "w", Image: image}}}},
		}}
}

// A StatefulSet's (and a DaemonSet's) record keeps its template history as
// its ControllerRevisions would: one revision per distinct template, the
// last current, a template coming back moving to the end with the next
// number, the change cause following the object's annotation, trimmed to
// revisionHistoryLimit old revisions but for those its controller's
// status names as current or update revision (Kubernetes' truncateHistory
// keeps them); a re-created object starts afresh.
func TestWorkloadRevisionHistory(t *testing.T) {
	two, zero := int32(2), int32(0)
	cause := func(c string) map[string]string { return map[string]string{manifests.AnnotationChangeCause: c} }
	tests := []struct {
		name    string
		applies []*manifests.StatefulSet
		deleted bool // deleted and applied again before the last apply
		// status: the images of the current and update revisions the
		// controller's status names before the last apply.
		status [2]string
		want   []string
		causes []string
	}{
		{name: "first apply is revision 1", applies: []*manifests.StatefulSet{stsWith("a", nil, nil)}, want: []string{"1:a"}},
		{name: "a new template is a new revision", applies: []*manifests.StatefulSet{stsWith("a", nil, nil), stsWith("b", nil, nil)}, want: []string{"1:a", "2:b"}},
		{name: "a metadata change is no revision but sets the cause",
			applies: []*manifests.StatefulSet{stsWith("a", nil, nil), stsWith("a", cause("bump"), nil)}, want: []string{"1:a"}, causes: []string{"bump"}},
		{name: "a template coming back moves to the end",
			applies: []*manifests.StatefulSet{stsWith("a", nil, nil), stsWith("b", nil, nil), stsWith("a", nil, nil)}, want: []string{"2:b", "3:a"}},
		{name: "the limit keeps that many old revisions",
			applies: []*manifests.StatefulSet{stsWith("a", nil, &two), stsWith("b", nil, &two), stsWith("c", nil, &two), stsWith("d", nil, &two)},
			want:    []string{"2:b", "3:c", "4:d"}},
		{name: "the revisions the status names are kept past the limit",
			applies: []*manifests.StatefulSet{stsWith("a", nil, &zero), stsWith("b", nil, &zero), stsWith("c", nil, &zero)},
			status:  [2]string{"b", "b"}, want: []string{"2:b", "3:c"}},
		{name: "a status naming other revisions keeps no old revision",
			applies: []*manifests.StatefulSet{stsWith("a", nil, &zero), stsWith("b", nil, &zero), stsWith("c", nil, &zero)},
			status:  [2]string{"a", "c"}, want: []string{"3:c"}},
		{name: "a re-created object starts afresh",
			applies: []*manifests.StatefulSet{stsWith("a", nil, nil), stsWith("b", nil, nil)}, deleted: true, want: []string{"1:b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			ref := ObjectRef{Kind: KindStatefulSet, Namespace: "default", Name: "web"}
			for i, o := range tt.applies {
				if tt.deleted && i == len(tt.applies)-1 {
					if _, err := s.DeleteObjects([]ObjectRef{ref}); err != nil {
						t.Fatal(err)
					}
				}
				if tt.status[0] != "" && i == len(tt.applies)-1 {
					live, err := s.LookupObject(ref)
					if err != nil {
						t.Fatal(err)
					}
					name := func(image string) string { // as stored, defaulted
						for _, r := range live.Revisions {
							if r.Template.Spec.Containers[0].Image == image {
								return "web-" + r.Hash
							}
						}
						return "web-gone"
					}
					st := map[string]string{"currentRevision": name(tt.status[0]), "updateRevision": name(tt.status[1])}
					if err := s.WriteWorkloadStatus(ref, live.Created, live.Generation, st); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := s.Apply(Bundle{StatefulSets: []*manifests.StatefulSet{o}}, ApplyOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			obj, err := s.LookupObject(ref)
			if err != nil {
				t.Fatal(err)
			}
			var got, causes []string
			for _, r := range obj.Revisions {
				got = append(got, fmt.Sprintf("%d:%s", r.Number, r.Template.Spec.Containers[0].Image))
				if r.Hash != manifests.TemplateHash(&r.Template) {
					t.Errorf("revision %d hash %s, its template's is %s", r.Number, r.Hash, manifests.TemplateHash(&r.Template))
				}
				if r.ChangeCause != "" {
					causes = append(causes, r.ChangeCause)
				}
			}
			if !slices.Equal(got, tt.want) || !slices.Equal(causes, tt.causes) {
				t.Errorf("revisions %v causes %v, want %v %v", got, causes, tt.want, tt.causes)
			}
			if cur := obj.Object.(*manifests.StatefulSet); obj.Revisions[len(obj.Revisions)-1].Hash != cur.TemplateHash() {
				t.Errorf("the last revision is not the stored template")
			}
		})
	}
}
