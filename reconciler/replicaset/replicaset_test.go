package replicaset

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/workload"
	"github.com/dockctl/dockctl/reconciler/workload/workloadtest"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newRS(n int32) *manifests.ReplicaSet {
	rs := &manifests.ReplicaSet{APIVersion: "apps/v1", Kind: manifests.KindReplicaSet,
		Metadata: manifests.ObjectMeta{Name: "front", Namespace: "shop", Generation: 2},
		Spec: manifests.ReplicaSetSpec{Replicas: &n,
			Selector: &manifests.LabelSelector{MatchLabels: map[string]string{"app": "front"}},
			Template: manifests.PodTemplateSpec{Metadata: manifests.TemplateMeta{Labels: map[string]string{"app": "front", "tier": "web"}},
				Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "c", Image: "nginx"}}}}}}
	manifests.SetReplicaSetDefaults(rs)
	return rs
}

// pod builds an observed pod: phase, ready since (zero: not ready),
// created, restarts.
func pod(name string, phase corev1.PodPhase, readySince, created time.Time, restarts int) workload.ObservedPod {
	p := workloadtest.Pod(name, phase, readySince)
	p.Labels, p.Created = map[string]string{"app": "front", "tier": "web"}, created
	p.Status.Containers = []podruntime.ContainerStatus{{Name: "c", Restarts: restarts}}
	return p
}

func ready(name string, since time.Time) workload.ObservedPod {
	return pod(name, corev1.PodRunning, since, since.Add(-time.Second), 0)
}

func TestScaleUpCreatesMissingPodsWithStableNames(t *testing.T) {
	rs := newRS(3)
	d := Sync(rs, []workload.ObservedPod{ready("front-aaaaa", t0.Add(-time.Hour))}, t0)
	if len(d.CreatePods) != 2 {
		t.Fatalf("created %d pods, want 2", len(d.CreatePods))
	}
	again := Sync(rs, []workload.ObservedPod{ready("front-aaaaa", t0.Add(-time.Hour))}, t0)
	for i, p := range d.CreatePods {
		if !strings.HasPrefix(p.Name, "front-") || len(p.Name) != len("front-")+workload.SuffixLen {
			t.Errorf("name %q, want front-xxxxx", p.Name)
		}
		if p.Name != again.CreatePods[i].Name {
			t.Errorf("names differ between two decisions on one observation: %q, %q", p.Name, again.CreatePods[i].Name)
		}
		if p.Owner != (podruntime.OwnerRef{Kind: "ReplicaSet", Name: "front"}) || p.Namespace != "shop" || p.TemplateHash != manifests.TemplateHash(&rs.Spec.Template) {
			t.Errorf("pod = %+v", p)
		}
		if want := fmt.Sprintf("Created pod: %s", p.Name); d.Events[i].Message != want || d.Events[i].Reason != "SuccessfulCreate" {
			t.Errorf("event = %+v, want %q", d.Events[i], want)
		}
	}
	if d.CreatePods[0].Name == d.CreatePods[1].Name {
		t.Error("two pods of one name")
	}
}

func TestFinishedAndTerminatingPodsAreReplacedNotCounted(t *testing.T) {
	rs := newRS(2)
	failed := pod("front-fffff", corev1.PodFailed, time.Time{}, t0, 0)
	gone := ready("front-ggggg", t0.Add(-time.Hour))
	gone.Status.Terminating = true
	d := Sync(rs, []workload.ObservedPod{failed, gone, ready("front-aaaaa", t0.Add(-time.Hour))}, t0)
	if len(d.CreatePods) != 1 || len(d.DeletePods) != 0 {
		t.Errorf("created %d, deleted %q; want 1 created, none deleted", len(d.CreatePods), d.DeletePods)
	}
	if slices.ContainsFunc(d.CreatePods, func(p podruntime.PodSpec) bool { return p.Name == "front-fffff" || p.Name == "front-ggggg" }) {
		t.Error("a new pod took the name of an existing one")
	}
	if d.Status.Replicas != 1 {
		t.Errorf("replicas = %d, want 1 active", d.Status.Replicas)
	}
}

func TestScaleDownDeletesInKubernetesRankOrder(t *testing.T) {
	old := t0.Add(-100 * time.Hour)
	costly := ready("front-cost9", t0.Add(-time.Minute))
	costly.Annotations = map[string]string{DeletionCostAnnotation: "9"}
	cheap := ready("front-cost0", t0.Add(-time.Minute))
	cheap.Annotations = map[string]string{DeletionCostAnnotation: "-5"}
	tests := []struct {
		name string
		pods []workload.ObservedPod
		want string // the one deleted
	}{
		{"pending before running", []workload.ObservedPod{ready("front-a", old), pod("front-p", corev1.PodPending, time.Time{}, t0, 0)}, "front-p"},
		{"unknown before running", []workload.ObservedPod{ready("front-a", old), pod("front-u", corev1.PodUnknown, time.Time{}, t0, 0)}, "front-u"},
		{"not ready before ready", []workload.ObservedPod{ready("front-a", t0.Add(-time.Second)), pod("front-n", corev1.PodRunning, time.Time{}, old, 0)}, "front-n"},
		{"lower deletion cost first", []workload.ObservedPod{costly, cheap}, "front-cost0"},
		{"ready for less time first", []workload.ObservedPod{ready("front-a", old), ready("front-b", t0.Add(-time.Minute))}, "front-b"},
		// Kubernetes settles ready times of one power of two by uid, before
		// restarts are looked at; dockctl by name.
		{"ready times in one power of two settle by name", []workload.ObservedPod{
			pod("front-a", corev1.PodRunning, t0.Add(-70*time.Second), old, 0),
			pod("front-b", corev1.PodRunning, t0.Add(-80*time.Second), old, 3)}, "front-a"},
		{"more restarts first", []workload.ObservedPod{
			pod("front-a", corev1.PodRunning, time.Time{}, old, 1),
			pod("front-b", corev1.PodRunning, time.Time{}, old, 4)}, "front-b"},
		{"newer first", []workload.ObservedPod{
			pod("front-a", corev1.PodRunning, time.Time{}, old, 0),
			pod("front-b", corev1.PodRunning, time.Time{}, t0.Add(-time.Minute), 0)}, "front-b"},
		{"an unknown creation time first", []workload.ObservedPod{
			pod("front-a", corev1.PodRunning, time.Time{}, t0.Add(-time.Minute), 0),
			pod("front-b", corev1.PodRunning, time.Time{}, time.Time{}, 0)}, "front-b"},
		{"creation times in one power of two settle by name", []workload.ObservedPod{
			pod("front-b", corev1.PodRunning, time.Time{}, t0.Add(-70*time.Second), 0),
			pod("front-a", corev1.PodRunning, time.Time{}, t0.Add(-80*time.Second), 0)}, "front-a"},
		{"a full tie by name", []workload.ObservedPod{ready("front-b", old), ready("front-a", old)}, "front-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Sync(newRS(int32(len(tt.pods)-1)), tt.pods, t0)
			if !slices.Equal(d.DeletePods, []string{tt.want}) {
				t.Errorf("deleted %q, want %q", d.DeletePods, tt.want)
			}
			if len(d.Events) != 1 || d.Events[0].Message != "Deleted pod: "+tt.want {
				t.Errorf("events = %v", d.Events)
			}
		})
	}
}

func TestReplicaSetStatus(t *testing.T) {
	rs := newRS(4)
	rs.Spec.MinReadySeconds = 30
	relabelled := ready("front-r", t0.Add(-time.Hour))
	relabelled.Labels = map[string]string{"app": "front"}
	pods := []workload.ObservedPod{
		ready("front-a", t0.Add(-time.Hour)),
		ready("front-b", t0.Add(-10*time.Second)),
		pod("front-c", corev1.PodRunning, time.Time{}, t0, 0),
		relabelled,
		pod("front-f", corev1.PodFailed, time.Time{}, t0, 0),
	}
	d := Sync(rs, pods, t0)
	want := Status{ObservedGeneration: 2, Replicas: 4, FullyLabeledReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 2}
	if d.Status != want {
		t.Errorf("status = %+v, want %+v", d.Status, want)
	}
	if at := t0.Add(20 * time.Second); !d.RequeueAt.Equal(at) {
		t.Errorf("RequeueAt = %v, want %v", d.RequeueAt, at)
	}
	if len(d.CreatePods)+len(d.DeletePods) != 0 {
		t.Error("a set at its replicas changed pods")
	}
}
