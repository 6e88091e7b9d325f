package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/cronschedule"
)

// The workloads section measures the kinds beyond Deployment (docs/design.md
// §17.1, §17.2) side by side with the Docker API driven directly: a StatefulSet
// with OrderedReady next to a Deployment of the same template and to the
// same containers started one after the other (what OrderedReady implies)
// and all at once; a Job of short-lived pods next to the same containers
// run with the same parallelism; how late a CronJob's pod starts after its
// minute; and what 20 idle CronJobs cost a controller next to none.
const workloadsSection = "workloads"

// Names of the section's objects; the template labels carry the run label,
// so that every pod is cleaned up with the run's containers.
const (
	wlStatefulSet = "wlsts"
	wlDeployment  = "wldeploy"
	wlJob         = "wljob"
	wlCronPrefix  = "wlcron"
	wlIdlePrefix  = "wlidle"
	// wlJobExitAfter is how long each Job pod's workload lives: short, so
	// that the figure is the controllers' and the engine's turnover.
	wlJobExitAfter = "1s"
	// wlCronMargin is the least time between applying the CronJobs and the
	// minute they must fire at: the controller must have read them.
	wlCronMargin = 8 * time.Second
	// wlStatusPoll is how often the harness asks `dockctl get … -o json`
	// for a status: its granularity is part of a status figure.
	wlStatusPoll = 100 * time.Millisecond
)

func benchWorkloads(ctx context.Context, e *env, s settings, rep *report) error {
	rep.note("workloads: StatefulSet and Deployment of 3 with a readinessProbe on /readyz (periodSeconds 1); Job of %d completions, parallelism %d, pods `--exit-after=%s`; %d CronJobs `* * * * *` firing %d minute(s); idle: %d CronJobs `0 0 1 1 *` next to none, %s window, --resync-period %s",
		s.JobCompletions, s.JobParallelism, wlJobExitAfter, s.CronJobs, s.CronFirings, s.IdleCronJobs, s.CronIdle, s.SteadyResync)
	var errs []error
	// Each step has its own controller; the next starts from a clean
	// engine (no controller, none of the step's containers).
	step := func(name string, fn func() error) {
		if ctx.Err() != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, ctx.Err()))
			return
		}
		logf("  workloads: %s", name)
		if err := fn(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		e.stopControllers()
		if err := e.removeAll(context.Background()); err != nil {
			errs = append(errs, fmt.Errorf("cleanup after %s: %w", name, err))
		}
	}
	if s.WorkloadsJobOnly {
		step("Job", func() error { return measureJob(ctx, e, s, rep) })
		return errors.Join(errs...)
	}
	step("StatefulSet OrderedReady", func() error { return measureOrderedReady(ctx, e, rep) })
	step("Job", func() error { return measureJob(ctx, e, s, rep) })
	step("CronJob lateness", func() error { return measureCronLateness(ctx, e, s, rep) })
	step("idle CronJobs", func() error { return measureCronIdle(ctx, e, s, rep) })
	return errors.Join(errs...)
}

// ---- StatefulSet, OrderedReady ----------------------------------------

const (
	figStsDockctl   = "dockctl StatefulSet of 3, OrderedReady: apply → 3 ready (status)"
	figDeplDockctl  = "dockctl Deployment of 3, same template: apply → 3 ready (status)"
	figDirectSeq    = "direct API, 3 one after the other, each to /readyz 200"
	figDirectPar    = "direct API, 3 at once, to the third /readyz 200"
	figDirectCStart = "direct API create+start (to its start event)"
)

// measureOrderedReady measures the StatefulSet and the Deployment, each
// under its own controller, then the same containers through the API, on
// the network each kind's pods were on.
func measureOrderedReady(ctx context.Context, e *env, rep *report) error {
	const n = 3
	c, err := e.startController(ctx, "wl-sts", 30*time.Second, "")
	if err != nil {
		return err
	}
	defer c.stop()
	probe := `        ports: [{name: http, containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /readyz, port: 8080}
          periodSeconds: 1
`
	t0 := time.Now()
	if err := c.apply(ctx, e.statefulSetYAML(wlStatefulSet, n, probe)); err != nil {
		return err
	}
	t1, err := pollStatus(ctx, c, "statefulset", wlStatefulSet, 2*time.Minute, readyReplicas(n))
	if err != nil {
		return err
	}
	rep.duration(workloadsSection, figStsDockctl, t1.Sub(t0))

	pods, err := e.list(ctx, dockerx.LabelOwnerKind+"=StatefulSet", dockerx.LabelInstance+"="+c.instance)
	if err != nil {
		return err
	}
	if len(running(pods)) != n {
		return fmt.Errorf("%d of the StatefulSet's pods run, want %d", len(running(pods)), n)
	}
	netw, err := e.anchorNetwork(ctx, running(pods)[0], rep, "StatefulSet")
	if err != nil {
		return err
	}
	// Each measurement starts from the same engine: no controller, none
	// of the previous one's containers.
	c.stop()
	if err := e.removeAll(ctx); err != nil {
		return err
	}

	cd, err := e.startController(ctx, "wl-deploy", 30*time.Second, "")
	if err != nil {
		return err
	}
	defer cd.stop()
	t0 = time.Now()
	if err := cd.apply(ctx, e.deploymentYAML(wlDeployment, n, "", probe)); err != nil {
		return err
	}
	t1, err = pollStatus(ctx, cd, "deployment", wlDeployment, 2*time.Minute, readyReplicas(n))
	if err != nil {
		return err
	}
	rep.duration(workloadsSection, figDeplDockctl, t1.Sub(t0))
	pods, err = e.list(ctx, dockerx.LabelDeployment+"="+wlDeployment, dockerx.LabelInstance+"="+cd.instance)
	if err != nil {
		return err
	}
	if len(running(pods)) != n {
		return fmt.Errorf("%d of the Deployment's pods run, want %d", len(running(pods)), n)
	}
	netDeploy, err := e.anchorNetwork(ctx, running(pods)[0], rep, "Deployment")
	if err != nil {
		return err
	}
	cd.stop()
	if err := e.removeAll(ctx); err != nil {
		return err
	}

	w := e.hub.watch()
	defer w.close()
	var samples []time.Duration
	t0 = time.Now()
	for i := range n {
		name := fmt.Sprintf("bench-%s-wlseq-%d", e.runID, i)
		s0 := time.Now()
		id, err := e.createStartArgs(ctx, name, e.labels("wl-seq"), netw, []string{"--listen=:8080"})
		if err != nil {
			return err
		}
		started, err := w.until(ctx, time.Minute, func(m events.Message) bool {
			return m.Action == events.ActionStart && m.Actor.ID == id
		})
		if err != nil {
			return err
		}
		samples = append(samples, started.Sub(s0))
		if err := e.waitReadyz(ctx, id, netw); err != nil {
			return err
		}
	}
	rep.duration(workloadsSection, figDirectSeq, time.Since(t0))
	rep.latencies(workloadsSection, figDirectCStart, samples)
	if err := e.removeAll(ctx); err != nil {
		return err
	}

	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("bench-%s-wlpar-%d", e.runID, i)
	}
	t0 = time.Now()
	if err := summarize(parallel(names, n, func(name string) error {
		id, err := e.createStartArgs(ctx, name, e.labels("wl-par"), netDeploy, []string{"--listen=:8080"})
		if err != nil {
			return err
		}
		return e.waitReadyz(ctx, id, netDeploy)
	})); err != nil {
		return err
	}
	rep.duration(workloadsSection, figDirectPar, time.Since(t0))

	rep.ratio("workloads: StatefulSet OrderedReady / direct API one after the other (the anchor OrderedReady implies)",
		workloadsSection+"/"+figStsDockctl, workloadsSection+"/"+figDirectSeq, nil)
	rep.ratio("workloads: Deployment of 3 / direct API 3 at once",
		workloadsSection+"/"+figDeplDockctl, workloadsSection+"/"+figDirectPar, nil)
	rep.ratio("workloads: StatefulSet OrderedReady / Deployment, same template",
		workloadsSection+"/"+figStsDockctl, workloadsSection+"/"+figDeplDockctl, nil)
	return nil
}

// anchorNetwork returns the network the direct containers go on: the
// harness's own user-defined bridge when dockctl's pod (id) is on a user
// network (its instance network), Docker's default bridge ("") when the
// pod is. The report's notes say which.
func (e *env) anchorNetwork(ctx context.Context, id string, rep *report, kind string) (string, error) {
	info, err := e.cli.ContainerInspect(ctx, id)
	if err != nil {
		return "", err
	}
	mode := string(info.HostConfig.NetworkMode)
	switch {
	case mode == "" || mode == "default" || mode == "bridge":
		rep.note("workloads: dockctl's %s pods are on the default bridge; the direct API's containers too", kind)
		return "", nil
	case strings.HasPrefix(mode, "container:") || mode == "host" || mode == "none":
		return "", fmt.Errorf("dockctl's pod %s has network mode %q: no direct anchor for it", shortID(id), mode)
	}
	rep.note("workloads: dockctl's %s pods are on %s (a user-defined network); the direct API's containers on the harness's user-defined bridge", kind, mode)
	return e.benchNetwork(ctx)
}

// createStartArgs is createStartOn with the workload's arguments given.
func (e *env) createStartArgs(ctx context.Context, name string, labels map[string]string, netw string, args []string) (string, error) {
	resp, err := e.cli.ContainerCreate(ctx,
		&container.Config{Image: e.image, Cmd: args, Labels: labels, Hostname: name},
		&container.HostConfig{RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
			NetworkMode: container.NetworkMode(netw)},
		nil, nil, name)
	if err != nil {
		return "", err
	}
	if err := e.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		return resp.ID, err
	}
	return resp.ID, nil
}

// waitReadyz polls the container's /readyz from the host every 20 ms until
// it answers 200: the readiness the dockctl pods' probe asks for, found
// without a probe period.
func (e *env) waitReadyz(ctx context.Context, id, netw string) error {
	if netw == "" {
		netw = "bridge"
	}
	ip, err := e.ipOn(ctx, id, netw)
	if err != nil {
		return err
	}
	url := "http://" + net.JoinHostPort(ip, "8080") + "/readyz"
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(time.Minute)
	last := ""
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after 1m: %s", url, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// statefulSetYAML renders a StatefulSet of the workload with OrderedReady
// (Kubernetes' default, spelled out), its template as deploymentYAML's.
func (e *env) statefulSetYAML(name string, replicas int, container string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: %[1]s
spec:
  serviceName: %[1]s
  replicas: %[2]d
  podManagementPolicy: OrderedReady
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s, %[3]s: %[4]s}
    spec:
      containers:
      - name: app
        image: %[5]s
        args: ["--listen=:8080"]
%[6]s`, name, replicas, benchLabel, e.runID, e.image, container)
}

// ---- status -----------------------------------------------------------

// objStatus is the part of a Deployment's, StatefulSet's or Job's status
// the section waits on.
type objStatus struct {
	ReadyReplicas int32 `json:"readyReplicas"`
	Succeeded     int32 `json:"succeeded"`
	Failed        int32 `json:"failed"`
	Conditions    []struct {
		Type   string `json:"type"`
		Status string `json:"status"`
	} `json:"conditions"`
}

// parseStatus reads .status from `dockctl get KIND NAME -o json`.
func parseStatus(out []byte) (objStatus, error) {
	var obj struct {
		Status *objStatus `json:"status"`
	}
	if err := json.Unmarshal(out, &obj); err != nil {
		return objStatus{}, fmt.Errorf("get -o json: %w", err)
	}
	if obj.Status == nil {
		return objStatus{}, nil
	}
	return *obj.Status, nil
}

// condition reports whether the status has condition typ with status True.
func (st objStatus) condition(typ string) bool {
	for _, c := range st.Conditions {
		if c.Type == typ && c.Status == "True" {
			return true
		}
	}
	return false
}

func readyReplicas(n int32) func(objStatus) (bool, error) {
	return func(st objStatus) (bool, error) { return st.ReadyReplicas >= n, nil }
}

// jobComplete is done at condition Complete, and fails at Failed.
func jobComplete(st objStatus) (bool, error) {
	if st.condition("Failed") {
		return false, fmt.Errorf("the Job failed (%d succeeded, %d failed)", st.Succeeded, st.Failed)
	}
	return st.condition("Complete"), nil
}

// pollStatus asks the controller's CLI for the object's status every
// wlStatusPoll until done says so, and returns when it did.
func pollStatus(ctx context.Context, c *controller, kind, name string, timeout time.Duration, done func(objStatus) (bool, error)) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	last := objStatus{}
	for {
		out, err := c.dockctlOutput(ctx, "", "get", kind, name, "-o", "json")
		if err == nil {
			st, perr := parseStatus([]byte(out))
			if perr != nil {
				return time.Time{}, perr
			}
			last = st
			ok, derr := done(st)
			if derr != nil {
				return time.Time{}, fmt.Errorf("%s %s: %w", kind, name, derr)
			}
			if ok {
				return time.Now(), nil
			}
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%s %s: not done after %s (last status %+v, last error %v)\ncontroller log:\n%s",
				kind, name, timeout, last, err, c.logTail())
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(wlStatusPoll):
		}
	}
}

// ---- Job --------------------------------------------------------------

// jobRun is what one dockctl binary's run of the Job measured.
type jobRun struct {
	exit, done time.Duration
	pods       int
	// calls are the controller's Docker API calls over the run, by
	// operation (dockctl_docker_api_calls_total; nil: not exported).
	calls map[string]float64
	netw  string
	trace *jobTrace
	t0    time.Time
}

// measureJob runs a Job of s.JobCompletions short-lived pods,
// s.JobParallelism at a time, to its last pod's exit and to its Complete
// status, then the same containers through the API with the same
// parallelism. With a baseline binary (-baseline) the baseline's dockctl
// runs the same Job too, first, so that before, after and the direct
// anchor come from one run.
func measureJob(ctx context.Context, e *env, s settings, rep *report) error {
	n, p := s.JobCompletions, s.JobParallelism
	figExit := fmt.Sprintf("dockctl Job %d completions, parallelism %d: apply → last pod exits", n, p)
	figDone := fmt.Sprintf("dockctl Job %d completions, parallelism %d: apply → Complete (status)", n, p)
	figDirect := fmt.Sprintf("direct API %d containers, %d at a time: first create → last exits", n, p)
	figCalls := "dockctl Job: Docker API calls per completion"

	record := func(section string, r jobRun) {
		rep.duration(section, figExit, r.exit)
		rep.duration(section, figDone, r.done)
		rep.count(section, "dockctl Job: pods created", float64(r.pods), "", fmt.Sprintf("of %d completions", n))
		r.trace.figures(rep, section, "dockctl Job", r.t0, p)
		if r.calls == nil {
			rep.na(section, figCalls, "the controller exports no dockctl_docker_api_calls_total")
			return
		}
		total := 0.0
		var ops []string
		for op, v := range r.calls {
			total += v
			if v > 0 {
				ops = append(ops, fmt.Sprintf("%s %.1f", op, v/float64(n)))
			}
		}
		sort.Strings(ops)
		rep.count(section, figCalls, total/float64(n), "", strings.Join(ops, ", ")+" (direct API: create 1, start 1, wait 1)")
	}
	if e.baselineBin != "" {
		after := e.dockctlBin
		e.dockctlBin = e.baselineBin
		r, err := runJobDockctl(ctx, e, rep, n, p, "wl-job-before")
		e.dockctlBin = after
		if err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		record(baselineSection(workloadsSection, "before"), r)
	}
	r, err := runJobDockctl(ctx, e, rep, n, p, "wl-job")
	if err != nil {
		return err
	}
	record(workloadsSection, r)

	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("bench-%s-wljob-%d", e.runID, i)
	}
	wd := e.hub.watch()
	defer wd.close()
	t0 := time.Now()
	if err := summarize(parallel(names, p, func(name string) error {
		id, err := e.createStartArgs(ctx, name, e.labels("wl-job"), r.netw, []string{"--listen=:8080", "--exit-after=" + wlJobExitAfter})
		if err != nil {
			return err
		}
		okC, errC := e.cli.ContainerWait(ctx, id, container.WaitConditionNotRunning)
		select {
		case r := <-okC:
			if r.StatusCode != 0 {
				return fmt.Errorf("%s exited %d", name, r.StatusCode)
			}
			return nil
		case err := <-errC:
			return err
		}
	})); err != nil {
		return err
	}
	dtrace := &jobTrace{key: setLabel, value: "wl-job"}
	last, err := wd.until(ctx, time.Minute, dtrace.watch(countEvents(string(events.ActionDie), setLabel, "wl-job", n, exitedZero)))
	if err != nil {
		return err
	}
	rep.duration(workloadsSection, figDirect, last.Sub(t0))
	dtrace.figures(rep, workloadsSection, "direct API", t0, p)
	rep.ratio(fmt.Sprintf("workloads: Job %d/%d, last pod exit / direct API %d at a time", n, p, p),
		workloadsSection+"/"+figExit, workloadsSection+"/"+figDirect, atMost(1.2, ""))
	rep.ratio(fmt.Sprintf("workloads: Job %d/%d, Complete / direct API %d at a time", n, p, p),
		workloadsSection+"/"+figDone, workloadsSection+"/"+figDirect, atMost(1.2, ""))
	if e.baselineBin != "" {
		before := baselineSection(workloadsSection, "before")
		rep.ratio(fmt.Sprintf("workloads: before: Job %d/%d, last pod exit / direct API %d at a time", n, p, p),
			before+"/"+figExit, workloadsSection+"/"+figDirect, nil)
		rep.ratio(fmt.Sprintf("workloads: before: Job %d/%d, Complete / direct API %d at a time", n, p, p),
			before+"/"+figDone, workloadsSection+"/"+figDirect, nil)
		rep.ratio(fmt.Sprintf("after/before: Job %d/%d, last pod exit", n, p),
			workloadsSection+"/"+figExit, before+"/"+figExit, nil)
	}
	return nil
}

// jobTrace records, for one run of the Job's containers (label key =
// value), the daemon's times of their creates, starts and exits 0: where
// a run's time goes (jobTrace.figures).
type jobTrace struct {
	key, value            string
	creates, starts, dies []time.Time
}

// watch wraps done (a predicate of watcher.until) so that each message
// it sees is recorded first.
func (t *jobTrace) watch(done func(events.Message) bool) func(events.Message) bool {
	return func(m events.Message) bool {
		if m.Actor.Attributes[t.key] == t.value {
			at := time.Unix(0, m.TimeNano)
			switch {
			case m.Action == events.ActionCreate:
				t.creates = append(t.creates, at)
			case m.Action == events.ActionStart:
				t.starts = append(t.starts, at)
			case m.Action == events.ActionDie && exitedZero(m):
				t.dies = append(t.dies, at)
			}
		}
		return done(m)
	}
}

// figures records the time from t0 to the p-th start (the first wave
// running) and each slot's refill: the i-th exit to the (p+i)-th create,
// its replacement's (the harness's p slots and a Job of parallelism p
// each create one container per exit).
func (t *jobTrace) figures(rep *report, section, who string, t0 time.Time, p int) {
	sort.Slice(t.creates, func(i, j int) bool { return t.creates[i].Before(t.creates[j]) })
	sort.Slice(t.starts, func(i, j int) bool { return t.starts[i].Before(t.starts[j]) })
	sort.Slice(t.dies, func(i, j int) bool { return t.dies[i].Before(t.dies[j]) })
	if len(t.starts) >= p {
		rep.duration(section, fmt.Sprintf("%s: to the %d-th start (first wave running)", who, p), t.starts[p-1].Sub(t0))
	}
	var refill []time.Duration
	for i := 0; i < len(t.dies) && p+i < len(t.creates); i++ {
		refill = append(refill, t.creates[p+i].Sub(t.dies[i]))
	}
	rep.latencies(section, who+": exit → its replacement's create", refill)
}

// runJobDockctl runs the Job under a controller of its own (name) from the
// current dockctl binary, and leaves the engine clean.
func runJobDockctl(ctx context.Context, e *env, rep *report, n, p int, name string) (jobRun, error) {
	var r jobRun
	timeout := time.Duration(n)*3*time.Second + time.Minute
	c, err := e.startController(ctx, name, 30*time.Second, "")
	if err != nil {
		return r, err
	}
	defer c.stop()
	w := e.hub.watch()
	defer w.close()
	t0 := time.Now()
	if err := c.apply(ctx, e.jobYAML(wlJob, n, p)); err != nil {
		return r, err
	}
	trace := &jobTrace{key: dockerx.LabelOwner, value: wlJob}
	lastExit, err := w.until(ctx, timeout, trace.watch(countEvents(string(events.ActionDie), dockerx.LabelOwner, wlJob, n, exitedZero)))
	if err != nil {
		return r, fmt.Errorf("%d pods of the Job exiting 0: %w\ncontroller log:\n%s", n, err, c.logTail())
	}
	done, err := pollStatus(ctx, c, "job", wlJob, time.Minute, jobComplete)
	if err != nil {
		return r, err
	}
	r.exit, r.done = lastExit.Sub(t0), done.Sub(t0)
	r.trace, r.t0 = trace, t0
	if calls, present, err := c.apiCalls(ctx); err == nil && present {
		r.calls = calls
	}
	pods, err := e.list(ctx, dockerx.LabelOwnerKind+"=Job", dockerx.LabelOwner+"="+wlJob, dockerx.LabelInstance+"="+c.instance)
	if err != nil {
		return r, err
	}
	r.pods = len(pods)
	if len(pods) > 0 {
		if r.netw, err = e.anchorNetwork(ctx, pods[0].ID, rep, "Job"); err != nil {
			return r, err
		}
	}
	c.stop()
	if err := e.removeAll(ctx); err != nil {
		// The figures stand (the next controller has an instance of its
		// own); what is left is said, and the section's cleanup tries
		// again.
		rep.note("workloads: cleanup after the Job under %s: %v", name, err)
	}
	return r, nil
}

func exitedZero(m events.Message) bool { return m.Actor.Attributes["exitCode"] == "0" }

// jobYAML renders a Job of short-lived workload pods.
func (e *env) jobYAML(name string, completions, parallelism int) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %[1]s
spec:
  completions: %[2]d
  parallelism: %[3]d
  template:
    metadata:
      labels: {app: %[1]s, %[4]s: %[5]s}
    spec:
      restartPolicy: Never
      containers:
      - name: app
        image: %[6]s
        args: ["--listen=:8080", "--exit-after=%[7]s"]
`, name, completions, parallelism, benchLabel, e.runID, e.image, wlJobExitAfter)
}

// cronJobYAML renders a CronJob whose Jobs run one short-lived pod.
func (e *env) cronJobYAML(name, schedule string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: CronJob
metadata:
  name: %[1]s
spec:
  schedule: %[2]q
  jobTemplate:
    spec:
      template:
        metadata:
          labels: {app: %[1]s, %[3]s: %[4]s}
        spec:
          restartPolicy: Never
          containers:
          - name: app
            image: %[5]s
            args: ["--listen=:8080", "--exit-after=%[6]s"]
`, name, schedule, benchLabel, e.runID, e.image, wlJobExitAfter)
}

// ---- CronJob lateness -------------------------------------------------

// cronFirings returns when to apply CronJobs that must fire at n minute
// boundaries, and those boundaries: the next minute after now if at least
// margin away, else the one after (applying then at that minute).
func cronFirings(now time.Time, margin time.Duration, n int) (applyAt time.Time, boundaries []time.Time) {
	next := now.Truncate(time.Minute).Add(time.Minute)
	applyAt = now
	if next.Sub(now) < margin {
		applyAt = next
		next = next.Add(time.Minute)
	}
	for i := range n {
		boundaries = append(boundaries, next.Add(time.Duration(i)*time.Minute))
	}
	return applyAt, boundaries
}

// cronLateness returns, for each CronJob and boundary, how late after the
// boundary the pod of that run's Job started (the Job is named from its
// schedule time, cronschedule.JobName), and the Jobs that have no start.
func cronLateness(cronJobs []string, boundaries []time.Time, firstStart map[string]time.Time) (late []time.Duration, missing []string) {
	for _, b := range boundaries {
		for _, cj := range cronJobs {
			job := cronschedule.JobName(cj, b)
			t, ok := firstStart[job]
			if !ok {
				missing = append(missing, job)
				continue
			}
			late = append(late, t.Sub(b))
		}
	}
	return late, missing
}

// measureCronLateness applies s.CronJobs CronJobs `* * * * *` and records
// how late each Job's pod starts (its start event, the daemon's clock)
// after the minute it was scheduled for, over s.CronFirings minutes; then,
// as many times, the same number of containers created at once through
// the API, each one's start after the moment the harness began: the
// engine's own floor for that many pods due at the same instant.
func measureCronLateness(ctx context.Context, e *env, s settings, rep *report) error {
	c, err := e.startController(ctx, "wl-cron", 30*time.Second, "")
	if err != nil {
		return err
	}
	defer c.stop()
	applyAt, boundaries := cronFirings(time.Now(), wlCronMargin, s.CronFirings)
	if d := time.Until(applyAt); d > 0 {
		logf("  workloads: waiting %s so that the CronJobs are applied at least %s before their minute", d.Round(time.Second), wlCronMargin)
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var names, docs []string
	for i := range s.CronJobs {
		name := fmt.Sprintf("%s-%02d", wlCronPrefix, i)
		names = append(names, name)
		docs = append(docs, e.cronJobYAML(name, "* * * * *"))
	}
	w := e.hub.watch()
	defer w.close()
	if err := c.apply(ctx, strings.Join(docs, "---\n")); err != nil {
		return err
	}
	want := map[string]bool{}
	for _, b := range boundaries {
		for _, cj := range names {
			want[cronschedule.JobName(cj, b)] = true
		}
	}
	first := map[string]time.Time{}
	last := boundaries[len(boundaries)-1]
	_, err = w.until(ctx, time.Until(last)+90*time.Second, func(m events.Message) bool {
		if m.Action != events.ActionStart || m.Actor.Attributes[dockerx.LabelInstance] != c.instance ||
			m.Actor.Attributes[dockerx.LabelOwnerKind] != "Job" {
			return false
		}
		job := m.Actor.Attributes[dockerx.LabelOwner]
		if _, seen := first[job]; !seen && want[job] {
			first[job] = time.Unix(0, m.TimeNano)
		}
		return len(first) == len(want)
	})
	late, missing := cronLateness(names, boundaries, first)
	if err != nil {
		return fmt.Errorf("%d of %d Jobs' pods started (missing %s): %w\ncontroller log:\n%s",
			len(first), len(want), strings.Join(missing, ", "), err, c.logTail())
	}
	fig := fmt.Sprintf("dockctl CronJob pod start after its minute, %d CronJobs × %d minute(s)", s.CronJobs, s.CronFirings)
	rep.latencies(workloadsSection, fig, late)
	pods, err := e.list(ctx, dockerx.LabelOwnerKind+"=Job", dockerx.LabelInstance+"="+c.instance)
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		return fmt.Errorf("no pod of the CronJobs' Jobs left to read the network of")
	}
	netw, err := e.anchorNetwork(ctx, pods[0].ID, rep, "CronJob")
	if err != nil {
		return err
	}
	c.stop()
	if err := e.removeAll(ctx); err != nil {
		return err
	}

	var direct []time.Duration
	for round := range s.CronFirings {
		samples, err := directAtOnce(ctx, e, s.CronJobs, round, netw)
		if err != nil {
			return err
		}
		direct = append(direct, samples...)
		if err := e.removeAll(ctx); err != nil {
			return err
		}
	}
	figDirect := fmt.Sprintf("direct API %d containers at once, start after the first create, × %d", s.CronJobs, s.CronFirings)
	rep.latencies(workloadsSection, figDirect, direct)
	rep.ratio("workloads: CronJob lateness p50 / direct API, as many at once, p50",
		workloadsSection+"/"+fig+" p50", workloadsSection+"/"+figDirect+" p50", nil)
	rep.ratio("workloads: CronJob lateness max / direct API, as many at once, max",
		workloadsSection+"/"+fig+fmt.Sprintf(" max of %d", len(late)), workloadsSection+"/"+figDirect+fmt.Sprintf(" max of %d", len(direct)), nil)
	return nil
}

// directAtOnce creates and starts n short-lived workload containers at
// once through the API and returns each one's start (its event, the
// daemon's clock) after the moment the first create was sent.
func directAtOnce(ctx context.Context, e *env, n, round int, netw string) ([]time.Duration, error) {
	set := fmt.Sprintf("wl-cron-direct-%d", round)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("bench-%s-wlcron%d-%d", e.runID, round, i)
	}
	w := e.hub.watch()
	defer w.close()
	starts := map[string]time.Time{}
	t0 := time.Now()
	if err := summarize(parallel(names, n, func(name string) error {
		_, err := e.createStartArgs(ctx, name, e.labels(set), netw, []string{"--listen=:8080", "--exit-after=" + wlJobExitAfter})
		return err
	})); err != nil {
		return nil, err
	}
	if _, err := w.until(ctx, time.Minute, func(m events.Message) bool {
		if m.Action == events.ActionStart && m.Actor.Attributes[setLabel] == set {
			starts[m.Actor.ID] = time.Unix(0, m.TimeNano)
		}
		return len(starts) == n
	}); err != nil {
		return nil, err
	}
	out := make([]time.Duration, 0, n)
	for _, t := range starts {
		out = append(out, t.Sub(t0))
	}
	return out, nil
}

// ---- idle cost of CronJobs --------------------------------------------

// measureCronIdle runs two controllers at once, one with s.IdleCronJobs
// CronJobs that fire once a year and one with none, each behind its own
// counting proxy, and measures both over the same window: CPU seconds and
// Docker API calls per minute (steady.go's measures).
func measureCronIdle(ctx context.Context, e *env, s settings, rep *report) error {
	type side struct {
		label  string
		c      *controller
		proxy  *countingProxy
		cpu0   time.Duration
		calls0 map[string]int64
	}
	sides := []*side{{label: fmt.Sprintf("%d CronJobs `0 0 1 1 *`", s.IdleCronJobs)}, {label: "no CronJobs"}}
	for i, sd := range sides {
		p, err := startCountingProxyAt(e, fmt.Sprintf("docker-proxy-wl%d.sock", i))
		if err != nil {
			return fmt.Errorf("counting proxy: %w", err)
		}
		defer p.close()
		sd.proxy = p
		if sd.c, err = e.startController(ctx, fmt.Sprintf("wl-idle%d", i), s.SteadyResync, "unix://"+p.sock); err != nil {
			return err
		}
		defer sd.c.stop()
	}
	var docs []string
	for i := range s.IdleCronJobs {
		docs = append(docs, e.cronJobYAML(fmt.Sprintf("%s-%02d", wlIdlePrefix, i), "0 0 1 1 *"))
	}
	if err := sides[0].c.apply(ctx, strings.Join(docs, "---\n")); err != nil {
		return err
	}
	// The apply's first syncs are not part of the idle cost.
	select {
	case <-time.After(3 * time.Second):
	case <-ctx.Done():
		return ctx.Err()
	}
	for _, sd := range sides {
		var err error
		if sd.cpu0, err = cpuTime(sd.c.pid()); err != nil {
			return err
		}
		sd.calls0 = sd.proxy.snapshot()
	}
	start := time.Now()
	select {
	case <-time.After(s.CronIdle):
	case <-ctx.Done():
		return ctx.Err()
	}
	window := time.Since(start)
	perMin := time.Minute.Seconds() / window.Seconds()
	rep.value(workloadsSection, "idle window (both controllers at once)", window.Seconds(), "s")
	for _, sd := range sides {
		cpu1, err := cpuTime(sd.c.pid())
		if err != nil {
			return err
		}
		calls1 := sd.proxy.snapshot()
		cpu := (cpu1 - sd.cpu0).Seconds()
		rep.value(workloadsSection, "controller CPU per minute, "+sd.label, cpu*perMin, "s")
		rep.value(workloadsSection, "controller CPU, % of one core, "+sd.label, 100*cpu/window.Seconds(), "%")
		total, writes, byOp := callsInWindow(sd.calls0, calls1)
		rep.count(workloadsSection, "Docker API calls per minute (proxy count), "+sd.label, float64(total)*perMin, "", byOp)
		rep.value(workloadsSection, "Docker API write calls in window (proxy count), "+sd.label, float64(writes), "")
		// The controller lists per sync: how many lists a resync costs
		// tells a list per CronJob from one for the instance.
		rep.value(workloadsSection, "list calls per resync period (proxy count), "+sd.label,
			float64(calls1["list"]-sd.calls0["list"])/(window.Seconds()/s.SteadyResync.Seconds()), "")
	}
	with, none := sides[0].label, sides[1].label
	rep.ratio("workloads: idle CPU per minute, "+with+" / "+none,
		workloadsSection+"/controller CPU per minute, "+with, workloadsSection+"/controller CPU per minute, "+none, nil)
	rep.ratio("workloads: idle Docker API calls per minute, "+with+" / "+none,
		workloadsSection+"/Docker API calls per minute (proxy count), "+with,
		workloadsSection+"/Docker API calls per minute (proxy count), "+none, nil)
	return nil
}

// callsInWindow returns the calls between two proxy snapshots, the write
// calls among them, and the calls by operation ("list 4, inspect 2").
func callsInWindow(before, after map[string]int64) (total, writes int64, byOp string) {
	var ops []string
	for op, v := range after {
		if d := v - before[op]; d > 0 {
			ops = append(ops, op)
			total += d
			if isWrite(op) {
				writes += d
			}
		}
	}
	sort.Strings(ops)
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("%s %d", op, after[op]-before[op])
	}
	if len(parts) == 0 {
		return total, writes, "none in the window"
	}
	return total, writes, "in the window: " + strings.Join(parts, ", ")
}
