package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"

	"github.com/dockctl/dockctl/dockerx"
)

// podsSection names the section all pod figures are recorded under, so that
// the ratios pair figures of one run.
const podsSection = "pods"

// podContainers is the number of containers of one bench pod: the holder
// and two app containers (no init container).
const podContainers = 3

// Figure names of the pods section (the ratios refer to them).
const (
	podSingleFigure = "single-container repair, dockctl (rm -f → replacement start)"
	podMemberFigure = "pod member repair (rm -f of an app container → its replacement's start)"
	podHolderFigure = "pod holder repair (rm -f of the holder → last start of the replacement pod)"
)

// benchPods measures pods of two app containers (so each has a holder)
// beside single-container replicas in the same run: repair after `rm -f`
// of a member and of the holder, next to the single-container repair of
// the repair section's method; scale 0 → N next to the direct API making
// the same containers (a holder and two joined members per pod); and the
// resident memory of a holder.
func benchPods(ctx context.Context, e *env, s settings, rep *report) error {
	var errs []error
	single, err := measureDockctlRepair(ctx, e, "pod-single", s.PodKills)
	if err != nil {
		rep.na(podsSection, podSingleFigure, err.Error())
		errs = append(errs, err)
	} else {
		rep.latencies(podsSection, podSingleFigure, single)
	}
	// The single-container figures are gone from the engine before the
	// pods come, so that neither measurement pays for the other's
	// containers.
	if err := e.removeAll(ctx); err != nil {
		return errors.Join(append(errs, err)...)
	}

	if err := measurePodRepair(ctx, e, s.PodKills, rep); err != nil {
		errs = append(errs, err)
	}
	for _, q := range []string{"p50", "p90"} {
		rep.ratio("pod member repair "+q+" / single-container repair "+q, podsSection+"/"+podMemberFigure+" "+q,
			podsSection+"/"+podSingleFigure+" "+q, nil)
		rep.ratio("pod holder repair "+q+" / single-container repair "+q, podsSection+"/"+podHolderFigure+" "+q,
			podsSection+"/"+podSingleFigure+" "+q, nil)
	}
	if err := e.removeAll(ctx); err != nil {
		return errors.Join(append(errs, err)...)
	}

	n := s.PodScale
	upFigure := fmt.Sprintf("dockctl 0 → %d two-container pods", n)
	downFigure := fmt.Sprintf("dockctl %d → 0 two-container pods", n)
	directUp := fmt.Sprintf("direct API 0 → %d pods (holder + 2 members each), concurrency %d", n, referenceConcurrency)
	directDown := fmt.Sprintf("direct API %d → 0 pods, concurrency %d", n, referenceConcurrency)
	name := "podscale" + strconv.Itoa(n)
	up, down, err := measureDockctlScaleOf(ctx, e, name, e.podManifest(name, 0), n, podContainers)
	if err != nil {
		rep.na(podsSection, upFigure, err.Error())
		errs = append(errs, err)
	} else {
		rep.duration(podsSection, upFigure, up)
		rep.duration(podsSection, downFigure, down)
	}
	up, down, err = measureDirectPods(ctx, e, n, referenceConcurrency)
	if err != nil {
		rep.na(podsSection, directUp, err.Error())
		errs = append(errs, err)
	} else {
		rep.duration(podsSection, directUp, up)
		rep.duration(podsSection, directDown, down)
	}
	rep.ratio(fmt.Sprintf("dockctl 0 → %d pods / direct API c=%d", n, referenceConcurrency),
		podsSection+"/"+upFigure, podsSection+"/"+directUp, nil)
	rep.ratio(fmt.Sprintf("dockctl %d → 0 pods / direct API c=%d", n, referenceConcurrency),
		podsSection+"/"+downFigure, podsSection+"/"+directDown, nil)
	return errors.Join(errs...)
}

// measurePodRepair runs a deployment of repairReplicas two-container pods
// under a controller with the default resync period and measures the
// repair of a member and of a holder, then reads the holders' memory.
func measurePodRepair(ctx context.Context, e *env, n int, rep *report) error {
	const name = "pod-repair"
	c, err := e.startController(ctx, name, 30*time.Second, "")
	if err != nil {
		rep.na(podsSection, podMemberFigure, err.Error())
		return err
	}
	defer c.stop()
	if err := c.apply(ctx, e.podManifest(name, repairReplicas)); err != nil {
		rep.na(podsSection, podMemberFigure, err.Error())
		return err
	}
	var errs []error
	member, err := measurePodKills(ctx, e, n, name, false)
	if err != nil {
		rep.na(podsSection, podMemberFigure, err.Error())
		errs = append(errs, err)
	} else {
		rep.latencies(podsSection, podMemberFigure, member)
	}
	holder, err := measurePodKills(ctx, e, n, name, true)
	if err != nil {
		rep.na(podsSection, podHolderFigure, err.Error())
		errs = append(errs, err)
	} else {
		rep.latencies(podsSection, podHolderFigure, holder)
	}
	if err := measureHolderMemory(ctx, e, name, rep); err != nil {
		rep.na(podsSection, "holder RSS", err.Error())
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// measurePodKills is measureKills for pods: wait for every pod of the
// deployment to be complete and quiet, `rm -f` one of its app containers
// (holder false) or one holder (holder true) through the API, and time from
// just before that call to the daemon's `start` event of
//   - a member: the new container of the same pod (pod uid) under the same
//     template container name — its siblings must not have been re-created;
//   - a holder: the last of the podContainers containers of the pod that
//     replaces it (a new pod uid).
//
// Victims rotate through the candidates, as in measureKills.
func measurePodKills(ctx context.Context, e *env, n int, deployment string, holder bool) ([]time.Duration, error) {
	want := repairReplicas * podContainers
	sel := dockerx.LabelDeployment + "=" + deployment
	what := "member"
	if holder {
		what = "holder"
	}
	var out []time.Duration
	for i := 0; i < n; i++ {
		if _, err := e.waitRunning(ctx, want, 60*time.Second, sel); err != nil {
			return nil, err
		}
		time.Sleep(settle)
		if _, err := e.waitRunning(ctx, want, 60*time.Second, sel); err != nil {
			return nil, err
		}
		cs, err := e.list(ctx, sel)
		if err != nil {
			return nil, err
		}
		old := map[string]bool{}
		oldPods := map[string]bool{}
		var candidates []container.Summary
		for _, c := range cs {
			old[c.ID] = true
			oldPods[c.Labels[dockerx.LabelPodUID]] = true
			if c.State == "running" && (c.Labels[dockerx.LabelRole] == dockerx.RoleHolder) == holder {
				candidates = append(candidates, c)
			}
		}
		if len(candidates) == 0 {
			return nil, fmt.Errorf("kill %d: no running %s of deployment %s", i+1, what, deployment)
		}
		sort.Slice(candidates, func(a, b int) bool { return candidates[a].ID < candidates[b].ID })
		victim := candidates[i%len(candidates)]
		uid, cname := victim.Labels[dockerx.LabelPodUID], victim.Labels[dockerx.LabelContainer]
		var done func(events.Message) bool
		if holder {
			// The replacement pod: podContainers new containers under one
			// pod uid none of the old containers had.
			started := map[string]map[string]bool{}
			done = func(m events.Message) bool {
				a := m.Actor.Attributes
				if m.Action != events.ActionStart || a[dockerx.LabelDeployment] != deployment || old[m.Actor.ID] || oldPods[a[dockerx.LabelPodUID]] {
					return false
				}
				p := a[dockerx.LabelPodUID]
				if started[p] == nil {
					started[p] = map[string]bool{}
				}
				started[p][m.Actor.ID] = true
				return len(started[p]) >= podContainers
			}
		} else {
			done = func(m events.Message) bool {
				a := m.Actor.Attributes
				return m.Action == events.ActionStart && a[dockerx.LabelDeployment] == deployment && !old[m.Actor.ID] &&
					a[dockerx.LabelPodUID] == uid && a[dockerx.LabelContainer] == cname
			}
		}
		w := e.hub.watch()
		t0 := time.Now()
		if err := e.remove(ctx, victim.ID); err != nil {
			w.close()
			return nil, err
		}
		t1, err := w.until(ctx, 60*time.Second, done)
		w.close()
		if err != nil {
			return nil, fmt.Errorf("%s kill %d: waiting for the replacement: %w", what, i+1, err)
		}
		out = append(out, t1.Sub(t0))
		logf("  %s %s kill %d/%d: %s", deployment, what, i+1, n, t1.Sub(t0).Round(time.Millisecond))
		if !holder {
			// Repair in place: the pod's other containers are the ones
			// it had (a re-created pod would have a new uid and would not
			// have matched; this catches a sibling re-created in it).
			if err := checkSiblings(ctx, e, sel, uid, victim.ID, old); err != nil {
				return nil, fmt.Errorf("member kill %d: %w", i+1, err)
			}
		}
	}
	return out, nil
}

// checkSiblings fails if a container of pod uid other than the victim's
// replacement is not one of the containers seen before the kill.
func checkSiblings(ctx context.Context, e *env, sel, uid, victim string, old map[string]bool) error {
	cs, err := e.list(ctx, sel, dockerx.LabelPodUID+"="+uid)
	if err != nil {
		return err
	}
	fresh := 0
	for _, c := range cs {
		if c.ID != victim && !old[c.ID] {
			fresh++
		}
	}
	if fresh > 1 {
		return fmt.Errorf("pod %s: %d containers were re-created, only the removed one should be", uid, fresh)
	}
	return nil
}

// measureHolderMemory reads VmRSS and VmHWM of each holder of the
// deployment from /proc/<pid>/status (the harness runs on the Docker host,
// so the containers' processes are in its /proc) and records the largest.
func measureHolderMemory(ctx context.Context, e *env, deployment string, rep *report) error {
	cs, err := e.list(ctx, dockerx.LabelDeployment+"="+deployment, dockerx.LabelRole+"="+dockerx.RoleHolder)
	if err != nil {
		return err
	}
	var maxRSS, maxHWM int64
	seen := 0
	for _, c := range cs {
		insp, err := e.cli.ContainerInspect(ctx, c.ID)
		if err != nil {
			return err
		}
		if insp.State == nil || insp.State.Pid == 0 {
			continue
		}
		hwm, rss, err := memory(insp.State.Pid)
		if err != nil {
			return fmt.Errorf("holder %s: %w", insp.Name, err)
		}
		seen++
		maxRSS, maxHWM = max(maxRSS, rss), max(maxHWM, hwm)
	}
	if seen == 0 {
		return fmt.Errorf("no running holder of deployment %s", deployment)
	}
	rep.value(podsSection, fmt.Sprintf("holder RSS (VmRSS, largest of %d holders)", seen), float64(maxRSS)/1024, "KiB")
	rep.value(podsSection, fmt.Sprintf("holder peak RSS (VmHWM, largest of %d holders)", seen), float64(maxHWM)/1024, "KiB")
	return nil
}

// measureDirectPods is the engine's own cost of the same pods: for each of
// n pods a holder (the holder image dockctl runs, loaded beforehand as
// dockctl loads it) and two members of the workload image joined to its
// network and IPC namespaces (container:<holder>), created and started in
// that order, with conc pods — so conc API calls — in flight; from the
// first call to the (3n)-th start event. Then n·3 force-removes with conc
// in flight, to the last destroy event.
func measureDirectPods(ctx context.Context, e *env, n, conc int) (up, down time.Duration, err error) {
	set := fmt.Sprintf("directpods%d-c%d", n, conc)
	// The holder image is dockctl's (same content, same entrypoint); its
	// label names an instance of this run, so cleanup removes it.
	instance := "bench-" + e.runID + "-" + set
	e.useInstance(instance)
	dx, err := dockerx.NewClient(dockerx.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		return 0, 0, err
	}
	defer dx.Close()
	holderImage, err := dx.EnsureHolderImage(ctx, instance)
	if err != nil {
		return 0, 0, err
	}
	pods := make([]int, n)
	for i := range pods {
		pods[i] = i
	}
	w := e.hub.watch()
	t0 := time.Now()
	errs := parallel(pods, conc, func(i int) error {
		return e.createStartPod(ctx, fmt.Sprintf("dockbench-%s-%s-%d", e.runID, set, i), holderImage, e.labels(set))
	})
	if len(errs) > 0 {
		w.close()
		return 0, 0, summarize(errs)
	}
	total := n * podContainers
	t1, err := w.until(ctx, 30*time.Second, countEvents(string(events.ActionStart), setLabel, set, total, nil))
	w.close()
	if err != nil {
		return 0, 0, err
	}
	up = t1.Sub(t0)
	if _, err := e.waitRunning(ctx, total, 30*time.Second, setLabel+"="+set); err != nil {
		return 0, 0, err
	}
	logf("  direct pods 0 → %d c=%d: %s", n, conc, up.Round(time.Millisecond))

	down, err = e.removeSetDirect(ctx, set, total, conc)
	if err != nil {
		return 0, 0, err
	}
	logf("  direct pods %d → 0 c=%d: %s", n, conc, down.Round(time.Millisecond))
	return up, down, nil
}

// createStartPod creates and starts a holder and two members joined to it,
// as dockctl's pods are built (docs/design.md §9) minus what the engine's
// cost does not depend on: the holder owns the network namespace (bridge,
// its hostname) and a shareable IPC namespace; the members run the workload
// (on two ports, as the pod manifest's two containers) in both.
func (e *env) createStartPod(ctx context.Context, base, holderImage string, labels map[string]string) error {
	disabled := container.RestartPolicy{Name: container.RestartPolicyDisabled}
	stop := 1
	resp, err := e.cli.ContainerCreate(ctx,
		&container.Config{Image: holderImage, Hostname: base, Labels: labels, StopTimeout: &stop},
		&container.HostConfig{IpcMode: container.IPCModeShareable, RestartPolicy: disabled},
		nil, nil, base)
	if err != nil {
		return err
	}
	if err := e.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		return err
	}
	join := "container:" + base
	for _, m := range []struct{ name, listen string }{{"app", ":8080"}, {"side", ":8081"}} {
		resp, err := e.cli.ContainerCreate(ctx,
			&container.Config{Image: e.image, Cmd: []string{"--listen=" + m.listen}, Labels: labels},
			&container.HostConfig{NetworkMode: container.NetworkMode(join), IpcMode: container.IpcMode(join), RestartPolicy: disabled},
			nil, nil, base+"."+m.name)
		if err != nil {
			return err
		}
		if err := e.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// podManifest renders a Deployment whose pods have two app containers (so
// each pod has a holder): the workload twice, on two ports of the pod's
// shared network namespace. Template labels carry the run label, which
// dockctl puts on the holder and on every member.
func (e *env) podManifest(name string, replicas int) string {
	return e.manifest(name, replicas, "v1") + fmt.Sprintf(`      - name: side
        image: %s
        args: ["--listen=:8081"]
`, e.image)
}
