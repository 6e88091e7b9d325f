package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	"github.com/dockctl/dockctl/dockerx"
)

// The scale-big section (BENCHMARKS.md, "Scale: many pods, Deployments and
// Services"): one `dockctl apply` of D Deployments × 5 replicas and D/2
// ClusterIP Services on a fresh instance, timed to convergence as a user
// sees it, beside the direct API creating and starting as many containers
// on a user network; then what the converged controller costs (RSS, idle
// CPU) and how long the real `dockctl get pods -A` takes.

const (
	bigSection = "scale-big"
	// bigReplicas is each Deployment's replica count (issue 28's goal:
	// 1,000 pods in 200 Deployments).
	bigReplicas = 5
	// bridgePorts is how many containers one Linux bridge holds:
	// BR_MAX_PORTS is 1,024 and port number 0 is reserved, so 1,023
	// interfaces. Every pod, every Service's proxy and the DNS server of an
	// instance is on the one instance network (docs/design.md §10).
	bridgePorts = 1023
	// bigHelpers is the instance's containers besides pods and proxies:
	// its DNS server (ClusterIP Services need no publisher).
	bigHelpers = 1
	// The goals of issue 28's speed goal 4 that are absolute, not ratios:
	// the guard judges them as ratios to their target (≤ 1).
	bigRSSTargetMiB   = 150
	bigCPUTargetPct   = 1
	bigGetPodsTargetM = 300
)

// bigSize is the section's shape for a number of pods: Deployments of
// bigReplicas, one ClusterIP Service per two Deployments, all of it with
// the DNS server on one bridge.
type bigSize struct {
	Pods, Deployments, Services int
}

func newBigSize(pods int) (bigSize, error) {
	if pods <= 0 || pods%(2*bigReplicas) != 0 {
		return bigSize{}, fmt.Errorf("BENCH_SCALE_PODS=%d: want a positive multiple of %d (Deployments of %d, one Service per two)", pods, 2*bigReplicas, bigReplicas)
	}
	b := bigSize{Pods: pods, Deployments: pods / bigReplicas}
	b.Services = b.Deployments / 2
	if b.containers() > bridgePorts {
		return bigSize{}, fmt.Errorf("BENCH_SCALE_PODS=%d: %d pods + %d Service proxies + the DNS server are %d containers on the instance network, more than a Linux bridge holds (%d ports: BR_MAX_PORTS)",
			pods, pods, b.Services, b.containers(), bridgePorts)
	}
	return b, nil
}

// containers is how many containers the instance runs once converged.
func (b bigSize) containers() int { return b.Pods + b.Services + bigHelpers }

// bigPodsSetting reads BENCH_SCALE_PODS: def when unset, 0 (refused by
// newBigSize) when not a number.
func bigPodsSetting(getenv func(string) string, def int) int {
	v := getenv("BENCH_SCALE_PODS")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0
	}
	return n
}

func benchScaleBig(ctx context.Context, e *env, s settings, rep *report) error {
	b, err := newBigSize(s.BigPods)
	if err != nil {
		return err
	}
	rep.note("%s: %d pods in %d Deployments × %d with %d ClusterIP Services (each selecting two Deployments), one instance network; idle window %s, controller --resync-period %s",
		bigSection, b.Pods, b.Deployments, bigReplicas, b.Services, s.SteadyIdle, s.SteadyResync)
	var errs []error
	made, err := measureBigDockctl(ctx, e, s, rep, b)
	if err != nil {
		errs = append(errs, fmt.Errorf("dockctl: %w", err))
	}
	if made == 0 {
		made = b.containers()
	}
	direct := fmt.Sprintf("direct API 0 → %d containers, best concurrency, user network", made)
	if err := measureBigDirect(ctx, e, s, rep, made, direct); err != nil {
		errs = append(errs, fmt.Errorf("direct API: %w", err))
	}
	conv := bigConvergedName(b)
	rep.ratio(fmt.Sprintf("scale-big: converge %d pods, %d Services / direct API best on a user network", b.Pods, b.Services),
		bigSection+"/"+conv, bigSection+"/"+direct, atMost(1.15, "issue 28"))
	rep.ratio(fmt.Sprintf("scale-big: last pod start of %d / direct API best on a user network", b.Pods),
		bigSection+"/"+bigLastStartName(b), bigSection+"/"+direct, nil)
	rep.ratioToTarget("scale-big: controller RSS after convergence (VmRSS) / 150 MiB", bigSection+"/"+bigRSSName,
		bigRSSTargetMiB, "150 MiB", atMost(1, "issue 28"))
	rep.ratioToTarget("scale-big: controller peak RSS (VmHWM) / 150 MiB", bigSection+"/"+bigHWMName,
		bigRSSTargetMiB, "150 MiB", atMost(1, "issue 28"))
	rep.ratioToTarget("scale-big: idle controller CPU / 1 % of one core", bigSection+"/"+bigCPUName,
		bigCPUTargetPct, "1 %", atMost(1, "issue 28"))
	rep.ratioToTarget(fmt.Sprintf("scale-big: dockctl get pods -A, %d pods, median / 300 ms", b.Pods), bigSection+"/"+bigGetPodsName(b),
		bigGetPodsTargetM, "300 ms", atMost(1, "issue 28"))
	return errors.Join(errs...)
}

const (
	bigRSSName = "controller RSS after convergence (VmRSS)"
	bigHWMName = "controller peak RSS (VmHWM, whole life)"
	bigCPUName = "idle controller CPU, % of one core"
)

func bigConvergedName(b bigSize) string {
	return fmt.Sprintf("dockctl apply → converged: %d pods, %d Services (get: all ready, every ClusterIP answers)", b.Pods, b.Services)
}

func bigLastStartName(b bigSize) string {
	return fmt.Sprintf("dockctl apply → last pod start (events), %d pods", b.Pods)
}

func bigGetPodsName(b bigSize) string {
	return fmt.Sprintf("dockctl get pods -A, %d pods: wall time, median", b.Pods)
}

// measureBigDockctl applies the bundle under a fresh controller and
// measures it to convergence and at rest. It returns how many containers
// the converged instance had (0 if it never converged), and removes them
// before it returns, whatever happened.
func measureBigDockctl(ctx context.Context, e *env, s settings, rep *report, b bigSize) (made int, err error) {
	c, err := e.startController(ctx, "big", s.SteadyResync, "")
	if err != nil {
		return 0, err
	}
	// Stopped first, so that it cannot replace what is removed; its
	// containers then go one at a time (removeSerially). Registered with
	// the run's cleanups too, which run before the run's own removal (8 at
	// a time) when a signal ends the run.
	removed := 0
	teardown := once(func() error {
		c.stop()
		var err error
		removed, err = e.removeInstanceContainers(c.instance)
		return err
	})
	e.cleanups.push("remove the scale-big instance's containers one at a time", teardown)
	defer func() {
		start := time.Now()
		terr := teardown()
		if terr != nil {
			err = errors.Join(err, fmt.Errorf("teardown: %w", terr))
			return
		}
		rep.duration(bigSection, fmt.Sprintf("teardown: controller stopped, %d containers force-removed one at a time (not a dockctl figure)", removed),
			time.Since(start))
	}()

	w := e.hub.watch()
	t0 := time.Now()
	if err := c.apply(ctx, e.bigBundle(b)); err != nil {
		w.close()
		return 0, err
	}
	// The pods' start events (they carry the run label; the helpers do
	// not, and are judged by `get` below). Up to 2 s a pod on a loaded
	// engine that does ~2 create+starts a second when quiet.
	t1, err := w.until(ctx, time.Duration(b.Pods)*2*time.Second+2*time.Minute,
		countEvents(string(events.ActionStart), dockerx.LabelInstance, c.instance, b.Pods, nil))
	w.close()
	if err != nil {
		return 0, fmt.Errorf("%d pod starts: %w\ncontroller log:\n%s", b.Pods, err, c.logTail())
	}
	rep.duration(bigSection, bigLastStartName(b), t1.Sub(t0))
	logf("  dockctl %d pods started in %s", b.Pods, t1.Sub(t0).Round(time.Millisecond))
	t2, err := c.waitBigConverged(ctx, b, 5*time.Minute)
	if err != nil {
		return 0, fmt.Errorf("%w\ncontroller log:\n%s", err, c.logTail())
	}
	rep.duration(bigSection, bigConvergedName(b), t2.Sub(t0))
	logf("  dockctl converged in %s", t2.Sub(t0).Round(time.Millisecond))
	cs, err := e.instanceContainers(ctx, c.instance)
	if err != nil {
		return 0, err
	}
	made = len(running(cs))
	rep.count(bigSection, "containers of the converged instance", float64(made), "",
		fmt.Sprintf("%d running of %d: pods, Service proxies, DNS server", made, len(cs)))
	if made != len(cs) {
		return made, fmt.Errorf("%d of the instance's %d containers are not running", len(cs)-made, len(cs))
	}

	if err := waitQuiet(ctx, e, c.instance, 3*time.Second, time.Minute); err != nil {
		return made, err
	}
	if err := measureBigIdle(ctx, e, s, rep, c); err != nil {
		return made, err
	}
	return made, measureGetPods(ctx, rep, c, b, s.BigGetRuns)
}

// measureBigIdle is the steady section's idle window on the converged
// instance: the controller's CPU over it, and its memory at its end.
func measureBigIdle(ctx context.Context, e *env, s settings, rep *report, c *controller) error {
	cpu0, err := cpuTime(c.pid())
	if err != nil {
		return err
	}
	wq := e.hub.watch()
	defer wq.close()
	start := time.Now()
	select {
	case <-time.After(s.SteadyIdle):
	case <-ctx.Done():
		return ctx.Err()
	}
	cpu1, err := cpuTime(c.pid())
	if err != nil {
		return err
	}
	window := time.Since(start)
	hwm, rss, err := memory(c.pid())
	if err != nil {
		return err
	}
	wq.mu.Lock()
	eventsInWindow := len(wq.queue)
	wq.mu.Unlock()
	cpu := cpu1 - cpu0
	rep.value(bigSection, "idle window", window.Seconds(), "s")
	rep.value(bigSection, "idle controller CPU in window", cpu.Seconds(), "s")
	rep.value(bigSection, bigCPUName, 100*cpu.Seconds()/window.Seconds(), "%")
	rep.value(bigSection, bigRSSName, float64(rss)/(1<<20), "MiB")
	rep.value(bigSection, bigHWMName, float64(hwm)/(1<<20), "MiB")
	rep.value(bigSection, "pod events in window (should be 0)", float64(eventsInWindow), "")
	return nil
}

// measureGetPods times the real CLI process, `dockctl get pods -A`, from
// its start to its exit, runs times, and checks that it listed every pod
// running.
func measureGetPods(ctx context.Context, rep *report, c *controller, b bigSize, runs int) error {
	var walls []time.Duration
	for i := 0; i < runs; i++ {
		t0 := time.Now()
		out, err := c.dockctlStdout(ctx, "get", "pods", "-A")
		wall := time.Since(t0)
		if err != nil {
			return err
		}
		if n := countRunningRows(out); n != b.Pods {
			return fmt.Errorf("dockctl get pods -A listed %d running pods, want %d", n, b.Pods)
		}
		walls = append(walls, wall)
	}
	sorted := append([]time.Duration(nil), walls...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	raw := make([]float64, len(walls))
	for i, w := range walls {
		raw[i] = ms(w)
	}
	med := ms(sorted[(len(sorted)-1)/2])
	rep.add(figure{Section: bigSection, Name: bigGetPodsName(b), Value: &med, Unit: "ms", Samples: raw,
		Detail: fmt.Sprintf("of %d runs, %s–%s", runs, sorted[0].Round(time.Millisecond), sorted[len(sorted)-1].Round(time.Millisecond))})
	logf("  dockctl get pods -A: median %.0f ms of %d", med, runs)
	return nil
}

// countRunningRows counts the rows of a `get pods` table whose STATUS
// column says Running.
func countRunningRows(table []byte) int {
	lines := strings.Split(strings.TrimSpace(string(table)), "\n")
	if len(lines) == 0 {
		return 0
	}
	col := -1
	for i, h := range strings.Fields(lines[0]) {
		if h == "STATUS" {
			col = i
		}
	}
	if col < 0 {
		return 0
	}
	n := 0
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > col && f[col] == "Running" {
			n++
		}
	}
	return n
}

// waitBigConverged polls what a user would look at until it all says
// converged, and returns when the poll that saw it ended: every
// Deployment's pods updated and ready (`get deployments`), every Service's
// endpoints holding its two Deployments' pods (`get endpoints`), and an
// HTTP answer through every Service's ClusterIP (from the host, which
// reaches the instance network). The polling begins once every pod has
// started, so that it does not compete with the convergence for the CPU.
func (c *controller) waitBigConverged(ctx context.Context, b bigSize, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	answered := map[string]bool{}
	for {
		why, err := c.bigConvergedOnce(ctx, b, answered)
		if err != nil {
			return time.Time{}, err
		}
		if why == "" {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("not converged within %s after the last pod start: %s", timeout, why)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// kubeList is the part of `dockctl get KIND -A -o json` (a v1 List) the
// convergence check reads, for Deployments, Endpoints and Services alike.
type kubeList struct {
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Replicas  *int   `json:"replicas"`
			ClusterIP string `json:"clusterIP"`
			Ports     []struct {
				Port int `json:"port"`
			} `json:"ports"`
		} `json:"spec"`
		Status struct {
			ReadyReplicas   int `json:"readyReplicas"`
			UpdatedReplicas int `json:"updatedReplicas"`
		} `json:"status"`
		Subsets []struct {
			Addresses []struct {
				IP string `json:"ip"`
			} `json:"addresses"`
		} `json:"subsets"`
	} `json:"items"`
}

// bigConvergedOnce is one round of waitBigConverged: "" when converged,
// else what is not yet. answered keeps the ClusterIPs that answered in
// earlier rounds.
func (c *controller) bigConvergedOnce(ctx context.Context, b bigSize, answered map[string]bool) (string, error) {
	var deps, eps, svcs kubeList
	for _, q := range []struct {
		kind string
		into *kubeList
	}{{"deployments", &deps}, {"endpoints", &eps}, {"services", &svcs}} {
		out, err := c.dockctlStdout(ctx, "get", q.kind, "-A", "-o", "json")
		if err != nil {
			return "", err
		}
		if err := json.Unmarshal(out, q.into); err != nil {
			return "", fmt.Errorf("get %s -o json: %w", q.kind, err)
		}
	}
	ready := 0
	for _, d := range deps.Items {
		if d.Spec.Replicas != nil && d.Status.ReadyReplicas == *d.Spec.Replicas && d.Status.UpdatedReplicas == *d.Spec.Replicas {
			ready++
		}
	}
	if ready != b.Deployments || len(deps.Items) != b.Deployments {
		return fmt.Sprintf("%d of %d Deployments ready (%d listed)", ready, b.Deployments, len(deps.Items)), nil
	}
	full := 0
	for _, ep := range eps.Items {
		n := 0
		for _, ss := range ep.Subsets {
			n += len(ss.Addresses)
		}
		if n == 2*bigReplicas {
			full++
		}
	}
	if full != b.Services {
		return fmt.Sprintf("%d of %d Services with all %d endpoints", full, b.Services, 2*bigReplicas), nil
	}
	var addrs []string
	for _, s := range svcs.Items {
		if s.Spec.ClusterIP == "" || net.ParseIP(s.Spec.ClusterIP) == nil || len(s.Spec.Ports) == 0 {
			return fmt.Sprintf("Service %s has no cluster IP yet", s.Metadata.Name), nil
		}
		if a := net.JoinHostPort(s.Spec.ClusterIP, strconv.Itoa(s.Spec.Ports[0].Port)); !answered[a] {
			addrs = append(addrs, a)
		}
	}
	if len(svcs.Items) != b.Services {
		return fmt.Sprintf("%d of %d Services listed", len(svcs.Items), b.Services), nil
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	defer hc.CloseIdleConnections()
	type result struct {
		addr string
		ok   bool
	}
	results := make(chan result, len(addrs))
	_ = parallel(addrs, 8, func(a string) error {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, "http://"+a+"/", nil)
		resp, err := hc.Do(req)
		ok := err == nil && resp.StatusCode == http.StatusOK
		if err == nil {
			resp.Body.Close()
		}
		results <- result{a, ok}
		return nil
	})
	close(results)
	for r := range results {
		if r.ok {
			answered[r.addr] = true
		}
	}
	if len(answered) != b.Services {
		return fmt.Sprintf("%d of %d ClusterIPs answered", len(answered), b.Services), nil
	}
	return "", nil
}

// dockctlStdout runs the CLI against this controller's instance and
// returns its standard output alone (a JSON document must not be mixed
// with warnings on standard error).
func (c *controller) dockctlStdout(ctx context.Context, args ...string) ([]byte, error) {
	full := append([]string{"--instance", c.instance, "--state-dir", c.stateDir}, args...)
	cmd := exec.CommandContext(ctx, c.bin, full...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("dockctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.Bytes(), nil
}

// measureBigDirect is the anchor: as many containers as the converged
// instance ran, created and started through the API on the run's user
// network at the engine's best concurrency (found first on a small batch
// at each of s.BigProbe, as the scale section finds it on 0 → 50), from
// the first call to the last start event. Its containers go one at a
// time afterwards.
func measureBigDirect(ctx context.Context, e *env, s settings, rep *report, n int, name string) error {
	un, err := e.benchNetwork(ctx)
	if err != nil {
		rep.na(bigSection, name, err.Error())
		return err
	}
	best := referenceConcurrency
	if len(s.BigProbe) > 1 {
		var bestUp time.Duration
		for _, c := range s.BigProbe {
			set := fmt.Sprintf("bigprobe-c%d", c)
			remove := e.serialSetCleanup(set)
			up, err := e.directUpOn(ctx, set, s.BigProbeN, c, un)
			if rerr := remove(); rerr != nil {
				return errors.Join(err, rerr)
			}
			if err != nil {
				return fmt.Errorf("probe at concurrency %d: %w", c, err)
			}
			rep.duration(bigSection, fmt.Sprintf("direct API 0 → %d containers, concurrency %d, user network (finding the best)", s.BigProbeN, c), up)
			if bestUp == 0 || up < bestUp {
				best, bestUp = c, up
			}
		}
	}
	remove := e.serialSetCleanup("big")
	up, err := e.directUpOn(ctx, "big", n, best, un)
	if rerr := remove(); rerr != nil {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		rep.na(bigSection, name, err.Error())
		return err
	}
	rep.count(bigSection, name, ms(up), "ms", fmt.Sprintf("concurrency %d", best))
	logf("  direct 0 → %d c=%d %s: %s", n, best, un, up.Round(time.Millisecond))
	return nil
}

// directUpOn creates and starts n containers of set on network, conc in
// flight, and returns the time from the first call to the n-th start
// event.
func (e *env) directUpOn(ctx context.Context, set string, n, conc int, network string) (time.Duration, error) {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("dockbench-%s-%s-%d", e.runID, set, i)
	}
	w := e.hub.watch()
	defer w.close()
	t0 := time.Now()
	if errs := parallel(names, conc, func(name string) error {
		_, err := e.createStartOn(ctx, name, e.labels(set), network)
		return err
	}); len(errs) > 0 {
		return 0, summarize(errs)
	}
	t1, err := w.until(ctx, time.Minute, countEvents(string(events.ActionStart), setLabel, set, n, nil))
	if err != nil {
		return 0, err
	}
	return t1.Sub(t0), nil
}

// serialSetCleanup returns removeSetSerially of set, to be called once the
// set is measured, and registers it with the run's cleanups so that a
// signal removes the set one at a time too.
func (e *env) serialSetCleanup(set string) func() error {
	f := once(func() error { return e.removeSetSerially(set) })
	e.cleanups.push("remove the harness's containers of "+set+" one at a time", f)
	return f
}

// once returns f made to run at most once; every call returns its error.
func once(f func() error) func() error {
	var (
		o   sync.Once
		err error
	)
	return func() error {
		o.Do(func() { err = f() })
		return err
	}
}

// removeSetSerially force-removes the harness's containers of set one at
// a time (removeSerially).
func (e *env) removeSetSerially(set string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	cs, err := e.list(ctx, setLabel+"="+set)
	cancel()
	if err != nil {
		return err
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return e.removeSerially(ids)
}

// instanceContainers lists every container of a dockctl instance: its
// pods (which carry the run label too) and its helpers (which do not).
func (e *env) instanceContainers(ctx context.Context, instance string) ([]container.Summary, error) {
	return e.cli.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", dockerx.LabelInstance+"="+instance))})
}

// removeInstanceContainers force-removes every container of a stopped
// controller's instance one at a time: its pods first, then its helpers
// (proxies, DNS server), which the pods' lookups and traffic would use.
// It returns how many it found.
func (e *env) removeInstanceContainers(instance string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	cs, err := e.instanceContainers(ctx, instance)
	cancel()
	if err != nil {
		return 0, err
	}
	sort.SliceStable(cs, func(i, j int) bool {
		return cs[i].Labels[dockerx.LabelRole] == "" && cs[j].Labels[dockerx.LabelRole] != ""
	})
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return len(ids), e.removeSerially(ids)
}

// serialRemoveTimeout bounds one forced removal of removeSerially. One
// takes about half a second on this 2-core Engine under load; one that
// takes this long means the daemon is stuck, and more calls would only
// queue behind it.
const serialRemoveTimeout = 30 * time.Second

// removeSerially force-removes containers one at a time, each call
// returning only once Docker removed its container, network endpoint
// included. Engine 20.10 before 20.10.27 can deadlock when two containers
// of one network leave it at once (moby/moby#46661; dockerx/leavegate.go),
// which a parallel removal of hundreds of containers on one bridge invites,
// and which would wedge the shared daemon until a restart. It is bounded:
// at most one call per container, each within serialRemoveTimeout, and it
// stops at the first call that times out (the daemon is not answering:
// more calls would pile up) and reports how many are left. It runs on its
// own context, so that a run past its bound still removes what it made.
func (e *env) removeSerially(ids []string) error {
	var errs []error
	for i, id := range ids {
		ctx, cancel := context.WithTimeout(context.Background(), serialRemoveTimeout)
		err := e.remove(ctx, id)
		timedOut := ctx.Err() != nil
		cancel()
		if timedOut {
			return errors.Join(append(errs, fmt.Errorf("removing %s took more than %s: the daemon is not answering; stopped with %d of %d containers left",
				shortID(id), serialRemoveTimeout, len(ids)-i, len(ids)))...)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", shortID(id), err))
		}
	}
	return summarize(errs)
}

// bigBundle is the applied bundle: b.Deployments Deployments of
// bigReplicas workload pods (no readiness probe: ready once running, as
// Kubernetes counts a pod without one) and one ClusterIP Service, port 80
// → 8080, per two Deployments, selecting both by a shared label.
func (e *env) bigBundle(b bigSize) string {
	var sb strings.Builder
	for i := 0; i < b.Deployments; i++ {
		name := fmt.Sprintf("big-%03d", i)
		group := fmt.Sprintf("grp-%03d", i/2)
		sb.WriteString(e.deploymentYAMLLabelled(name, bigReplicas, "group: "+group+", ", "", "        ports: [{name: http, containerPort: 8080}]\n"))
		sb.WriteString("---\n")
	}
	for i := 0; i < b.Services; i++ {
		fmt.Fprintf(&sb, `apiVersion: v1
kind: Service
metadata:
  name: %[1]s
spec:
  selector: {group: %[1]s}
  ports:
  - {name: http, port: 80, targetPort: 8080}
`, fmt.Sprintf("grp-%03d", i))
		if i < b.Services-1 {
			sb.WriteString("---\n")
		}
	}
	return sb.String()
}

// bigDeadline is what the section adds to the run's bound: for each
// container up to 1 s to create (dockctl, then the direct API) and
// 0.6 s to remove one at a time (twice), and 3 minutes of waiting
// (convergence checks, the idle window, the concurrency probe).
func bigDeadline(b bigSize) time.Duration {
	return time.Duration(b.containers())*(2*time.Second+1200*time.Millisecond) + 3*time.Minute
}
