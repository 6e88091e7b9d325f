package reconciler

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// Issue 8 item 11: `get` and `rollout status` judge each container by its
// own revision's template: an old replica is not held to the new template's
// readiness probe, nor excused from its own.
func TestViewJudgesEachRevisionByItsOwnTemplate(t *testing.T) {
	plain := deployment(2)
	probedD := deployment(2)
	probedD.Spec.Template.Spec.Containers[0].ReadinessProbe = fastProbe()
	tests := []struct {
		name         string
		current, old *manifests.Deployment
		wantOldReady bool
	}{
		{"old revision without probe, new one with a probe", probedD, plain, true},
		{"old revision with a probe never passed, new one without", plain, probedD, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldHash := manifests.TemplateHash(&tt.old.Spec.Template)
			newHash := manifests.TemplateHash(&tt.current.Spec.Template)
			rec := &store.Record{Name: "web", Deployment: *tt.current, Revisions: []store.Revision{
				{Number: 1, Hash: oldHash, Template: tt.old.Spec.Template},
				{Number: 2, Hash: newHash, Template: tt.current.Spec.Template},
			}}
			old := ctr(oldHash, 0, dockerx.StateRunning, time.Hour)
			st, views := View(rec, nil, nil, []dockerx.Container{old}, t0)
			if got := views[old.ID].Ready; got != tt.wantOldReady {
				t.Fatalf("old replica ready %v, want %v", got, tt.wantOldReady)
			}
			if want := map[bool]int32{true: 1}[tt.wantOldReady]; st.ReadyReplicas != want {
				t.Fatalf("readyReplicas %d, want %d", st.ReadyReplicas, want)
			}
		})
	}
}

// Issue 8 item 1: the settle rule. Every container must have been ready
// for max(minReadySeconds, settle) before it counts as available; one that
// dockctl restarted, for podruntime.CrashWindow at least.
func TestAvailabilitySettleRule(t *testing.T) {
	tests := []struct {
		name      string
		minReady  int32
		settle    time.Duration
		readyFor  time.Duration
		restarts  int
		want      bool
		wantAfter time.Duration // the requeue, when not yet available
	}{
		{"brand-new container is not available at once", 0, 5 * time.Second, 0, 0, false, 5 * time.Second},
		{"one second after start: still settling", 0, 5 * time.Second, time.Second, 0, false, 4 * time.Second},
		{"settled", 0, 5 * time.Second, 5 * time.Second, 0, true, 0},
		{"minReadySeconds longer than the settle time wins", 8, 5 * time.Second, 6 * time.Second, 0, false, 2 * time.Second},
		{"settle time longer than minReadySeconds wins", 2, 5 * time.Second, 3 * time.Second, 0, false, 2 * time.Second},
		{"settle rule off: Kubernetes' behaviour", 0, 0, 0, 0, true, 0},
		{"restarted: podruntime.CrashWindow", 0, 5 * time.Second, 6 * time.Second, 1, false, 4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployment(1)
			d.Spec.MinReadySeconds = tt.minReady
			c := ctr("aaaa", 0, dockerx.StateRunning, time.Hour)
			states := map[string]*podruntime.ContainerState{c.ID: {ReadySince: t0.Add(-tt.readyFor), Restarts: tt.restarts}}
			avail, next := availability(d, []dockerx.Container{c}, map[string]bool{c.ID: true}, states, tt.settle, t0)
			if avail[c.ID] != tt.want || next != tt.wantAfter {
				t.Fatalf("available %v, requeue %v; want %v, %v", avail[c.ID], next, tt.want, tt.wantAfter)
			}
		})
	}
}

// A container dockctl created that exits within podruntime.CrashWindow is crash-looping
// from its first exit: its restart is backed off and `get` shows
// CrashLoopBackOff, although dockctl never restarted it.
func TestFirstQuickExitIsACrash(t *testing.T) {
	h := newHarness(t, Options{})
	c := ctr("aaaa", 0, dockerx.StateExited, time.Second)
	s := deploymentState{Containers: map[string]*podruntime.ContainerState{}}
	notBefore := h.ctrl.observeContainers(&s, []dockerx.Container{c}, map[string]bool{}, nil, t0)
	if nb, ok := notBefore[c.ID]; !ok || !nb.After(t0) {
		t.Fatalf("no backoff after a first exit 1s after creation: %v", notBefore)
	}
	var st store.Status
	if err := writeState(&st, s); err != nil {
		t.Fatal(err)
	}
	_, views := View(recordOf(deployment(1)), &st, nil, []dockerx.Container{c}, t0)
	if !views[c.ID].CrashLoopBackOff {
		t.Fatalf("view %+v, want CrashLoopBackOff", views[c.ID])
	}
	// A long-lived container that exits is started again at once.
	long := ctr("aaaa", 1, dockerx.StateExited, time.Hour)
	if nb := h.ctrl.observeContainers(&s, []dockerx.Container{long}, map[string]bool{}, nil, t0); !nb[long.ID].IsZero() {
		t.Fatalf("backoff %v for the first exit of a container that ran for an hour", nb[long.ID])
	}
}

// `dockctl get` judges availability with the controller's settle time,
// which the controller records in the status.
func TestViewUsesTheRecordedSettleTime(t *testing.T) {
	c := ctr("aaaa", 0, dockerx.StateRunning, 3*time.Second) // created 3s ago, no controller memory
	rec := recordOf(deployment(1))
	for _, tt := range []struct {
		settle *time.Duration
		want   int32
	}{{nil, 0}, {ptr(2 * time.Second), 1}, {ptr(time.Duration(0)), 1}, {ptr(10 * time.Second), 0}} {
		var st store.Status
		if err := writeState(&st, deploymentState{Settle: tt.settle}); err != nil {
			t.Fatal(err)
		}
		rec.Deployment.Spec.Template.Spec.Containers[0].Image = "img:1"
		hash := manifests.TemplateHash(&rec.Deployment.Spec.Template)
		c.TemplateHash = hash
		s, _ := View(rec, &st, nil, []dockerx.Container{c}, t0)
		if s.AvailableReplicas != tt.want {
			raw, _ := json.Marshal(st.Extra)
			t.Errorf("settle %s: %d available, want %d", raw, s.AvailableReplicas, tt.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// Review 12e: a pod with a pending request of `delete pod` is terminating
// from the request on, as a Kubernetes pod is from its deletion timestamp
// on, whether or not the controller began its stop: `get pods` and the
// status counts show it as they show a pod whose stop has begun —
// Terminating, neither available nor a replica — for a replica of one
// container, named by its container, and a pod with a holder, named by
// its uid.
func TestViewPendingDeletionIsTerminating(t *testing.T) {
	single := deployment(2)
	sHash := manifests.TemplateHash(&single.Spec.Template)
	pod := podDeployment(2)
	pHash := manifests.TemplateHash(&pod.Spec.Template)
	running := map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": dockerx.StateRunning, "log": dockerx.StateRunning}
	pod0, pod1 := podOf(pHash, 0, dockerx.StateRunning, running), podOf(pHash, 1, dockerx.StateRunning, running)
	c0, c1 := ctr(sHash, 0, dockerx.StateRunning, time.Hour), ctr(sHash, 1, dockerx.StateRunning, time.Hour)
	tests := []struct {
		name string
		d    *manifests.Deployment
		cs   []dockerx.Container
		del  store.PodDeletion
	}{
		{"a replica of one container", single, []dockerx.Container{c0, c1}, store.PodDeletion{Pod: "web-1", Containers: []string{c1.ID}}},
		{"a pod with a holder", pod, concat(pod0, pod1), store.PodDeletion{Pod: "web-1", UID: pod1[0].PodUID, Containers: []string{"id-other"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &store.Record{Name: "web", Deployment: *tt.d}
			// The same pod, its stop begun (a deadline recorded for its unit).
			hash := manifests.TemplateHash(&tt.d.Spec.Template)
			units, pods := podruntime.GroupPods(tt.cs, templateLookup(tt.d, hash, nil), nil)
			unit := tt.del.Containers[0]
			for key, p := range pods {
				if p.UID == tt.del.UID {
					unit = key
				}
			}
			if len(units) != 2 {
				t.Fatalf("units %s", summary(units))
			}
			stopping := &store.Status{}
			if err := writeState(stopping, deploymentState{Containers: map[string]*podruntime.ContainerState{unit: {StopDeadline: t0.Add(time.Minute)}}}); err != nil {
				t.Fatal(err)
			}
			dels := []store.PodDeletion{tt.del}
			requested, _ := View(rec, nil, dels, tt.cs, t0)
			stopped, _ := View(rec, stopping, nil, tt.cs, t0)
			if requested.Replicas != 1 || requested.ReadyReplicas != 1 || !reflect.DeepEqual(requested, stopped) {
				t.Errorf("counts with the request %+v, want 1 replica, 1 ready, as with its stop begun %+v", requested, stopped)
			}
			got, want := Pods(rec, nil, dels, tt.cs, t0), Pods(rec, stopping, nil, tt.cs, t0)
			if len(got) != 2 || len(want) != 2 {
				t.Fatalf("pods %+v", got)
			}
			for i := range got {
				g, w := got[i], want[i]
				if g.Name != w.Name || g.Status != w.Status || g.Ready != w.Ready || g.Terminating != w.Terminating || g.Available != w.Available {
					t.Errorf("pod %s with the request: %s %d/%d terminating=%v; with its stop begun: %s %d/%d terminating=%v",
						g.Name, g.Status, g.Ready, g.Total, g.Terminating, w.Status, w.Ready, w.Total, w.Terminating)
				}
			}
			if p := got[1]; !p.Terminating || p.Status != "Terminating" || got[0].Status != "Running" {
				t.Errorf("pods %s %s, %s %s: want the deleted one Terminating, the other Running", got[0].Name, got[0].Status, p.Name, p.Status)
			}
			// Its stop not begun, it is killed at the request's time and
			// grace (the default 30 s), as the API server's
			// deletionTimestamp says.
			asked := tt.del
			asked.RequestedAt = t0.Add(-10 * time.Second)
			pending := Pods(rec, nil, []store.PodDeletion{asked}, tt.cs, t0)
			if want := t0.Add(20 * time.Second); !pending[1].StopDeadline.Equal(want) {
				t.Errorf("deadline of the deleted pod %s, want %s", pending[1].StopDeadline, want)
			}
		})
	}
}
