package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// Tests of issue 8: a controller must hold up against records and
// containers it did not expect.

// editRecord rewrites a deployment's record file in place, as someone with
// write access to the state directory could.
func (h *harness) editRecord(name string, edit func(rec map[string]any)) {
	h.t.Helper()
	path := filepath.Join(h.store.Dir(), "deployments", name+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		h.t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		h.t.Fatal(err)
	}
	edit(rec)
	if data, err = json.Marshal(rec); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		h.t.Fatal(err)
	}
}

// editStatus rewrites the controller's memory of a deployment.
func (h *harness) editStatus(name string, edit func(*deploymentState)) {
	h.t.Helper()
	st, err := h.store.ReadStatus("", name)
	if err != nil {
		h.t.Fatal(err)
	}
	s := readState(st)
	edit(&s)
	if err := writeState(st, s); err != nil {
		h.t.Fatal(err)
	}
	if err := h.store.WriteStatus("", name, st); err != nil {
		h.t.Fatal(err)
	}
}

// condition returns the deployment's recorded condition of a type, or nil.
func (h *harness) condition(name, typ string) *manifests.DeploymentCondition {
	st, err := h.store.ReadStatus("", name)
	if err != nil || st == nil {
		return nil
	}
	return find(st.Conditions, typ)
}

// failureSays reports whether the deployment's ReplicaFailure condition
// names every one of parts.
func (h *harness) failureSays(name string, parts ...string) bool {
	c := h.condition(name, manifests.ConditionReplicaFailure)
	if c == nil {
		return false
	}
	for _, p := range parts {
		if !strings.Contains(c.Message, p) {
			return false
		}
	}
	return true
}

// waitResyncs waits until the controller has listed containers n more
// times (each sweep lists once): a condition, not a sleep, for asserting
// that something did not happen.
func (h *harness) waitResyncs(n int) {
	h.t.Helper()
	from := h.engine.Calls()["list"]
	h.waitFor(fmt.Sprintf("%d more resyncs", n), func() bool { return h.engine.Calls()["list"] >= from+n })
}

// mapAt walks a decoded JSON document.
func mapAt(m map[string]any, path ...string) map[string]any {
	for _, k := range path {
		m = m[k].(map[string]any)
	}
	return m
}

// Item 6: a parseable record that fails validation (or whose template does
// not hash to its recorded revision) is refused for that deployment only:
// no worker dies, nothing of it is created, its containers stay, and the
// other deployments keep being reconciled.
func TestControllerRefusesInvalidRecord(t *testing.T) {
	tests := []struct {
		name string
		edit func(rec map[string]any)
		want string // in the ReplicaFailure message
	}{
		{"negative replicas", func(rec map[string]any) {
			mapAt(rec, "deployment", "spec")["replicas"] = -1
		}, "spec.replicas"},
		{"negative minReadySeconds", func(rec map[string]any) {
			mapAt(rec, "deployment", "spec")["minReadySeconds"] = -5
		}, "spec.minReadySeconds"},
		{"maxSurge beyond any sense", func(rec map[string]any) {
			mapAt(rec, "deployment", "spec", "strategy")["rollingUpdate"] = map[string]any{"maxSurge": "-50%", "maxUnavailable": 1}
		}, "maxSurge"},
		{"template that does not hash to its revision", func(rec map[string]any) {
			mapAt(rec, "deployment", "spec", "template", "metadata", "labels")["extra"] = "sneaked-in"
		}, "hash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Options{ResyncPeriod: 20 * time.Millisecond})
			h.apply(testDeployment("good", 1, "x"), testDeployment("bad", 2, "x"))
			h.start()
			h.waitReplicas("good", 1)
			bad := h.waitReplicas("bad", 2)
			h.editRecord("bad", tt.edit)
			h.waitFor("a ReplicaFailure for the invalid record", func() bool {
				c := h.condition("bad", manifests.ConditionReplicaFailure)
				return c != nil && strings.Contains(c.Message, tt.want)
			})
			// The others are still repaired, so no worker died.
			for i := 0; i < 2*4; i++ { // more than the number of workers
				if err := h.engine.Remove(h.ours("good")[0].ID); err != nil {
					t.Fatal(err)
				}
				h.waitReplicas("good", 1)
			}
			// The refused one is neither scaled nor replaced.
			if err := h.engine.Remove(bad[0].ID); err != nil {
				t.Fatal(err)
			}
			h.waitResyncs(10)
			if got := h.ours("bad"); len(got) != 1 || got[0].ID != bad[1].ID {
				t.Fatalf("refused deployment touched: %s", summary(got))
			}
		})
	}
}

// Item 6: a record that is merely invalid under today's rules (an
// annotation key that a newer release would reject) is reported but still
// reconciled: an upgrade must never freeze a deployment that works.
func TestControllerReportsButRunsMerelyInvalidRecord(t *testing.T) {
	h := newHarness(t, Options{ResyncPeriod: 20 * time.Millisecond})
	h.apply(testDeployment("web", 2, "x"))
	h.start()
	h.waitReplicas("web", 2)
	h.editRecord("web", func(rec map[string]any) {
		mapAt(rec, "deployment", "metadata")["labels"] = map[string]any{"bad key!": "v"}
	})
	if err := h.engine.Remove(h.ours("web")[0].ID); err != nil {
		t.Fatal(err)
	}
	h.waitReplicas("web", 2)
	if c := h.condition("web", manifests.ConditionReplicaFailure); c != nil {
		t.Fatalf("a merely invalid record was refused: %+v", c)
	}
}

// Item 6: a panic in one sync (on the sync's goroutine or in one of the
// executor's) is recovered and retried with backoff for that deployment
// only; the only worker keeps serving the others.
func TestControllerRecoversPanickingSync(t *testing.T) {
	for _, where := range []string{"sync", "create"} {
		t.Run(where, func(t *testing.T) {
			obs := &panicObserver{}
			h := newHarness(t, Options{Workers: 1, Observer: obs, ResyncPeriod: 20 * time.Millisecond})
			boom := testDeployment("boom", 1, "x")
			if where == "sync" {
				// No replicas: nothing to do but status, so that every
				// sweep's assessment of it panics too.
				boom = testDeployment("boom", 0, "x")
				obs.boom = "boom"
			} else {
				h.engine.OnCreate = func(req dockerx.CreateRequest) error {
					if req.From.Owner == "boom" {
						obs.panics.add()
						panic("injected")
					}
					return nil
				}
			}
			h.apply(boom, testDeployment("good", 1, "x"))
			h.start()
			h.waitReplicas("good", 1)
			h.waitFor("a second panic (retried)", func() bool { return obs.panics.get() >= 2 })
			if err := h.engine.Remove(h.ours("good")[0].ID); err != nil {
				t.Fatal(err)
			}
			h.waitReplicas("good", 1) // the only worker is still alive
			// A death with no event: only the periodic sweep can see it,
			// and the panicking deployment must not break the sweep.
			if err := h.engine.KillSilently(h.ours("good")[0].ID); err != nil {
				t.Fatal(err)
			}
			h.waitReplicas("good", 1)
		})
	}
}

// panicObserver panics when it observes the deployment named boom.
type panicObserver struct {
	nopObserver
	boom   string
	panics atomicCounter
}

func (o *panicObserver) DeploymentObserved(_, name string, _, _, _, _ int) {
	if name == o.boom {
		o.panics.add()
		panic("injected")
	}
}

// Item 16: every template that is created or started passes the privilege
// gate and the hash check, whatever its revision.
func TestControllerGatesEveryRevision(t *testing.T) {
	yes := true
	privileged := func() manifests.PodTemplateSpec {
		d := testDeployment("web", 1, "old")
		d.Spec.Template.Spec.Containers[0].SecurityContext = &manifests.SecurityContext{Privileged: &yes}
		return d.Spec.Template
	}
	// addRevision puts a revision before the current one in the record.
	addRevision := func(h *harness, hash string, tmpl manifests.PodTemplateSpec) {
		raw, err := json.Marshal(store.Revision{Number: 0, Hash: hash, Template: tmpl, CreatedAt: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		var rev map[string]any
		if err := json.Unmarshal(raw, &rev); err != nil {
			t.Fatal(err)
		}
		h.editRecord("web", func(rec map[string]any) {
			rec["revisions"] = append([]any{rev}, rec["revisions"].([]any)...)
		})
	}
	harmless := testDeployment("web", 1, "harmless").Spec.Template
	tests := []struct {
		name  string
		hash  string
		tmpl  manifests.PodTemplateSpec
		allow bool
		want  string // in the ReplicaFailure message; "" when created
	}{
		{"privileged revision under a made-up hash", "0123456789", privileged(), false, "0123456789"},
		{"privileged revision under its true hash", manifests.TemplateHash(ptr(privileged())), privileged(), false, "--allow-privileged"},
		{"harmless revision under a made-up hash", "abcdefabcd", harmless, false, "abcdefabcd"},
		{"privileged revision, allowed", manifests.TemplateHash(ptr(privileged())), privileged(), true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Options{ResyncPeriod: 20 * time.Millisecond,
				Allow: manifests.Policy{Privileged: tt.allow}})
			// The current revision never becomes ready, so the rollout
			// cannot scale the old revision down: it must be recreated.
			d := testDeployment("web", 1, "x")
			d.Spec.Template.Spec.Containers[0].ReadinessProbe = fastProbe()
			h.ctrl.prober.SetRunner(neverReady{})
			h.apply(d)
			h.start()
			h.waitReplicas("web", 1)
			h.stop()
			addRevision(h, tt.hash, tt.tmpl)
			// Mid-rollout, as the status file says: the old revision has
			// one replica to (re)create.
			h.editStatus("web", func(s *deploymentState) { s.Rollout.Sizes[tt.hash] = 1 })
			h2 := &harness{t: t, engine: h.engine, store: h.store, ctrl: New(h.engine, h.store, h.ctrl.opts)}
			h2.ctrl.prober.SetRunner(neverReady{})
			h2.start()
			if tt.want == "" {
				h2.waitFor("the allowed old revision to be created", func() bool {
					for _, c := range h.ours("web") {
						if c.TemplateHash == tt.hash {
							return true
						}
					}
					return false
				})
				return
			}
			h2.waitFor("a ReplicaFailure naming the refused revision", func() bool {
				c := h.condition("web", manifests.ConditionReplicaFailure)
				return c != nil && strings.Contains(c.Message, tt.want)
			})
			for _, c := range h.ours("web") {
				if c.TemplateHash == tt.hash {
					t.Fatalf("refused revision created: %s", summary(h.ours("web")))
				}
			}
		})
	}
}

// Item 16: a stopped container of a revision that the controller may not
// run any more (restarted without the allow flag) is not started again.
func TestControllerDoesNotRestartRefusedRevision(t *testing.T) {
	yes := true
	h := newHarness(t, Options{Allow: manifests.Policy{Privileged: true}})
	d := testDeployment("web", 1, "x")
	d.Spec.Template.Spec.Containers[0].SecurityContext = &manifests.SecurityContext{Privileged: &yes}
	h.apply(d)
	h.start()
	priv := h.waitReplicas("web", 1)[0]
	h.stop()
	// The user rolls to a harmless template; mid-rollout the controller
	// restarts without --allow-privileged and the old container dies.
	// The new revision never becomes ready, so the old one may not be
	// scaled down (maxUnavailable 0): it would be started again.
	next := withStrategy(testDeployment("web", 1, "y"), manifests.StrategyRollingUpdate, 1, 0)
	next.Spec.Template.Spec.Containers[0].ReadinessProbe = fastProbe()
	h.apply(next)
	if err := h.engine.Kill(priv.ID); err != nil {
		t.Fatal(err)
	}
	var started atomicCounter
	h.engine.OnStart = func(id string) error {
		if id == priv.ID {
			started.add()
		}
		return nil
	}
	opts := h.ctrl.opts
	opts.Allow = manifests.Policy{}
	h2 := &harness{t: t, engine: h.engine, store: h.store, ctrl: New(h.engine, h.store, opts)}
	h2.ctrl.prober.SetRunner(neverReady{})
	h2.start()
	h2.waitFor("a ReplicaFailure naming the refused revision", func() bool {
		c := h.condition("web", manifests.ConditionReplicaFailure)
		return c != nil && strings.Contains(c.Message, priv.TemplateHash) && strings.Contains(c.Message, "--allow-privileged")
	})
	if started.get() != 0 {
		t.Fatal("a privileged container was started by a controller without --allow-privileged")
	}
}

// Item 10: deleting a deployment stops its probe workers.
func TestDeleteStopsProbes(t *testing.T) {
	h := newHarness(t, Options{})
	runner := &switchRunner{fail: map[string]bool{}}
	h.ctrl.prober.SetRunner(runner)
	d := testDeployment("web", 2, "x")
	d.Spec.Template.Spec.Containers[0].ReadinessProbe = fastProbe()
	h.apply(d)
	h.start()
	h.waitReplicas("web", 2)
	workers := func() int { return len(h.ctrl.prober.Workers("default/web")) }
	h.waitFor("two probe workers", func() bool { return workers() == 2 })
	running := h.ctrl.prober.Workers("")
	if err := h.store.Delete("", "web"); err != nil {
		t.Fatal(err)
	}
	h.waitFor("no containers of web", func() bool { return len(h.ours("web")) == 0 })
	h.waitFor("no probe workers of web", func() bool { return workers() == 0 })
	for _, w := range running {
		select {
		case <-w: // the goroutines ended, not only the map entry
		case <-time.After(30 * time.Second):
			t.Fatal("a probe worker of the deleted deployment is still running")
		}
	}
}

// Item 12: a labelled stray whose deployment label is not a valid name is
// an orphan like any other: left alone (and its events fail no sync), or
// pruned with PruneOrphans.
func TestControllerOrphanWithInvalidDeploymentName(t *testing.T) {
	for _, prune := range []bool{false, true} {
		t.Run(map[bool]string{false: "report", true: "prune"}[prune], func(t *testing.T) {
			obs := &failCounter{}
			h := newHarness(t, Options{PruneOrphans: prune, ResyncPeriod: 20 * time.Millisecond, Observer: obs})
			stray, _ := h.engine.Add(dockerx.Container{Name: "stray", State: dockerx.StateRunning, Labels: map[string]string{
				dockerx.LabelInstance: "i", dockerx.LabelDeployment: "Bad_Name"}}, "")
			h.apply(testDeployment("web", 1, "x"))
			h.start()
			h.waitReplicas("web", 1)
			if prune {
				h.waitFor("the stray to be pruned", func() bool { return !hasID(h.engine.Snapshot(), stray) })
			} else {
				_ = h.engine.Kill(stray) // an event naming the bad deployment
				h.waitResyncs(10)
				if !hasID(h.engine.Snapshot(), stray) {
					t.Fatal("stray removed without PruneOrphans")
				}
			}
			if n := obs.failed.get(); n != 0 {
				t.Fatalf("%d failed syncs because of the stray", n)
			}
		})
	}
}

type atomicCounter struct{ n atomic.Int64 }

func (c *atomicCounter) add()       { c.n.Add(1) }
func (c *atomicCounter) get() int64 { return c.n.Load() }

// failCounter is an Observer that counts failed syncs.
type failCounter struct {
	nopObserver
	failed atomicCounter
}

func (f *failCounter) SyncDone(_, _ string, _ time.Duration, err error) {
	if err != nil {
		f.failed.add()
	}
}

// neverReady fails every probe.
type neverReady struct{}

func (neverReady) Run(context.Context, podruntime.ProbeTarget, *manifests.Probe) error {
	return errors.New("not ready")
}

// Item 9: a container whose start fails (left in `created`, as with a wrong
// command) is a failure with the crash-loop backoff: reported in
// ReplicaFailure, counted as a restart attempt, shown as CrashLoopBackOff,
// and not retried before its backoff ends.
func TestControllerStartFailureBacksOff(t *testing.T) {
	h := newHarness(t, Options{CrashBackoffBase: time.Hour, ResyncPeriod: 20 * time.Millisecond})
	var attempts atomicCounter
	h.engine.OnStart = func(id string) error {
		attempts.add()
		return errors.New(`OCI runtime create failed: exec: "nope": executable file not found in $PATH`)
	}
	d := testDeployment("web", 1, "x")
	h.apply(d)
	h.start()
	h.waitFor("a ReplicaFailure naming the start error", func() bool {
		c := h.condition("web", manifests.ConditionReplicaFailure)
		return c != nil && c.Reason == ReasonRunContainerError && strings.Contains(c.Message, "executable file not found")
	})
	view := func() (dockerx.Container, podruntime.ContainerView) {
		st, err := h.store.ReadStatus("", "web")
		if err != nil {
			t.Fatal(err)
		}
		cs := h.ours("web")
		if len(cs) != 1 {
			t.Fatalf("want one container, got %s", summary(cs))
		}
		rec, err := h.store.Lookup("", "web")
		if err != nil {
			t.Fatal(err)
		}
		_, views := View(rec, st, nil, cs, time.Now())
		return cs[0], views[cs[0].ID]
	}
	h.waitFor("the failed start to be counted", func() bool { _, v := view(); return v.Restarts == 1 })
	c, v := view()
	if c.State != dockerx.StateCreated || !v.CrashLoopBackOff {
		t.Fatalf("container %s, view %+v: want created and CrashLoopBackOff", c.State, v)
	}
	// Many syncs later, the backoff (an hour) still holds the start back,
	// and the failure is still reported.
	h.waitResyncs(10)
	if n := attempts.get(); n != 1 {
		t.Fatalf("%d start attempts within the backoff, want 1", n)
	}
	if c := h.condition("web", manifests.ConditionReplicaFailure); c == nil || c.Reason != ReasonRunContainerError {
		t.Fatalf("ReplicaFailure gone while the container cannot start: %+v", c)
	}
}

// Item 9: once it starts, the failure clears.
func TestControllerStartFailureRecovers(t *testing.T) {
	h := newHarness(t, Options{CrashBackoffBase: 20 * time.Millisecond})
	var failing atomic.Bool
	failing.Store(true)
	h.engine.OnStart = func(id string) error {
		if failing.Load() {
			return errors.New("cannot start")
		}
		return nil
	}
	h.apply(testDeployment("web", 1, "x"))
	h.start()
	h.waitFor("a ReplicaFailure", func() bool { return h.condition("web", manifests.ConditionReplicaFailure) != nil })
	failing.Store(false)
	h.waitReplicas("web", 1)
	h.waitFor("the ReplicaFailure to clear", func() bool { return h.condition("web", manifests.ConditionReplicaFailure) == nil })
}

// Item 4: a dead container that Docker cannot remove does not block its
// replacement: it uses no port and is not available, and counting it as
// still there keeps the deployment within replicas + maxSurge.
func TestControllerReplacesUnremovableDeadContainer(t *testing.T) {
	h := newHarness(t, Options{ResyncPeriod: 20 * time.Millisecond})
	d := testDeployment("web", 2, "x")
	hash := manifests.TemplateHash(&d.Spec.Template)
	dead, err := h.engine.Add(dockerx.Container{Name: dockerx.ContainerName("i", "", "web", hash, 0), State: dockerx.StateDead,
		Labels: map[string]string{dockerx.LabelInstance: "i", dockerx.LabelDeployment: "web", dockerx.LabelTemplateHash: hash}}, "")
	if err != nil {
		t.Fatal(err)
	}
	h.engine.OnRemove = func(id string) error {
		if id == dead {
			return errors.New("driver \"overlay2\" failed to remove root filesystem: device or resource busy")
		}
		return nil
	}
	h.apply(d)
	h.start()
	h.waitFor("two running replicas beside the dead one", func() bool {
		running := 0
		for _, c := range h.ours("web") {
			if c.State == dockerx.StateRunning {
				running++
			}
		}
		return running == 2
	})
	h.waitFor("a ReplicaFailure naming the failed removal", func() bool {
		c := h.condition("web", manifests.ConditionReplicaFailure)
		return c != nil && c.Reason == ReasonFailedDelete && strings.Contains(c.Message, "device or resource busy")
	})
	if n := len(h.ours("web")); n > 3 {
		t.Fatalf("%d containers, more than replicas + maxSurge", n)
	}
}

// statusRecorder keeps every ReplicaFailure message the controller writes.
type statusRecorder struct {
	Store
	mu       sync.Mutex
	failures []string
}

func (r *statusRecorder) WriteStatus(ns, name string, st *store.Status) error {
	if c := find(st.Conditions, manifests.ConditionReplicaFailure); c != nil {
		r.mu.Lock()
		r.failures = append(r.failures, c.Reason+": "+c.Message)
		r.mu.Unlock()
	}
	return r.Store.WriteStatus(ns, name, st)
}

func (r *statusRecorder) seen(substr string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.failures {
		if strings.Contains(f, substr) {
			return true
		}
	}
	return false
}

// Item 3: a name that a container the controller does not list holds (made
// by hand, another instance's, or reserved by Docker) does not block the
// deployment: the ordinal is skipped and the conflict reported. A holder
// that carries this deployment's labels (a create that raced) is adopted.
func TestControllerSkipsNamesHeldByOthers(t *testing.T) {
	d := testDeployment("web", 2, "x")
	hash := manifests.TemplateHash(&d.Spec.Template)
	taken := dockerx.ContainerName("i", "", "web", hash, 0)
	tests := []struct {
		name  string
		setup func(h *harness)
		// wantNames are the replicas' names at the end (ordinals).
		wantOrdinals []int
		report       string // in a ReplicaFailure; "" for none
	}{
		{"hand-made container without labels", func(h *harness) {
			_, _ = h.engine.Add(dockerx.Container{Name: taken, State: dockerx.StateRunning, Labels: map[string]string{"x": "y"}}, "")
		}, []int{1, 2}, taken},
		{"another instance's container", func(h *harness) {
			_, _ = h.engine.Add(dockerx.Container{Name: taken, State: dockerx.StateRunning,
				Labels: map[string]string{dockerx.LabelInstance: "j", dockerx.LabelDeployment: "web", dockerx.LabelTemplateHash: hash}}, "")
		}, []int{1, 2}, taken},
		{"a name Docker still reserves", func(h *harness) {
			h.engine.OnCreate = func(req dockerx.CreateRequest) error {
				if req.Name == taken {
					return fmt.Errorf("create %s: name reserved: %w", req.Name, dockerx.ErrConflict)
				}
				return nil
			}
		}, []int{1, 2}, taken},
		{"a raced create of our own is adopted", func(h *harness) {
			var once sync.Once
			h.engine.OnCreate = func(req dockerx.CreateRequest) error {
				if req.Name == taken {
					once.Do(func() {
						_, _ = h.engine.Add(dockerx.Container{Name: taken, State: dockerx.StateRunning,
							Labels: map[string]string{dockerx.LabelInstance: "i", dockerx.LabelDeployment: "web", dockerx.LabelTemplateHash: hash}}, "")
					})
				}
				return nil
			}
		}, []int{0, 1}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A name Docker reserves without showing a container is a
			// create in flight for ReservedNameWindow (conflict.go)
			// before it is blocked: a short one keeps the test quick.
			h := newHarness(t, Options{ResyncPeriod: 20 * time.Millisecond, ReservedNameWindow: 20 * time.Millisecond})
			rec := &statusRecorder{Store: h.store}
			h.ctrl = New(h.engine, rec, h.ctrl.opts)
			tt.setup(h)
			h.apply(d)
			h.start()
			cs := h.waitReplicas("web", 2)
			var want []string
			for _, ord := range tt.wantOrdinals {
				want = append(want, dockerx.ContainerName("i", "", "web", hash, ord))
			}
			if got := []string{cs[0].Name, cs[1].Name}; strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("replicas %v, want %v", got, want)
			}
			if tt.report != "" && !rec.seen(tt.report) {
				t.Fatalf("no ReplicaFailure named %s; recorded %q", tt.report, rec.failures)
			}
			if tt.report == "" && rec.seen("held by") {
				t.Fatalf("a conflict with our own container was reported: %q", rec.failures)
			}
			for _, c := range h.engine.Snapshot() {
				if c.Name == taken && c.State != dockerx.StateRunning {
					t.Fatalf("the holder of %s was touched: %s", taken, c.State)
				}
			}
		})
	}
}

// Item 6: records as an earlier release stored them (see store's
// TestStoredTemplateHashesAreReproducible) are not refused when read: an
// upgrade never freezes a deployment.
func TestStoredRecordsAreNotRefused(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "store", "testdata", "records", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no stored records: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var head struct{ Name string }
			if err := json.Unmarshal(data, &head); err != nil {
				t.Fatal(err)
			}
			st, err := store.Open(t.TempDir(), "default")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(st.Dir(), "deployments"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(st.Dir(), "deployments", head.Name+".json"), data, 0o600); err != nil {
				t.Fatal(err)
			}
			rec, err := st.Lookup("", head.Name)
			if err != nil {
				t.Fatal(err)
			}
			fail, invalid := checkRecord(rec, rec.Deployment.TemplateHash())
			if fail.reason != "" {
				t.Fatalf("a stored record is refused: %s", fail.message)
			}
			if len(invalid) > 0 {
				t.Errorf("a stored record is reported invalid: %q", invalid)
			}
		})
	}
}

// bindSources returns the host paths Docker mounts for a create request,
// reading the legacy Binds as Docker's Linux parser does (source:target
// [:mode], split at every colon).
func bindSources(t *testing.T, req dockerx.CreateRequest) []string {
	t.Helper()
	_, hc, _, err := dockerx.BuildConfig(req)
	if err != nil {
		return nil
	}
	var out []string
	for _, b := range hc.Binds {
		if arr := strings.SplitN(b, ":", 4); len(arr) == 2 || len(arr) == 3 {
			out = append(out, arr[0])
		}
	}
	for _, m := range hc.Mounts {
		if m.Source != "" {
			out = append(out, m.Source)
		}
	}
	return out
}

// setTemplate replaces a record's template, and its current revision's,
// with t and its hash, as whoever writes the state directory can.
func setTemplate(t *testing.T, rec map[string]any, tmpl manifests.PodTemplateSpec) {
	t.Helper()
	data, err := json.Marshal(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	mapAt(rec, "deployment", "spec")["template"] = m
	revs := rec["revisions"].([]any)
	cur := revs[len(revs)-1].(map[string]any)
	cur["template"] = m
	cur["hash"] = manifests.TemplateHash(&tmpl)
}

// A hostPath with a colon is judged as one cleaned path, but the legacy
// Binds string DirectoryOrCreate uses is split by Docker at every colon:
// "/etc:/../ALLOWED/d" with an empty (or "rw") mountPath — an error that
// only makes a record "merely invalid" — is judged as ALLOWED/d yet mounts
// the host's /etc read-write. No container may be created with a host
// path outside the allowed prefix.
func TestControllerRefusesColonBindOutsidePrefix(t *testing.T) {
	allowed, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Options{ResyncPeriod: 20 * time.Millisecond, Allow: manifests.Policy{
		HostPaths: []string{allowed}, Host: manifests.Host{Resolve: filepath.EvalSymlinks},
	}})
	var mu sync.Mutex
	var sources []string
	h.engine.OnCreate = func(req dockerx.CreateRequest) error {
		mu.Lock()
		defer mu.Unlock()
		sources = append(sources, bindSources(t, req)...)
		return nil
	}
	h.apply(testDeployment("web", 1, "x"))
	h.editRecord("web", func(rec map[string]any) {
		var tmpl manifests.PodTemplateSpec
		data, _ := json.Marshal(mapAt(rec, "deployment", "spec", "template"))
		if err := json.Unmarshal(data, &tmpl); err != nil {
			t.Fatal(err)
		}
		tmpl.Spec.Volumes = []manifests.Volume{{Name: "v", HostPath: &manifests.HostPathVolumeSource{
			Path: "/etc:/.." + allowed + "/d", Type: "DirectoryOrCreate"}}}
		tmpl.Spec.Containers[0].VolumeMounts = []manifests.VolumeMount{{Name: "v", MountPath: ""}}
		setTemplate(t, rec, tmpl)
	})
	h.start()
	h.waitFor("a create or a refusal", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return h.engine.Calls()["create"] > 0 || len(sources) > 0 || h.condition("web", manifests.ConditionReplicaFailure) != nil
	})
	h.waitResyncs(3)
	mu.Lock()
	defer mu.Unlock()
	for _, s := range sources {
		if !manifests.Within(filepath.Clean(s), allowed) {
			t.Fatalf("a container was created mounting host path %s, outside the only allowed prefix %s", s, allowed)
		}
	}
}
