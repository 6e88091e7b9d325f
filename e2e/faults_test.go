//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// TestDaemonRestart restarts the Docker daemon under a running controller
// with --live-restore. The daemon is a private one (docs/development.md, the
// end-to-end tests); the controller
// runs on the host against it. While the daemon is down /readyz must say
// not-ready, and one replica's process is killed: a death no event reports.
// After the daemon is back the controller must reconnect, find that death
// through its resync, and converge to exactly 3 running replicas again,
// leaving the two live-restored replicas alone.
func TestDaemonRestart(t *testing.T) {
	e := newEnv(t)
	d := startPrivateDockerd(t) // registered before the controller: cleaned up after it
	d.loadImage(workloadImage)
	dockerHost := []string{"DOCKER_HOST=" + d.host()}

	ctrl := e.startHostController(dockerHost, "--metrics-addr", "127.0.0.1:0")
	readyz := "http://" + ctrl.metricsAddr() + "/readyz"
	// Ready once its first list of containers has succeeded.
	waitStatus(t, readyz, 200, 30*time.Second)

	sel := []string{"io.dockctl.instance=" + e.instance, "io.dockctl.deployment=web"}
	sampler := startCountSampler(t, d.cli, 100*time.Millisecond, 3, sel...)
	e.apply(privateNetManifest(3))
	before := waitRunningOn(t, d.cli, 3, 60*time.Second, sel...)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pids := map[string]int{}
	for _, c := range before {
		info, err := d.cli.ContainerInspect(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Pid <= 0 {
			t.Fatalf("%s: no PID (%+v)", info.Name, info.State)
		}
		pids[c.ID] = info.State.Pid
	}
	victim := before[0]
	victimPid := pids[victim.ID]

	stopped := time.Now()
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("private dockerd stopped in %s", time.Since(stopped).Round(time.Millisecond))

	// Not ready while Docker is unreachable: the broken event stream (or
	// the next resync) makes the controller list again, which fails.
	waitStatus(t, readyz, 503, 20*time.Second)
	t.Logf("/readyz answered 503 %s after the SIGTERM to dockerd", time.Since(stopped).Round(time.Millisecond))

	// A death with no event: the daemon that would report it is down.
	if err := syscall.Kill(victimPid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d (%s): %v", victimPid, victim.Names[0], err)
	}
	t.Logf("killed pid %d of %s while the daemon was down", victimPid, strings.TrimPrefix(victim.Names[0], "/"))
	eventually(t, 10*time.Second, "the killed workload process to be gone", func() (bool, string) {
		return syscall.Kill(victimPid, 0) != nil, "still there"
	})
	if code := httpStatus(readyz); code != 503 {
		t.Fatalf("/readyz while the daemon is down: %d, want 503", code)
	}

	restarted := time.Now()
	if err := d.start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("private dockerd answering again %s after its restart began", time.Since(restarted).Round(time.Millisecond))
	waitStatus(t, readyz, 200, 60*time.Second)
	t.Logf("controller ready again %s after the daemon restart began", time.Since(restarted).Round(time.Millisecond))

	after := waitRunningOn(t, d.cli, 3, 60*time.Second, sel...)
	t.Logf("converged to 3 running replicas %s after the daemon restart began", time.Since(restarted).Round(time.Millisecond))

	// The two replicas that kept running were live-restored and left alone;
	// the killed one was started again or replaced.
	byID := map[string]container.Summary{}
	for _, c := range after {
		byID[c.ID] = c
	}
	for _, c := range before[1:] {
		if _, ok := byID[c.ID]; !ok {
			t.Errorf("replica %s kept running through the restart but was replaced: %s", c.Names[0], describe(after))
			continue
		}
		info, err := d.cli.ContainerInspect(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Pid != pids[c.ID] {
			t.Errorf("replica %s was restarted (pid %d → %d); it should have been left running", c.Names[0], pids[c.ID], info.State.Pid)
		}
	}
	if _, ok := byID[victim.ID]; ok {
		info, err := d.cli.ContainerInspect(ctx, victim.ID)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("the killed replica was started again (pid %d → %d)", victimPid, info.State.Pid)
	} else {
		t.Logf("the killed replica was replaced: %s", describe(after))
	}
	if !strings.Contains(ctrl.out.String(), "docker event stream interrupted") {
		t.Errorf("the controller never reported the event stream gap:\n%s", ctrl.out.String())
	}
	sampler.stop()
	if m := sampler.check(t); m > 3 {
		t.Errorf("max count %d > 3", m)
	}
	dv := e.getDeploymentJSON("web", dockerHost...)
	if dv.Status.Replicas != 3 || dv.Status.ReadyReplicas != 3 {
		t.Errorf("get deployments status after the restart: %+v", dv.Status)
	}

	// /readyz must not wait for the periodic resync to notice that Docker is
	// gone: with a resync period far longer than the test (the default is
	// 30s), it must still turn 503 within seconds of the daemon stopping.
	ctrl.stop()
	slow := e.startHostController(dockerHost, "--metrics-addr", "127.0.0.1:0", "--resync-period", "10m")
	readyz = "http://" + slow.metricsAddr() + "/readyz"
	waitStatus(t, readyz, 200, 30*time.Second)
	stopped = time.Now()
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, readyz, 503, 15*time.Second)
	t.Logf("--resync-period 10m: /readyz answered 503 %s after the SIGTERM to dockerd", time.Since(stopped).Round(time.Millisecond))
	restarted = time.Now()
	if err := d.start(); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, readyz, 200, 60*time.Second)
	t.Logf("--resync-period 10m: ready again %s after the daemon restart began", time.Since(restarted).Round(time.Millisecond))
	waitRunningOn(t, d.cli, 3, 60*time.Second, sel...)
}

// TestDaemonRestartWithoutLiveRestore restarts, twice, a Docker
// daemon run with Docker's default — no --live-restore, as a host reboot or
// a Docker upgrade leaves it — under a controller with 30 replicas of 6
// deployments. The daemon's stop stops every replica; the controller's
// first starts race the daemon's restore (the daemon answers before its
// network store is back), and a start that loses the race can leave the
// runtime holding the container's task, so that every later start of that
// container fails ("task <id>: already exists"). Such a replica must be
// replaced, as a dead one is: after each restart every deployment is back
// to exactly its replicas, all running.
func TestDaemonRestartWithoutLiveRestore(t *testing.T) {
	e := newEnv(t)
	d := startPrivateDockerdWithoutLiveRestore(t) // registered before the controller: cleaned up after it
	d.loadImage(workloadImage)
	dockerHost := []string{"DOCKER_HOST=" + d.host()}

	ctrl := e.startHostController(dockerHost, "--metrics-addr", "127.0.0.1:0")
	readyz := "http://" + ctrl.metricsAddr() + "/readyz"
	waitStatus(t, readyz, 200, 30*time.Second)

	const deployments, replicas = 6, 5
	var manifests []string
	for i := range deployments {
		manifests = append(manifests, testDeployment{name: fmt.Sprintf("web%d", i), replicas: replicas, network: privateNetwork}.manifest())
	}
	e.apply(strings.Join(manifests, "---\n"))
	converged := func(timeout time.Duration) {
		t.Helper()
		for i := range deployments {
			waitRunningOn(t, d.cli, replicas, timeout, "io.dockctl.instance="+e.instance, fmt.Sprintf("io.dockctl.deployment=web%d", i))
		}
	}
	converged(3 * time.Minute)

	// Twice, not more: the race below is also made on purpose, so the
	// cycles only give chance its turns (each costs the suite ~20 s).
	for cycle := 1; cycle <= 2; cycle++ {
		stopped := time.Now()
		if err := d.stop(); err != nil {
			t.Fatal(err)
		}
		t.Logf("restart %d: private dockerd (no live-restore) stopped its replicas and exited in %s", cycle, time.Since(stopped).Round(time.Millisecond))
		waitStatus(t, readyz, 503, 20*time.Second)
		restarted := time.Now()
		if err := d.start(); err != nil {
			t.Fatal(err)
		}
		// Generous for a loaded machine; a replica that can never start
		// again would keep it from converging however long it waits.
		converged(3 * time.Minute)
		t.Logf("restart %d: %d replicas of %d deployments running again %s after the daemon restart began",
			cycle, deployments*replicas, deployments, time.Since(restarted).Round(time.Millisecond))
	}
	// The race is won or lost by chance; its outcome is made on purpose
	// too. With the controller stopped and the daemon restarted, the
	// daemon's containerd is made to hold a running task under the ID of
	// a replica the daemon shows stopped — what a start that lost the race
	// leaves — and the controller started again must replace that replica.
	ctrl.stop()
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	if err := d.start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: labelFilter("io.dockctl.instance="+e.instance, "io.dockctl.deployment=web0")})
	if err != nil || len(cs) == 0 {
		t.Fatalf("list web0's replicas: %v %s", err, describe(cs))
	}
	victim := cs[0]
	d.keepTask(victim.ID, workloadImage)
	ctrl = e.startHostController(dockerHost, "--metrics-addr", "127.0.0.1:0")
	restarted := time.Now()
	// The victim's removal may hang in Docker's "removing" state (the
	// runtime still holds its task; only the daemon can end that): it is
	// replaced all the same, and no longer counts as a replica, as a pod
	// stuck terminating is none on Kubernetes.
	for i := range deployments {
		eventually(t, 3*time.Minute, fmt.Sprintf("web%d: exactly %d running replicas, the victim replaced", i, replicas), func() (bool, string) {
			lctx, lcancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer lcancel()
			cs, err := d.cli.ContainerList(lctx, container.ListOptions{All: true, Filters: labelFilter("io.dockctl.instance="+e.instance, fmt.Sprintf("io.dockctl.deployment=web%d", i))})
			if err != nil {
				return false, err.Error()
			}
			var others []container.Summary
			for _, c := range cs {
				if c.ID == victim.ID {
					if c.State != "removing" && c.State != "dead" {
						return false, "the victim is " + c.State + ": " + describe(cs)
					}
					continue
				}
				others = append(others, c)
			}
			total, running := countStates(others)
			return total == replicas && running == replicas, describe(cs)
		})
	}
	t.Logf("the replica whose task the runtime kept (%s) was replaced; %d replicas running %s after the controller started again",
		strings.TrimPrefix(victim.Names[0], "/"), deployments*replicas, time.Since(restarted).Round(time.Millisecond))

	// What the races left, for the record: the refusals and replacements.
	var lines []string
	for _, l := range strings.Split(ctrl.out.String(), "\n") {
		if strings.Contains(l, "already exists") || strings.Contains(l, "can never be started again") {
			lines = append(lines, l)
		}
	}
	t.Logf("controller log: %d lines name a start that can never succeed:\n%s", len(lines), strings.Join(lines[:min(len(lines), 10)], "\n"))
}

// waitStatus waits until a GET of url answers with the status code want.
func waitStatus(t testing.TB, url string, want int, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("%s to answer %d", url, want), func() (bool, string) {
		code := httpStatus(url)
		return code == want, fmt.Sprintf("status %d", code)
	})
}

// privateNetManifest is the workload deployment for the private daemon,
// which has no default bridge network.
func privateNetManifest(replicas int) string {
	return testDeployment{name: "web", replicas: replicas, network: privateNetwork}.manifest()
}

// waitRunningOn waits until the selection on cli holds exactly n
// containers, all running.
func waitRunningOn(t testing.TB, cli *client.Client, n int, timeout time.Duration, labels ...string) []container.Summary {
	t.Helper()
	args := labelFilter(labels...)
	var cs []container.Summary
	eventually(t, timeout, fmt.Sprintf("exactly %d running containers", n), func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		cs, err = cli.ContainerList(ctx, container.ListOptions{All: true, Filters: args})
		if err != nil {
			return false, err.Error()
		}
		total, running := countStates(cs)
		return total == n && running == n, describe(cs)
	})
	return cs
}

// TestTwoControllers starts two controllers for the same instance and state
// directory (docs/design.md §2, one acting controller): exactly one acts, the other stands by; no
// replica is ever created twice or beyond the declared count; when the
// leader is SIGKILLed the standby takes over and repairs.
func TestTwoControllers(t *testing.T) {
	e := newEnv(t)
	const replicas = 4
	creates := watchCreates(t, "io.dockctl.instance="+e.instance)

	e.startController()
	leader := e.controller
	standby := e.startStandbyController()
	if log := containerLog(standby); strings.Contains(log, "controller lock acquired") {
		t.Fatalf("the second controller acquired the lock the first holds:\n%s", log)
	}
	if log := e.controllerLog(); !strings.Contains(log, "controller lock acquired") {
		t.Fatalf("leader log:\n%s", log)
	}

	sel := []string{"io.dockctl.instance=" + e.instance, "io.dockctl.deployment=web"}
	sampler := startCountSampler(t, dockerCli, 100*time.Millisecond, replicas, sel...)
	applied := time.Now()
	e.apply(webManifest(replicas, "one"))
	before := e.waitRunning("web", replicas, "")
	t.Logf("4 replicas running %s after apply", time.Since(applied).Round(time.Millisecond))
	// A few resync periods (2s) with both controllers up: nothing changes,
	// and the standby plans nothing.
	time.Sleep(5 * time.Second)
	if cs := e.deploymentContainers("web"); describe(cs) != describe(before) {
		t.Fatalf("containers changed while idle:\nbefore %s\nafter  %s", describe(before), describe(cs))
	}
	if log := containerLog(standby); strings.Contains(log, "planned") || strings.Contains(log, "controller started") {
		t.Fatalf("the standby acted while the leader was alive:\n%s", log)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	killed := time.Now()
	if err := dockerCli.ContainerKill(ctx, leader.GetContainerID(), "KILL"); err != nil {
		t.Fatal(err)
	}
	victim := before[0]
	if err := dockerCli.ContainerRemove(ctx, victim.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
		t.Fatal(err)
	}
	var takeover time.Duration
	eventually(t, 60*time.Second, "the standby to acquire the controller lock", func() (bool, string) {
		log := containerLog(standby)
		line := findLine(log, "controller lock acquired")
		if line == "" {
			return false, log
		}
		takeover = time.Since(killed)
		if ts, ok := logTime(line); ok {
			takeover = ts.Sub(killed)
		}
		return true, ""
	})
	t.Logf("takeover: standby acquired the lock %s after the leader was SIGKILLed", takeover.Round(time.Millisecond))
	after := e.waitRunning("web", replicas, "")
	t.Logf("repaired to %d running %s after the leader was SIGKILLed", replicas, time.Since(killed).Round(time.Millisecond))
	for _, c := range after {
		if c.ID == victim.ID {
			t.Fatalf("removed replica %s is back?", victim.Names[0])
		}
	}
	if log := containerLog(standby); !strings.Contains(log, "standing by") {
		t.Errorf("the standby never said it was standing by:\n%s", log)
	}

	// Let a couple of resyncs pass, then check the whole history.
	time.Sleep(3 * time.Second)
	sampler.stop()
	sampler.check(t)
	created, helpers := creates.stop(t)
	t.Logf("helpers created: %v", helpers)
	if len(created) != replicas+1 {
		t.Errorf("%d containers created, want %d (4 replicas + 1 repair): %v", len(created), replicas+1, created)
	}
}

// startStandbyController starts a second controller container on e's
// instance and state directory, expected to stand by. It is stopped and
// removed when the test ends.
func (e *env) startStandbyController() testcontainers.Container {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image: controllerImage,
			Cmd: []string{"controller", "--instance", e.instance, "--resync-period", "2s",
				"--metrics-addr", "", "--crash-backoff-base", "200ms"},
			Labels: map[string]string{"io.dockctl.e2e-controller": e.instance},
			HostConfigModifier: func(hc *container.HostConfig) {
				hc.Binds = []string{"/var/run/docker.sock:/var/run/docker.sock", e.stateDir + ":/state"}
			},
			WaitingFor: wait.ForLog("standing by").WithStartupTimeout(time.Minute),
		},
		Started: true,
	})
	if c != nil {
		e.t.Cleanup(func() {
			if e.t.Failed() {
				e.t.Logf("standby controller log:\n%s", containerLog(c))
			}
			if err := testcontainers.TerminateContainer(c); err != nil {
				e.t.Logf("terminate standby controller: %v", err)
			}
		})
	}
	if err != nil {
		e.t.Fatalf("start standby controller: %v", err)
	}
	return c
}

func containerLog(c testcontainers.Container) string {
	rc, err := c.Logs(context.Background())
	if err != nil {
		return err.Error()
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return string(b)
}

func findLine(log, substr string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, substr) {
			return l
		}
	}
	return ""
}

var logTimePattern = regexp.MustCompile(`time=(\S+)`)

// logTime parses the time= field of a slog text line.
func logTime(line string) (time.Time, bool) {
	m := logTimePattern.FindStringSubmatch(line)
	if m == nil {
		return time.Time{}, false
	}
	ts, err := time.Parse(time.RFC3339Nano, m[1])
	return ts, err == nil
}

// createWatch records the container create and destroy events of a label
// selection on the machine's daemon, and flags a name created while a
// container of that name still existed.
type createWatch struct {
	mu      sync.Mutex
	created []string          // names of pod containers, in event order
	helpers []string          // names of Service helpers (isHelper), in event order
	live    map[string]string // name → container ID
	dups    []string
	errs    []error
	cancel  context.CancelFunc
	done    chan struct{}
}

func watchCreates(t testing.TB, label string) *createWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &createWatch{live: map[string]string{}, cancel: cancel, done: make(chan struct{})}
	args := filters.NewArgs(
		filters.Arg("type", string(events.ContainerEventType)),
		filters.Arg("label", label),
		filters.Arg("event", "create"),
		filters.Arg("event", "destroy"),
	)
	// Since replays what happened between now and the subscription being
	// registered, so that nothing falls between the two.
	since := fmt.Sprintf("%d", time.Now().Add(-time.Second).Unix())
	msgs, errs := dockerCli.Events(ctx, events.ListOptions{Filters: args, Since: since})
	go func() {
		defer close(w.done)
		for {
			select {
			case m := <-msgs:
				name := m.Actor.Attributes["name"]
				w.mu.Lock()
				switch m.Action {
				case events.ActionCreate:
					if isHelper(m.Actor.Attributes["io.dockctl.role"]) {
						w.helpers = append(w.helpers, name)
					} else {
						w.created = append(w.created, name)
					}
					if id, ok := w.live[name]; ok && id != m.Actor.ID {
						w.dups = append(w.dups, fmt.Sprintf("%s created as %.12s while %.12s existed", name, m.Actor.ID, id))
					}
					w.live[name] = m.Actor.ID
				case events.ActionDestroy:
					if w.live[name] == m.Actor.ID {
						delete(w.live, name)
					}
				}
				w.mu.Unlock()
			case err := <-errs:
				if ctx.Err() == nil {
					w.mu.Lock()
					w.errs = append(w.errs, err)
					w.mu.Unlock()
				}
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-w.done })
	return w
}

// stop ends the watch, fails the test on a duplicate (of any container,
// helpers included) or a broken stream, and returns the names of the pod
// containers created and, apart, of the Service helpers (DNS server,
// proxies).
func (w *createWatch) stop(t testing.TB) (created, helpers []string) {
	t.Helper()
	time.Sleep(500 * time.Millisecond) // let the last events arrive
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) > 0 {
		t.Errorf("event stream broke: %v", w.errs)
	}
	if len(w.dups) > 0 {
		t.Errorf("a container name was created twice: %v", w.dups)
	}
	return slices.Clone(w.created), slices.Clone(w.helpers)
}

// TestControllerKilledMidOperation SIGKILLs the controller in the middle of
// a scale-up and of a scale-down: after a restart it must
// converge to the exact count, the count must never exceed the declared
// replicas at any sample, a scale-down must create nothing, and the stored
// deployment must still read fine.
func TestControllerKilledMidOperation(t *testing.T) {
	e := newEnv(t)
	const up, down = 12, 2
	sel := []string{"io.dockctl.instance=" + e.instance, "io.dockctl.deployment=web"}
	sampler := startCountSampler(t, dockerCli, 100*time.Millisecond, up, sel...)

	// Scale-up: kill once 3 replicas run.
	c1 := e.startHostController(nil)
	applied := time.Now()
	e.apply(webManifest(up, "one"))
	total, running := pollUntil(t, 60*time.Second, 10*time.Millisecond, sel, func(total, running int) bool { return running >= 3 })
	c1.kill()
	killedAt := time.Since(applied)
	after := containers(t, sel...)
	t.Logf("scale-up: SIGKILL %s after apply with %d containers (%d running); right after: %s",
		killedAt.Round(time.Millisecond), total, running, describe(after))
	// The kill must have landed mid-operation, or this tests nothing: the
	// controller is dead, so what runs now is what it left.
	if _, r := countStates(after); r >= up {
		t.Fatalf("scale-up: the SIGKILL came after the scale-up completed (%d of %d running); not a mid-operation kill", r, up)
	}
	if dv := e.getDeploymentJSON("web"); dv.Spec.Replicas == nil || *dv.Spec.Replicas != up {
		t.Fatalf("stored deployment after the kill: %+v", dv)
	}

	restarted := time.Now()
	c2 := e.startHostController(nil)
	upContainers := e.waitRunning("web", up, "")
	t.Logf("scale-up: converged to %d running %s after the restart", up, time.Since(restarted).Round(time.Millisecond))
	dv := e.getDeploymentJSON("web")
	if dv.Spec.Replicas == nil || *dv.Spec.Replicas != up || dv.Status.Replicas != up {
		t.Fatalf("get deployments after scale-up: %+v", dv)
	}
	original := map[string]bool{}
	for _, c := range upContainers {
		original[c.ID] = true
	}

	// Scale-down: kill as soon as the first removal shows.
	scaled := time.Now()
	e.mustDockctl("", "scale", "deployment", "web", "--replicas", fmt.Sprint(down))
	total, running = pollUntil(t, 60*time.Second, 5*time.Millisecond, sel, func(total, running int) bool { return total < up })
	c2.kill()
	killedAt = time.Since(scaled)
	after = containers(t, sel...)
	t.Logf("scale-down: SIGKILL %s after scale with %d containers (%d running); right after: %s",
		killedAt.Round(time.Millisecond), total, running, describe(after))
	if n, _ := countStates(after); n <= down {
		t.Fatalf("scale-down: the SIGKILL came after the scale-down completed (%d containers left, %d wanted); not a mid-operation kill", n, down)
	}
	if dv := e.getDeploymentJSON("web"); dv.Spec.Replicas == nil || *dv.Spec.Replicas != down {
		t.Fatalf("stored deployment after the kill: %+v", dv)
	}

	restarted = time.Now()
	e.startHostController(nil)
	downContainers := e.waitRunning("web", down, "")
	t.Logf("scale-down: converged to %d running %s after the restart", down, time.Since(restarted).Round(time.Millisecond))
	for _, c := range downContainers {
		if !original[c.ID] {
			t.Errorf("scale-down left a new container %s: a scale-down must only remove", c.Names[0])
		}
	}
	dv = e.getDeploymentJSON("web")
	if dv.Spec.Replicas == nil || *dv.Spec.Replicas != down || dv.Status.Replicas != down {
		t.Fatalf("get deployments after scale-down: %+v", dv)
	}
	// A few resyncs (2s) later nothing has moved.
	time.Sleep(4 * time.Second)
	if cs := e.deploymentContainers("web"); describe(cs) != describe(downContainers) {
		t.Errorf("containers changed after convergence:\nbefore %s\nafter  %s", describe(downContainers), describe(cs))
	}
	sampler.stop()
	sampler.check(t)
	var extra []string
	for id, name := range sampler.seenIDs() {
		if !original[id] {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		t.Errorf("containers other than the %d of the scale-up were seen: %v", up, extra)
	}
}

// pollUntil lists the selection every period until cond(total, running)
// holds and returns those counts.
func pollUntil(t testing.TB, timeout, period time.Duration, sel []string, cond func(total, running int) bool) (int, int) {
	t.Helper()
	var total, running int
	deadline := time.Now().Add(timeout)
	for {
		total, running = countStates(containers(t, sel...))
		if cond(total, running) {
			return total, running
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s: %d containers, %d running", timeout, total, running)
		}
		time.Sleep(period)
	}
}
