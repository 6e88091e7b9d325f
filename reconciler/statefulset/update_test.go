package statefulset

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/workload"
)

// rolled is a set of n ready pods at the old revision whose template then
// changed to image nginx:2, and the observation of it.
func rolled(n int32, opts ...setOpt) (set *manifests.StatefulSet, hist []Revision, prev Status, pods []workload.ObservedPod) {
	old := newSet(n, opts...)
	set = newSet(n, append(opts, image("nginx:2"))...)
	for i := range int(n) {
		pods = append(pods, ready(PodName(old, i), rev(old)))
	}
	return set, history(old), Status{CurrentRevision: rev(old)}, pods
}

func TestRollingUpdateReplacesHighestOrdinalFirst(t *testing.T) {
	set, hist, prev, pods := rolled(3)
	d := Sync(set, hist, prev, pods, nil, t0)
	eq(t, "deleted", d.DeletePods, []string{"web-2"})
	if d.Status.CurrentReplicas != 2 || d.Status.UpdatedReplicas != 0 {
		t.Errorf("current/updated = %d/%d, want 2/0 (the deleted pod is no longer current)", d.Status.CurrentReplicas, d.Status.UpdatedReplicas)
	}
	if d.Status.CurrentRevision == d.Status.UpdateRevision {
		t.Error("the current revision moved before the update completed")
	}
}

func TestRollingUpdateRunsToCompletionOneAtATime(t *testing.T) {
	for _, opts := range [][]setOpt{nil, {parallel}} {
		set, hist, prev, pods := rolled(3, opts...)
		c := newCluster(set)
		c.hist, c.status = hist, prev
		for _, p := range pods {
			c.pods[p.Name] = p
		}
		d := c.settle(t)
		eq(t, "replaced", c.deleted, []string{"web-2", "web-1", "web-0"})
		eq(t, "recreated", c.created, []string{"web-2", "web-1", "web-0"})
		if d.Status.CurrentRevision != rev(set) || d.Status.CurrentReplicas != 3 || d.Status.UpdatedReplicas != 3 {
			t.Errorf("status = %+v, want the update revision current with 3 pods", d.Status)
		}
	}
}

func TestRollingUpdateWaitsForUnhealthyPod(t *testing.T) {
	set, hist, prev, pods := rolled(3)
	pods[2] = notReady("web-2", rev(set)) // already replaced, not ready yet
	d := Sync(set, hist, prev, pods, nil, t0)
	eq(t, "deleted", d.DeletePods, nil)
	if d.Waiting == "" {
		t.Error("no reason given for the wait")
	}
}

func TestRollingUpdateRespectsPartition(t *testing.T) {
	set, hist, prev, pods := rolled(4, partition(2))
	c := newCluster(set)
	c.hist, c.status = hist, prev
	for _, p := range pods {
		c.pods[p.Name] = p
	}
	d := c.settle(t)
	eq(t, "replaced", c.deleted, []string{"web-3", "web-2"})
	if d.Status.CurrentReplicas != 2 || d.Status.UpdatedReplicas != 2 || d.Status.CurrentRevision == d.Status.UpdateRevision {
		t.Errorf("status = %+v, want 2 current, 2 updated, current revision kept", d.Status)
	}
	// A pod below the partition that goes comes back at the current
	// revision; one at or above it at the update revision.
	old := hist[0]
	delete(c.pods, "web-1")
	delete(c.pods, "web-3")
	set.Spec.PodManagementPolicy = "Parallel"
	d = Sync(set, c.hist, c.status, c.observed(), nil, t0)
	if len(d.CreatePods) != 2 {
		t.Fatalf("created %q, want web-1 and web-3", podNames(d.CreatePods))
	}
	if got := d.CreatePods[0]; got.Name != "web-1" || got.TemplateHash != old.Hash || got.Template.Spec.Containers[0].Image != "nginx:1" {
		t.Errorf("web-1 created at %s (%s), want the current revision %s", got.TemplateHash, got.Template.Spec.Containers[0].Image, old.Hash)
	}
	if got := d.CreatePods[1]; got.Name != "web-3" || got.TemplateHash != set.TemplateHash() {
		t.Errorf("web-3 created at %s, want the update revision %s", got.TemplateHash, set.TemplateHash())
	}
}

func TestRollingUpdateMaxUnavailable(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		broken []int // pods already unavailable (not ready, old revision)
		want   []string
	}{
		{"two at a time", 2, nil, []string{"web-4", "web-3"}},
		{"more than pods", 9, nil, []string{"web-4", "web-3", "web-2", "web-1", "web-0"}},
		{"an unavailable pod uses the budget", 2, []int{0}, []string{"web-4"}},
		{"budget spent", 2, []int{0, 1}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, hist, prev, pods := rolled(5, parallel, maxUnavailable(tt.max))
			for _, i := range tt.broken {
				pods[i] = notReady(pods[i].Name, pods[i].Revision())
			}
			d := Sync(set, hist, prev, pods, nil, t0)
			eq(t, "deleted", d.DeletePods, tt.want)
		})
	}
}

func TestOnDeleteNeverReplaces(t *testing.T) {
	set, hist, prev, pods := rolled(3, onDelete)
	d := Sync(set, hist, prev, pods, nil, t0)
	if len(d.DeletePods)+len(d.CreatePods) != 0 {
		t.Errorf("deleted %q, created %q: OnDelete replaces nothing", d.DeletePods, podNames(d.CreatePods))
	}
	if d.Status.CurrentRevision != prev.CurrentRevision || d.Status.UpdatedReplicas != 0 {
		t.Errorf("status = %+v, want the current revision kept", d.Status)
	}
}

func TestOnDeleteCreatesMissingAtUpdateRevision(t *testing.T) {
	set, hist, prev, pods := rolled(3, onDelete)
	d := Sync(set, hist, prev, append(pods[:1], pods[2]), nil, t0)
	if len(d.CreatePods) != 1 || d.CreatePods[0].Name != "web-1" || d.CreatePods[0].TemplateHash != set.TemplateHash() {
		t.Fatalf("created %+v, want web-1 at the update revision", d.CreatePods)
	}
}

func TestCurrentRevisionAdvancesWhenUpdateCompletes(t *testing.T) {
	set, hist, prev, _ := rolled(2)
	up := rev(set)
	tests := []struct {
		name string
		pods []workload.ObservedPod
		want string
	}{
		{"all updated and ready", []workload.ObservedPod{ready("web-0", up), ready("web-1", up)}, up},
		{"one not ready", []workload.ObservedPod{ready("web-0", up), notReady("web-1", up)}, prev.CurrentRevision},
		{"one still old", []workload.ObservedPod{ready("web-0", up), ready("web-1", prev.CurrentRevision)}, prev.CurrentRevision},
		// Kubernetes compares with spec.replicas (completeRollingUpdate:
		// updated, ready and existing replicas all equal to it): a pod
		// still missing holds the revision back.
		{"one missing", []workload.ObservedPod{ready("web-0", up)}, prev.CurrentRevision},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Sync(set, hist, prev, tt.pods, nil, t0)
			if d.Status.CurrentRevision != tt.want {
				t.Errorf("currentRevision = %q, want %q", d.Status.CurrentRevision, tt.want)
			}
		})
	}
}

func TestRollingUpdateWaitsForReplacedPodAvailable(t *testing.T) {
	for _, opts := range [][]setOpt{{minReady(30)}, {minReady(30), parallel}} {
		set, hist, prev, pods := rolled(3, opts...)
		pods[2] = pod("web-2", rev(set), corev1.PodRunning, t0.Add(-10*time.Second))
		d := Sync(set, hist, prev, pods, nil, t0)
		eq(t, "deleted while web-2 is not available", d.DeletePods, nil)
		if at := t0.Add(20 * time.Second); !d.RequeueAt.Equal(at) {
			t.Errorf("RequeueAt = %v, want %v", d.RequeueAt, at)
		}
		d = Sync(set, hist, prev, pods, nil, t0.Add(20*time.Second))
		eq(t, "deleted once available", d.DeletePods, []string{"web-1"})
	}
}
