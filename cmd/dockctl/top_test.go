package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// kubectl's quantities: CPU in millicores rounded up (metrics-server's
// nanocores, printed as MilliValue), memory in MiB rounded down; sums are
// of the exact figures, rounded once.
func TestTopFormat(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		nanoCores, bytes []uint64 // the containers summed
		cpu, memory      string
	}{
		{[]uint64{0}, []uint64{0}, "0m", "0Mi"},
		{[]uint64{1}, []uint64{mib - 1}, "1m", "0Mi"},
		{[]uint64{999_999}, []uint64{mib}, "1m", "1Mi"},
		{[]uint64{1_000_000}, []uint64{5*mib + mib/2}, "1m", "5Mi"},
		{[]uint64{1_000_001}, []uint64{100 * mib}, "2m", "100Mi"},
		{[]uint64{250_000_000}, []uint64{2 << 30}, "250m", "2048Mi"},
		{[]uint64{1_500_000_000}, []uint64{1}, "1500m", "0Mi"},
		{[]uint64{12_000_000_000}, []uint64{3 << 40}, "12000m", "3145728Mi"},
		// Three containers of a third of a millicore: 1m, not 3m; three of
		// 0.6 MiB: 1Mi, not 0Mi.
		{[]uint64{333_333, 333_333, 333_333}, []uint64{629_146, 629_146, 629_146}, "1m", "1Mi"},
		{[]uint64{250_000_000, 1_250_000_000}, []uint64{mib, 2 * mib}, "1500m", "3Mi"},
	} {
		var u usage
		for i := range tc.nanoCores {
			u.add(usageOf(dockerx.ContainerStats{CPUNanoCores: tc.nanoCores[i], MemoryWorkingSet: tc.bytes[i]}))
		}
		if cpu, mem := formatCPU(u.cpu), formatMemory(u.memory); cpu != tc.cpu || mem != tc.memory {
			t.Errorf("%v ns/s, %v B: got %s %s, want %s %s", tc.nanoCores, tc.bytes, cpu, mem, tc.cpu, tc.memory)
		}
	}
}

// gatedStats holds every stats call until topConcurrency are in flight at
// once (or a generous deadline passes), and records the most in flight.
type gatedStats struct {
	mu        sync.Mutex
	inFlight  int
	most      int
	full      chan struct{}
	closeOnce sync.Once
	fail      map[string]error
}

func (g *gatedStats) ContainerStats(ctx context.Context, id string) (dockerx.ContainerStats, error) {
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	if g.inFlight == topConcurrency {
		g.closeOnce.Do(func() { close(g.full) })
	}
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	select {
	case <-g.full:
	case <-ctx.Done():
		return dockerx.ContainerStats{}, ctx.Err()
	case <-time.After(30 * time.Second): // only if the calls were not concurrent
	}
	if err := g.fail[id]; err != nil {
		return dockerx.ContainerStats{}, err
	}
	return dockerx.ContainerStats{Read: time.Now(), Window: time.Second, CPUNanoCores: 1}, nil
}

// The containers are sampled concurrently, never more than
// topConcurrency at once; a container removed meanwhile has no sample,
// any other failure fails the whole.
func TestSampleContainers(t *testing.T) {
	var cs []dockerx.Container
	for i := range 20 {
		cs = append(cs, dockerx.Container{ID: fmt.Sprintf("id%02d", i), Name: fmt.Sprintf("c%02d", i)})
	}
	src := &gatedStats{full: make(chan struct{}), fail: map[string]error{"id03": fmt.Errorf("stats of container id03: %w", dockerx.ErrNotFound)}}
	got, err := sampleContainers(context.Background(), src, cs)
	if err != nil {
		t.Fatal(err)
	}
	if src.most != topConcurrency {
		t.Errorf("at most %d calls in flight, want %d", src.most, topConcurrency)
	}
	if _, ok := got["id03"]; ok || len(got) != 19 {
		t.Errorf("%d samples (id03 among them: %v), want the 19 others", len(got), ok)
	}

	src = &gatedStats{full: make(chan struct{}), fail: map[string]error{"id07": errors.New("boom")}}
	if _, err := sampleContainers(context.Background(), src, cs); err == nil || err.Error() != "container c07: boom" {
		t.Errorf("a failed call: %v", err)
	}
}

const topYAML = `apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: team, labels: {app: api}}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: api, image: dockctl-workload:dev}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: idle, labels: {app: idle}}
spec:
  replicas: 1
  selector: {matchLabels: {app: idle}}
  template:
    metadata: {labels: {app: idle}}
    spec:
      containers: [{name: idle, image: dockctl-workload:dev}]
`

// topEngine is the fake Engine API with what `top` reads: deployment web
// (three single-container replicas, one exited), shop (two pods with a
// holder, an init container that completed and two app containers, one
// paused), api in namespace team, idle (its only replica exited) and an
// orphan; each running container with its usage.
func topEngine(t *testing.T) (api *dockerAPI, base []string, pods map[string]string) {
	t.Helper()
	api = startDockerAPI(t)
	t.Setenv("DOCKER_HOST", api.host)
	dir := t.TempDir()
	base = []string{"--state-dir", dir, "--instance", "t1"}
	for _, y := range []string{webYAML, shopYAML, topYAML} {
		if _, errOut, err := run(t, y, append(base, "apply", "-f", "-")...); err != nil {
			t.Fatalf("apply: %v %s", err, errOut)
		}
	}
	const mib = 1 << 20
	pods = map[string]string{}
	// replica adds a single-container replica as the controller labels it.
	replica := func(ns, dep string, ord int, state string, s fakeStats) {
		st, err := store.OpenReadOnly(dir, "t1")
		if err != nil {
			t.Fatal(err)
		}
		rec, err := st.Get(ns, dep)
		if err != nil {
			t.Fatal(err)
		}
		d := &rec.Deployment
		hash := manifests.TemplateHash(&d.Spec.Template)
		labels := maps.Clone(d.Spec.Template.Metadata.Labels)
		maps.Copy(labels, map[string]string{dockerx.LabelInstance: "t1", dockerx.LabelDeployment: dep, dockerx.LabelTemplateHash: hash})
		if ns != "" {
			labels[dockerx.LabelNamespace] = ns
		}
		name := dockerx.ContainerName("t1", ns, dep, hash, ord)
		api.add(name, state, labels)
		api.setStats(name, s)
		pods[fmt.Sprintf("%s-%d", dep, ord)] = dockerx.Hostname(dep, hash, ord)
	}
	replica("", "web", 0, "running", fakeStats{nanoCores: 12_000_000, workingSet: 5 * mib, inactiveFile: 20 * mib})
	replica("", "web", 1, "running", fakeStats{nanoCores: 250_000_000, workingSet: 30 * mib})
	replica("", "web", 2, "exited", fakeStats{nanoCores: 999_000_000, workingSet: 999 * mib})
	replica("team", "api", 0, "running", fakeStats{nanoCores: 40_000_000, workingSet: 12 * mib})
	replica("", "idle", 0, "exited", fakeStats{})

	shop := &storedDeployment(t, dir, "shop").Deployment
	usage := map[string]fakeStats{
		// The holder's figures must never count (metrics-server leaves out
		// the pause container).
		"":    {nanoCores: 900_000_000, workingSet: 100 * mib},
		"web": {nanoCores: 1_500_000_000, workingSet: 64 * mib, inactiveFile: 8 * mib},
		"log": {nanoCores: 400_000, workingSet: 3 * mib},
	}
	for ord := range 2 {
		logState := dockerx.StateRunning
		if ord == 1 {
			logState = dockerx.StatePaused // frozen, its memory still held
		}
		for _, c := range testPod("t1", shop, ord, time.Minute, false, member{name: "migrate", state: "exited:0"},
			member{name: "web", state: dockerx.StateRunning}, member{name: "log", state: logState}) {
			api.add(c.Name, c.State, c.Labels)
			api.setStats(c.Name, usage[c.ContainerName])
		}
		pods[fmt.Sprintf("shop-%d", ord)] = dockerx.Hostname("shop", manifests.TemplateHash(&shop.Spec.Template), ord)
	}
	orphan := dockerx.ContainerName("t1", "", "old", "0123456789", 0)
	api.addContainer(orphan, "t1", "old", map[string]string{dockerx.LabelTemplateHash: "0123456789"})
	api.setStats(orphan, fakeStats{nanoCores: 2_000_000, workingSet: 7 * mib})
	return api, base, pods
}

// top against the fake Engine API: the real commands, their tables as
// golden files.
func TestTopAgainstEngine(t *testing.T) {
	api, base, pods := topEngine(t)
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"top-pods", []string{"top", "pods"}},
		{"top-pods-containers-all-namespaces", []string{"top", "pod", "-A", "--containers"}},
		{"top-pods-sort-by-cpu-sum", []string{"top", "po", "--sort-by", "cpu", "--sum"}},
		{"top-pods-containers-sort-by-memory-sum", []string{"top", "pods", "-l", "app=shop", "--containers", "--sort-by", "memory", "--sum"}},
		{"top-pods-no-headers-all-namespaces-sum", []string{"top", "pods", "-A", "--no-headers", "--sum", "-l", "app in (api,web)"}},
		{"top-deployments", []string{"top", "deployments"}},
		{"top-deployments-all-namespaces-sort-by-memory-sum", []string{"top", "deploy", "-A", "--sort-by", "memory", "--sum"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			out, errOut, err := run(t, "", append(base, tc.args...)...)
			if err != nil || errOut != "" {
				t.Fatalf("%v: %v %q", tc.args, err, errOut)
			}
			golden(t, tc.golden, []byte(out))
		})
	}

	// One name, and the selector's short keys.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"top", "pod", pods["shop-1"], "--no-headers"}, pods["shop-1"] + "   1501m   67Mi   \n"},
		{[]string{"top", "pods", "-l", "deployment=web", "--no-headers"}, pods["web-0"] + "   12m    5Mi    \n" + pods["web-1"] + "   250m   30Mi   \n"},
		{[]string{"top", "deployment.apps", "web", "--no-headers"}, "web   262m   35Mi   \n"},
		{[]string{"-n", "team", "top", "deployments", "api"}, "NAME   CPU(cores)   MEMORY(bytes)   \napi    40m          12Mi            \n"},
	} {
		if out, errOut, err := run(t, "", append(base, tc.args...)...); err != nil || out != tc.want {
			t.Errorf("%v: %q %v %q, want %q", tc.args, out, err, errOut, tc.want)
		}
	}

	// Completion offers the pods of the namespace, from Docker.
	if got, _ := complete(t, append(base, "top", "pods", "shop")...); strings.Join(got, " ") != pods["shop-0"]+" "+pods["shop-1"] {
		t.Errorf("completion of top pods shop: %q", got)
	}

	// Docker was asked for its two samples (stream=0, not one-shot) of
	// running containers only: never a holder, nor one that is not running.
	api.mu.Lock()
	calls := append([]string(nil), api.statsCalls...)
	api.mu.Unlock()
	sampled := map[string]bool{}
	for _, c := range calls {
		name, q, _ := strings.Cut(c, "?")
		sampled[name] = true
		if q != "stream=0" {
			t.Errorf("stats query %q, want stream=0", q)
		}
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	for _, c := range api.ctrs {
		name, role := strings.TrimPrefix(c.summary.Names[0], "/"), c.summary.Labels[dockerx.LabelRole]
		if want := role != dockerx.RoleHolder && (c.summary.State == "running" || c.summary.State == "paused"); sampled[name] != want {
			t.Errorf("%s (%s, role %q): sampled %v, want %v", name, c.summary.State, role, sampled[name], want)
		}
	}
}

// What top says when it prints nothing, in kubectl's words.
func TestTopWithoutMetrics(t *testing.T) {
	api, base, pods := topEngine(t)
	// web-2 exited and was created a minute ago; idle's replica exited
	// three hours ago.
	api.mu.Lock()
	api.find(dockerx.ContainerName("t1", "", "idle", storedHash(t, base, "idle"), 0)).summary.Created = time.Now().Add(-3 * time.Hour).Unix()
	api.mu.Unlock()
	for _, tc := range []struct {
		args          []string
		stderr, error string
	}{
		{[]string{"top", "pods", "-l", "app=none"}, "No resources found in default namespace.\n", ""},
		{[]string{"top", "pods", "-A", "-l", "app=none"}, "No resources found\n", ""},
		{[]string{"-n", "team", "top", "deployments", "-l", "app=none"}, "No resources found in team namespace.\n", ""},
		{[]string{"top", "pod", pods["web-2"]}, "", "metrics not available yet"},
		{[]string{"top", "pods", "-l", "app=idle"}, "", "Metrics not available for pod default/" + pods["idle-0"] + ", age: 3h0m"},
		{[]string{"top", "deployment", "idle"}, "", "metrics not available yet"}, // its record is new
		{[]string{"top", "pod", "nope"}, "", `pods "nope" not found in instance "t1"`},
		{[]string{"top", "deployments", "nope"}, "", `deployments.apps "nope" not found in instance "t1"`},
		{[]string{"top", "pods", "x", "-l", "a=b"}, "", "only one of NAME or selector can be provided"},
		{[]string{"top", "pods", "x", "-A"}, "", "a resource cannot be retrieved by name across all namespaces, as in kubectl"},
		{[]string{"top", "deployments", "--sort-by", "disk"}, "", "--sort-by accepts only cpu or memory"},
		{[]string{"top", "pods", "-l", "a in b"}, "", `invalid label selector "a in b"`},
	} {
		out, errOut, err := run(t, "", append(base, tc.args...)...)
		switch {
		case tc.error == "" && (err != nil || out != "" || errOut != tc.stderr):
			t.Errorf("%v: out %q stderr %q err %v, want stderr %q", tc.args, out, errOut, err, tc.stderr)
		case tc.error != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.error) || out != ""):
			t.Errorf("%v: out %q err %v, want error %q", tc.args, out, err, tc.error)
		}
	}
}

// storedHash is the template hash of the stored deployment name.
func storedHash(t *testing.T, base []string, name string) string {
	t.Helper()
	return manifests.TemplateHash(&storedDeployment(t, base[1], name).Deployment.Spec.Template)
}

// Docker answers a stats call (stream=0) with 200 and an empty body when
// the container is removed while the call waits for its two samples: the
// removal stops the container's stats collection, which closes the call's
// subscription, and the daemon's handler returns without writing (moby
// daemon/stats.go: `case v, ok := <-updates: if !ok { return nil }`). That
// is a container that is gone, as a 404 is, and top drops it as it drops a
// 404, rather than failing on the empty answer ("decode: EOF"): `top pods`
// or `top deployments` run during a rollout or a `docker rm -f` must not
// fail outright, every other pod's figures with it. kubectl top never fails
// on a pod that goes away meanwhile.
func TestTopSkipsContainerRemovedWhileSampled(t *testing.T) {
	api, base, pods := topEngine(t)
	api.mu.Lock()
	gone := api.find(dockerx.ContainerName("t1", "", "web", storedHash(t, base, "web"), 1)).summary.ID
	api.mu.Unlock()
	// The daemon as seen by the CLI: the fake, except that web-1 is
	// removed while its stats are being sampled.
	dir, err := os.MkdirTemp("", "top-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "d.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/containers/"+gone+"/stats") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK) // and nothing: the subscription closed
			return
		}
		api.serve(w, r)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	t.Setenv("DOCKER_HOST", "unix://"+sock)

	out, errOut, err := run(t, "", append(base, "top", "pods", "-l", "deployment=web", "--no-headers")...)
	if want := pods["web-0"] + "   12m   5Mi   \n"; err != nil || out != want {
		t.Errorf("top pods while %s is removed: %q, %v, stderr %q; want the other pod's row, %q", pods["web-1"], out, err, errOut, want)
	}
}

// top is a group (top pods, top deployments): kubectl's top runs
// DefaultSubCommandRun(ErrOut), its help on stderr and exit 1 alone, and
// kubectl's "unknown command" usage error for anything else (`kubectl top
// nodes` has its own subcommand; `dockctl top nodes` has none). A top
// without a Run would print the help on stdout and exit 0 either way, `top
// nodes` and `top foo` included, and a script would see success.
func TestTopGroupAsKubectl(t *testing.T) {
	_, help, _ := runMain(t, "", "top", "--help")
	// The help up to its global flags: --state-dir's default shown there
	// is DOCKCTL_STATE_DIR, which checkKubectlErrors sets after this.
	help = help[:strings.Index(help, "Global Flags:")]
	checkKubectlErrors(t, []kubectlErrorCase{
		{situation: "top alone: its help on stderr, exit 1", args: []string{"top"}, stderr: help, prefix: true, code: 1},
		{situation: "top of an unknown kind", args: []string{"top", "foo"},
			stderr: "error: unknown command \"foo\"\nSee 'dockctl top -h' for help and examples\n", code: 1},
		{situation: "top nodes, which dockctl has not", args: []string{"top", "nodes"},
			stderr: "error: unknown command \"nodes\"\nSee 'dockctl top -h' for help and examples\n", code: 1},
	})
}
