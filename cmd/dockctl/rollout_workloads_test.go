package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

const rolloutStatefulSetYAML = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: d, image: busybox:1}]
`

const rolloutDaemonSetYAML = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: db}
spec:
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: d, image: busybox:1}]
`

// rollout history's table is the contract: one row per revision, oldest
// first, as a deployment's.
func TestRolloutHistoryTable(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	revs := []store.Revision{
		{Number: 2, Hash: "505db6d756", CreatedAt: now.Add(-3 * time.Hour)},
		{Number: 3, Hash: "cbca6fec3f", ChangeCause: "rollback to busybox:1", CreatedAt: now.Add(-90 * time.Second)},
	}
	var b bytes.Buffer
	if err := printRevisions(&b, kindStatefulSet, "db", revs, now); err != nil {
		t.Fatal(err)
	}
	golden(t, "rollout-history-statefulset", b.Bytes())
}

// storedTemplate is the pod template of the stored kind/db.
func storedTemplate(t *testing.T, dir, kind string) manifests.PodTemplateSpec {
	t.Helper()
	st, err := store.Open(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	o, err := st.LookupObject(store.ObjectRef{Kind: kind, Namespace: "default", Name: "db"})
	if err != nil {
		t.Fatal(err)
	}
	return *rolloutTemplates[kind](o.Object)
}

// rollout history, undo and restart of a StatefulSet and a DaemonSet act
// on their stored revisions and pod template as kubectl's do on their
// ControllerRevisions: undo writes the earlier template back (a new
// revision, the old number gone), an undo to the current template is
// skipped, restart sets kubectl's restartedAt annotation, pause is
// refused in kubectl's words.
func TestRolloutStatefulSetAndDaemonSet(t *testing.T) {
	for _, tc := range []struct {
		word, kind, manifest string
		qualified            string
	}{
		{"statefulset", store.KindStatefulSet, rolloutStatefulSetYAML, "statefulsets.apps"},
		{"daemonset", store.KindDaemonSet, rolloutDaemonSetYAML, "daemonsets.apps"},
	} {
		t.Run(tc.word, func(t *testing.T) {
			dir := t.TempDir()
			run := runner(t, []string{"--state-dir", dir})
			run(tc.manifest, "apply", "-f", "-")
			if _, _, err := runArgs(t, []string{"--state-dir", dir}, "rollout", "undo", tc.word+"/db"); err == nil || err.Error() != "no last revision to roll back to" {
				t.Errorf("undo of a single revision: %v, want kubectl's no last revision", err)
			}
			run(strings.Replace(tc.manifest, "busybox:1", "busybox:2", 1), "apply", "-f", "-")
			steps := []struct {
				name    string
				args    []string
				want    []string // in the output, in this order
				wantErr string
				image   string // the stored template's image after it
			}{
				{name: "history lists each template", args: []string{"history", tc.word + "/db"},
					want: []string{tc.word + "/db\n", "REVISION", "1 ", "2 "}, image: "busybox:2"},
				{name: "undo goes back to the previous revision", args: []string{"undo", tc.word, "db"},
					want: []string{tc.word + "/db rolled back (to revision 1)\n"}, image: "busybox:1"},
				{name: "the restored template is the newest revision", args: []string{"history", tc.word + "/db"},
					want: []string{"2 ", "3 "}, image: "busybox:1"},
				{name: "undo to the current template is skipped", args: []string{"undo", tc.word + "/db", "--to-revision", "3"},
					want: []string{tc.word + "/db skipped rollback (current template already matches revision 3)\n"}, image: "busybox:1"},
				{name: "undo to a revision the history lacks", args: []string{"undo", tc.word + "/db", "--to-revision", "1"},
					wantErr: "unable to find specified revision 1 in history", image: "busybox:1"},
				{name: "history --revision shows that template", args: []string{"history", tc.word + "/db", "--revision", "2"},
					want: []string{"revision 2", "image: busybox:2"}, image: "busybox:1"},
				{name: "history --revision of a missing revision", args: []string{"history", tc.word + "/db", "--revision", "7"},
					wantErr: "unable to find the specified revision", image: "busybox:1"},
				{name: "undo --to-revision goes to that revision", args: []string{"undo", tc.word + "/db", "--to-revision", "2"},
					want: []string{tc.word + "/db rolled back (to revision 2)\n"}, image: "busybox:2"},
				{name: "pause is kubectl's refusal", args: []string{"pause", tc.word + "/db"},
					wantErr: tc.qualified + ` "db" pausing is not supported`, image: "busybox:2"},
				{name: "a missing object is NotFound", args: []string{"history", tc.word + "/nope"},
					wantErr: `"nope" not found`, image: "busybox:2"},
			}
			for _, s := range steps {
				out, errOut, err := runArgs(t, []string{"--state-dir", dir, "rollout"}, s.args...)
				switch {
				case s.wantErr != "":
					if err == nil || !strings.Contains(err.Error(), s.wantErr) {
						t.Errorf("%s: err %v, want %q", s.name, err, s.wantErr)
					}
				case err != nil:
					t.Errorf("%s: %v %s", s.name, err, errOut)
				default:
					rest := out
					for _, w := range s.want {
						i := strings.Index(rest, w)
						if i < 0 {
							t.Errorf("%s: printed\n%s\nwant %q (in order)", s.name, out, s.want)
							break
						}
						rest = rest[i+len(w):]
					}
				}
				if got := storedTemplate(t, dir, tc.kind).Spec.Containers[0].Image; got != s.image {
					t.Errorf("%s: stored image %s, want %s", s.name, got, s.image)
				}
			}
			out := run("", "rollout", "restart", tc.word+"/db")
			if out != tc.word+"/db restarted\n" {
				t.Errorf("restart printed %q", out)
			}
			at := storedTemplate(t, dir, tc.kind).Metadata.Annotations[manifests.AnnotationRestartedAt]
			if _, err := time.Parse(time.RFC3339Nano, at); err != nil {
				t.Errorf("restart set restartedAt %q: %v", at, err)
			}
		})
	}
}

// rollout status judges a StatefulSet's and a DaemonSet's status as
// kubectl's status viewers do.
func TestRolloutStatusViewers(t *testing.T) {
	one, two := int32(1), int32(3)
	sts := func(partition *int32) *manifests.StatefulSet {
		s := &manifests.StatefulSet{Metadata: manifests.ObjectMeta{Name: "db"}, Spec: manifests.StatefulSetSpec{Replicas: &two}}
		s.Spec.UpdateStrategy.Type = "RollingUpdate"
		if partition != nil {
			s.Spec.UpdateStrategy.RollingUpdate = &manifests.RollingUpdateStatefulSetStrategy{Partition: partition}
		}
		return s
	}
	onDelete := sts(nil)
	onDelete.Spec.UpdateStrategy.Type = "OnDelete"
	ds := &manifests.DaemonSet{Metadata: manifests.ObjectMeta{Name: "agent"}}
	ds.Spec.UpdateStrategy.Type = "RollingUpdate"
	tests := []struct {
		name          string
		kind          string
		obj, status   any
		observed, gen int64
		want          string
		done          bool
		wantErr       string
	}{
		{"statefulset not yet observed", store.KindStatefulSet, sts(nil), &appsv1.StatefulSetStatus{}, 1, 2,
			"Waiting for statefulset spec update to be observed...\n", false, ""},
		{"statefulset pods not ready", store.KindStatefulSet, sts(nil), &appsv1.StatefulSetStatus{ReadyReplicas: 1}, 2, 2,
			"Waiting for 2 pods to be ready...\n", false, ""},
		{"statefulset rolling", store.KindStatefulSet, sts(nil), &appsv1.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 1, CurrentRevision: "db-a", UpdateRevision: "db-b"}, 2, 2,
			"waiting for statefulset rolling update to complete 1 pods at revision db-b...\n", false, ""},
		{"statefulset rolled out", store.KindStatefulSet, sts(nil), &appsv1.StatefulSetStatus{ReadyReplicas: 3, CurrentReplicas: 3, CurrentRevision: "db-b", UpdateRevision: "db-b"}, 2, 2,
			"statefulset rolling update complete 3 pods at revision db-b...\n", true, ""},
		{"statefulset partitioned", store.KindStatefulSet, sts(&one), &appsv1.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 1}, 2, 2,
			"Waiting for partitioned roll out to finish: 1 out of 2 new pods have been updated...\n", false, ""},
		{"statefulset partition done", store.KindStatefulSet, sts(&one), &appsv1.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 2}, 2, 2,
			"partitioned roll out complete: 2 new pods have been updated...\n", true, ""},
		{"statefulset OnDelete", store.KindStatefulSet, onDelete, &appsv1.StatefulSetStatus{}, 2, 2,
			"", true, "rollout status is only available for RollingUpdate strategy type"},
		{"daemonset updating", store.KindDaemonSet, ds, &appsv1.DaemonSetStatus{DesiredNumberScheduled: 1}, 1, 1,
			"Waiting for daemon set \"agent\" rollout to finish: 0 out of 1 new pods have been updated...\n", false, ""},
		{"daemonset not available", store.KindDaemonSet, ds, &appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, UpdatedNumberScheduled: 1}, 1, 1,
			"Waiting for daemon set \"agent\" rollout to finish: 0 of 1 updated pods are available...\n", false, ""},
		{"daemonset rolled out", store.KindDaemonSet, ds, &appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, UpdatedNumberScheduled: 1, NumberAvailable: 1}, 1, 1,
			"daemon set \"agent\" successfully rolled out\n", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, done, err := rolloutViewers[tt.kind](tt.obj, tt.status, tt.observed, tt.gen)
			if msg != tt.want || done != tt.done || (err == nil) != (tt.wantErr == "") || (err != nil && err.Error() != tt.wantErr) {
				t.Errorf("= %q %v %v, want %q %v %q", msg, done, err, tt.want, tt.done, tt.wantErr)
			}
		})
	}
}

// rollout status of a StatefulSet ends once its controller's status says
// it rolled out (exit 0), and exits 1 with kubectl's words at --timeout.
func TestRolloutStatusStatefulSetCommand(t *testing.T) {
	dir := t.TempDir()
	runner(t, []string{"--state-dir", dir})(rolloutStatefulSetYAML, "apply", "-f", "-")
	code, out, errOut := runMain(t, "", "--state-dir", dir, "rollout", "status", "sts/db", "--timeout", "50ms")
	if code != 1 || out != "Waiting for statefulset spec update to be observed...\n" || !strings.Contains(errOut, "timed out waiting for the condition") {
		t.Errorf("unobserved: exit %d out %q stderr %q", code, out, errOut)
	}
	st, err := store.Open(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	ref := store.ObjectRef{Kind: store.KindStatefulSet, Namespace: "default", Name: "db"}
	o, err := st.LookupObject(ref)
	if err != nil {
		t.Fatal(err)
	}
	done := appsv1.StatefulSetStatus{Replicas: 2, ReadyReplicas: 2, CurrentReplicas: 2, CurrentRevision: "db-x", UpdateRevision: "db-x"}
	if err := st.WriteWorkloadStatus(ref, o.Created, o.Generation, done); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runMain(t, "", "--state-dir", dir, "rollout", "status", "statefulset", "db")
	if code != 0 || out != "statefulset rolling update complete 2 pods at revision db-x...\n" {
		t.Errorf("rolled out: exit %d out %q stderr %q", code, out, errOut)
	}
}
