package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/dockctl/dockctl/dockerx"
)

const (
	// benchLabel marks everything a run creates (containers, the image, Swarm
	// services and their task containers); its value is the run ID, so that
	// cleanup never touches another run's objects or anybody else's.
	benchLabel = "io.dockctl.bench"
	// setLabel groups the containers of one measured set (the lower-bound
	// reviver's replicas, a Swarm service's tasks, a direct-API batch).
	setLabel = "io.dockctl.bench.set"
)

// env is one run's world: the Docker client, the event hub, the built
// binaries and image, and what must be cleaned up.
type env struct {
	runID      string
	root, tmp  string
	cli        *client.Client
	hub        *hub
	cleanups   *cleanupStack
	dockctlBin string
	// baselineBin is the -baseline revision's dockctl ("" none): the
	// workloads section's Job runs under it too.
	baselineBin string
	image       string // tag given to the workload image for this run
	imageID     string // sha256:…, what Swarm gets
	swarmMarker string

	// benchNet is the user-defined bridge network the harness made for
	// the engine's bounds on a user network ("" until first needed).
	benchNet string
	// extraImages are the other images the run built (the DNS probe's,
	// the workload with a HEALTHCHECK for Swarm), by tag.
	extraImages []string
	probeBuilt  bool // the DNS probe's image (services section)

	mu          sync.Mutex
	controllers []*controller // running; stopped before containers are removed
	// instances are the dockctl instances this run used (controllers', and
	// the one the pods section loads a holder image for). What dockctl
	// makes besides containers — pod volumes, the holder image — carries
	// the instance's label, not the run's, and is removed by it.
	instances map[string]bool
}

func newEnv(ctx context.Context, runID, root, tmp string, cleanups *cleanupStack) (*env, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		return nil, fmt.Errorf("dockbench needs a Docker daemon: %w", err)
	}
	e := &env{runID: runID, root: root, tmp: tmp, cli: cli, cleanups: cleanups,
		image: "dockctl-workload:bench-" + runID}
	// One cleanup, in the only safe order: controllers first (a live one
	// would recreate what we remove), then containers, then the image.
	cleanups.push("remove this run's controllers, containers and image", func() error {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		e.stopControllers()
		err := e.removeAll(cctx)
		err = errors.Join(err, e.removeNetworks(cctx))
		e.mu.Lock()
		imgs := append([]string(nil), e.extraImages...)
		e.mu.Unlock()
		if e.imageID != "" {
			// Last: the extra images may be built FROM it.
			imgs = append(imgs, e.image)
		}
		for _, img := range imgs {
			// PruneChildren: the classic builder leaves one untagged parent
			// image per Dockerfile step, which only a pruning removal takes.
			if _, ierr := cli.ImageRemove(cctx, img, image.RemoveOptions{PruneChildren: true}); ierr != nil && !client.IsErrNotFound(ierr) {
				err = errors.Join(err, ierr)
			}
		}
		if e.hub != nil {
			e.hub.stop()
		}
		return errors.Join(err, cli.Close())
	})
	e.hub, err = startHub(cli, benchLabel+"="+runID)
	if err != nil {
		return nil, err
	}
	return e, nil
}

func (e *env) stopControllers() {
	e.mu.Lock()
	cs := e.controllers
	e.controllers = nil
	e.mu.Unlock()
	for _, c := range cs {
		c.stop()
	}
}

// build compiles dockctl and the workload and builds the workload image
// FROM scratch, as the Makefile does, under a tag of this run's own so that
// a concurrent `make workload-image` cannot change it mid-run.
func (e *env) build(ctx context.Context) error {
	start := time.Now()
	e.dockctlBin = filepath.Join(e.tmp, "bin", "dockctl")
	if err := e.goBuild(ctx, "./cmd/dockctl", e.dockctlBin, "-s -w -X main.version=bench"); err != nil {
		return err
	}
	wctx := filepath.Join(e.tmp, "workload")
	if err := e.goBuild(ctx, "./cmd/workload", filepath.Join(wctx, "workload"), "-s -w"); err != nil {
		return err
	}
	df, err := os.ReadFile(filepath.Join(e.root, "cmd", "workload", "Dockerfile"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(wctx, "Dockerfile"), df, 0o644); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "docker", "build", "-q", "--label", benchLabel+"="+e.runID,
		"-t", e.image, wctx).CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker build: %v\n%s", err, out)
	}
	inspect, err := e.cli.ImageInspect(ctx, e.image)
	if err != nil {
		return err
	}
	e.imageID = inspect.ID
	logf("built %s and %s (%s) in %s", e.dockctlBin, e.image, shortID(e.imageID), time.Since(start).Round(time.Millisecond))
	return nil
}

// buildImage builds an image of this run (labelled with it) from a
// Dockerfile and the files in dir, under tag, and registers it for
// removal. Nothing is pulled: every FROM is scratch or an image of the run.
func (e *env) buildImage(ctx context.Context, tag, dir, dockerfile string) error {
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		return err
	}
	e.mu.Lock()
	e.extraImages = append(e.extraImages, tag)
	e.mu.Unlock()
	out, err := exec.CommandContext(ctx, "docker", "build", "-q", "--label", benchLabel+"="+e.runID, "-t", tag, dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker build %s: %v\n%s", tag, err, out)
	}
	return nil
}

func (e *env) goBuild(ctx context.Context, pkg, out, ldflags string) error {
	return goBuildIn(ctx, e.root, pkg, out, ldflags)
}

// goBuildIn builds pkg of the module checked out at dir, as make build
// does (static, trimmed, tag grpcnotrace).
func goBuildIn(ctx context.Context, dir, pkg, out, ldflags string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "grpcnotrace", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// labels returns the labels of a harness-made container of the given set.
func (e *env) labels(set string) map[string]string {
	return map[string]string{benchLabel: e.runID, setLabel: set}
}

// createStart creates and starts one container of the workload image
// through the API: what `docker run -d` does, minus the CLI. The config
// matches what dockctl creates for the bench manifests (same image and
// arguments, no restart policy) so that both pay the same engine cost.
func (e *env) createStart(ctx context.Context, name string, labels map[string]string) (string, error) {
	return e.createStartOn(ctx, name, labels, "")
}

// createStartOn is createStart on the given network ("": Docker's default
// bridge, as createStart).
func (e *env) createStartOn(ctx context.Context, name string, labels map[string]string, network string) (string, error) {
	resp, err := e.cli.ContainerCreate(ctx,
		&container.Config{Image: e.image, Cmd: []string{"--listen=:8080"}, Labels: labels, Hostname: name},
		&container.HostConfig{RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
			NetworkMode: container.NetworkMode(network)},
		nil, nil, name)
	if err != nil {
		return "", err
	}
	if err := e.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		return resp.ID, err
	}
	return resp.ID, nil
}

func (e *env) remove(ctx context.Context, id string) error {
	err := e.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if client.IsErrNotFound(err) {
		return nil
	}
	return err
}

// list returns this run's containers (any state) that carry every given
// label selector (key=value).
func (e *env) list(ctx context.Context, selectors ...string) ([]container.Summary, error) {
	args := filters.NewArgs(filters.Arg("label", benchLabel+"="+e.runID))
	for _, s := range selectors {
		args.Add("label", s)
	}
	return e.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: args})
}

func running(cs []container.Summary) []string {
	var ids []string
	for _, c := range cs {
		if c.State == "running" {
			ids = append(ids, c.ID)
		}
	}
	sort.Strings(ids)
	return ids
}

// waitRunning polls until exactly n containers matching the selectors run
// (stopped ones, such as Swarm's task history, are ignored).
func (e *env) waitRunning(ctx context.Context, n int, timeout time.Duration, selectors ...string) ([]string, error) {
	deadline := time.Now().Add(timeout)
	for {
		cs, err := e.list(ctx, selectors...)
		if err != nil {
			return nil, err
		}
		ids := running(cs)
		if len(ids) == n {
			return ids, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("timed out after %s waiting for %d running containers of %s: %d running, %d in all",
				timeout, n, strings.Join(selectors, ","), len(ids), len(cs))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitGone polls until no container matching the selectors exists.
func (e *env) waitGone(ctx context.Context, timeout time.Duration, selectors ...string) error {
	deadline := time.Now().Add(timeout)
	for {
		cs, err := e.list(ctx, selectors...)
		if err != nil {
			return err
		}
		if len(cs) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s: %d containers of %s remain", timeout, len(cs), strings.Join(selectors, ","))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// removeAll force-removes every container of this run (removalConcurrency
// at a time) — the
// harness's and dockctl's replicas (labelled with the run) and the helpers
// of the run's dockctl instances (Service proxies, the DNS server:
// labelled with their instance only) — then the volumes, helper images
// and instance networks of those instances, which no container uses any
// more. Controllers must be stopped first: a live one would make them
// again.
func (e *env) removeAll(ctx context.Context) error {
	cs, err := e.list(ctx)
	if err != nil {
		return err
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	e.mu.Lock()
	instances := sortedKeys(e.instances)
	e.mu.Unlock()
	for _, inst := range instances {
		hs, err := e.cli.ContainerList(ctx, container.ListOptions{All: true,
			Filters: filters.NewArgs(filters.Arg("label", dockerx.LabelInstance+"="+inst))})
		if err != nil {
			return err
		}
		for _, c := range hs {
			if c.Labels[benchLabel] == "" {
				ids = append(ids, c.ID)
			}
		}
	}
	version := ""
	if v, err := e.cli.ServerVersion(ctx); err == nil {
		version = v.Version
	}
	if err := summarize(parallel(ids, removalConcurrency(version), func(id string) error { return e.remove(ctx, id) })); err != nil {
		return err
	}
	return e.removeInstanceObjects(ctx)
}

// removalConcurrency is how many of removeAll's forced removals run at
// once: 8, or one at a time on an Engine whose libnetwork can deadlock
// when two containers of one network leave it together
// (dockerx.LeavesDeadlock; moby/moby#46661) — most of a run's containers
// share a network, and a wedged daemon hangs the rest of the run and the
// machine. An Engine whose version cannot be read is taken as affected.
func removalConcurrency(engineVersion string) int {
	if engineVersion == "" || dockerx.LeavesDeadlock(engineVersion) {
		return 1
	}
	return 8
}

// useInstance records a dockctl instance of this run, for removeAll.
func (e *env) useInstance(instance string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.instances == nil {
		e.instances = map[string]bool{}
	}
	e.instances[instance] = true
}

// removeInstanceObjects removes the volumes and the helper images labelled
// with one of this run's instances (io.dockctl.instance). The controller
// collects a pod's volumes when the pod is gone and its holder image at a
// sweep after the last holder is gone, but not once it is stopped, and
// the harness removes containers by force: whatever is left is removed
// here. Images are removed by ID without force (each instance's holder
// image has its own ID and one tag), so one still in use stays and is
// reported.
func (e *env) removeInstanceObjects(ctx context.Context) error {
	e.mu.Lock()
	instances := sortedKeys(e.instances)
	e.mu.Unlock()
	var errs []error
	for _, inst := range instances {
		f := filters.NewArgs(filters.Arg("label", dockerx.LabelInstance+"="+inst))
		vols, err := e.cli.VolumeList(ctx, volume.ListOptions{Filters: f})
		if err != nil {
			errs = append(errs, fmt.Errorf("list volumes of %s: %w", inst, err))
		} else {
			for _, v := range vols.Volumes {
				if err := e.cli.VolumeRemove(ctx, v.Name, false); err != nil && !client.IsErrNotFound(err) {
					errs = append(errs, fmt.Errorf("remove volume %s: %w", v.Name, err))
				} else {
					logf("  cleanup: removed volume %s of instance %s", v.Name, inst)
				}
			}
		}
		// The instance network (dockctl_INSTANCE), once its containers
		// are gone; only one that carries this instance's label.
		nets, err := e.cli.NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(
			filters.Arg("label", dockerx.LabelInstance+"="+inst))})
		if err != nil {
			errs = append(errs, fmt.Errorf("list networks of %s: %w", inst, err))
		}
		for _, n := range nets {
			if err := e.removeNetwork(ctx, n.ID); err != nil {
				errs = append(errs, fmt.Errorf("remove network %s: %w", n.Name, err))
			} else {
				logf("  cleanup: removed network %s of instance %s", n.Name, inst)
			}
		}
		imgs, err := e.cli.ImageList(ctx, image.ListOptions{All: true, Filters: filters.NewArgs(
			filters.Arg("label", dockerx.LabelInstance+"="+inst),
			filters.Arg("label", dockerx.LabelRole+"="+dockerx.RoleHelperImage))})
		if err != nil {
			errs = append(errs, fmt.Errorf("list helper images of %s: %w", inst, err))
			continue
		}
		for _, img := range imgs {
			if _, err := e.cli.ImageRemove(ctx, img.ID, image.RemoveOptions{PruneChildren: true}); err != nil && !client.IsErrNotFound(err) {
				errs = append(errs, fmt.Errorf("remove helper image %s %v: %w", shortID(img.ID), img.RepoTags, err))
			} else {
				logf("  cleanup: removed helper image %s %v of instance %s", shortID(img.ID), img.RepoTags, inst)
			}
		}
	}
	return errors.Join(errs...)
}

// benchNetwork returns the run's own user-defined bridge network, creating
// it on first use: the engine's bounds on a user network (the kind of
// network dockctl's instance network is) are measured on it. It carries
// the run label, and removeNetworks removes it at the end of the run.
func (e *env) benchNetwork(ctx context.Context) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.benchNet != "" {
		return e.benchNet, nil
	}
	name := "dockbench-" + e.runID
	// Docker's default address pools give it a subnet no other network
	// uses, as `docker network create` does.
	if _, err := e.cli.NetworkCreate(ctx, name, network.CreateOptions{Driver: "bridge",
		Labels: map[string]string{benchLabel: e.runID}}); err != nil {
		return "", fmt.Errorf("create the user-defined network %s: %w", name, err)
	}
	e.benchNet = name
	logf("created network %s", name)
	return name, nil
}

// removeNetworks removes the networks labelled with this run (the bench
// network, Compose's project network), once no container of the run is
// left on them.
func (e *env) removeNetworks(ctx context.Context) error {
	nets, err := e.cli.NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(
		filters.Arg("label", benchLabel+"="+e.runID))})
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range nets {
		if err := e.removeNetwork(ctx, n.ID); err != nil {
			errs = append(errs, fmt.Errorf("remove network %s: %w", n.Name, err))
		} else {
			logf("  cleanup: removed network %s", n.Name)
		}
	}
	return errors.Join(errs...)
}

// removeNetwork removes a network whose containers are gone. On a loaded
// engine the endpoint of a container just removed can outlive it for a
// moment ("has active endpoints"), so that answer is retried for up to
// 20 s; past that it is reported (Engine 20.10 can leak an endpoint count,
// which only a daemon restart clears).
func (e *env) removeNetwork(ctx context.Context, id string) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := e.cli.NetworkRemove(ctx, id)
		if err == nil || client.IsErrNotFound(err) {
			return nil
		}
		if !strings.Contains(err.Error(), "active endpoints") || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// summarize reduces the errors of a parallel batch, which tend to be the
// same error n times (a deadline, a daemon gone), to the first one and a
// count.
func summarize(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return fmt.Errorf("%w (and %d more errors)", errs[0], len(errs)-1)
}

// parallel runs fn over items with at most n in flight and returns the
// errors. A panic in fn is turned into an error so that a bug in one
// goroutine cannot kill the process before its cleanups run.
func parallel[T any](items []T, n int, fn func(T) error) []error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	sem := make(chan struct{}, n)
	for _, it := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer func() {
				if r := recover(); r != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("panic: %v", r))
					mu.Unlock()
				}
			}()
			if err := fn(it); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errs
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// hub is the run's single Docker event subscription, filtered to this run's
// containers and fanned out to watchers. One long-lived stream, opened
// before anything is created, cannot miss an event the way a subscription
// opened just before each measurement could.
type hub struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	subs   map[*watcher]bool
	err    error
	done   chan struct{}
}

func startHub(cli *client.Client, runLabel string) (*hub, error) {
	hctx, cancel := context.WithCancel(context.Background())
	h := &hub{cancel: cancel, subs: map[*watcher]bool{}, done: make(chan struct{})}
	// Since makes the daemon replay what happened between now and the moment
	// the subscription is registered (the SDK sends the request from a
	// goroutine), so even the first measurement sees every event.
	since := strconv.FormatInt(time.Now().Add(-time.Second).Unix(), 10)
	msgs, errs := cli.Events(hctx, events.ListOptions{
		Since:   since,
		Filters: filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)), filters.Arg("label", runLabel)),
	})
	go func() {
		defer close(h.done)
		for {
			select {
			case m := <-msgs:
				h.mu.Lock()
				for w := range h.subs {
					w.push(m)
				}
				h.mu.Unlock()
			case err := <-errs:
				h.mu.Lock()
				if err == nil {
					err = errors.New("event stream closed")
				}
				h.err = err
				for w := range h.subs {
					w.fail(err)
				}
				h.mu.Unlock()
				return
			}
		}
	}()
	return h, nil
}

func (h *hub) stop() {
	h.cancel()
	<-h.done
}

// watch starts recording events; call before the action being timed.
func (h *hub) watch() *watcher {
	w := &watcher{h: h, wake: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		w.err = h.err
	}
	h.subs[w] = true
	return w
}

type watcher struct {
	h     *hub
	mu    sync.Mutex
	queue []events.Message
	err   error
	wake  chan struct{}
}

func (w *watcher) push(m events.Message) {
	w.mu.Lock()
	w.queue = append(w.queue, m)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watcher) fail(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watcher) close() {
	w.h.mu.Lock()
	delete(w.h.subs, w)
	w.h.mu.Unlock()
}

// until feeds events to done, in order, until it returns true, and returns
// the daemon's timestamp of that event: the moment the engine did it, not
// the moment the harness heard about it.
func (w *watcher) until(ctx context.Context, timeout time.Duration, done func(events.Message) bool) (time.Time, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		w.mu.Lock()
		q, err := w.queue, w.err
		w.queue = nil
		w.mu.Unlock()
		for _, m := range q {
			if done(m) {
				return time.Unix(0, m.TimeNano), nil
			}
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("docker events: %w", err)
		}
		select {
		case <-w.wake:
		case <-timer.C:
			return time.Time{}, fmt.Errorf("no matching event within %s", timeout)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// countEvents returns a predicate that is done once n distinct containers
// matching key=value have emitted action and are accepted by keep.
func countEvents(action, key, value string, n int, keep func(events.Message) bool) func(events.Message) bool {
	seen := map[string]bool{}
	return func(m events.Message) bool {
		if string(m.Action) != action || m.Actor.Attributes[key] != value {
			return false
		}
		if keep != nil && !keep(m) {
			return false
		}
		seen[m.Actor.ID] = true
		return len(seen) >= n
	}
}
