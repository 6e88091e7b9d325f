package reconciler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/internal/podtest"
	"github.com/dockctl/dockctl/reconciler/reconcile"
	"github.com/dockctl/dockctl/store"
)

const testImage = podtest.Image

// waitFor and the probes of these tests are shared with package
// podruntime's (reconciler/internal/podtest).
var (
	waitFor  = podtest.WaitFor
	tcpProbe = podtest.TCPProbe
)

type harness struct {
	t      *testing.T
	engine *dockerfake.Engine
	store  *store.Store
	ctrl   *Controller
	opts   Options // as given to New, for a rebuilt controller
	cancel context.CancelFunc
	done   chan struct{}
}

func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	st, err := store.Open(t.TempDir(), "i")
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, engine: dockerfake.New(testImage), store: st}
	if opts.ResyncPeriod == 0 {
		opts.ResyncPeriod = time.Hour // tests that want resyncs ask for them
	}
	opts.Instance = "i"
	opts.CrashBackoffBase = orDuration(opts.CrashBackoffBase, 20*time.Millisecond)
	// A short settle time keeps rollouts quick while still exercising the
	// settle rule; tests of the rule set their own.
	opts.SettleTime = orDuration(opts.SettleTime, 20*time.Millisecond)
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("DEBUG_LOG") != "" {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if opts.NetworkDocker == nil {
		opts.NetworkDocker = h.engine // as in production: pods on the instance network
	}
	h.opts = opts
	h.ctrl = New(h.engine, st, opts)
	return h
}

func orDuration(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan struct{})
	go func() {
		defer close(h.done)
		if err := h.ctrl.Run(ctx); err != nil {
			h.t.Errorf("Run: %v", err)
		}
	}()
	h.t.Cleanup(h.stop)
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	<-h.done
	h.cancel = nil
}

func testDeployment(name string, replicas int32, env string) *manifests.Deployment {
	d := &manifests.Deployment{
		APIVersion: manifests.APIVersion, Kind: manifests.Kind,
		Metadata: manifests.ObjectMeta{Name: name},
		Spec: manifests.DeploymentSpec{
			Replicas: &replicas,
			Selector: &manifests.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: manifests.PodTemplateSpec{
				Metadata: manifests.TemplateMeta{Labels: map[string]string{"app": name}},
				Spec: manifests.PodSpec{Containers: []manifests.Container{{
					Name: name, Image: testImage, Env: []manifests.EnvVar{{Name: "V", Value: env}},
				}}},
			},
		},
	}
	manifests.SetDefaults(d)
	return d
}

func (h *harness) apply(ds ...*manifests.Deployment) {
	h.t.Helper()
	if _, err := h.store.Apply(store.Deployments(ds...), store.ApplyOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// ours returns the engine's containers of deployment name in instance i.
func (h *harness) ours(name string) []dockerx.Container {
	var out []dockerx.Container
	for _, c := range h.engine.Snapshot() {
		if c.Instance == "i" && c.Deployment == name {
			out = append(out, c)
		}
	}
	return out
}

func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	// Generous: the machine may be loaded; a passing test returns early.
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; containers: %s", what, summary(h.engine.Snapshot()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitReplicas waits for exactly n containers of name, all running, all of
// the deployment's current template.
func (h *harness) waitReplicas(name string, n int) []dockerx.Container {
	h.t.Helper()
	var cs []dockerx.Container
	h.waitFor(fmt.Sprintf("%d running replicas of %s", n, name), func() bool {
		rec, err := h.store.Get("", name)
		if err != nil {
			return false
		}
		hash := manifests.TemplateHash(&rec.Deployment.Spec.Template)
		cs = h.ours(name)
		for _, c := range cs {
			if c.State != dockerx.StateRunning || c.TemplateHash != hash {
				return false
			}
		}
		return len(cs) == n
	})
	return cs
}

func summary(cs []dockerx.Container) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, c.Name+"("+c.State+")")
	}
	return strings.Join(parts, " ")
}

func TestControllerRepairsEveryKindOfInterference(t *testing.T) {
	h := newHarness(t, Options{})
	unlabelled, _ := h.engine.Add(dockerx.Container{Name: "bystander", State: dockerx.StateRunning, Labels: map[string]string{}}, "")
	other, _ := h.engine.Add(dockerx.Container{Name: "other", State: dockerx.StateRunning, Labels: map[string]string{
		dockerx.LabelInstance: "j", dockerx.LabelDeployment: "web"}}, "")
	h.apply(testDeployment("web", 3, "one"))
	h.start()
	cs := h.waitReplicas("web", 3)

	// docker rm -f
	if err := h.engine.Remove(cs[0].ID); err != nil {
		t.Fatal(err)
	}
	h.waitReplicas("web", 3)

	// docker stop / kill / crash: the same container is started again.
	victim := h.ours("web")[1]
	if err := h.engine.Kill(victim.ID); err != nil {
		t.Fatal(err)
	}
	after := h.waitReplicas("web", 3)
	if !hasID(after, victim.ID) {
		t.Fatalf("stopped container replaced instead of restarted: %s", summary(after))
	}

	// docker pause
	if err := h.engine.Pause(after[2].ID); err != nil {
		t.Fatal(err)
	}
	h.waitReplicas("web", 3)

	// A hand-made container carrying the deployment's labels.
	stray, err := h.engine.Add(dockerx.Container{Name: "stray", State: dockerx.StateRunning, Labels: map[string]string{
		dockerx.LabelInstance: "i", dockerx.LabelDeployment: "web"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	h.waitFor("the stray to be removed", func() bool { return !hasID(h.engine.Snapshot(), stray) })

	// Scale up and down.
	if _, err := h.store.Update("", "web", func(d *manifests.Deployment) error { r := int32(5); d.Spec.Replicas = &r; return nil }); err != nil {
		t.Fatal(err)
	}
	h.waitReplicas("web", 5)
	if _, err := h.store.Update("", "web", func(d *manifests.Deployment) error { r := int32(1); d.Spec.Replicas = &r; return nil }); err != nil {
		t.Fatal(err)
	}
	h.waitReplicas("web", 1)

	// A new template replaces every container.
	h.apply(testDeployment("web", 2, "two"))
	h.waitReplicas("web", 2)

	// Delete removes everything.
	if err := h.store.Delete("", "web"); err != nil {
		t.Fatal(err)
	}
	h.waitFor("no containers of web", func() bool { return len(h.ours("web")) == 0 })

	all := h.engine.Snapshot()
	if !hasID(all, unlabelled) || !hasID(all, other) {
		t.Fatalf("a container outside the instance was removed: %s", summary(all))
	}
	for _, c := range all {
		if c.State != dockerx.StateRunning {
			t.Fatalf("container %s outside the instance was touched: %s", c.Name, c.State)
		}
	}
}

func hasID(cs []dockerx.Container, id string) bool {
	for _, c := range cs {
		if c.ID == id {
			return true
		}
	}
	return false
}

// An idle controller writes nothing: resyncs of converged deployments plan
// no operation and rewrite no status.
func TestControllerIdleWritesNothing(t *testing.T) {
	h := newHarness(t, Options{ResyncPeriod: 20 * time.Millisecond})
	statuses := h.recordStatus()
	h.apply(testDeployment("a", 2, "x"), testDeployment("b", 3, "x"))
	h.start()
	h.waitReplicas("a", 2)
	h.waitReplicas("b", 3)
	// Settled, whatever the machine's speed: both status files say the
	// rollout completed, and a few resyncs have passed since, so the syncs
	// queued by the events of the creates have run.
	h.waitFor("both deployments to write a completed rollout", func() bool {
		for _, name := range []string{"a", "b"} {
			st, err := h.store.ReadStatus("", name)
			if err != nil || st == nil {
				return false
			}
			avail := find(st.Conditions, manifests.ConditionAvailable)
			prog := find(st.Conditions, manifests.ConditionProgressing)
			if avail == nil || avail.Status != "True" || prog == nil || prog.Reason != ReasonNewReplicaSetAvailable {
				return false
			}
		}
		return true
	})
	h.engine.ResetCalls()
	h.waitFor("5 resyncs after the rollouts completed", func() bool { return h.engine.Calls()["list"] >= 5 })
	h.engine.ResetCalls()
	writesBefore := statuses.count()
	// 15 resync passes, each one instance-wide list, counted rather than
	// timed.
	h.waitFor("15 idle resyncs", func() bool { return h.engine.Calls()["list"] >= 15 })
	calls := h.engine.Calls()
	if h.engine.WriteCalls() != 0 {
		t.Fatalf("idle controller wrote to Docker: %v", calls)
	}
	if n := statuses.count() - writesBefore; n != 0 {
		t.Fatalf("idle controller rewrote status %d times: %s", n, statuses.dump())
	}
	// Resyncs list the whole instance once; a converged deployment is
	// never listed on its own.
	if n := calls["list:deployment"]; n != 0 {
		t.Fatalf("%d per-deployment lists in idle resyncs, want 0 (one instance-wide list per resync): %v", n, calls)
	}
}

// A container that dies while the event stream is down emits no event; the
// gap that the reconnection reports triggers a full resync that repairs it.
func TestControllerRepairsAfterEventGap(t *testing.T) {
	h := newHarness(t, Options{}) // resync one hour: only the gap can help
	h.apply(testDeployment("web", 2, "x"))
	h.start()
	cs := h.waitReplicas("web", 2)
	h.engine.CutEvents()
	if err := h.engine.KillSilently(cs[0].ID); err != nil {
		t.Fatal(err)
	}
	h.waitReplicas("web", 2)
}

func TestControllerOrphans(t *testing.T) {
	for _, prune := range []bool{false, true} {
		t.Run(fmt.Sprintf("prune=%v", prune), func(t *testing.T) {
			h := newHarness(t, Options{PruneOrphans: prune, ResyncPeriod: 20 * time.Millisecond})
			orphan, _ := h.engine.Add(dockerx.Container{Name: "orphan", State: dockerx.StateRunning, Labels: map[string]string{
				dockerx.LabelInstance: "i", dockerx.LabelDeployment: "unknown", dockerx.LabelTemplateHash: "abc"}}, "")
			h.apply(testDeployment("web", 1, "x"))
			h.start()
			h.waitReplicas("web", 1)
			if prune {
				h.waitFor("the orphan to be pruned", func() bool { return !hasID(h.engine.Snapshot(), orphan) })
				return
			}
			time.Sleep(100 * time.Millisecond) // several resyncs
			if !hasID(h.engine.Snapshot(), orphan) {
				t.Fatal("orphan removed without --prune-orphans")
			}
		})
	}
}

// The controller never manages its own container, whatever its labels say.
func TestControllerIgnoresItself(t *testing.T) {
	h := newHarness(t, Options{ResyncPeriod: 20 * time.Millisecond})
	self, _ := h.engine.Add(dockerx.Container{Name: "controller", State: dockerx.StateRunning, Labels: map[string]string{
		dockerx.LabelInstance: "i", dockerx.LabelDeployment: "web"}}, "")
	h.ctrl.opts.SelfID = self[:12]
	h.apply(testDeployment("web", 1, "x"))
	h.start()
	h.waitFor("one replica besides the controller", func() bool { return len(h.ours("web")) == 2 })
	time.Sleep(100 * time.Millisecond)
	if !hasID(h.engine.Snapshot(), self) {
		t.Fatal("the controller removed its own container")
	}
}

// An image that cannot be had costs one image check per retry, never a
// create/remove churn, and is reported in status.
func TestControllerMissingImage(t *testing.T) {
	h := newHarness(t, Options{})
	statuses := h.recordStatus()
	d := testDeployment("web", 3, "x")
	d.Spec.Template.Spec.Containers[0].Image = "absent:1"
	h.apply(d)
	h.start()
	reason := func() string {
		st, err := h.store.ReadStatus("", "web")
		if err != nil || st == nil {
			return ""
		}
		for _, c := range st.Conditions {
			if c.Type == manifests.ConditionReplicaFailure && strings.Contains(c.Message, "absent:1") {
				return c.Reason
			}
		}
		return ""
	}
	h.waitFor("ReplicaFailure ErrImagePull then ImagePullBackOff", func() bool { return reason() == ReasonImagePullBackOff })
	// Both reasons, in Kubernetes' order: the first failure is
	// ErrImagePull, the retries ImagePullBackOff.
	if got, want := strings.TrimPrefix(strings.Join(statuses.reasons("web", manifests.ConditionReplicaFailure), ","), ","), ReasonErrImagePull+","+ReasonImagePullBackOff; got != want {
		t.Fatalf("ReplicaFailure reasons written %q, want %q", got, want)
	}
	// Retries back off: a few more image checks, never a create or remove.
	h.waitFor("a further image check", func() bool { return h.engine.Calls()["image"] >= 3 })
	if calls := h.engine.Calls(); calls["create"] != 0 || calls["remove"] != 0 {
		t.Fatalf("churn on a missing image: %v", calls)
	}
	h.engine.AddImage("absent:1")
	h.waitReplicas("web", 3)
}

// A create that fails with a conflict (a name still held by a container
// being removed) is retried, not fatal. Docker shows no container under
// the name, so it first counts as a create in flight (conflict.go): a short
// window keeps the test quick.
func TestControllerRetriesConflicts(t *testing.T) {
	h := newHarness(t, Options{ReservedNameWindow: 20 * time.Millisecond})
	var failures atomic.Int32
	h.engine.OnCreate = func(req dockerx.CreateRequest) error {
		if failures.Add(1) <= 2 {
			return fmt.Errorf("create %s: %w", req.Name, dockerx.ErrConflict)
		}
		return nil
	}
	h.apply(testDeployment("web", 2, "x"))
	h.start()
	h.waitReplicas("web", 2)
}

// A container that exits right after every start is restarted with growing
// delays, not in a tight loop, and its restarts are counted in status.
func TestControllerCrashLoopBacksOff(t *testing.T) {
	h := newHarness(t, Options{CrashBackoffBase: 50 * time.Millisecond})
	var mu sync.Mutex
	var starts []time.Time
	h.engine.OnStart = func(id string) error {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		go func() {
			time.Sleep(time.Millisecond)
			_ = h.engine.Kill(id)
		}()
		return nil
	}
	d := testDeployment("web", 1, "x")
	h.apply(d)
	h.start()
	// Counted, not timed: a loaded machine only delays starts.
	h.waitFor("5 starts", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(starts) >= 5
	})
	h.stop()
	mu.Lock()
	defer mu.Unlock()
	// The first exit follows the create's start, not a restart by dockctl:
	// it is no crash and is restarted at once (README). From then on each
	// start waits at least its backoff, 50, 100, 200 ms…, counted from the
	// exit before it: a lower bound that load cannot break, and that a
	// tight loop (or a backoff that does not grow) would.
	for i := 2; i < len(starts); i++ {
		if gap, min := starts[i].Sub(starts[i-1]), 50*time.Millisecond<<(i-2); gap < min {
			t.Fatalf("start %d came %v after the previous one, want at least the backoff %v (starts: %v)", i+1, gap, min, starts)
		}
	}
	st, err := h.store.ReadStatus("", "web")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := h.store.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	_, views := View(rec, st, nil, h.ours("web"), time.Now())
	if n := views[h.ours("web")[0].ID].Restarts; n < 2 {
		t.Fatalf("restart count %d, want >= 2", n)
	}
}

// Status records the observed generation once the controller acted on it.
func TestControllerObservedGeneration(t *testing.T) {
	h := newHarness(t, Options{})
	h.apply(testDeployment("web", 1, "x"))
	h.start()
	h.waitReplicas("web", 1)
	h.apply(testDeployment("web", 2, "x"))
	h.waitReplicas("web", 2)
	rec, _ := h.store.Get("", "web")
	h.waitFor("observedGeneration to catch up", func() bool {
		st, err := h.store.ReadStatus("", "web")
		return err == nil && st != nil && st.ObservedGeneration == rec.Generation
	})
}

// Settings that give a container power over the host are refused unless the
// controller was started to allow them; the condition names field and flag.
func TestControllerRefusesPrivileges(t *testing.T) {
	yes := true
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("allowed=%v", allow), func(t *testing.T) {
			h := newHarness(t, Options{Allow: manifests.Policy{Privileged: allow}})
			d := testDeployment("web", 2, "x")
			d.Spec.Template.Spec.Containers[0].SecurityContext = &manifests.SecurityContext{Privileged: &yes}
			h.apply(d)
			h.start()
			if allow {
				h.waitReplicas("web", 2)
				return
			}
			h.waitFor("a ReplicaFailure naming the field and the flag", func() bool {
				st, _ := h.store.ReadStatus("", "web")
				if st == nil {
					return false
				}
				c := find(st.Conditions, manifests.ConditionReplicaFailure)
				return c != nil && strings.Contains(c.Message, "securityContext.privileged") && strings.Contains(c.Message, "--allow-privileged")
			})
			if n := h.engine.Calls()["create"]; n != 0 {
				t.Fatalf("%d creates of a refused deployment", n)
			}
		})
	}
}

// A torn or garbage record stops only its own deployment: it is never read
// as "deleted" (its containers stay), and the others keep being reconciled.
func TestControllerIsolatesCorruptRecord(t *testing.T) {
	h := newHarness(t, Options{ResyncPeriod: 20 * time.Millisecond})
	h.apply(testDeployment("good", 1, "x"), testDeployment("bad", 2, "x"))
	h.start()
	h.waitReplicas("good", 1)
	bad := h.waitReplicas("bad", 2)
	if err := os.WriteFile(filepath.Join(h.store.Dir(), "deployments", "bad.json"), []byte(`{"version":1,"name":"bad","deploy`), 0o600); err != nil {
		t.Fatal(err)
	}
	// The good one is still repaired...
	if err := h.engine.Remove(h.ours("good")[0].ID); err != nil {
		t.Fatal(err)
	}
	h.waitReplicas("good", 1)
	// ...and the bad one's containers are left alone.
	time.Sleep(100 * time.Millisecond)
	for _, c := range bad {
		if !hasID(h.engine.Snapshot(), c.ID) {
			t.Fatalf("container %s of the unreadable deployment was removed", c.Name)
		}
	}
}

// The crash-loop backoff lives in the state directory: a new controller
// (a restart) does not start a crash-looping container before its time.
func TestCrashBackoffSurvivesControllerRestart(t *testing.T) {
	h := newHarness(t, Options{CrashBackoffBase: 400 * time.Millisecond})
	h.engine.OnStart = func(id string) error {
		go func() { time.Sleep(time.Millisecond); _ = h.engine.Kill(id) }()
		return nil
	}
	d := testDeployment("web", 1, "x")
	h.apply(d)
	h.start()
	backoffUntil := func() time.Time {
		st, _ := h.store.ReadStatus("", "web")
		if st == nil {
			return time.Time{}
		}
		for _, c := range readState(st).Containers {
			if c.CrashCount >= 2 {
				return c.NotBefore
			}
		}
		return time.Time{}
	}
	h.waitFor("a second crash-loop backoff", func() bool { return !backoffUntil().IsZero() })
	h.stop()
	until := backoffUntil()
	var mu sync.Mutex
	var starts []time.Time
	h.engine.OnStart = func(id string) error {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		go func() { time.Sleep(time.Millisecond); _ = h.engine.Kill(id) }()
		return nil
	}
	h2 := &harness{t: t, engine: h.engine, store: h.store}
	h2.ctrl = New(h.engine, h.store, Options{Instance: "i", ResyncPeriod: time.Hour, CrashBackoffBase: 400 * time.Millisecond,
		Logger: h.ctrl.opts.Logger})
	h2.start()
	h2.waitFor("a start by the new controller", func() bool { mu.Lock(); defer mu.Unlock(); return len(starts) > 0 })
	mu.Lock()
	defer mu.Unlock()
	if starts[0].Before(until.Add(-5 * time.Millisecond)) {
		t.Fatalf("the new controller started the container %v before its backoff ended", until.Sub(starts[0]))
	}
}

// A deployment whose image cannot be had backs off on its own: the others
// converge as fast as ever.
func TestMissingImageDoesNotSlowOthers(t *testing.T) {
	h := newHarness(t, Options{})
	broken := testDeployment("broken", 3, "x")
	broken.Spec.Template.Spec.Containers[0].Image = "absent:1"
	h.apply(broken, testDeployment("healthy", 3, "x"))
	h.start()
	h.waitReplicas("healthy", 3)
	for i := 0; i < 3; i++ {
		if err := h.engine.Remove(h.ours("healthy")[0].ID); err != nil {
			t.Fatal(err)
		}
		h.waitReplicas("healthy", 3)
	}
	if n := h.engine.Calls()["create"]; n != 6 {
		t.Fatalf("%d creates, want 6 (3 + 3 repairs, none for the broken image)", n)
	}
}

// A `dockctl port-forward` session's helper is the CLI's: in a pod's
// network namespace, labelled with the instance but no deployment. The
// controller never takes it for an orphan — even with PruneOrphans — nor
// touches the pod it joined, however many sweeps and events go by.
func TestControllerLeavesPortForwardHelpers(t *testing.T) {
	for _, prune := range []bool{false, true} {
		t.Run(fmt.Sprintf("prune=%v", prune), func(t *testing.T) {
			h := newHarness(t, Options{PruneOrphans: prune, ResyncPeriod: 20 * time.Millisecond})
			h.apply(testDeployment("web", 1, "x"))
			h.start()
			pod := h.waitReplicas("web", 1)[0]
			ctx := context.Background()
			img, err := h.engine.EnsureHelperImage(ctx, "i")
			if err != nil {
				t.Fatal(err)
			}
			id, err := h.engine.CreateHelper(ctx, dockerx.HelperRequest{Instance: "i", Namespace: "default", Name: "i_" + pod.Name + ".default_pf-1a2b3c",
				Role: dockerx.RolePortForward, Image: img, Cmd: []string{"/dockctl", "helper", "port-forward"},
				JoinNetwork: "container:" + pod.ID, Attached: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := h.engine.StartContainer(ctx, id); err != nil {
				t.Fatal(err)
			}
			h.engine.ResetCalls()
			h.waitFor("several sweeps", func() bool { return h.engine.Calls()["list"] >= 5 })
			var helper *dockerx.Container
			cs := h.engine.Snapshot()
			for i := range cs {
				if cs[i].ID == id {
					helper = &cs[i]
				}
			}
			if helper == nil || helper.State != dockerx.StateRunning {
				t.Fatalf("the port-forward helper is gone or stopped: %+v", helper)
			}
			if got := h.waitReplicas("web", 1); got[0].ID != pod.ID {
				t.Errorf("the pod the helper joined was replaced: %s, then %s", pod.ID, got[0].ID)
			}
			if w := h.engine.WriteCalls(); w != 0 {
				t.Errorf("%d writes to Docker in the sweeps that saw the helper, want none: %v", w, h.engine.Calls())
			}
		})
	}
}

// TestDeletedDeploymentForgetsDeadHolders: every holder die event is
// remembered (handleEvent → holderDied), including those of dockctl's own
// graceful stops, and a sync of the deployment that lists its containers
// forgets them (diedHolders). A deleted deployment's holders must be
// forgotten too, or the die events of every pod it had stay in
// deadHolders for the controller's lifetime, and every later sync of any
// deployment walks them (diedHolders loops over the whole map).
func TestDeletedDeploymentForgetsDeadHolders(t *testing.T) {
	h := newHarness(t, Options{})
	h.apply(testPodDeployment("web", 3))
	h.start()
	h.waitFor("three pods running", func() bool {
		n := 0
		for _, c := range h.ours("web") {
			if c.Role == dockerx.RoleHolder && c.State == dockerx.StateRunning {
				n++
			}
		}
		return n == 3
	})
	if err := h.store.Delete("", "web"); err != nil {
		t.Fatal(err)
	}
	h.ctrl.queue.Add("web")
	h.waitFor("every container of web gone", func() bool { return len(h.ours("web")) == 0 })
	// Another deployment comes and goes through its syncs.
	h.apply(testDeployment("api", 1, "1"))
	h.ctrl.queue.Add("api")
	h.waitReplicas("api", 1)
	time.Sleep(200 * time.Millisecond)
	h.ctrl.mu.Lock()
	left := len(h.ctrl.deadHolders)
	h.ctrl.mu.Unlock()
	if left != 0 {
		t.Fatalf("deadHolders keeps %d holders of the deleted deployment web, none of which exists", left)
	}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// The deployments' owner mapping: a container's event queues its
// deployment; what names no deployment a record can have, and a gap, queue
// the sweep; the daemon going down queues nothing.
func TestDeploymentOwners(t *testing.T) {
	sweep := []reconcile.Request{{Key: orphanSweepKey}}
	tests := []struct {
		name string
		ev   dockerx.Event
		want []reconcile.Request
	}{
		// Keys are "namespace/name"; a container of an earlier release has
		// no namespace label: default.
		{"container of a deployment", dockerx.Event{Action: "die", ContainerID: "c1", Deployment: "web"}, []reconcile.Request{{Key: "default/web"}}},
		{"container of a deployment of default", dockerx.Event{Action: "die", ContainerID: "c1", Deployment: "web", Namespace: "default"}, []reconcile.Request{{Key: "default/web"}}},
		{"container of a deployment of team", dockerx.Event{Action: "die", ContainerID: "c1", Deployment: "web", Namespace: "team"}, []reconcile.Request{{Key: "team/web"}}},
		{"not a namespace name", dockerx.Event{Action: "start", ContainerID: "c5", Deployment: "web", Namespace: "Bad_NS"}, sweep},
		{"a key as a label", dockerx.Event{Action: "start", ContainerID: "c6", Deployment: "team/web"}, sweep},
		{"first connection", dockerx.Event{Gap: true}, sweep},
		{"stream re-established", dockerx.Event{Gap: true, Err: errors.New("EOF")}, sweep},
		{"daemon down", dockerx.Event{Down: true, Err: errors.New("connection refused")}, nil},
		{"no deployment label", dockerx.Event{Action: "start", ContainerID: "c2"}, sweep},
		{"not a deployment name", dockerx.Event{Action: "start", ContainerID: "c3", Deployment: "Bad_Name"}, sweep},
		{"the sweep key as a label", dockerx.Event{Action: "start", ContainerID: "c4", Deployment: orphanSweepKey}, sweep},
		// Helpers name no deployment, and are no orphans: a Service's are
		// the services loop's, a port-forward session's the CLI's.
		{"a port-forward session's helper", dockerx.Event{Action: "destroy", ContainerID: "c7", Role: dockerx.RolePortForward, Namespace: "default"}, nil},
		{"a Service's proxy", dockerx.Event{Action: "die", ContainerID: "c8", Role: dockerx.RoleProxy, Namespace: "default"}, nil},
		{"a Service's proxy by its name", dockerx.Event{Role: dockerx.RoleProxy, Name: "i_web.default_svc"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := deploymentOwners(tt.ev); !slices.Equal(got, tt.want) {
				t.Errorf("deploymentOwners(%+v) = %v, want %v", tt.ev, got, tt.want)
			}
		})
	}
}

// gapCounter is an Observer that counts event-stream gaps.
type gapCounter struct {
	nopObserver
	gaps atomicCounter
}

func (g *gapCounter) EventStreamGap() { g.gaps.add() }

// What the controller keeps of an event besides the keys it queues:
// readiness falls at once when the daemon goes down, and a broken stream
// (not the first connection) is counted.
func TestControllerHandleEvent(t *testing.T) {
	tests := []struct {
		name      string
		ev        dockerx.Event
		wantReady bool
		wantGaps  int64
		wantKeys  []string
	}{
		{"daemon down", dockerx.Event{Down: true, Err: errors.New("connection refused")}, false, 0, nil},
		{"first connection", dockerx.Event{Gap: true}, true, 0, []string{orphanSweepKey}},
		{"stream re-established", dockerx.Event{Gap: true, Err: errors.New("EOF")}, true, 1, []string{orphanSweepKey}},
		{"container event", dockerx.Event{Action: "die", Deployment: "web"}, true, 0, []string{"default/web"}},
		{"container event in a namespace", dockerx.Event{Action: "die", Deployment: "web", Namespace: "team"}, true, 0, []string{"team/web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &gapCounter{}
			c := New(dockerfake.New(), nil, Options{Observer: obs, Logger: quietLog()})
			c.dockerOK.Store(true)
			c.handleEvent(tt.ev)
			if c.Ready() != tt.wantReady {
				t.Errorf("Ready() = %v, want %v", c.Ready(), tt.wantReady)
			}
			if n := obs.gaps.get(); n != tt.wantGaps {
				t.Errorf("%d gaps counted, want %d", n, tt.wantGaps)
			}
			var keys []string
			for _, req := range c.deployments.Queued() {
				keys = append(keys, req.Key)
			}
			if !slices.Equal(keys, tt.wantKeys) {
				t.Errorf("queued %v, want %v", keys, tt.wantKeys)
			}
		})
	}
}

// TestLastPassFollowsTheSweep: LastPass is zero until a whole-instance
// sweep has listed Docker and returned, then the time that sweep ended;
// the heartbeat carries it so that a wedged loop shows (docs/design.md §5).
func TestLastPassFollowsTheSweep(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	h := newHarness(t, Options{Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	if got := h.ctrl.LastPass(); !got.IsZero() {
		t.Fatalf("LastPass before any sweep: %v", got)
	}
	for i := range 2 {
		if _, err := h.ctrl.Reconcile(context.Background(), reconcile.Request{Key: orphanSweepKey}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		want := now
		now = now.Add(time.Minute)
		mu.Unlock()
		if got := h.ctrl.LastPass(); !got.Equal(want) {
			t.Errorf("sweep %d: LastPass %v, want %v", i, got, want)
		}
	}
}
