package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/events"
)

// benchSwarm measures Docker Swarm, the peer on plain Docker, doing the same
// work as dockctl: repair with its default restart delay and with
// --restart-delay 0s, scale-up 0 → N, and the rolling update.
//
// Swarm changes the node's state, so it is guarded: it runs only if the node
// is not part of a swarm, and leaving the swarm is both deferred and
// registered with the run's cleanups (which also run on a signal). The
// marker file lets `make bench`'s shell trap leave the swarm even if this
// process is killed outright.
func benchSwarm(ctx context.Context, e *env, s settings, rep *report) error {
	const section = "swarm"
	if !s.Swarm {
		rep.note("swarm: skipped (BENCH_QUICK=1; set BENCH_SWARM=1 to include it)")
		return nil
	}
	leave, err := e.initSwarm(ctx)
	if err != nil {
		rep.note("swarm: %v", err)
		return err
	}
	defer func() {
		if err := leave(); err != nil {
			rep.note("swarm: leave: %v", err)
		}
	}()
	if s.SwarmMeshOnly {
		return measureSwarmMesh(ctx, e, rep)
	}

	var errs []error
	for _, delay := range []string{"", "0s"} {
		label := "swarm repair, default restart delay (5s)"
		extra := []string{}
		kills := s.SwarmSlowKills
		if delay != "" {
			kills = s.SwarmKills
			label = "swarm repair, --restart-delay " + delay
			extra = append(extra, "--restart-delay", delay)
		}
		lat, err := measureSwarmRepair(ctx, e, kills, extra)
		if err != nil {
			rep.na("repair", label, err.Error())
			errs = append(errs, err)
			continue
		}
		rep.latencies("repair", label+" (rm -f → replacement start)", lat)
	}
	dk := "repair/dockctl (rm -f → replacement start) p50"
	rep.ratio("swarm default p50 / dockctl p50", "repair/swarm repair, default restart delay (5s) (rm -f → replacement start) p50", dk, atLeast(10, "issue 5"))
	rep.ratio("swarm --restart-delay 0s p50 / dockctl p50", "repair/swarm repair, --restart-delay 0s (rm -f → replacement start) p50", dk, atLeast(1, "issue 5"))

	n := 0
	for _, sc := range s.Scale {
		n = max(n, sc.N)
	}
	up, err := measureSwarmScale(ctx, e, n)
	if err != nil {
		rep.na(section, fmt.Sprintf("swarm 0 → %d", n), err.Error())
		errs = append(errs, err)
	} else {
		rep.duration(fmt.Sprintf("scale %d", n), fmt.Sprintf("swarm 0 → %d (service scale → last start)", n), up)
	}
	rep.ratio(fmt.Sprintf("dockctl 0 → %d / swarm", n), fmt.Sprintf("scale %d/dockctl 0 → %d", n, n),
		fmt.Sprintf("scale %d/swarm 0 → %d (service scale → last start)", n, n), atMost(1, "issue 5"))

	// maxSurge 25 % rounds up, as Kubernetes does: 5 of 20, 2 of 8 (quick).
	par := (s.RollingReplicas + 3) / 4
	figure := fmt.Sprintf("swarm, %d replicas, --update-parallelism %d --update-order start-first", s.RollingReplicas, par)
	roll, err := measureSwarmRolling(ctx, e, s.RollingReplicas, par)
	if err != nil {
		rep.na(rollingSection, figure, err.Error())
		errs = append(errs, err)
	} else {
		rep.duration(rollingSection, figure, roll)
	}
	rep.ratio("dockctl rolling update / swarm", rollingSection+"/"+fmt.Sprintf("dockctl, %d replicas, maxSurge 25%%, maxUnavailable 0", s.RollingReplicas),
		rollingSection+"/"+figure, nil)
	if !s.Quick {
		roll, err := measureSwarmRolling(ctx, e, 10, 3)
		if err != nil {
			rep.na(rollingSection, rolling10SwarmFigure, err.Error())
			errs = append(errs, err)
		} else {
			rep.duration(rollingSection, rolling10SwarmFigure, roll)
		}
		rep.ratio("dockctl 10-replica rolling update / swarm", rollingSection+"/"+rolling10Figure, rollingSection+"/"+rolling10SwarmFigure, nil)
	}
	if err := measureSwarmMesh(ctx, e, rep); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

const swarmMeshOp = "swarm service update --update-order start-first --force, 4 replicas through the routing mesh"

// measureSwarmMesh counts failed requests through Swarm's routing mesh
// while `docker service update --update-order start-first --force`
// replaces the 4 tasks of a service one at a time, each new task healthy
// (a HEALTHCHECK on /readyz, Swarm's readiness) before the old one stops.
//
// The routing mesh publishes on every address of the host: Swarm has no
// bind address for it, so this is the one port of the run not on
// 127.0.0.1, for the time of this measurement. It is tried first; if it
// does not answer on this engine (it needs IPVS in the kernel), the
// figures say so instead.
func measureSwarmMesh(ctx context.Context, e *env, rep *report) error {
	na := func(why string) {
		for _, m := range trafficModes {
			rep.na(servicesSection, fmt.Sprintf("%s, %s: failed requests", swarmMeshOp, m.name), why)
		}
	}
	img, err := e.healthImage(ctx)
	if err != nil {
		na(err.Error())
		return err
	}
	port, err := freePort()
	if err != nil {
		na(err.Error())
		return err
	}
	set := "swarm-mesh"
	name, err := e.createServiceOf(ctx, img, set, svcReplicas, "--publish", fmt.Sprintf("published=%d,target=8080", port),
		"--update-order", "start-first", "--update-parallelism", "1")
	if err != nil {
		na(err.Error())
		return err
	}
	defer e.removeService(context.Background(), name, set)
	if _, err := e.waitRunning(ctx, svcReplicas, 2*time.Minute, setLabel+"="+set); err != nil {
		na(err.Error())
		return err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := waitHTTP(ctx, addr, 10, 30*time.Second); err != nil {
		why := fmt.Sprintf("the routing mesh does not work on this engine: %d tasks run, but the published port %s never answered (%v)", svcReplicas, addr, err)
		if _, serr := os.Stat("/proc/net/ip_vs"); serr != nil {
			// The mesh balances with IPVS; without it in the kernel the
			// ingress port is never served.
			why += "; this kernel has no IPVS (/proc/net/ip_vs is missing), which the routing mesh needs"
		}
		rep.note("swarm: %s", why)
		na(why)
		return nil
	}
	rep.note("swarm: the routing mesh works on this engine (published port %d answered); it listens on every address of the host during its measurement", port)
	time.Sleep(settle)
	res, err := measureFailures(ctx, addr, func(ctx context.Context) error {
		if _, err := dockerCLI(ctx, "service", "update", "-d", "--force", "--update-order", "start-first", "--no-resolve-image", name); err != nil {
			return err
		}
		return waitSwarmUpdate(ctx, name, 3*time.Minute)
	})
	if err != nil {
		na(err.Error())
		return err
	}
	recordFailures(rep, servicesSection, swarmMeshOp, res)
	return nil
}

// waitSwarmUpdate polls a service's update status until it is completed.
func waitSwarmUpdate(ctx context.Context, name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		st, err := dockerCLI(ctx, "service", "inspect", "-f", "{{if .UpdateStatus}}{{.UpdateStatus.State}}{{end}}", name)
		if err != nil {
			return err
		}
		switch st {
		case "completed":
			return nil
		case "paused", "rollback_started", "rollback_completed", "rollback_paused":
			return fmt.Errorf("swarm update of %s: %s", name, st)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("swarm update of %s not completed after %s (state %q)", name, timeout, st)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// healthImage builds the workload image with a HEALTHCHECK on /readyz
// (exec form: the image has no shell, and `--health-cmd` needs one), so
// that Swarm's start-first waits for the new task to be ready as dockctl's
// readinessProbe does. Returns its ID (Swarm gets images by ID).
func (e *env) healthImage(ctx context.Context) (string, error) {
	tag := e.image + "-health"
	dir := filepath.Join(e.tmp, "health")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := e.buildImage(ctx, tag, dir, "FROM "+e.image+"\n"+
		"HEALTHCHECK --interval=1s --timeout=2s --retries=1 CMD [\"/workload\", \"probe\", \"http://127.0.0.1:8080/readyz\"]\n"); err != nil {
		return "", err
	}
	inspect, err := e.cli.ImageInspect(ctx, tag)
	if err != nil {
		return "", err
	}
	return inspect.ID, nil
}

// initSwarm refuses unless the node is inactive, then initialises a
// single-node swarm on loopback. The returned function (idempotent) removes
// this run's services, leaves the swarm and removes docker_gwbridge if the
// swarm created it.
func (e *env) initSwarm(ctx context.Context) (func() error, error) {
	state, err := dockerCLI(ctx, "info", "-f", "{{.Swarm.LocalNodeState}}")
	if err != nil {
		return nil, err
	}
	if state != "inactive" {
		return nil, fmt.Errorf("refusing to use Swarm: this node's swarm state is %q, not \"inactive\" (someone else's swarm?)", state)
	}
	_, gwErr := dockerCLI(ctx, "network", "inspect", "docker_gwbridge")
	gwExisted := gwErr == nil
	if e.swarmMarker != "" {
		// Written before init so that a kill at any point after this leaves
		// the trap in `make bench` enough to clean up.
		if err := os.WriteFile(e.swarmMarker, []byte(fmt.Sprintf("gwbridge_existed=%t\n", gwExisted)), 0o644); err != nil {
			return nil, err
		}
	}
	var once sync.Once
	var leaveErr error
	leave := func() error {
		once.Do(func() {
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if ids, err := dockerCLI(cctx, "service", "ls", "-q", "--filter", "label="+benchLabel+"="+e.runID); err == nil && ids != "" {
				_, err := dockerCLI(cctx, append([]string{"service", "rm"}, strings.Fields(ids)...)...)
				leaveErr = errors.Join(leaveErr, err)
			}
			if _, err := dockerCLI(cctx, "swarm", "leave", "--force"); err != nil {
				leaveErr = errors.Join(leaveErr, err)
			}
			if !gwExisted {
				// The bridge can stay busy for a moment after the leave.
				var err error
				for i := 0; i < 20; i++ {
					if _, err = dockerCLI(cctx, "network", "rm", "docker_gwbridge"); err == nil || strings.Contains(err.Error(), "No such network") || strings.Contains(err.Error(), "not found") {
						err = nil
						break
					}
					time.Sleep(500 * time.Millisecond)
				}
				leaveErr = errors.Join(leaveErr, err)
			}
			if st, err := dockerCLI(cctx, "info", "-f", "{{.Swarm.LocalNodeState}}"); err != nil || st != "inactive" {
				leaveErr = errors.Join(leaveErr, fmt.Errorf("swarm state after leave: %q %v", st, err))
			} else if e.swarmMarker != "" {
				_ = os.Remove(e.swarmMarker)
			}
			logf("left the swarm")
		})
		return leaveErr
	}
	e.cleanups.push("leave swarm", leave)
	if _, err := dockerCLI(ctx, "swarm", "init", "--advertise-addr", "127.0.0.1"); err != nil {
		return nil, errors.Join(err, leave())
	}
	logf("swarm initialised on 127.0.0.1")
	return leave, nil
}

// createService creates a service of the workload image, given by ID with
// --no-resolve-image (with a tag, Swarm's agent tries a registry for every
// task). Its task containers carry the run and set labels.
func (e *env) createService(ctx context.Context, set string, replicas int, extra ...string) (string, error) {
	return e.createServiceOf(ctx, e.imageID, set, replicas, extra...)
}

// createServiceOf is createService of another image of the run (by ID).
func (e *env) createServiceOf(ctx context.Context, imageID, set string, replicas int, extra ...string) (string, error) {
	name := "dockbench-" + e.runID + "-" + set
	args := []string{"service", "create", "-d", "--name", name, "--replicas", strconv.Itoa(replicas),
		"--label", benchLabel + "=" + e.runID,
		"--container-label", benchLabel + "=" + e.runID, "--container-label", setLabel + "=" + set,
		"--no-resolve-image"}
	args = append(args, extra...)
	args = append(args, imageID, "--listen=:8080")
	_, err := dockerCLI(ctx, args...)
	return name, err
}

// removeService removes a service and waits for Swarm to remove its task
// containers, so that the next measurement starts on a quiet engine.
func (e *env) removeService(ctx context.Context, name, set string) error {
	if _, err := dockerCLI(ctx, "service", "rm", name); err != nil {
		return err
	}
	return e.waitGone(ctx, 2*time.Minute, setLabel+"="+set)
}

func measureSwarmRepair(ctx context.Context, e *env, kills int, extra []string) ([]time.Duration, error) {
	set := "swarm-repair"
	if len(extra) > 0 {
		set = "swarm-repair-nodelay"
	}
	name, err := e.createService(ctx, set, repairReplicas, extra...)
	if err != nil {
		return nil, err
	}
	defer e.removeService(context.Background(), name, set)
	return measureKills(ctx, e, kills, repairReplicas, setLabel, set, time.Minute)
}

func measureSwarmScale(ctx context.Context, e *env, n int) (time.Duration, error) {
	set := "swarm-scale"
	name, err := e.createService(ctx, set, 0)
	if err != nil {
		return 0, err
	}
	defer e.removeService(context.Background(), name, set)
	time.Sleep(settle)
	w := e.hub.watch()
	defer w.close()
	t0 := time.Now()
	if _, err := dockerCLI(ctx, "service", "scale", "-d", fmt.Sprintf("%s=%d", name, n)); err != nil {
		return 0, err
	}
	t1, err := w.until(ctx, time.Duration(n)*time.Second+time.Minute, countEvents(string(events.ActionStart), setLabel, set, n, nil))
	if err != nil {
		return 0, err
	}
	logf("  swarm 0 → %d: %s", n, t1.Sub(t0).Round(time.Millisecond))
	return t1.Sub(t0), nil
}

func measureSwarmRolling(ctx context.Context, e *env, n, parallelism int) (time.Duration, error) {
	set := fmt.Sprintf("swarm-rolling-%d", n)
	name, err := e.createService(ctx, set, n, "--env", "GREETING=v1")
	if err != nil {
		return 0, err
	}
	defer e.removeService(context.Background(), name, set)
	oldIDs, err := e.waitRunning(ctx, n, 2*time.Minute, setLabel+"="+set)
	if err != nil {
		return 0, err
	}
	time.Sleep(settle)
	w := e.hub.watch()
	defer w.close()
	t0 := time.Now()
	if _, err := dockerCLI(ctx, "service", "update", "-d", "--env-add", "GREETING=v2",
		"--update-parallelism", strconv.Itoa(parallelism), "--update-order", "start-first", "--no-resolve-image", name); err != nil {
		return 0, err
	}
	t1, err := w.until(ctx, 3*time.Minute, replaced(oldIDs, n, setLabel, set))
	if err != nil {
		return 0, err
	}
	logf("  swarm rolling update of %d: %s", n, t1.Sub(t0).Round(time.Millisecond))
	return t1.Sub(t0), nil
}

// dockerCLI runs the docker CLI: Swarm is driven the way its users drive
// it, and the CLI's own start-up cost is part of what they wait for.
func dockerCLI(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	s := strings.TrimSpace(string(out))
	if err != nil {
		return s, fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, s)
	}
	return s, nil
}
