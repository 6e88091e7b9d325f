package upgradetest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/internal/testfs"
	"github.com/dockctl/dockctl/reconciler"
	"github.com/dockctl/dockctl/store"
)

// captured is testdata/*-docker.json: what Docker showed of an instance.
type captured struct {
	Containers []container.InspectResponse
	Volumes    []volume.Volume
	Networks   []network.Inspect
}

func loadCapture(t *testing.T, file string) captured {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var c captured
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return c
}

// restore puts the captured objects into a fake engine: networks, then
// volumes, then the containers that own their network namespace before
// the pod members that join one.
func restore(t *testing.T, c captured) *dockerfake.Engine {
	t.Helper()
	e := dockerfake.New()
	for _, n := range c.Networks {
		if err := e.RestoreNetwork(n); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range c.Volumes {
		e.RestoreVolume(v)
	}
	cs := slices.Clone(c.Containers)
	sort.SliceStable(cs, func(i, j int) bool {
		return !joins(cs[i]) && joins(cs[j])
	})
	for _, in := range cs {
		if err := e.Restore(in); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func joins(c container.InspectResponse) bool {
	return strings.HasPrefix(string(c.HostConfig.NetworkMode), "container:")
}

// helpers is the fake engine with the Service helpers and probe relay of
// dockctl: a helper serves the generation it was created with, or the
// last pushed, and refuses an older one as `helper push` does; a probe
// run in a helper passes (the replicas served when captured). It also
// lists the daemon's containers (only the instance's exist).
type helpers struct {
	*dockerfake.Engine
	mu   sync.Mutex
	held map[string]int64 // container ID → generation served
}

func (h *helpers) ListAllContainers(context.Context) ([]dockerx.Container, error) {
	return h.Snapshot(), nil
}

func (h *helpers) handle(id string, cmd []string, stdin []byte) (int, []byte) {
	if len(cmd) < 3 || cmd[1] != "helper" || cmd[2] != helperapi.ModePush {
		return 0, nil // a probe relayed through a helper: the replica answers
	}
	var in struct{ Generation int64 }
	if err := json.Unmarshal(stdin, &in); err != nil && len(cmd) == 5 {
		if err := json.Unmarshal([]byte(cmd[4]), &in); err != nil {
			return helperapi.ExitFailed, nil
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if in.Generation < h.held[id] {
		ack, _ := json.Marshal(helperapi.Ack{Generation: h.held[id]})
		return helperapi.ExitStale, ack
	}
	h.held[id] = in.Generation
	ack, _ := json.Marshal(helperapi.Ack{Generation: in.Generation})
	return helperapi.ExitOK, ack
}

// heldGenerations is what each captured helper served when its controller
// stopped: the generation of its command's config, or the one the state
// directory records as acknowledged (pushedGeneration of the Service's
// status) when that is newer.
func heldGenerations(t *testing.T, c captured, st *store.Store) map[string]int64 {
	t.Helper()
	held := map[string]int64{}
	for _, in := range c.Containers {
		l := in.Config.Labels
		role := l[dockerx.LabelRole]
		if role != dockerx.RoleProxy && role != dockerx.RoleDNS {
			continue
		}
		var cfg struct{ Generation int64 }
		if n := len(in.Config.Cmd); n > 0 {
			if err := json.Unmarshal([]byte(in.Config.Cmd[n-1]), &cfg); err != nil {
				t.Fatalf("%s: config of its command: %v", in.Name, err)
			}
		}
		held[in.ID] = cfg.Generation
		if role == dockerx.RoleProxy {
			s, err := st.ReadServiceStatus(l[dockerx.LabelNamespace], l[dockerx.LabelService])
			if err != nil {
				t.Fatalf("%s: %v", in.Name, err)
			}
			held[in.ID] = max(held[in.ID], s.PushedGeneration)
		}
	}
	return held
}

// writes are the fake engine's calls that create, remove, start, stop or
// reconnect something: none may follow an upgrade. volume:create is not
// among them: it is also the adoption of an existing volume (the sets of
// volumes are compared instead); nor is the files writer (see below).
var writes = []string{
	"create", "create:helper", "start", "stop", "unpause", "remove",
	"network:create", "network:connect", "network:remove", "volume:remove",
}

const fd9c938Instance = "upg-capture-3121"

// Upgrade from fd9c938 (docs/design.md §16): the state directory and the
// Docker objects that release made — a pod with an init container, a
// sidecar, emptyDir, configMap, secret and claim volumes; a deployment in
// another namespace; a ClusterIP and a LoadBalancer Service with their
// proxies; the DNS server; the instance network — keep running under this
// release: once it has converged, no container, volume or network was
// created, removed, started, stopped or reconnected (proxies and the DNS
// server included: they are given their configuration again by a push),
// and every one keeps its name, ID and state. Except, by design
// (docs/design.md §10, the publisher): the LoadBalancer Service's proxy,
// which published its port through Docker, is replaced by one serving
// its ClusterIP only, and the publisher is created to serve the port.
func TestUpgradeFromFd9c938KeepsEveryObject(t *testing.T) {
	capture := loadCapture(t, filepath.Join("testdata", "fd9c938-docker.json"))
	if len(capture.Containers) != 9 || len(capture.Volumes) != 4 || len(capture.Networks) != 1 {
		t.Fatalf("fixture: %d containers, %d volumes, %d networks; want 9, 4 and 1",
			len(capture.Containers), len(capture.Volumes), len(capture.Networks))
	}
	eng, before := converge(t, capture, filepath.Join("testdata", "fd9c938-state"), fd9c938Instance)
	calls := eng.Calls()
	// The publishing proxy removed, made again, started; the publisher
	// made and started. A create may be tried once more while Docker
	// still frees the replaced proxy's name (the fake counts the refused
	// attempt); the containers below show that two were made.
	want := map[string]int{"create:helper": 2, "start": 2, "remove": 1}
	for _, op := range writes {
		if op == "create:helper" && calls[op] == 3 {
			continue
		}
		if calls[op] != want[op] {
			t.Errorf("%d %s calls after the upgrade; want %d (all calls: %v)", calls[op], op, want[op], calls)
		}
	}
	// A started controller does not know what an earlier one wrote into
	// a pod's file volumes: it runs the files writer once per such pod,
	// which compares before it swaps and leaves an unchanged volume as it
	// is (docs/design.md §11). One pod here has file volumes; the writer
	// is a transient container of its own, not one of the pod's.
	if n := calls["run:files-writer"]; n != 1 {
		t.Errorf("%d files writer runs; want 1 (once for the one pod with file volumes)", n)
	}
	after := objects(t, eng.Engine)
	const lbProxy, publisher = fd9c938Instance + "_web.default_svc", fd9c938Instance + "_publisher"
	for _, name := range []string{lbProxy, publisher} {
		if !strings.HasSuffix(after["container"][name], " running") || after["container"][name] == before["container"][name] {
			t.Errorf("%s: %q after, %q before; want a new one running", name, after["container"][name], before["container"][name])
		}
		delete(before["container"], name)
		delete(after["container"], name)
	}
	for _, kind := range []string{"container", "volume", "network"} {
		if !maps.Equal(before[kind], after[kind]) {
			t.Errorf("%ss changed by the upgrade:\n before %v\n after  %v", kind, before[kind], after[kind])
		}
	}
}

// The control case of the test above: the same capture without one of
// the replicas sees it created again, and the test's count sees the
// create — so the absence of writes above is the controller's doing, not
// a harness that cannot see them.
func TestUpgradeHarnessSeesACreate(t *testing.T) {
	capture := loadCapture(t, filepath.Join("testdata", "fd9c938-docker.json"))
	const replica = "/upg-capture-3121_api.shop-4a41d4a022-0"
	n := len(capture.Containers)
	capture.Containers = slices.DeleteFunc(capture.Containers, func(c container.InspectResponse) bool { return c.Name == replica })
	if len(capture.Containers) != n-1 {
		t.Fatalf("no %s in the capture", replica)
	}
	eng, before := converge(t, capture, filepath.Join("testdata", "fd9c938-state"), fd9c938Instance)
	if got := eng.Calls()["create"]; got != 1 {
		t.Errorf("%d creates; want 1, of the missing replica", got)
	}
	after := objects(t, eng.Engine)
	// The missing replica, and the publisher (see above).
	if added := len(after["container"]) - len(before["container"]); added != 2 {
		t.Errorf("%d containers more; want 2:\n before %v\n after  %v", added, before["container"], after["container"])
	}
}

// converge starts this release's controller, as `dockctl controller
// --service-address 127.0.0.1` wires it, on a copy of the state directory
// and on a fake engine holding the captured objects, and returns once it
// has converged (see below), with what the engine held before it started.
// The controller runs until the test ends.
func converge(t *testing.T, capture captured, state, instance string) (*helpers, map[string]map[string]string) {
	t.Helper()
	st, err := store.Open(testfs.CopyState(t, state), instance)
	if err != nil {
		t.Fatal(err)
	}
	eng := &helpers{Engine: restore(t, capture), held: heldGenerations(t, capture, st)}
	eng.HandleExecInput(eng.handle)
	before := objects(t, eng.Engine)
	pushed := map[string]int64{} // what the earlier release pushed last to each Service's proxy
	for _, key := range []string{"default/web", "shop/api"} {
		ns, name, _ := strings.Cut(key, "/")
		s, err := st.ReadServiceStatus(nsArg(ns), name)
		if err != nil {
			t.Fatal(err)
		}
		pushed[key] = s.PushedGeneration
	}

	syncs := &syncCounter{n: map[string]int{}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("DEBUG_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	// Short periods: a resync every 20 ms re-checks everything many times.
	ctrl := reconciler.New(eng, st, reconciler.Options{
		Instance: instance, ResyncPeriod: 20 * time.Millisecond, SettleTime: 20 * time.Millisecond,
		Logger: log, Observer: syncs,
		ServiceDocker: eng, ServiceStore: st, ServiceAddress: "127.0.0.1",
		NetworkDocker: eng, FilesDocker: eng, Config: st,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("Run: %v", err)
		}
	})
	// Converged: the Services and the DNS server were given their
	// configuration by this controller (their status observed again), and
	// the controller resynced 20 times since. Readiness is not awaited:
	// probes dial the captured pod addresses when the host routes the
	// captured subnet (another instance's network may use it), through
	// the DNS helper (which passes them) otherwise; either way a probe
	// changes readiness, never a container.
	for _, key := range []string{"default/web", "shop/api"} {
		ns, name, _ := strings.Cut(key, "/")
		waitFor(t, "Service "+key+" observed", func() bool {
			s, err := st.ReadServiceStatus(nsArg(ns), name)
			return err == nil && s.ObservedGeneration > 0 && s.PushedGeneration > pushed[key]
		})
	}
	// Then 20 full resyncs (each lists the instance's containers) with
	// every deployment synced and observed at its generation.
	from := eng.Calls()["list"]
	waitFor(t, "20 resyncs with both deployments synced", func() bool {
		for _, key := range []string{"default/web", "shop/api"} {
			ns, name, _ := strings.Cut(key, "/")
			rec, err := st.Get(nsArg(ns), name)
			if err != nil || syncs.count(key) == 0 {
				return false
			}
			if s, err := st.ReadStatus(nsArg(ns), name); err != nil || s.ObservedGeneration != rec.Generation {
				return false
			}
		}
		return eng.Calls()["list"] >= from+20
	})
	return eng, before
}

// nsArg is the store's argument for namespace ns ("" is default's).
func nsArg(ns string) string {
	if ns == "default" {
		return ""
	}
	return ns
}

// objects maps each kind to its objects of the instance: name → ID and
// state (containers), name → labels (volumes), name → ID (networks).
func objects(t *testing.T, e *dockerfake.Engine) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{"container": {}, "volume": {}, "network": {}}
	for _, c := range e.Snapshot() {
		out["container"][c.Name] = c.ID + " " + c.State
	}
	for _, v := range e.Volumes() {
		l, _ := json.Marshal(v.Labels)
		out["volume"][v.Name] = string(l)
	}
	nets, err := e.ListNetworks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nets {
		out["network"][n.Name] = n.ID
	}
	return out
}

// syncCounter counts each deployment's syncs (an Observer).
type syncCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (s *syncCounter) SyncDone(ns, name string, _ time.Duration, _ error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n[ns+"/"+name]++
}
func (s *syncCounter) DeploymentObserved(string, string, int, int, int, int) {}
func (s *syncCounter) DeploymentForgotten(string, string)                    {}
func (s *syncCounter) EventStreamGap()                                       {}

func (s *syncCounter) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[key]
}

// waitFor polls cond until it holds, failing after a minute: no timed
// assertion, only a bound on a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
