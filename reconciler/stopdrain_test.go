package reconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// TestSetDrains: the plan marks exactly the graceful stops of running
// replicas and pods with the pod to drain first, by the name `get pods`
// shows; a stop of a container that is not running drains nothing.
func TestSetDrains(t *testing.T) {
	d := deployment(1)
	hash := manifests.TemplateHash(&d.Spec.Template)
	running := ctr(hash, 0, dockerx.StateRunning, time.Hour)
	surplus := ctr(hash, 1, dockerx.StateRunning, time.Minute)
	paused := ctr(hash, 1, dockerx.StatePaused, time.Minute)
	exited := ctr(hash, 1, dockerx.StateExited, time.Minute)
	old := ctr("old", 0, dockerx.StateRunning, time.Hour)
	pd := podDeployment(0)
	pdHash := manifests.TemplateHash(&pd.Spec.Template)
	podRunning := podOf(pdHash, 0, dockerx.StateRunning, map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": dockerx.StateRunning, "log": dockerx.StateRunning})
	podExited := podOf(pdHash, 1, dockerx.StateExited, map[string]string{"app": dockerx.StateExited})

	tests := []struct {
		name      string
		in        PlanInput
		noDrainer bool
		want      []string // "kind name → ns/pod" for every op with a drain
	}{
		{
			name:      "without a Drainer no stop drains",
			in:        PlanInput{Desired: d, Containers: []dockerx.Container{running, surplus}},
			noDrainer: true,
		},
		{
			name: "scale-down of a running replica drains its pod",
			in:   PlanInput{Desired: d, Containers: []dockerx.Container{running, surplus}},
			want: []string{"remove " + surplus.Name + " → default/web-" + hash + "-1"},
		},
		{
			name: "a paused replica serves nothing: its stop drains nothing",
			in:   PlanInput{Desired: d, Containers: []dockerx.Container{running, paused}},
		},
		{
			name: "an exited replica is removed without a drain",
			in:   PlanInput{Desired: d, Containers: []dockerx.Container{running, exited}},
		},
		{
			name: "rollout: the old revision's running replica drains",
			in: PlanInput{Desired: d, Containers: []dockerx.Container{old, running}, Available: map[string]bool{running.ID: true},
				State: RolloutState{Sizes: map[string]int32{"old": 1, hash: 1}}},
			want: []string{"remove " + old.Name + " → default/web-old-0"},
		},
		{
			name: "deleted deployment: every running replica drains",
			in:   PlanInput{Containers: []dockerx.Container{running, exited}},
			want: []string{"remove " + running.Name + " → default/web-" + hash + "-0"},
		},
		{
			name: "liveness restart drains the replica's pod",
			in:   PlanInput{Desired: d, Containers: []dockerx.Container{running}, LivenessFailed: map[string]bool{running.ID: true}},
			want: []string{"restart " + running.Name + " → default/web-" + hash + "-0"},
		},
		{
			name: "a deployment of another namespace drains in it",
			in:   PlanInput{Namespace: "shop", Containers: []dockerx.Container{running}},
			want: []string{"remove " + running.Name + " → shop/web-" + hash + "-0"},
		},
		{
			name: "a pod's removal drains the pod once; a pod with nothing running drains nothing",
			in:   deleted(podInput(pd, concat(podRunning, podExited))),
			want: []string{"remove " + podRunning[0].Name + " → default/" + podRunning[0].Pod},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Name, in.Instance, in.Now, in.DrainPods = "web", "i", t0, !tt.noDrainer
			if in.Desired != nil && in.Hash == "" {
				in.Hash = manifests.TemplateHash(&in.Desired.Spec.Template)
			}
			if in.Pods == nil {
				in.Containers, in.Pods = podruntime.GroupPods(in.Containers, templateLookup(in.Desired, in.Hash, nil), nil)
			}
			plan := ComputePlan(in)
			var got []string
			for _, op := range plan.Ops {
				if op.Drain != nil {
					got = append(got, fmt.Sprintf("%s %s → %s/%s", op.Kind, op.Name, op.Drain.Namespace, op.Drain.Pod))
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("drains:\n got  %q\n want %q\nplan:\n%s", got, tt.want, plan)
			}
		})
	}
}

func deleted(in PlanInput) PlanInput {
	in.Desired = nil
	return in
}

// seqLog is one ordered record of drains and stops.
type seqLog struct {
	mu     sync.Mutex
	events []string
}

func (l *seqLog) add(ev string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

func (l *seqLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// fakeDrainer records each drain once it has completed; err fails them,
// block holds them until their context ends (the drain's bound).
type fakeDrainer struct {
	log   *seqLog
	err   error
	block bool
}

func (d *fakeDrainer) Drain(ctx context.Context, namespace, pod string) error {
	if d.block {
		// Recorded as it begins: the stop goes on at the bound without
		// waiting for this call to return.
		d.log.add("drain-never-answers " + namespace + "/" + pod)
		<-ctx.Done()
		return ctx.Err()
	}
	d.log.add("drain " + namespace + "/" + pod)
	return d.err
}

// drainStopRecorder records each StopContainer as it is called, by the pod of
// the container it stops.
type drainStopRecorder struct {
	*dockerfake.Engine
	log *seqLog
}

func (s *drainStopRecorder) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	for _, c := range s.Snapshot() {
		if c.ID == id {
			pod := c.Pod
			if pod == "" {
				pod = podName(c.Deployment, &c)
			}
			s.log.add("stop " + pod + " " + c.Name)
		}
	}
	return s.Engine.StopContainer(ctx, id, timeout)
}

// newDrainHarness is a harness whose controller drains through d and
// records its stops in log.
func newDrainHarness(t *testing.T, d Drainer, log *seqLog) *harness {
	h := newHarness(t, Options{Drainer: d})
	h.ctrl = New(&drainStopRecorder{Engine: h.engine, log: log}, h.store, h.opts)
	return h
}

// drainedFirst checks that every stop of a pod came after a completed
// drain (or a drain that gave up) of that pod, and returns how many stops
// there were.
func drainedFirst(t *testing.T, events []string) int {
	t.Helper()
	drained := map[string]bool{}
	stops := 0
	for _, ev := range events {
		switch f := strings.Fields(ev); f[0] {
		case "drain", "drain-never-answers":
			_, pod, _ := strings.Cut(f[1], "/")
			drained[pod] = true
		case "stop":
			stops++
			if !drained[f[1]] {
				t.Fatalf("%s before its pod was drained: %q", ev, events)
			}
		}
	}
	return stops
}

func countPrefix(events []string, prefix string) int {
	n := 0
	for _, ev := range events {
		if strings.HasPrefix(ev, prefix) {
			n++
		}
	}
	return n
}

// scaleTo applies d with n replicas and waits for them.
func scaleTo(n int32) func(h *harness, d *manifests.Deployment) {
	return func(h *harness, d *manifests.Deployment) {
		d.Spec.Replicas = ptrTo(n)
		h.apply(d)
		h.waitFor(fmt.Sprintf("%d pods of web", n), func() bool { return len(h.ours("web")) == int(n)*len(d.Spec.Template.Spec.Containers) })
	}
}

// TestDrainBeforeStop: every path that stops a running replica gracefully
// — scale-down, rollout, delete, liveness restart, and a pod of several
// containers — drains its pod to completion before the first stop signal;
// a drain that fails or never answers delays the stop by at most its bound
// and never prevents it.
func TestDrainBeforeStop(t *testing.T) {
	tests := []struct {
		name    string
		drainer func(*seqLog) *fakeDrainer
		dep     func() *manifests.Deployment
		act     func(h *harness, d *manifests.Deployment)
		stops   int
	}{
		{
			name:  "scale-down",
			dep:   func() *manifests.Deployment { return testDeployment("web", 3, "x") },
			act:   scaleTo(1),
			stops: 2,
		},
		{
			name: "rollout",
			dep:  func() *manifests.Deployment { return testDeployment("web", 2, "x") },
			act: func(h *harness, _ *manifests.Deployment) {
				h.apply(testDeployment("web", 2, "y"))
				h.waitReplicas("web", 2)
			},
			stops: 2,
		},
		{
			name: "delete",
			dep:  func() *manifests.Deployment { return testDeployment("web", 2, "x") },
			act: func(h *harness, _ *manifests.Deployment) {
				if err := h.store.Delete("", "web"); err != nil {
					h.t.Fatal(err)
				}
				h.waitFor("every replica gone", func() bool { return len(h.ours("web")) == 0 })
			},
			stops: 2,
		},
		{
			name:  "pod of two containers, scaled to zero",
			dep:   func() *manifests.Deployment { return twoContainerPod("web", 1) },
			act:   scaleTo(0),
			stops: 3, // app, sidecar-less second app, holder
		},
		{
			name:    "a failing drain does not prevent the stop",
			drainer: func(l *seqLog) *fakeDrainer { return &fakeDrainer{log: l, err: errors.New("proxy unreachable")} },
			dep:     func() *manifests.Deployment { return testDeployment("web", 2, "x") },
			act:     scaleTo(1),
			stops:   1,
		},
		{
			name:    "a drain that never answers is cut at its bound (the grace period, 1s)",
			drainer: func(l *seqLog) *fakeDrainer { return &fakeDrainer{log: l, block: true} },
			dep:     func() *manifests.Deployment { return withGrace(testDeployment("web", 2, "x"), 1) },
			act:     scaleTo(1),
			stops:   1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &seqLog{}
			dr := &fakeDrainer{log: log}
			if tt.drainer != nil {
				dr = tt.drainer(log)
			}
			h := newDrainHarness(t, dr, log)
			d := tt.dep()
			h.apply(d)
			h.start()
			h.waitFor("the pods to run", func() bool { cs := h.ours("web"); return allRunning(cs) && len(cs) >= int(d.Replicas()) })
			tt.act(h, d)
			events := log.all()
			if n := drainedFirst(t, events); n != tt.stops {
				t.Fatalf("%d stops, want %d: %q", n, tt.stops, events)
			}
		})
	}
}

func twoContainerPod(name string, replicas int32) *manifests.Deployment {
	d := testDeployment(name, replicas, "x")
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, manifests.Container{Name: "second", Image: testImage})
	manifests.SetDefaults(d)
	return d
}

// TestDrainBeforeLivenessRestart: a liveness restart is a graceful stop
// like the others: the pod drains before the stop signal.
func TestDrainBeforeLivenessRestart(t *testing.T) {
	log := &seqLog{}
	h := newDrainHarness(t, &fakeDrainer{log: log}, log)
	runner, _, c := startWithLiveness(h)
	runner.failTimes(c.ID, 1)
	h.waitFor("the liveness restart's stop", func() bool { return countPrefix(log.all(), "stop ") == 1 })
	events := log.all()
	if drainedFirst(t, events); countPrefix(events, "drain ") != 1 {
		t.Fatalf("want one drain before the restart: %q", events)
	}
}

// TestStopOfPausedReplicaDrainsNothing: a container that is not running
// serves nothing; its graceful stop calls no Drainer.
func TestStopOfPausedReplicaDrainsNothing(t *testing.T) {
	log := &seqLog{}
	h := newDrainHarness(t, &fakeDrainer{log: log}, log)
	d := testDeployment("web", 1, "x")
	h.apply(d)
	h.start()
	c := h.waitReplicas("web", 1)[0]
	h.stop() // paused while no controller runs: none unpauses it first
	if err := h.engine.Pause(c.ID); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = ptrTo[int32](0)
	h.apply(d)
	h.ctrl = New(&drainStopRecorder{Engine: h.engine, log: log}, h.store, h.opts)
	h.start()
	h.waitFor("the replica gone", func() bool { return len(h.ours("web")) == 0 })
	events := log.all()
	if countPrefix(events, "stop ") != 1 || countPrefix(events, "drain") != 0 {
		t.Fatalf("want one stop and no drain: %q", events)
	}
}
