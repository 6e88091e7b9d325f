package main

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

func int32p(v int32) *int32 { return &v }

// The DaemonSet's rollout is judged as kubectl's DaemonSetStatusViewer
// judges it, in its words.
func TestDaemonSetRolloutStatusIsKubectls(t *testing.T) {
	ds := &manifests.DaemonSet{Metadata: manifests.ObjectMeta{Name: "agent"}}
	onDelete := &manifests.DaemonSet{Metadata: manifests.ObjectMeta{Name: "agent"},
		Spec: manifests.DaemonSetSpec{UpdateStrategy: manifests.DaemonSetUpdateStrategy{Type: "OnDelete"}}}
	for _, tc := range []struct {
		name          string
		ds            *manifests.DaemonSet
		gen, observed int64
		st            appsv1.DaemonSetStatus
		want          string
		done          bool
		err           string
	}{
		{name: "no status yet", ds: ds, gen: 1, want: "Waiting for daemon set spec update to be observed...\n"},
		{name: "a newer generation", ds: ds, gen: 2, observed: 1,
			st:   appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, UpdatedNumberScheduled: 1, NumberAvailable: 1},
			want: "Waiting for daemon set spec update to be observed...\n"},
		{name: "old pod still there", ds: ds, gen: 2, observed: 2,
			st:   appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, NumberAvailable: 1},
			want: `Waiting for daemon set "agent" rollout to finish: 0 out of 1 new pods have been updated...` + "\n"},
		{name: "new pod not available", ds: ds, gen: 2, observed: 2,
			st:   appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, UpdatedNumberScheduled: 1},
			want: `Waiting for daemon set "agent" rollout to finish: 0 of 1 updated pods are available...` + "\n"},
		{name: "rolled out", ds: ds, gen: 2, observed: 2,
			st:   appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, UpdatedNumberScheduled: 1, NumberAvailable: 1},
			want: `daemon set "agent" successfully rolled out` + "\n", done: true},
		{name: "OnDelete has no rollout", ds: onDelete, gen: 1, observed: 1, done: true,
			err: "rollout status is only available for RollingUpdate strategy type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, done, err := daemonSetRolloutStatus(tc.ds, tc.gen, tc.observed, &tc.st)
			if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if msg != tc.want || done != tc.done {
				t.Errorf("got %q done=%v, want %q done=%v", msg, done, tc.want, tc.done)
			}
		})
	}
}

// The StatefulSet's rollout is judged as kubectl's
// StatefulSetStatusViewer judges it, in its words.
func TestStatefulSetRolloutStatusIsKubectls(t *testing.T) {
	set := func(replicas int32, partition *int32) *manifests.StatefulSet {
		ss := &manifests.StatefulSet{Metadata: manifests.ObjectMeta{Name: "db"}}
		ss.Spec.Replicas = &replicas
		if partition != nil {
			ss.Spec.UpdateStrategy.RollingUpdate = &manifests.RollingUpdateStatefulSetStrategy{Partition: partition}
		}
		return ss
	}
	onDelete := set(3, nil)
	onDelete.Spec.UpdateStrategy.Type = "OnDelete"
	for _, tc := range []struct {
		name          string
		ss            *manifests.StatefulSet
		gen, observed int64
		st            appsv1.StatefulSetStatus
		want          string
		done          bool
		err           string
	}{
		{name: "no status yet", ss: set(3, nil), gen: 1, want: "Waiting for statefulset spec update to be observed...\n"},
		{name: "pods not ready", ss: set(3, nil), gen: 1, observed: 1,
			st: appsv1.StatefulSetStatus{ReadyReplicas: 1}, want: "Waiting for 2 pods to be ready...\n"},
		{name: "rolling", ss: set(3, nil), gen: 2, observed: 2,
			st:   appsv1.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 1, CurrentRevision: "db-a", UpdateRevision: "db-b"},
			want: "waiting for statefulset rolling update to complete 1 pods at revision db-b...\n"},
		{name: "rolled out", ss: set(3, nil), gen: 2, observed: 2,
			st:   appsv1.StatefulSetStatus{ReadyReplicas: 3, CurrentReplicas: 3, UpdatedReplicas: 3, CurrentRevision: "db-b", UpdateRevision: "db-b"},
			want: "statefulset rolling update complete 3 pods at revision db-b...\n", done: true},
		{name: "partition not reached", ss: set(3, int32p(1)), gen: 2, observed: 2,
			st:   appsv1.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 1, CurrentRevision: "db-a", UpdateRevision: "db-b"},
			want: "Waiting for partitioned roll out to finish: 1 out of 2 new pods have been updated...\n"},
		{name: "partition reached", ss: set(3, int32p(1)), gen: 2, observed: 2,
			st:   appsv1.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 2, CurrentRevision: "db-a", UpdateRevision: "db-b"},
			want: "partitioned roll out complete: 2 new pods have been updated...\n", done: true},
		{name: "OnDelete has no rollout", ss: onDelete, gen: 1, observed: 1, done: true,
			err: "rollout status is only available for RollingUpdate strategy type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, done, err := statefulSetRolloutStatus(tc.ss, tc.gen, tc.observed, &tc.st)
			if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if msg != tc.want || done != tc.done {
				t.Errorf("got %q done=%v, want %q done=%v", msg, done, tc.want, tc.done)
			}
		})
	}
}

// `rollout status daemonset/NAME` and `statefulset NAME` read the status
// the controller wrote: done, they exit 0 at once; a status of an earlier
// generation times out (exit 1 with kubectl's words); other workload
// kinds keep kubectl's refusal.
func TestRolloutStatusOfDaemonSetAndStatefulSet(t *testing.T) {
	dir := t.TempDir()
	manifest := `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: a, image: busybox:1.36}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: a, image: busybox:1.36}]
`
	if out, err := runCLI(t, dir, manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	st, err := store.Open(dir, "rev")
	if err != nil {
		t.Fatal(err)
	}
	write := func(kind, name string, gen int64, status any) {
		t.Helper()
		ref := store.ObjectRef{Kind: kind, Namespace: "default", Name: name}
		o, err := st.LookupObject(ref)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.WriteWorkloadStatus(ref, o.Created, gen, status); err != nil {
			t.Fatal(err)
		}
	}
	write(store.KindDaemonSet, "agent", 1, &appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, CurrentNumberScheduled: 1,
		UpdatedNumberScheduled: 1, NumberAvailable: 1, NumberReady: 1})
	write(store.KindStatefulSet, "db", 0, &appsv1.StatefulSetStatus{Replicas: 2, ReadyReplicas: 2})

	if out, err := runCLI(t, dir, "", "rollout", "status", "daemonset/agent"); err != nil || out != `daemon set "agent" successfully rolled out`+"\n" {
		t.Errorf("rollout status daemonset/agent: %v\n%q", err, out)
	}
	code, out, errOut := runMain(t, "", "--state-dir", dir, "--instance", "rev", "rollout", "status", "sts", "db", "--timeout", "300ms")
	if code != 1 || out != "Waiting for statefulset spec update to be observed...\n" || !strings.Contains(errOut, "timed out waiting for the condition") {
		t.Errorf("rollout status sts db of an unobserved generation: exit %d\n%s%s", code, out, errOut)
	}
	write(store.KindStatefulSet, "db", 1, &appsv1.StatefulSetStatus{Replicas: 2, ReadyReplicas: 2, CurrentReplicas: 2,
		UpdatedReplicas: 2, CurrentRevision: "db-1", UpdateRevision: "db-1"})
	if out, err := runCLI(t, dir, "", "rollout", "status", "statefulset", "db"); err != nil || out != "partitioned roll out complete: 2 new pods have been updated...\n" {
		// apply defaults the RollingUpdate partition to 0, as the API
		// server does: kubectl says the same of such a set.
		t.Errorf("rollout status statefulset db: %v\n%q", err, out)
	}
	if out, err := runCLI(t, dir, "", "rollout", "status", "job/x"); err == nil || err.Error() != "no status viewer has been implemented for Job.batch" {
		t.Errorf("rollout status job/x: %v\n%s", err, out)
	}
	if out, err := runCLI(t, dir, "", "rollout", "status", "ds/nope"); err == nil || !strings.Contains(err.Error(), `daemonsets.apps "nope" not found`) {
		t.Errorf("rollout status ds/nope: %v\n%s", err, out)
	}
}
