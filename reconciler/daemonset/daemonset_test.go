package daemonset

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/workload"
	"github.com/dockctl/dockctl/reconciler/workload/workloadtest"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type dsOpt func(*manifests.DaemonSet)

func surge(n int) dsOpt {
	return func(d *manifests.DaemonSet) {
		s, u := intstr.FromInt(n), intstr.FromInt(0)
		d.Spec.UpdateStrategy.RollingUpdate.MaxSurge, d.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &s, &u
	}
}
func onDelete(d *manifests.DaemonSet) {
	d.Spec.UpdateStrategy = manifests.DaemonSetUpdateStrategy{Type: manifests.StrategyOnDelete}
}
func minReady(sec int32) dsOpt { return func(d *manifests.DaemonSet) { d.Spec.MinReadySeconds = sec } }
func image(img string) dsOpt {
	return func(d *manifests.DaemonSet) { d.Spec.Template.Spec.Containers[0].Image = img }
}

func newDS(opts ...dsOpt) *manifests.DaemonSet {
	d := &manifests.DaemonSet{APIVersion: "apps/v1", Kind: manifests.KindDaemonSet,
		Metadata: manifests.ObjectMeta{Name: "agent", Namespace: "ops", Generation: 4},
		Spec: manifests.DaemonSetSpec{Selector: &manifests.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: manifests.PodTemplateSpec{Metadata: manifests.TemplateMeta{Labels: map[string]string{"app": "agent"}},
				Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "a", Image: "agent:1"}}}}}}
	manifests.SetDaemonSetDefaults(d)
	for _, o := range opts {
		o(d)
	}
	return d
}

func pod(name, hash string, phase corev1.PodPhase, readySince, created time.Time) workload.ObservedPod {
	p := workloadtest.Pod(name, phase, readySince)
	p.Labels, p.Created = map[string]string{workload.RevisionLabel: hash}, created
	return p
}

func ready(name, hash string, created time.Time) workload.ObservedPod {
	return pod(name, hash, corev1.PodRunning, created.Add(time.Second), created)
}

var terminating = workloadtest.Terminating

var (
	eq    = workloadtest.Equal
	names = workloadtest.PodNames
)

func TestCreatesTheHostsPodWhenThereIsNone(t *testing.T) {
	ds := newDS()
	d := Sync(ds, "host1", nil, nil, t0)
	if len(d.CreatePods) != 1 {
		t.Fatalf("created %d pods, want 1", len(d.CreatePods))
	}
	p := d.CreatePods[0]
	if !strings.HasPrefix(p.Name, "agent-") || len(p.Name) != len("agent-")+workload.SuffixLen || p.Namespace != "ops" {
		t.Errorf("pod %s/%s, want ops/agent-xxxxx", p.Namespace, p.Name)
	}
	if want := map[string]string{"app": "agent", workload.RevisionLabel: ds.TemplateHash()}; !maps.Equal(p.Template.Metadata.Labels, want) {
		t.Errorf("labels = %v, want %v", p.Template.Metadata.Labels, want)
	}
	if p.Owner != (podruntime.OwnerRef{Kind: "DaemonSet", Name: "agent"}) || p.TemplateHash != ds.TemplateHash() {
		t.Errorf("pod = %+v", p)
	}
	if len(d.Events) != 1 || d.Events[0].Message != "Created pod: "+p.Name {
		t.Errorf("events = %v", d.Events)
	}
	if d.NewRevision == nil || d.NewRevision.Name != "agent-"+ds.TemplateHash() {
		t.Errorf("NewRevision = %+v", d.NewRevision)
	}
	if len(ds.Spec.Template.Metadata.Labels) != 1 {
		t.Error("the set's template was changed")
	}
}

func TestManageOnTheHost(t *testing.T) {
	h := newDS().TemplateHash()
	old := t0.Add(-time.Hour)
	tests := []struct {
		name        string
		pods        []workload.ObservedPod
		wantCreate  int
		wantDelete  []string
		wantWarning bool
		opt         dsOpt
	}{
		{"one ready pod: nothing", []workload.ObservedPod{ready("agent-a", h, old)}, 0, nil, false, nil},
		{"a terminating pod: wait for it", []workload.ObservedPod{terminating(ready("agent-a", h, old))}, 0, nil, false, nil},
		{"a failed pod is deleted", []workload.ObservedPod{pod("agent-a", h, corev1.PodFailed, time.Time{}, old)}, 0, []string{"agent-a"}, true, nil},
		{"a succeeded pod is deleted", []workload.ObservedPod{pod("agent-a", h, corev1.PodSucceeded, time.Time{}, old)}, 0, []string{"agent-a"}, false, nil},
		{"two pods: the oldest stays", []workload.ObservedPod{ready("agent-b", h, t0), ready("agent-a", h, old)}, 0, []string{"agent-b"}, false, nil},
		{"surge, a terminating pod: its successor starts", []workload.ObservedPod{terminating(ready("agent-a", h, old))}, 1, nil, false, surge(1)},
		{"surge, a failed pod: deleted and replaced at once", []workload.ObservedPod{pod("agent-a", h, corev1.PodFailed, time.Time{}, old)}, 1, []string{"agent-a"}, true, surge(1)},
		{"surge, three updated pods: the oldest stays", []workload.ObservedPod{ready("agent-c", h, t0), ready("agent-a", h, old), ready("agent-b", h, t0.Add(-time.Minute))}, 0, []string{"agent-b", "agent-c"}, false, surge(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []dsOpt
			if tt.opt != nil {
				opts = append(opts, tt.opt)
			}
			d := Sync(newDS(opts...), "host1", nil, tt.pods, t0)
			if len(d.CreatePods) != tt.wantCreate {
				t.Errorf("created %q", names(d.CreatePods))
			}
			eq(t, "deleted", d.DeletePods, tt.wantDelete)
			warned := slices.ContainsFunc(d.Events, func(e workload.Event) bool {
				return e.Reason == "FailedDaemonPod" && e.Type == corev1.EventTypeWarning &&
					e.Message == "Found failed daemon pod ops/agent-a on node host1, will try to kill it"
			})
			if warned != tt.wantWarning {
				t.Errorf("events = %v, want FailedDaemonPod: %v", d.Events, tt.wantWarning)
			}
		})
	}
}

// host plays the executor and pod runtime: a created pod is ready a
// second later; a deleted one terminates for a step, then is gone.
type host struct {
	ds   *manifests.DaemonSet
	pods []workload.ObservedPod
	now  time.Time
	log  []string
}

func (h *host) step() Decision {
	var live []workload.ObservedPod
	for _, p := range h.pods {
		if !p.Terminating() {
			live = append(live, p)
		}
	}
	d := Sync(h.ds, "host1", nil, h.pods, h.now)
	for _, n := range d.DeletePods {
		i := slices.IndexFunc(live, func(p workload.ObservedPod) bool { return p.Name == n })
		live[i] = terminating(live[i])
		h.log = append(h.log, "delete "+live[i].Revision()[:4])
	}
	for _, ps := range d.CreatePods {
		live = append(live, ready(ps.Name, ps.TemplateHash, h.now))
		h.log = append(h.log, "create "+ps.TemplateHash[:4])
	}
	h.pods = live
	h.now = h.now.Add(time.Second)
	return d
}

func TestRollingUpdateReplacesThePod(t *testing.T) {
	oldDS := newDS()
	for _, tt := range []struct {
		name string
		opts []dsOpt
		want []string
	}{
		{"maxUnavailable 1: the old pod goes first", nil, []string{"delete o", "create n"}},
		{"maxSurge 1: the new pod starts beside the old", []dsOpt{surge(1)}, []string{"create n", "delete o"}},
		{"maxSurge 1 with minReadySeconds: the old waits for the new to be available", []dsOpt{surge(1), minReady(5)}, []string{"create n", "delete o"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDS(append(tt.opts, image("agent:2"))...)
			h := &host{ds: ds, now: t0, pods: []workload.ObservedPod{ready("agent-old00", oldDS.TemplateHash(), t0.Add(-time.Hour))}}
			var d Decision
			for range 20 {
				d = h.step()
			}
			var got []string
			for _, l := range h.log {
				got = append(got, strings.NewReplacer(oldDS.TemplateHash()[:4], "o", ds.TemplateHash()[:4], "n").Replace(l))
			}
			eq(t, "steps", got, tt.want)
			if len(h.pods) != 1 || d.Status.UpdatedNumberScheduled != 1 || d.Status.NumberAvailable != 1 {
				t.Errorf("pods %d, status %+v; want one updated available pod", len(h.pods), d.Status)
			}
		})
	}
}

func TestSurgeDeletesOldPodOnlyOnceNewIsAvailable(t *testing.T) {
	oldHash := newDS().TemplateHash()
	ds := newDS(surge(1), minReady(10), image("agent:2"))
	h := ds.TemplateHash()
	old := ready("agent-o", oldHash, t0.Add(-time.Hour))
	d := Sync(ds, "host1", nil, []workload.ObservedPod{old, pod("agent-n", h, corev1.PodRunning, t0.Add(-5*time.Second), t0.Add(-6*time.Second))}, t0)
	eq(t, "deleted while the new pod is not available", d.DeletePods, nil)
	if at := t0.Add(5 * time.Second); !d.RequeueAt.Equal(at) {
		t.Errorf("RequeueAt = %v, want %v", d.RequeueAt, at)
	}
	d = Sync(ds, "host1", nil, []workload.ObservedPod{old, pod("agent-n", h, corev1.PodRunning, t0.Add(-10*time.Second), t0.Add(-11*time.Second))}, t0)
	eq(t, "deleted once available", d.DeletePods, []string{"agent-o"})
	notReadyOld := pod("agent-o", oldHash, corev1.PodRunning, time.Time{}, t0.Add(-time.Hour))
	d = Sync(ds, "host1", nil, []workload.ObservedPod{notReadyOld, pod("agent-n", h, corev1.PodRunning, time.Time{}, t0)}, t0)
	eq(t, "a not-ready old pod beside a new one", d.DeletePods, []string{"agent-o"})
}

func TestOnDeleteReplacesNothing(t *testing.T) {
	oldHash := newDS().TemplateHash()
	ds := newDS(onDelete, image("agent:2"))
	d := Sync(ds, "host1", nil, []workload.ObservedPod{ready("agent-o", oldHash, t0.Add(-time.Hour))}, t0)
	if len(d.CreatePods)+len(d.DeletePods) != 0 {
		t.Errorf("created %q, deleted %q", names(d.CreatePods), d.DeletePods)
	}
	if d.Status.UpdatedNumberScheduled != 0 {
		t.Errorf("updated = %d, want 0", d.Status.UpdatedNumberScheduled)
	}
	d = Sync(ds, "host1", nil, nil, t0)
	if len(d.CreatePods) != 1 || d.CreatePods[0].TemplateHash != ds.TemplateHash() {
		t.Errorf("created %+v, want the pod at the update revision", d.CreatePods)
	}
}

func TestDaemonSetStatus(t *testing.T) {
	ds := newDS(minReady(30))
	h := ds.TemplateHash()
	tests := []struct {
		name string
		pods []workload.ObservedPod
		want Status
	}{
		{"no pod", nil, Status{DesiredNumberScheduled: 1, NumberUnavailable: 1}},
		{"ready, not available", []workload.ObservedPod{pod("agent-a", h, corev1.PodRunning, t0.Add(-time.Second), t0)},
			Status{DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, NumberReady: 1, NumberUnavailable: 1, UpdatedNumberScheduled: 1}},
		{"available", []workload.ObservedPod{ready("agent-a", h, t0.Add(-time.Hour))},
			Status{DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, NumberReady: 1, NumberAvailable: 1, UpdatedNumberScheduled: 1}},
		{"the oldest is judged", []workload.ObservedPod{ready("agent-b", h, t0.Add(-time.Minute)), ready("agent-a", "old", t0.Add(-time.Hour))},
			Status{DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, NumberReady: 1, NumberAvailable: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.ObservedGeneration = 4
			if d := Sync(ds, "host1", nil, tt.pods, t0); d.Status != tt.want {
				t.Errorf("status = %+v, want %+v", d.Status, tt.want)
			}
		})
	}
}

func TestPercentBoundsRoundUpOnOneNode(t *testing.T) {
	oldHash := newDS().TemplateHash()
	pct := func(surge, unavailable string) dsOpt {
		return func(d *manifests.DaemonSet) {
			s, u := intstr.FromString(surge), intstr.FromString(unavailable)
			d.Spec.UpdateStrategy.RollingUpdate.MaxSurge, d.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &s, &u
		}
	}
	tests := []struct {
		name       string
		opt        dsOpt
		wantCreate int
		wantDelete []string
	}{
		{"maxSurge 10%: one pod beside the old", pct("10%", "0%"), 1, nil},
		{"maxUnavailable 10%: the old goes first", pct("0%", "10%"), 0, []string{"agent-o"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDS(tt.opt, image("agent:2"))
			d := Sync(ds, "host1", nil, []workload.ObservedPod{ready("agent-o", oldHash, t0.Add(-time.Hour))}, t0)
			if len(d.CreatePods) != tt.wantCreate {
				t.Errorf("created %q", names(d.CreatePods))
			}
			eq(t, "deleted", d.DeletePods, tt.wantDelete)
		})
	}
}

func TestNewPodNameAvoidsTakenNames(t *testing.T) {
	oldHash := newDS().TemplateHash()
	ds := newDS(surge(1), image("agent:2"))
	first := Sync(ds, "host1", nil, nil, t0).CreatePods[0].Name
	d := Sync(ds, "host1", nil, []workload.ObservedPod{ready(first, oldHash, t0.Add(-time.Hour))}, t0)
	if len(d.CreatePods) != 1 || d.CreatePods[0].Name == first {
		t.Errorf("created %q beside %q: want one pod of another name", names(d.CreatePods), first)
	}
}

// The rolling update judges every pod whose template hash is not the
// set's as old, whichever earlier revision it is of (Kubernetes'
// findUpdatedPodsOnNode and podsShouldBeOnNode compare with the current
// hash only): pods of two older revisions (a second template change
// before the first rollout ended) are both replaced, an old pod that is
// not ready is replaced without waiting, and an undo's pods carry the
// hash the restored revision's pods had.
func TestRollingUpdateReplacesPodsOfAnyOlderRevision(t *testing.T) {
	a, b := newDS().TemplateHash(), newDS(image("agent:2")).TemplateHash()
	notReady := func(name, hash string, created time.Time) workload.ObservedPod {
		return pod(name, hash, corev1.PodRunning, time.Time{}, created)
	}
	for _, tt := range []struct {
		name string
		opts []dsOpt
		pods []workload.ObservedPod
		want []string
		// wantBy is how many steps the replacement may take at most.
		wantBy int
	}{
		{"maxSurge: the surged pod of the middle revision goes, then the oldest is replaced",
			[]dsOpt{surge(1), minReady(5)},
			[]workload.ObservedPod{ready("agent-aaaaa", a, t0.Add(-time.Hour)), notReady("agent-bbbbb", b, t0.Add(-time.Second))},
			[]string{"delete b", "create c", "delete a"}, 20},
		{"maxUnavailable: both old pods go, the newer first, then the new one comes",
			nil,
			[]workload.ObservedPod{ready("agent-aaaaa", a, t0.Add(-time.Hour)), ready("agent-bbbbb", b, t0.Add(-time.Minute))},
			[]string{"delete b", "delete a", "create c"}, 20},
		{"maxSurge: an old pod that is not ready goes once its successor runs, before it is available",
			[]dsOpt{surge(1), minReady(30)},
			[]workload.ObservedPod{notReady("agent-aaaaa", a, t0.Add(-time.Hour))},
			[]string{"create c", "delete a"}, 3},
		{"maxUnavailable: an old pod that is not ready goes first",
			nil,
			[]workload.ObservedPod{notReady("agent-bbbbb", b, t0.Add(-time.Hour))},
			[]string{"delete b", "create c"}, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDS(append(tt.opts, image("agent:3"))...)
			h := &host{ds: ds, now: t0, pods: tt.pods}
			var d Decision
			steps := 0
			for range 60 {
				if d = h.step(); len(h.log) < len(tt.want) {
					steps++
				}
			}
			r := strings.NewReplacer(a[:4], "a", b[:4], "b", ds.TemplateHash()[:4], "c")
			var got []string
			for _, l := range h.log {
				got = append(got, r.Replace(l))
			}
			eq(t, "steps", got, tt.want)
			if steps >= tt.wantBy {
				t.Errorf("replaced in %d steps, want fewer than %d", steps+1, tt.wantBy)
			}
			if len(h.pods) != 1 || d.Status.UpdatedNumberScheduled != 1 {
				t.Errorf("pods %d, status %+v; want one updated pod", len(h.pods), d.Status)
			}
		})
	}
}

// An undo (the set's template back to an earlier revision's) rolls the
// host to that revision's hash, the one its pods had before; the
// revision is the history's, not a new one (Kubernetes' constructHistory
// finds the matching ControllerRevision and reuses its hash).
func TestUndoReusesTheEarlierRevisionsHash(t *testing.T) {
	first := newDS()
	second := newDS(image("agent:2"))
	history := []workload.Revision{RevisionOf(first), RevisionOf(second)}
	undone := newDS() // rollout undo writes revision 1's template back
	d := Sync(undone, "host1", history, []workload.ObservedPod{ready("agent-bbbbb", second.TemplateHash(), t0.Add(-time.Hour))}, t0)
	eq(t, "deleted", d.DeletePods, []string{"agent-bbbbb"})
	if d.NewRevision != nil {
		t.Errorf("NewRevision %+v, want none: the first revision is the history's", d.NewRevision)
	}
	d = Sync(undone, "host1", history, nil, t0)
	if len(d.CreatePods) != 1 || d.CreatePods[0].TemplateHash != first.TemplateHash() ||
		d.CreatePods[0].Template.Metadata.Labels[workload.RevisionLabel] != first.TemplateHash() {
		t.Errorf("created %+v, want one pod of the first revision's hash %s", d.CreatePods, first.TemplateHash())
	}
}

// OnDelete replaces only a pod that is gone, whichever revision the
// kept ones are of; a surplus pod goes as under any strategy.
func TestOnDeleteReplacesOnlyDeletedPods(t *testing.T) {
	a, b := newDS().TemplateHash(), newDS(image("agent:2")).TemplateHash()
	ds := newDS(onDelete, image("agent:3"))
	for _, tt := range []struct {
		name       string
		pods       []workload.ObservedPod
		wantCreate int
		wantDelete []string
	}{
		{"a pod two revisions old is kept", []workload.ObservedPod{ready("agent-aaaaa", a, t0.Add(-time.Hour))}, 0, nil},
		{"a terminating old pod: wait for it", []workload.ObservedPod{terminating(ready("agent-aaaaa", a, t0.Add(-time.Hour)))}, 0, nil},
		{"the host's pod is gone: made at the update revision", nil, 1, nil},
		{"two old pods: the oldest stays, whatever its revision", []workload.ObservedPod{ready("agent-bbbbb", b, t0.Add(-time.Minute)), ready("agent-aaaaa", a, t0.Add(-time.Hour))}, 0, []string{"agent-bbbbb"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := Sync(ds, "host1", nil, tt.pods, t0)
			if len(d.CreatePods) != tt.wantCreate || tt.wantCreate == 1 && d.CreatePods[0].TemplateHash != ds.TemplateHash() {
				t.Errorf("created %+v, want %d at %s", d.CreatePods, tt.wantCreate, ds.TemplateHash())
			}
			eq(t, "deleted", d.DeletePods, tt.wantDelete)
		})
	}
}
