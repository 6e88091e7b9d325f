// Command dockbench measures dockctl against the Docker Engine's own limits
// and against Docker Swarm, side by side in one run, on the local Docker
// daemon. `make bench` runs it; BENCHMARKS.md explains every figure.
//
// It builds the dockctl binary and the test workload image itself, runs
// `dockctl controller` as a host process with its own instance and state
// directory, and labels everything it creates io.dockctl.bench=<run id> so
// that cleanup (deferred, and on SIGINT/SIGTERM) removes exactly what this run
// made and nothing else.
//
// Settings come from the environment so that `make bench` can pass them
// through: BENCH_QUICK=1 (a run under three minutes), BENCH_SWARM=1 (the Swarm
// figures even when quick), BENCH_RECOVERY=1 (the cold recovery figures even
// when quick), BENCH_JSON=PATH (also write the results as JSON),
// BENCH_GUARD=0 (print the regression guard's verdicts without failing the
// run on them: guard.go).
// The flag -baseline REV (BENCH_BASELINE=REV) also measures dockctl built
// from that revision beside the tree's (baseline.go).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// settings are the sizes of one run. Quick runs shrink every size so that
// the whole run, build included, stays under three minutes on a 2-core box.
type settings struct {
	Quick           bool          `json:"quick"`
	Swarm           bool          `json:"swarm"`
	Guard           bool          `json:"guard"` // fail the run on a ratio the guard fails (guard.go); BENCH_GUARD=0: print only
	Kills           int           `json:"repairKills"`
	SwarmKills      int           `json:"swarmRepairKills"`
	SwarmSlowKills  int           `json:"swarmDefaultDelayRepairKills"`
	LowerBoundDie   bool          `json:"lowerBoundOnDie"`
	Scale           []scaleCase   `json:"scale"`
	SteadyDeploys   int           `json:"steadyDeployments"`
	SteadyReplicas  int           `json:"steadyReplicasEach"`
	SteadyIdle      time.Duration `json:"steadyIdleNs"`
	SteadyResync    time.Duration `json:"steadyResyncPeriodNs"`
	RollingReplicas int           `json:"rollingReplicas"`
	PodKills        int           `json:"podRepairKills"`
	PodScale        int           `json:"podScale"`
	// The services section: the proxy-overhead load (clients, total time
	// per path, rounds over the paths), lookups per DNS name, and whether
	// the scale 4 → 1 → 4 failure measurement runs besides the rollout.
	LoadConcurrency int           `json:"loadConcurrency"`
	LoadDuration    time.Duration `json:"loadDurationNs"`
	LoadRounds      int           `json:"loadRounds"`
	DNSLookups      int           `json:"dnsLookups"`
	SvcScaleCycle   bool          `json:"serviceScaleCycle"`
	SwarmMeshOnly   bool          `json:"swarmMeshOnly,omitempty"` // BENCH_SECTIONS=swarm-mesh
	// The workloads section (workloads.go): a Job's completions and
	// parallelism, the CronJobs firing at the same minute and how many
	// minutes they fire, the CronJobs of the idle measurement and its
	// window.
	JobCompletions int           `json:"jobCompletions"`
	JobParallelism int           `json:"jobParallelism"`
	CronJobs       int           `json:"cronJobsPerMinute"`
	CronFirings    int           `json:"cronFirings"`
	IdleCronJobs   int           `json:"idleCronJobs"`
	CronIdle       time.Duration `json:"cronIdleWindowNs"`
	Deadline       time.Duration `json:"deadlineNs"`
	// WorkloadsJobOnly runs the workloads section's Job step alone
	// (BENCH_SECTIONS=workloads-job).
	WorkloadsJobOnly bool `json:"workloadsJobOnly,omitempty"`
	// The scale-big section (scalebig.go): its pods (BENCH_SCALE_PODS),
	// the runs of `dockctl get pods -A`, and the direct API's concurrencies
	// tried on a batch of BigProbeN to find its best (one: no probe).
	BigPods    int   `json:"scaleBigPods"`
	BigGetRuns int   `json:"scaleBigGetPodsRuns"`
	BigProbe   []int `json:"scaleBigDirectConcurrencies"`
	BigProbeN  int   `json:"scaleBigProbeContainers"`
	// Recovery runs the recovery section (recovery.go): full runs, or
	// BENCH_RECOVERY=1.
	Recovery bool `json:"recovery"`
}

// scaleCase is one 0 → N → 0 measurement and the concurrencies at which
// the direct API does the same work.
type scaleCase struct {
	N             int   `json:"n"`
	Concurrencies []int `json:"directConcurrencies"`
}

func loadSettings() settings {
	quick := os.Getenv("BENCH_QUICK") == "1"
	s := settings{
		Quick:      quick,
		Swarm:      !quick || os.Getenv("BENCH_SWARM") == "1",
		Recovery:   !quick || os.Getenv("BENCH_RECOVERY") == "1",
		Guard:      guardEnforced(os.Getenv),
		Kills:      20,
		SwarmKills: 10,
		// Swarm's default restart delay makes each kill cost ~6 s and the
		// figure barely varies: 5 kills keep the run under 10 minutes.
		SwarmSlowKills: 5,
		LowerBoundDie:  true,
		// 0 → 50 is compared with the direct API at concurrency 8, 0 → 100
		// with its best concurrency (BENCHMARKS.md, Scale).
		Scale:           []scaleCase{{50, []int{4, 8, 16}}, {100, nil}},
		SteadyDeploys:   100,
		SteadyReplicas:  3,
		SteadyIdle:      60 * time.Second,
		SteadyResync:    30 * time.Second, // the controller's default
		RollingReplicas: 20,
		// Each of the pods section's three repair figures (single
		// container, pod member, pod holder) over as many kills as the
		// repair section; 0 → 50 pods (BENCHMARKS.md, Pods).
		PodKills: 20,
		PodScale: 50,
		// Proxy overhead (BENCHMARKS.md, Services): a fixed concurrency of 8
		// keep-alive clients.
		LoadConcurrency: 8,
		LoadDuration:    10 * time.Second,
		LoadRounds:      2,
		DNSLookups:      5,
		SvcScaleCycle:   true,
		// 100 short-lived pods, 10 at a time; ten CronJobs firing at the
		// same minute, three minutes in a row (≈ 3 min of the run); an
		// idle controller with 20 CronJobs beside one with none.
		JobCompletions: 100,
		JobParallelism: 10,
		CronJobs:       10,
		CronFirings:    3,
		IdleCronJobs:   20,
		CronIdle:       60 * time.Second,
		// 400 pods, 80 Deployments, 40 Services (441 containers): about
		// 13 minutes on this 2-core machine under load. One bridge holds
		// up to 920 pods with their proxies (scalebig.go, newBigSize), but
		// 900 had not converged after 11 minutes here (BENCHMARKS.md,
		// Scale-big); BENCH_SCALE_PODS=900 asks for it.
		BigPods:    bigPodsSetting(os.Getenv, 400),
		BigGetRuns: 5,
		BigProbe:   []int{4, 8, 16},
		BigProbeN:  40,
		// 14 min measured on a 2-core machine whose engine does ~2
		// create+start/s, before the pods section (~4 min more there) and
		// the user-network bounds and services section (~5 min more),
		// plus ≈ 8 min for the workloads section (3 of them CronJob
		// firings, 1 the idle window, 200 short-lived containers), and
		// ≈ 1 min for the gateway section, and up to 10 min for the
		// recovery section (a Go benchmark: its build, then 2 × 100
		// containers in private daemons, each restarted once).
		Deadline: 46 * time.Minute,
	}
	if quick {
		// Sizes cut so that the services section and the user-network bounds
		// fit in the same three minutes.
		s.Kills = 5
		s.SwarmKills = 5
		s.SwarmSlowKills = 3
		s.LowerBoundDie = false
		s.Scale = []scaleCase{{20, []int{8}}}
		s.RollingReplicas = 8
		s.PodKills = 3
		s.PodScale = 10
		s.LoadDuration = time.Second
		s.LoadRounds = 1
		s.DNSLookups = 2
		// The rollout restart is the quick run's failure figure.
		s.SvcScaleCycle = false
		s.SteadyDeploys = 5
		s.SteadyIdle = 10 * time.Second
		// Shorter than the idle window so that the window holds at least
		// one resync: an idle figure without one would flatter dockctl.
		s.SteadyResync = 5 * time.Second
		s.JobCompletions = 20
		s.JobParallelism = 5
		s.CronFirings = 1
		s.CronIdle = 30 * time.Second
		// 20 pods, 4 Deployments, 2 Services: the path, not the figure.
		s.BigPods = bigPodsSetting(os.Getenv, 20)
		s.BigGetRuns = 3
		s.BigProbe = []int{referenceConcurrency}
		// About 95 s for the first four sections, 25 s for pods, 60 s
		// for services, on a 2-core machine at load 6–10; a run at load
		// 8–12 took 194 s, so the bound leaves room above that.
		// The workloads section adds up to a minute of waiting for the
		// CronJobs' minute, a 30 s idle window and ≈ 1 min of containers.
		// The gateway section adds ≈ 40 s (a controller, one replica
		// and its rollout, 2 s of load).
		s.Deadline = 300*time.Second + 4*time.Minute
		if s.Swarm {
			// Swarm's default 5 s restart delay alone costs half a minute.
			s.Deadline += 2 * time.Minute
		}
		if s.Recovery {
			s.Deadline += 10 * time.Minute
		}
	}
	// The scale-big section's share grows with its size (bigDeadline).
	if b, err := newBigSize(s.BigPods); err == nil {
		s.Deadline += bigDeadline(b)
	}
	// For development on a loaded machine; the defaults are the bound.
	if d, err := time.ParseDuration(os.Getenv("BENCH_DEADLINE")); err == nil && d > 0 {
		s.Deadline = d
	}
	return s
}

// options are the command line's.
type options struct {
	swarmMarker string
	// baseline is a revision of this repository whose dockctl is measured
	// beside the tree's (baseline.go); "" none.
	baseline string
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("dockbench", flag.ContinueOnError)
	fs.StringVar(&o.swarmMarker, "swarm-marker", "", "file written while this run owns a swarm (make bench's trap leaves the swarm if it is still there)")
	fs.StringVar(&o.baseline, "baseline", "", "also build dockctl from this git revision and measure repair, scale and idle cost for both, side by side (after/before ratios)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if o.baseline != "" {
		if err := checkRevision(o.baseline); err != nil {
			return options{}, err
		}
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "dockbench:", err)
		os.Exit(exitUsage)
	}
	// run has printed the report, written the JSON and removed what it
	// made before it returns, whatever its error.
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "dockbench:", err)
		os.Exit(exitCode(err))
	}
}

func run(o options) (err error) {
	s := loadSettings()
	ctx, cancel := context.WithTimeout(context.Background(), s.Deadline)
	defer cancel()

	// A signal cancels the run; the deferred cleanups then remove what it
	// made. A second signal, or a cleanup that hangs, still runs them once
	// (they are idempotent) before exiting.
	cleanups := &cleanupStack{}
	defer cleanups.run()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "dockbench: %s: cleaning up\n", sig)
		cancel()
		select {
		case <-sigs:
		case <-time.After(60 * time.Second):
		}
		cleanups.run()
		os.Exit(130)
	}()
	// A panic in the main goroutine still runs the deferred cleanups; other
	// goroutines recover and report instead of crashing the process.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()

	runID := "b" + randomHex(4)
	root, err := repoRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "dockbench-"+runID+"-")
	if err != nil {
		return err
	}
	cleanups.push("remove "+tmp, func() error { return os.RemoveAll(tmp) })

	e, err := newEnv(ctx, runID, root, tmp, cleanups)
	if err != nil {
		return err
	}
	e.swarmMarker = o.swarmMarker
	rep := newReport(e, s)
	rep.Baseline = o.baseline
	rep.printHeader(os.Stdout)

	if err := e.build(ctx); err != nil {
		return err
	}
	var base baseline
	if o.baseline != "" {
		if base, err = e.buildBaseline(ctx, o.baseline); err != nil {
			return err
		}
		// The workloads section's Job runs it too (measureJob).
		e.baselineBin = base.bin
	}

	// Each section records its figures, or the reason it has none, and the
	// run goes on: one broken section must not hide the others' numbers.
	sections := []struct {
		name string
		fn   func(context.Context, *env, settings, *report) error
	}{
		// Only with -baseline (BENCH_SECTIONS=baseline runs it alone).
		{"baseline", func(ctx context.Context, e *env, s settings, rep *report) error {
			if o.baseline == "" {
				return nil
			}
			return benchBaseline(ctx, e, s, rep, base)
		}},
		{"repair", benchRepair},
		{"scale", benchScale},
		{"rolling", benchRollingDockctl},
		{"steady", benchSteady},
		{"pods", benchPods},
		{"services", benchServices},
		{"gateway", benchGateway},
		{"realworld", benchRealworld},
		{"workloads", benchWorkloads},
		{"scale-big", benchScaleBig},
		{"recovery", benchRecovery},
		{"swarm", benchSwarm},
	}
	// BENCH_SECTIONS (comma-separated names) runs only some sections: a
	// development aid; `make bench` runs them all.
	only := map[string]bool{}
	for _, name := range strings.Split(os.Getenv("BENCH_SECTIONS"), ",") {
		if name = strings.TrimSpace(name); name != "" {
			only[name] = true
		}
	}
	// "swarm-mesh" runs the Swarm section's routing-mesh measurement
	// alone (it needs the swarm the section initialises).
	if only["swarm-mesh"] && !only["swarm"] {
		only["swarm"], s.SwarmMeshOnly = true, true
	}
	// "workloads-job" runs the workloads section's Job alone: with
	// -baseline, the baseline's Job beside this tree's and the direct API.
	if only["workloads-job"] && !only["workloads"] {
		only["workloads"], s.WorkloadsJobOnly = true, true
	}
	var failed []string
	for _, sec := range sections {
		if sec.name == "baseline" && o.baseline == "" {
			continue
		}
		if len(only) > 0 && !only[sec.name] {
			rep.note("%s: not run (BENCH_SECTIONS=%s)", sec.name, os.Getenv("BENCH_SECTIONS"))
			continue
		}
		if ctx.Err() != nil {
			rep.note("%s: skipped: %v", sec.name, ctx.Err())
			failed = append(failed, sec.name)
			continue
		}
		start := time.Now()
		logf("== %s", sec.name)
		if err := sec.fn(ctx, e, s, rep); err != nil {
			rep.note("%s: failed: %v", sec.name, err)
			failed = append(failed, sec.name)
		}
		logf("== %s done in %s", sec.name, time.Since(start).Round(100*time.Millisecond))
		// A section that failed may leave containers behind; the next one
		// must start from a clean engine so its figures are not skewed.
		if err := e.removeAll(context.Background()); err != nil {
			rep.note("cleanup after %s: %v", sec.name, err)
		}
	}
	rep.print(os.Stdout)
	if path := os.Getenv("BENCH_JSON"); path != "" {
		if err := rep.writeJSON(path); err != nil {
			return err
		}
		fmt.Printf("\nJSON written to %s\n", path)
	}
	// The guard judges only after the whole report is out, and its error
	// returns through the deferred cleanups like any other.
	guardErr := guardError(rep.Guard, s.Guard)
	if len(failed) > 0 {
		return errors.Join(fmt.Errorf("sections with errors: %s", strings.Join(failed, ", ")), guardErr)
	}
	return guardErr
}

// cleanupStack runs registered cleanups once each, last registered first,
// whoever calls run first (the deferred call or the signal handler).
type cleanupStack struct {
	mu    sync.Mutex
	items []cleanupItem
}

type cleanupItem struct {
	what string
	fn   func() error
	done bool
}

func (c *cleanupStack) push(what string, fn func() error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items = append(c.items, cleanupItem{what: what, fn: fn})
}

func (c *cleanupStack) run() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.items) - 1; i >= 0; i-- {
		it := &c.items[i]
		if it.done {
			continue
		}
		it.done = true
		if err := it.fn(); err != nil {
			fmt.Fprintf(os.Stderr, "dockbench: cleanup: %s: %v\n", it.what, err)
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// repoRoot finds the module root from the working directory, so that the
// harness works from `make bench` and from `go run` in a subdirectory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/dockctl/dockctl") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run dockbench from inside the dockctl repository")
		}
		dir = parent
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}
