package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	b := workloadBundle(t, in)
	for _, j := range b.Jobs {
		// As the CronJob controller stores a Job it creates.
		yes := true
		j.Metadata.OwnerReferences = []manifests.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: "nightly", Controller: &yes}}
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

const immutSTS = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: w, image: nginx:1.27}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`

const immutJob = `apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox:1.36}]
`

const immutDS = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: a, image: agent:1}]
`

// workloadBundle is the workloads of a manifest, as apply reads them.
func workloadBundle(t *testing.T, in string) Bundle {
	t.Helper()
	docs, err := manifests.Decode("w.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var b Bundle
	for _, d := range docs {
		switch {
		case d.StatefulSet != nil:
			b.StatefulSets = append(b.StatefulSets, d.StatefulSet)
		case d.DaemonSet != nil:
			b.DaemonSets = append(b.DaemonSets, d.DaemonSet)
		case d.Job != nil:
			b.Jobs = append(b.Jobs, d.Job)
		case d.Pod != nil:
			b.Pods = append(b.Pods, d.Pod)
		}
	}
	return b
}

// replaced is in with its first old replaced by new.
func replaced(t *testing.T, in, old, new string) string {
	t.Helper()
	if !strings.Contains(in, old) {
		t.Fatalf("manifest lacks %q", old)
	}
	return strings.Replace(in, old, new, 1)
}

// Apply (and every update: scale, rollout restart, patch) refuses the
// changes of a live workload Kubernetes refuses, with kubectl's words,
// and then writes nothing; a re-apply of the same file is unchanged, and
// the changes Kubernetes allows are stored.
func TestApplyRefusesImmutableWorkloadChanges(t *testing.T) {
	sts := ObjectRef{Kind: KindStatefulSet, Namespace: "default", Name: "web"}
	job := ObjectRef{Kind: KindJob, Namespace: "default", Name: "once"}
	ds := ObjectRef{Kind: KindDaemonSet, Namespace: "default", Name: "agent"}
	for _, tc := range []struct {
		name      string
		ref       ObjectRef
		live, new string
		updater   string // scale, rollout…: an update, not an apply
		started   bool   // the Job controller's status has a startTime
		want      Action
		err       string
	}{
		{name: "statefulset re-applied", ref: sts, live: immutSTS, new: immutSTS, want: Unchanged},
		{name: "statefulset scaled", ref: sts, live: immutSTS, updater: "scale",
			new: replaced(t, immutSTS, "  serviceName: web\n", "  serviceName: web\n  replicas: 3\n"), want: Configured},
		{name: "statefulset restarted", ref: sts, live: immutSTS, updater: "rollout",
			new:  replaced(t, immutSTS, "metadata: {labels: {app: web}}", "metadata: {labels: {app: web}, annotations: {kubectl.kubernetes.io/restartedAt: '2026-12-07T08:00:00Z'}}"),
			want: Configured},
		{name: "statefulset new image", ref: sts, live: immutSTS, new: replaced(t, immutSTS, "nginx:1.27", "nginx:1.28"), want: Configured},
		{name: "statefulset serviceName", ref: sts, live: immutSTS, new: replaced(t, immutSTS, "serviceName: web", "serviceName: www"),
			err: `the StatefulSet "web" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', ` +
				`'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden (changed: spec.serviceName; ` +
				`to change them, delete the StatefulSet with --cascade=orphan and apply it again: its pods and claims keep running and are adopted)`},
		{name: "statefulset claim template patched", ref: sts, live: immutSTS, updater: "patch", new: replaced(t, immutSTS, "storage: 1Gi", "storage: 2Gi"),
			err: `the StatefulSet "web" is invalid: spec: Forbidden: updates to statefulset spec for fields other than`},
		{name: "daemonset selector", ref: ds, live: immutDS,
			new: replaced(t, replaced(t, immutDS, "matchLabels: {app: agent}", "matchLabels: {app: a2}"), "labels: {app: agent}", "labels: {app: a2}"),
			err: `the DaemonSet "agent" is invalid: spec.selector: Invalid value: {"matchLabels":{"app":"a2"}}: field is immutable`},
		{name: "job re-applied", ref: job, live: immutJob, new: immutJob, started: true, want: Unchanged},
		{name: "job resumed", ref: job, live: immutJob, new: replaced(t, immutJob, "suspend: true", "suspend: false"), started: true, want: Configured},
		{name: "job template image", ref: job, live: immutJob, new: replaced(t, immutJob, "busybox:1.36", "busybox:1.37"),
			err: `the Job "once" is invalid: spec.template: Invalid value: `},
		{name: "suspended job never started relabeled", ref: job, live: immutJob,
			new: replaced(t, immutJob, "    spec:\n      restartPolicy", "    metadata: {labels: {team: a}}\n    spec:\n      restartPolicy"), want: Configured},
		{name: "suspended job once started relabeled", ref: job, live: immutJob, started: true,
			new: replaced(t, immutJob, "    spec:\n      restartPolicy", "    metadata: {labels: {team: a}}\n    spec:\n      restartPolicy"),
			err: `the Job "once" is invalid: spec.template: Invalid value: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			if _, err := s.Apply(workloadBundle(t, tc.live), ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			before, err := s.LookupObject(tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			if tc.started {
				st := map[string]any{"startTime": "2026-12-07T08:00:00Z"}
				if err := s.WriteWorkloadStatus(tc.ref, before.Created, before.Generation, st); err != nil {
					t.Fatal(err)
				}
			}
			res, err := s.Apply(workloadBundle(t, tc.new), ApplyOptions{Updater: tc.updater})
			after, lerr := s.LookupObject(tc.ref)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("apply = %v, %v; want the error %s…", res, err, tc.err)
				}
				if after.Generation != before.Generation || !after.Updated.Equal(before.Updated) {
					t.Errorf("refused apply wrote generation %d at %v, was %d at %v", after.Generation, after.Updated, before.Generation, before.Updated)
				}
				return
			}
			if err != nil || len(res) != 1 || res[0].Action != tc.want {
				t.Fatalf("apply = %v, %v; want %s", res, err, tc.want)
			}
		})
	}
}

// The containers a workload's controller records (by writer: the owner's
// sync, the orphan keeper) ride on its status write: each writer's entry
// is kept by the others' writes and by a status write, an unchanged
// update writes nothing, and an object applied again starts afresh.
func TestWorkloadStatusKeepsEachWritersContainers(t *testing.T) {
	s := openTemp(t)
	if _, err := s.Apply(decodeBundle(t, workloadsYAML), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	ref := ObjectRef{Kind: KindPod, Namespace: "default", Name: "probe"}
	obj, err := s.LookupObject(ref)
	if err != nil {
		t.Fatal(err)
	}
	type st struct{ Phase string }
	path := filepath.Join(s.Dir(), workloadStatusPath(ref.Kind, ref.Namespace, ref.Name))
	written := func() string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	steps := []struct {
		name      string
		u         WorkloadUpdate
		created   time.Time
		wantPhase string
		want      map[string]string // compact JSON by writer
		rewrite   bool
	}{
		{"status and the owner's containers", WorkloadUpdate{Status: st{"Running"}, Generation: 1, Writer: "pods", Containers: json.RawMessage(`{"a":{"restarts":1}}`)},
			obj.Created, "Running", map[string]string{"pods": `{"a":{"restarts":1}}`}, true},
		{"the same again", WorkloadUpdate{Status: st{"Running"}, Generation: 1, Writer: "pods", Containers: json.RawMessage(`{"a": {"restarts": 1}}`)},
			obj.Created, "Running", map[string]string{"pods": `{"a":{"restarts":1}}`}, false},
		{"the keeper's, status kept", WorkloadUpdate{Writer: "orphans", Containers: json.RawMessage(`{"b":{"probeReady":true}}`)},
			obj.Created, "Running", map[string]string{"pods": `{"a":{"restarts":1}}`, "orphans": `{"b":{"probeReady":true}}`}, true},
		{"a status write keeps both", WorkloadUpdate{Status: st{"Succeeded"}, Generation: 1},
			obj.Created, "Succeeded", map[string]string{"pods": `{"a":{"restarts":1}}`, "orphans": `{"b":{"probeReady":true}}`}, true},
		{"the owner's dropped", WorkloadUpdate{Status: st{"Succeeded"}, Generation: 1, Writer: "pods"},
			obj.Created, "Succeeded", map[string]string{"orphans": `{"b":{"probeReady":true}}`}, true},
		{"another object of the name", WorkloadUpdate{Status: st{"Pending"}, Generation: 1},
			obj.Created.Add(time.Second), "Pending", nil, true},
	}
	last := ""
	for _, step := range steps {
		if err := s.UpdateWorkloadStatus(ref, step.created, step.u); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		var got st
		if _, err := s.ReadWorkloadStatus(ref, step.created, &got); err != nil || got.Phase != step.wantPhase {
			t.Errorf("%s: status %+v, %v; want %s", step.name, got, err, step.wantPhase)
		}
		recs, err := s.ReadWorkloadContainers(ref, step.created)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		gotRecs := map[string]string{}
		for w, raw := range recs {
			var b bytes.Buffer
			if err := json.Compact(&b, raw); err != nil {
				t.Fatal(err)
			}
			gotRecs[w] = b.String()
		}
		if len(gotRecs) != len(step.want) || !maps.Equal(gotRecs, step.want) {
			t.Errorf("%s: containers %v, want %v", step.name, gotRecs, step.want)
		}
		if now := written(); (now != last) != step.rewrite {
			t.Errorf("%s: rewritten %v, want %v", step.name, now != last, step.rewrite)
		} else {
			last = now
		}
	}
	if recs, err := s.ReadWorkloadContainers(ref, obj.Created); err != nil || recs != nil {
		t.Errorf("the earlier object's containers %v, %v; want none", recs, err)
	}
}
