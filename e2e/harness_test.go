//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/errdefs"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/dockctl/dockctl/manifests"
)

// env is one test's private dockctl world: an instance name nobody else
// uses, a state directory, and (once started) a controller container.
type env struct {
	t          testing.TB
	instance   string
	stateDir   string
	controller testcontainers.Container
	// created names every container of the instance created while the
	// test ran, for the network cleanup (forceRemoveNetwork).
	created *createdNames
	// bin is the dockctl binary the CLI runs ("": the one built for the
	// suite); cliEnv, when set, is its whole environment.
	bin    string
	cliEnv []string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, instance: "e2e-" + randomSuffix(), stateDir: t.TempDir()}
	instancesMade.Store(e.instance, true)
	e.created = watchCreated(e.instance)
	t.Logf("instance %s, state directory %s", e.instance, e.stateDir)
	t.Cleanup(func() {
		if t.Failed() && e.controller != nil {
			t.Logf("controller log:\n%s", e.controllerLog())
		}
		e.stopController()
		// Containers first: they hold the pod volumes and the holder image.
		removeByLabel(t, "io.dockctl.instance="+e.instance)
		removeVolumesByLabel(t, "io.dockctl.instance="+e.instance)
		removeImagesByLabel(t, "io.dockctl.instance="+e.instance)
		removeNetworksByLabel(t, "io.dockctl.instance="+e.instance, e.created.stop()...)
	})
	return e
}

// createdNames collects, from Docker's event stream, the names of the
// containers an instance creates. A network can outlive its containers
// with a stale endpoint (seen on Engine 20.10 after a container was
// removed while it joined): only a forced disconnect by the container's
// name clears it, and the container may be long gone by the cleanup —
// Docker keeps too few events to ask afterwards, so they are read live.
type createdNames struct {
	mu     sync.Mutex
	names  map[string]bool
	ids    map[string]bool // their IDs, for the processes left behind (procs_test.go)
	cancel context.CancelFunc
	done   chan struct{}
}

func watchCreated(instance string) *createdNames {
	ctx, cancel := context.WithCancel(context.Background())
	c := &createdNames{names: map[string]bool{}, ids: map[string]bool{}, cancel: cancel, done: make(chan struct{})}
	f := filters.NewArgs(filters.Arg("type", "container"), filters.Arg("event", "create"),
		filters.Arg("label", "io.dockctl.instance="+instance))
	msgs, errs := dockerCli.Events(ctx, events.ListOptions{Filters: f})
	go func() {
		defer close(c.done)
		for {
			select {
			case m := <-msgs:
				c.mu.Lock()
				if n := m.Actor.Attributes["name"]; n != "" {
					c.names[n] = true
				}
				if m.Actor.ID != "" {
					c.ids[m.Actor.ID] = true
				}
				c.mu.Unlock()
			case <-errs:
				return // cancelled, or the stream broke: what was read stays
			}
		}
	}()
	return c
}

// stop ends the watch and returns the names seen.
func (c *createdNames) stop() []string {
	c.cancel()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.names))
	for n := range c.names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// containerIDs returns the IDs of the containers seen created.
func (c *createdNames) containerIDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.ids))
	for id := range c.ids {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// settleFast is the controller flag of the tests whose subject is not the
// settle rule (docs/user-guide.md: a new container counts as available, and
// a rollout removes an old one for it, once it has been ready for the
// settle time, 5 s by default). Every step of a rollout waits it out, so a
// 6-replica rollout spent 30 s on it alone; at 1 s each step still waits
// for readiness and then the settle time, as in the Service tests. The
// tests of the rule itself (settle_test.go, the chaos run) keep the default.
const settleFast = "--settle-time=1s"

// independent runs the test in parallel with the other independent ones
// (go test -parallel: GOMAXPROCS by default), once the package's
// sequential tests are done; those still run alone. Only a test that is
// independent of every other by construction calls it: its own instance,
// state directory and objects (named after the instance, or at random),
// no host port it asserts on (a bundle's LoadBalancer may publish one no
// other test uses), a subnet only from testSubnet (which never hands one
// out twice in a run), no private daemon, no look at the machine's processes; and whose
// assertions are bounds a busier machine cannot break (no kill that must
// land mid-operation, no request that must not fail under load, no time
// it must take less than).
func independent(t *testing.T) {
	t.Helper()
	t.Parallel()
}

// startController runs `dockctl controller` as a container, as users do,
// with the Docker socket and the state directory mounted.
func (e *env) startController(extraArgs ...string) {
	e.t.Helper()
	e.startControllerWith(nil, extraArgs...)
}

// startControllerWith is startController with mod changing the
// controller container's request first (environment, extra mounts).
func (e *env) startControllerWith(mod func(*testcontainers.ContainerRequest), extraArgs ...string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"controller", "--instance", e.instance, "--resync-period", "2s",
		"--metrics-addr", "", "--crash-backoff-base", "200ms"}, extraArgs...)
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:  controllerImage,
			Cmd:    args,
			Labels: map[string]string{"io.dockctl.e2e-controller": e.instance},
			HostConfigModifier: func(hc *container.HostConfig) {
				hc.Binds = []string{"/var/run/docker.sock:/var/run/docker.sock", e.stateDir + ":/state"}
			},
			WaitingFor: wait.ForLog("controller started").WithStartupTimeout(time.Minute),
		},
		Started: true,
	}
	if mod != nil {
		mod(&req.ContainerRequest)
	}
	c, err := testcontainers.GenericContainer(ctx, req)
	if err != nil {
		e.t.Fatalf("start controller: %v", err)
	}
	e.controller = c
}

func (e *env) stopController() {
	if e.controller == nil {
		return
	}
	if err := testcontainers.TerminateContainer(e.controller); err != nil {
		e.t.Logf("terminate controller: %v", err)
	}
	e.controller = nil
}

func (e *env) controllerLog() string {
	if e.controller == nil {
		return ""
	}
	rc, err := e.controller.Logs(context.Background())
	if err != nil {
		return err.Error()
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return string(b)
}

// dockctl runs the CLI on the host against this test's instance.
func (e *env) dockctl(stdin string, args ...string) (string, error) {
	e.t.Helper()
	full := append([]string{"--instance", e.instance, "--state-dir", e.stateDir}, args...)
	bin := dockctlBin
	if e.bin != "" {
		bin = e.bin
	}
	cmd := exec.Command(bin, full...)
	cmd.Env = e.cliEnv
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (e *env) mustDockctl(stdin string, args ...string) string {
	e.t.Helper()
	out, err := e.dockctl(stdin, args...)
	if err != nil {
		e.t.Fatalf("dockctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// apply writes a manifest to the state directory through `dockctl apply`.
func (e *env) apply(manifest string) string {
	e.t.Helper()
	path := filepath.Join(e.t.TempDir(), "m.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return e.mustDockctl("", "apply", "-f", path)
}

// labelFilter is a Docker list filter matching every label selector.
func labelFilter(labels ...string) filters.Args {
	args := filters.NewArgs()
	for _, l := range labels {
		args.Add("label", l)
	}
	return args
}

// containers lists containers matching every label selector, any state.
func containers(t testing.TB, labels ...string) []container.Summary {
	t.Helper()
	args := labelFilter(labels...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := dockerCli.ContainerList(ctx, container.ListOptions{All: true, Filters: args})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Names[0] < cs[j].Names[0] })
	return cs
}

// deploymentContainers returns the deployment's containers in this instance.
func (e *env) deploymentContainers(name string) []container.Summary {
	return containers(e.t, "io.dockctl.instance="+e.instance, "io.dockctl.deployment="+name)
}

func removeByLabel(t testing.TB, label string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range containers(t, label) {
		if err := dockerCli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			t.Logf("cleanup %s: %v", c.Names[0], err)
		}
	}
}

// volumes lists the volumes matching every label selector.
func volumes(t testing.TB, labels ...string) []volume.Volume {
	t.Helper()
	args := labelFilter(labels...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := dockerCli.VolumeList(ctx, volume.ListOptions{Filters: args})
	if err != nil {
		t.Fatalf("list volumes: %v", err)
	}
	out := make([]volume.Volume, 0, len(resp.Volumes))
	for _, v := range resp.Volumes {
		out = append(out, *v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// images lists the images matching every label selector (the holder image
// carries its instance's label).
func images(t testing.TB, labels ...string) []image.Summary {
	t.Helper()
	args := labelFilter(labels...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	imgs, err := dockerCli.ImageList(ctx, image.ListOptions{All: true, Filters: args})
	if err != nil {
		t.Fatalf("list images: %v", err)
	}
	return imgs
}

// removeVolumesByLabel removes the pod volumes (emptyDir) a test's
// controller left; run after the containers using them are gone.
func removeVolumesByLabel(t testing.TB, label string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, v := range volumes(t, label) {
		if err := dockerCli.VolumeRemove(ctx, v.Name, true); err != nil {
			t.Logf("cleanup volume %s: %v", v.Name, err)
		}
	}
}

// removeImagesByLabel removes the helper images (the holder image) a
// test's controller loaded; run after the containers using them are gone.
func removeImagesByLabel(t testing.TB, label string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, img := range images(t, label) {
		// By ID with force: an image of this instance is this test's alone,
		// whatever tags it carries.
		if _, err := dockerCli.ImageRemove(ctx, img.ID, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil {
			t.Logf("cleanup image %s: %v", img.ID, err)
		}
	}
}

// instancesMade are the instances of this run's tests (newEnv), for the
// run's last sweep (sweepInstanceImages).
var instancesMade sync.Map

// sweepInstanceImages removes the images still labelled with one of this
// run's instances once every test has ended, and says so: a helper image
// whose load a killed controller had begun can land in the daemon after
// its test's own removal by label listed the images. They are this run's
// alone (random instance names), and the host must be left as it was.
func sweepInstanceImages(ctx context.Context) {
	instancesMade.Range(func(k, _ any) bool {
		imgs, err := dockerCli.ImageList(ctx, image.ListOptions{All: true, Filters: labelFilter("io.dockctl.instance=" + k.(string))})
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e cleanup: list the images of instance %s: %v\n", k, err)
			return true
		}
		for _, img := range imgs {
			_, err := dockerCli.ImageRemove(ctx, img.ID, image.RemoveOptions{Force: true, PruneChildren: true})
			fmt.Fprintf(os.Stderr, "e2e cleanup: image %s %v of instance %s was left after its test; removed (err: %v)\n", img.ID, img.RepoTags, k, err)
		}
		return true
	})
}

// removeNetworksByLabel removes the instance network a test's controller
// made; run after the containers connected to it are gone. A network the
// daemon refuses to remove ("has active endpoints" with no container left)
// is cleared by force-disconnecting every container name the test created
// and every endpoint the network still lists; one that stays fails the
// test, naming it: the host must be left as it was found.
func removeNetworksByLabel(t testing.TB, label string, created ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nets, err := dockerCli.NetworkList(ctx, network.ListOptions{Filters: labelFilter(label)})
	if err != nil {
		t.Errorf("cleanup: list networks: %v", err)
		return
	}
	for _, n := range nets {
		if err := forceRemoveNetwork(ctx, n.ID, created); err != nil {
			t.Errorf("cleanup: network %s (%s) left behind: %v", n.Name, label, err)
		}
	}
}

func forceRemoveNetwork(ctx context.Context, id string, created []string) error {
	err := dockerCli.NetworkRemove(ctx, id)
	for attempt := 0; err != nil && !errdefs.IsNotFound(err) && attempt < 3; attempt++ {
		names := append([]string(nil), created...)
		if n, ierr := dockerCli.NetworkInspect(ctx, id, network.InspectOptions{}); ierr == nil {
			for _, ep := range n.Containers {
				names = append(names, ep.Name)
			}
		}
		for _, name := range names {
			// Unknown names are refused: only a stale endpoint's own
			// name does anything.
			_ = dockerCli.NetworkDisconnect(ctx, id, name, true)
		}
		time.Sleep(200 * time.Millisecond)
		err = dockerCli.NetworkRemove(ctx, id)
	}
	if errdefs.IsNotFound(err) {
		return nil
	}
	return err
}

// eventually polls cond until it holds or the timeout passes; cond returns a
// description of the current state for the failure message.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last state: %s", timeout, what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitRunning waits until the deployment has exactly n containers, all
// running and of the given template hash (any hash if empty).
func (e *env) waitRunning(name string, n int, hash string) []container.Summary {
	e.t.Helper()
	var cs []container.Summary
	eventually(e.t, 60*time.Second, fmt.Sprintf("%d running replicas of %s", n, name), func() (bool, string) {
		cs = e.deploymentContainers(name)
		running := 0
		for _, c := range cs {
			if c.State == "running" && (hash == "" || c.Labels["io.dockctl.template-hash"] == hash) {
				running++
			}
		}
		return running == n && len(cs) == n, describe(cs)
	})
	return cs
}

// isHelper reports whether a container's role (label io.dockctl.role) is
// one of an instance's Service helpers (its DNS server, a Service's proxy)
// rather than a pod's: every instance runs a DNS helper next to its
// replicas.
func isHelper(role string) bool {
	return role == "dns" || role == "proxy"
}

func describe(cs []container.Summary) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s(%s,%s)", strings.TrimPrefix(c.Names[0], "/"), c.State, c.Labels["io.dockctl.template-hash"]))
	}
	return fmt.Sprintf("%d containers: %s", len(cs), strings.Join(parts, " "))
}

// bystander creates a container dockctl must never touch, with the given
// labels, running the workload image.
func bystander(t testing.TB, name string, labels map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	labels["io.dockctl.e2e-bystander"] = name
	resp, err := dockerCli.ContainerCreate(ctx, &container.Config{Image: workloadImage, Labels: labels}, nil, nil, nil, name)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = dockerCli.ContainerRemove(context.Background(), resp.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	})
	if err := dockerCli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	return resp.ID
}

// assertUntouched checks that a container still exists, running, unchanged.
func assertUntouched(t testing.TB, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := dockerCli.ContainerInspect(ctx, id)
	if err != nil {
		t.Fatalf("container %s was touched: %v", id[:12], err)
	}
	if !info.State.Running || info.RestartCount != 0 {
		t.Fatalf("container %s was touched: running=%v restarts=%d", info.Name, info.State.Running, info.RestartCount)
	}
}

// testDeployment describes a deployment of the workload image; its
// manifest is the one place the e2e tests write YAML.
type testDeployment struct {
	name     string
	replicas int
	value    string   // DOCKCTL_TEST_VALUE; "" sets none
	strategy string   // body of spec.strategy, indented four spaces; "" keeps the default
	args     []string // container args
	spec     string   // extra spec fields, indented two spaces
	network  string   // dockctl.io/network template annotation
	extra    string   // extra container fields, indented eight spaces
	labels   string   // extra template labels besides app, as "k: v, k2: v2"
}

func (d testDeployment) manifest() string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\nspec:\n  replicas: %d\n%s", d.name, d.replicas, d.spec)
	fmt.Fprintf(&b, "  selector:\n    matchLabels: {app: %s}\n", d.name)
	if d.strategy != "" {
		fmt.Fprintf(&b, "  strategy:\n%s\n", d.strategy)
	}
	labels := "app: " + d.name
	if d.labels != "" {
		labels += ", " + d.labels
	}
	fmt.Fprintf(&b, "  template:\n    metadata:\n      labels: {%s}\n", labels)
	if d.network != "" {
		fmt.Fprintf(&b, "      annotations:\n        dockctl.io/network: %s\n", d.network)
	}
	fmt.Fprintf(&b, "    spec:\n      containers:\n      - name: app\n        image: %s\n", workloadImage)
	if len(d.args) > 0 {
		fmt.Fprintf(&b, "        args: [\"%s\"]\n", strings.Join(d.args, `", "`))
	}
	if d.value != "" {
		fmt.Fprintf(&b, "        env:\n        - name: DOCKCTL_TEST_VALUE\n          value: %q\n", d.value)
	}
	b.WriteString(d.extra)
	return b.String()
}

func webManifest(replicas int, value string) string {
	return testDeployment{name: "web", replicas: replicas, value: value,
		extra: "        ports:\n        - containerPort: 8080\n"}.manifest()
}

// The manifests the tests apply are valid: a typo in a builder would
// otherwise show up as a confusing timeout.
func TestTestManifestsDecode(t *testing.T) {
	for name, m := range map[string]string{
		"web":     webManifest(3, "one"),
		"rollout": rolloutManifest("web", 2, surge1, "x", []string{"--crash-after=1s"}, "        livenessProbe:\n          httpGet: {path: /healthz, port: 8080}\n"),
		"private": privateNetManifest(2),
		"chaos":   chaosManifest(&chaosDeployment{name: "c", replicas: 4, strategy: "    type: RollingUpdate\n    rollingUpdate: {maxSurge: 1}"}),
		"cold":    coldSizes[len(coldSizes)-1].manifests(),
	} {
		if _, err := manifests.Decode(name+".yaml", []byte(m)); err != nil {
			t.Errorf("%s:\n%s\n%v", name, m, err)
		}
	}
}
